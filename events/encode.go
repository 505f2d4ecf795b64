package events

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/vmihailenco/msgpack/v5"
)

// Lists the protocol requires (a pre-step's tools, a catalog's entries) are
// written as empty lists, never as nil/null, when the Go slice is nil: a
// worker in another language may iterate them without checking.

var (
	_ msgpack.CustomEncoder = PreStep{}
	_ json.Marshaler        = PreStep{}
	_ msgpack.CustomEncoder = CatalogSource{}
	_ json.Marshaler        = CatalogSource{}
)

// EncodeMsgpack implements msgpack.CustomEncoder.
func (p PreStep) EncodeMsgpack(e *msgpack.Encoder) error {
	type plain PreStep
	if p.Tools == nil {
		p.Tools = []Tool{}
	}
	return e.Encode(plain(p))
}

// MarshalJSON implements json.Marshaler.
func (p PreStep) MarshalJSON() ([]byte, error) {
	type plain PreStep
	if p.Tools == nil {
		p.Tools = []Tool{}
	}
	return marshalJSON(plain(p))
}

// EncodeMsgpack implements msgpack.CustomEncoder.
func (s CatalogSource) EncodeMsgpack(e *msgpack.Encoder) error {
	type plain CatalogSource
	if s.Entries == nil {
		s.Entries = []Entry{}
	}
	return e.Encode(plain(s))
}

// MarshalJSON implements json.Marshaler.
func (s CatalogSource) MarshalJSON() ([]byte, error) {
	type plain CatalogSource
	if s.Entries == nil {
		s.Entries = []Entry{}
	}
	return marshalJSON(plain(s))
}

// marshalJSON is json.Marshal without HTML escaping: payload text is full of
// '<', '>' and '&', which need no escaping in JSON.
func marshalJSON(v any) ([]byte, error) {
	var buf bytes.Buffer
	e := json.NewEncoder(&buf)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// EncodeDecision encodes d in enc as Encode does. When enc is msgpack and
// catalog holds the msgpack encoding of *d.Catalog (the bytes of the catalog
// just appended), those bytes go into the answer as they are instead of the
// catalog being encoded a second time; the result is byte for byte what
// Encode gives.
func EncodeDecision(enc Encoding, d Decision, catalog []byte) ([]byte, error) {
	if enc != Msgpack || d.Catalog == nil || catalog == nil {
		return Encode(enc, d)
	}
	// The map the struct encoder writes for a Decision: fields in order,
	// the omitempty ones only when set.
	n := 6
	if d.Error != nil {
		n++
	}
	if d.Reason != "" {
		n++
	}
	var buf bytes.Buffer
	buf.Grow(len(catalog) + 256)
	e := msgpack.GetEncoder()
	defer msgpack.PutEncoder(e)
	e.Reset(&buf)
	e.UseCompactInts(true)
	type field struct {
		key string
		val any
	}
	fields := []field{
		{"v", d.V}, {"session", d.Session}, {"step", d.Step}, {"triggerSeq", d.TriggerSeq},
		{"outcome", d.Outcome}, {"catalog", msgpack.RawMessage(catalog)},
	}
	if d.Error != nil {
		fields = append(fields, field{"error", d.Error})
	}
	if d.Reason != "" {
		fields = append(fields, field{"reason", d.Reason})
	}
	err := e.EncodeMapLen(n)
	for _, f := range fields {
		if err == nil {
			err = e.EncodeString(f.key)
		}
		if err == nil {
			err = e.Encode(f.val)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("encode %T as msgpack: %w", d, err)
	}
	if buf.Len() > MaxPayloadSize {
		return nil, fmt.Errorf("encode %T: %w", d, tooLarge(buf.Len()))
	}
	return buf.Bytes(), nil
}
