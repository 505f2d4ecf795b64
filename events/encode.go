package events

import (
	"bytes"
	"encoding/json"

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
