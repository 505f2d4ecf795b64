package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"

	"github.com/vmihailenco/msgpack/v5"
)

// RawJSON is a JSON document kept as text, such as the skill tool's parameter
// schema.
//
// In JSON payloads it is written verbatim (like json.RawMessage) and read
// back verbatim. In msgpack payloads it is written as the equivalent msgpack
// value (objects become maps with their keys in the text's order, integers
// integers, other numbers float64), so msgpack readers get a real map, and
// read back as compact JSON text. A compact JSON document without
// HTML-special escapes therefore survives a msgpack round trip byte for
// byte. An empty RawJSON stands for null.
type RawJSON []byte

var (
	_ json.Marshaler        = RawJSON(nil)
	_ json.Unmarshaler      = (*RawJSON)(nil)
	_ msgpack.CustomEncoder = RawJSON(nil)
	_ msgpack.CustomDecoder = (*RawJSON)(nil)
)

// MarshalJSON returns the text itself, or null when empty.
func (r RawJSON) MarshalJSON() ([]byte, error) {
	if len(r) == 0 {
		return []byte("null"), nil
	}
	return r, nil
}

// UnmarshalJSON keeps a copy of the text.
func (r *RawJSON) UnmarshalJSON(b []byte) error {
	*r = append((*r)[:0], b...)
	return nil
}

// EncodeMsgpack writes the JSON document as the equivalent msgpack value.
func (r RawJSON) EncodeMsgpack(e *msgpack.Encoder) error {
	if len(bytes.TrimSpace(r)) == 0 {
		return e.EncodeNil()
	}
	if err := checkJSONDepth(r); err != nil {
		return err
	}
	d := json.NewDecoder(bytes.NewReader(r))
	d.UseNumber()
	v, err := parseJSON(d)
	if err == nil {
		if _, end := d.Token(); end != io.EOF {
			err = errors.New("trailing data after the document")
		}
	}
	if err != nil {
		return fmt.Errorf("raw JSON: %w", err)
	}
	return e.Encode(v)
}

// DecodeMsgpack reads a msgpack value and keeps it as compact JSON text.
// Binary and extension values have no JSON form, and map keys must be
// strings; those are reported as a FieldError.
func (r *RawJSON) DecodeMsgpack(d *msgpack.Decoder) error {
	raw, err := d.DecodeRaw()
	if err != nil {
		return err
	}
	*r = nil
	if codeKind(raw[0]) == kindNil {
		return nil
	}
	if err := jsonless(raw); err != nil {
		return err
	}
	rd := msgpack.NewDecoder(bytes.NewReader(raw))
	rd.SetMapDecoder(decodeObject)
	v, err := rd.DecodeInterface()
	if err == nil {
		*r, err = marshalJSON(v)
	}
	if err != nil {
		return &FieldError{Problem: err.Error()}
	}
	return nil
}

// jsonless reports a binary or extension value inside the msgpack value b.
func jsonless(b []byte) error {
	switch k := codeKind(b[0]); k {
	case kindBinary, kindExt:
		return &FieldError{Problem: k.String() + " has no JSON form"}
	case kindArray, kindMap:
		for item := range items(b) {
			if err := jsonless(item); err != nil {
				return err
			}
		}
	}
	return nil
}

// object is a JSON object that keeps its members in order. Values in a
// parsed document are nil, bool, string, int64, uint64, float64, []any and
// object.
type object []member

type member struct {
	key   string
	value any
}

// parseJSON reads the next JSON value of d (which uses numbers).
func parseJSON(d *json.Decoder) (any, error) {
	tok, err := d.Token()
	if err != nil {
		return nil, err
	}
	switch tok {
	case json.Delim('{'):
		o := object{}
		for d.More() && err == nil {
			var key json.Token
			var m member
			if key, err = d.Token(); err == nil {
				m.key = key.(string)
				m.value, err = parseJSON(d)
				o = append(o, m)
			}
		}
		return o, closeJSON(d, err)
	case json.Delim('['):
		a := []any{}
		for d.More() && err == nil {
			var v any
			v, err = parseJSON(d)
			a = append(a, v)
		}
		return a, closeJSON(d, err)
	}
	if n, ok := tok.(json.Number); ok {
		if i, err := strconv.ParseInt(string(n), 10, 64); err == nil {
			return i, nil
		}
		if u, err := strconv.ParseUint(string(n), 10, 64); err == nil {
			return u, nil
		}
		return strconv.ParseFloat(string(n), 64)
	}
	return tok, nil
}

// closeJSON reads the delimiter that ends an object or array.
func closeJSON(d *json.Decoder, err error) error {
	if err == nil {
		_, err = d.Token()
	}
	return err
}

// EncodeMsgpack writes the object as a map, members in order.
func (o object) EncodeMsgpack(e *msgpack.Encoder) error {
	if err := e.EncodeMapLen(len(o)); err != nil {
		return err
	}
	for _, m := range o {
		if err := e.EncodeString(m.key); err != nil {
			return err
		}
		if err := e.Encode(m.value); err != nil {
			return err
		}
	}
	return nil
}

// MarshalJSON writes the object, members in order.
func (o object) MarshalJSON() ([]byte, error) {
	b := []byte{'{'}
	for i, m := range o {
		k, _ := marshalJSON(m.key)
		v, err := marshalJSON(m.value)
		if err != nil {
			return nil, err
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = append(append(append(b, k...), ':'), v...)
	}
	return append(b, '}'), nil
}

// decodeObject is the msgpack map decoder of RawJSON: it keeps the order of
// the entries.
func decodeObject(d *msgpack.Decoder) (any, error) {
	n, err := d.DecodeMapLen()
	if err != nil {
		return nil, err
	}
	o := make(object, 0, n)
	for range n {
		c, err := d.PeekCode()
		if err != nil {
			return nil, err
		}
		if k := codeKind(c); k != kindString {
			return nil, fmt.Errorf("map key is %s, want string", k)
		}
		var m member
		if m.key, err = d.DecodeString(); err == nil {
			m.value, err = d.DecodeInterface()
		}
		if err != nil {
			return nil, err
		}
		o = append(o, m)
	}
	return o, nil
}
