package events

import (
	"bytes"
	"encoding/json"
	"errors"
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
func Encode(enc Encoding, v any) ([]byte, error) {
	var b []byte
	switch enc {
	case Msgpack:
		var buf bytes.Buffer
		e := msgpack.GetEncoder()
		e.Reset(&buf)
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

// payload is what every decodable type implements.
type payload interface {
	msgpack.CustomDecoder
	Validate() error
}

// decode runs the common steps of every Decode function: size limit,
// structural bounds, version (when versioned), typed decode, validation.
func decode(enc Encoding, b []byte, p payload, versioned bool) error {
	if len(b) > MaxPayloadSize {
		return tooLarge(len(b))
	}
	switch enc {
	case Msgpack:
		if err := checkMsgpack(b); err != nil {
			return err
		}
		var verr error
		if versioned {
			v, err := msgpackVersion(b)
			switch {
			case err == nil && v != Version:
				verr = versionError(v)
			case isFieldError(err):
				verr = err
			case err != nil:
				return err // not a map
			}
		} else if h, err := readHeader(b, 0); err != nil {
			return err
		} else if h.kind != kindMap {
			return badPayload("msgpack: payload is %s, want map", h.kind)
		}
		// Decode even when the version is wrong, so that the caller gets
		// what could be read (e.g. the call id to address a rejection).
		uerr := msgpack.Unmarshal(b, p)
		switch {
		case errors.Is(verr, ErrUnsupportedVersion):
			return verr
		case uerr != nil && errors.Is(uerr, ErrBadPayload):
			return uerr
		case uerr != nil:
			return badPayload("msgpack: %v", uerr)
		case verr != nil:
			return verr
		}
	case JSON:
		if err := checkJSONDepth(b); err != nil {
			return err
		}
		if err := json.Unmarshal(b, p); err != nil {
			return jsonError(err)
		}
	default:
		return fmt.Errorf("%w: unknown encoding %v", ErrBadPayload, enc)
	}
	return p.Validate()
}

// payloadPtr is *T decoding and validating itself.
type payloadPtr[T any] interface {
	*T
	payload
}

// decodeAs decodes and validates a T with decode.
func decodeAs[T any, PT payloadPtr[T]](enc Encoding, b []byte, versioned bool) (T, error) {
	var v T
	err := decode(enc, b, PT(&v), versioned)
	return v, err
}

// DecodePreStep decodes and validates a PreStep.
func DecodePreStep(enc Encoding, b []byte) (PreStep, error) {
	return decodeAs[PreStep](enc, b, true)
}

// DecodeSkillCall decodes and validates a SkillCall.
func DecodeSkillCall(enc Encoding, b []byte) (SkillCall, error) {
	return decodeAs[SkillCall](enc, b, true)
}

// DecodeCompaction decodes and validates a Compaction.
func DecodeCompaction(enc Encoding, b []byte) (Compaction, error) {
	return decodeAs[Compaction](enc, b, true)
}

// DecodeCatalog decodes and validates a Catalog.
func DecodeCatalog(enc Encoding, b []byte) (Catalog, error) {
	return decodeAs[Catalog](enc, b, true)
}

// DecodeToolResult decodes and validates a ToolResult.
func DecodeToolResult(enc Encoding, b []byte) (ToolResult, error) {
	return decodeAs[ToolResult](enc, b, true)
}

// DecodeDecision decodes and validates a Decision.
func DecodeDecision(enc Encoding, b []byte) (Decision, error) {
	return decodeAs[Decision](enc, b, true)
}

// DecodeToolDefinition decodes and validates a ToolDefinition (which has no
// "v").
func DecodeToolDefinition(enc Encoding, b []byte) (ToolDefinition, error) {
	return decodeAs[ToolDefinition](enc, b, false)
}
