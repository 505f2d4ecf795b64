package events

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"github.com/vmihailenco/msgpack/v5"
)

// Encoding is a wire encoding of payloads.
type Encoding int

// The two encodings. Msgpack is the default.
const (
	Msgpack Encoding = iota
	JSON
)

func (e Encoding) String() string {
	switch e {
	case Msgpack:
		return "msgpack"
	case JSON:
		return "json"
	}
	return "Encoding(" + strconv.Itoa(int(e)) + ")"
}

// ContentType returns the Content-Type header value of e.
func (e Encoding) ContentType() string {
	if e == JSON {
		return ContentTypeJSON
	}
	return ContentTypeMsgpack
}

// EncodingOf maps a Content-Type header value to an encoding: absent or
// application/msgpack is Msgpack, application/json is JSON. Media type
// parameters ("; charset=utf-8") and case are ignored. Anything else is an
// error matching ErrUnsupportedContentType and ErrBadPayload.
func EncodingOf(contentType string) (Encoding, error) {
	mt, _, _ := strings.Cut(contentType, ";")
	mt = strings.TrimSpace(mt)
	switch {
	case mt == "", strings.EqualFold(mt, ContentTypeMsgpack):
		return Msgpack, nil
	case strings.EqualFold(mt, ContentTypeJSON):
		return JSON, nil
	}
	return Msgpack, fmt.Errorf("%w: %w %s (want %s or %s)", ErrBadPayload, ErrUnsupportedContentType,
		quoteShort(contentType), ContentTypeMsgpack, ContentTypeJSON)
}

// Encode encodes v, normally one of the payload types, in enc. It does not
// validate v (a "rejected" Decision may answer an unreadable trigger); it
// fails with ErrTooLarge when the result would exceed MaxPayloadSize.
func Encode(enc Encoding, v any) ([]byte, error) { return AppendEncode(nil, enc, v) }

// AppendEncode is Encode writing msgpack into dst's capacity (dst's
// length is ignored): a caller that encodes often can lend the same buffer
// again and again instead of allocating one per payload. The result shares
// dst's array when it fits. JSON is encoded as Encode does.
func AppendEncode(dst []byte, enc Encoding, v any) ([]byte, error) {
	var b []byte
	switch enc {
	case Msgpack:
		buf := bytes.NewBuffer(dst[:0])
		buf.Grow(sizeHint(v)) // one allocation instead of a doubling series
		e := msgpack.GetEncoder()
		e.Reset(buf)
		e.UseCompactInts(true) // smallest integer form, whatever the Go type
		err := e.Encode(v)
		msgpack.PutEncoder(e)
		if err != nil {
			return nil, fmt.Errorf("encode %T as msgpack: %w", v, err)
		}
		b = buf.Bytes()
	case JSON:
		var err error
		if b, err = marshalJSON(v); err != nil {
			return nil, fmt.Errorf("encode %T as json: %w", v, err)
		}
	default:
		return nil, fmt.Errorf("encode %T: unknown encoding %v", v, enc)
	}
	if len(b) > MaxPayloadSize {
		return nil, fmt.Errorf("encode %T: %w", v, tooLarge(len(b)))
	}
	return b, nil
}

func tooLarge(n int) error {
	return fmt.Errorf("%w: %w: %d bytes, limit %d", ErrBadPayload, ErrTooLarge, n, MaxPayloadSize)
}

// sizeHint estimates the msgpack size of the payloads whose size varies
// most (catalogs, tool results, decisions carrying a catalog) from their
// strings, so that Encode allocates its buffer once; other values get a
// small default. An estimate only: the buffer still grows when short.
func sizeHint(v any) int {
	const base = 256
	switch p := v.(type) {
	case Catalog:
		return base + catalogSize(&p)
	case *Catalog:
		return base + catalogSize(p)
	case Decision:
		if p.Catalog != nil {
			return base + catalogSize(p.Catalog)
		}
	case ToolResult:
		n := base + len(p.Text)
		if p.Value != nil {
			n += len(p.Value.Content)
		}
		if p.Search != nil {
			for _, e := range p.Search.Results {
				n += len(e.Name) + len(e.Description) + 24
			}
			for _, lt := range p.Search.LearnedTerms {
				n += len(lt.Term) + 16
				for _, w := range lt.Skills {
					n += len(w.Name) + 24
				}
			}
		}
		return n
	}
	return base
}

func catalogSize(c *Catalog) int {
	n := len(c.Text)
	for _, e := range c.Source.Entries {
		n += len(e.Name) + len(e.Description) + 24 // two keys and three headers
	}
	return n
}
