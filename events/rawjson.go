package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// RawJSON is a JSON document kept as text, such as the skill tool's parameter
// schema.
//
// In JSON payloads it is written verbatim (like json.RawMessage) and read
// back verbatim. In msgpack payloads it is written as the equivalent msgpack
// value (objects become maps with their keys in the text's order, arrays
// become arrays, integers become integers, other numbers float64) and read
// back as compact JSON text. A compact JSON document with no HTML-special
// escapes therefore survives a msgpack round trip byte for byte. An empty
// RawJSON stands for null.
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
	v, err := readJSONValue(d)
	if err != nil {
		return fmt.Errorf("raw JSON: %w", err)
	}
	if _, err := d.Token(); err != io.EOF {
		return errors.New("raw JSON: trailing data after the document")
	}
	return v.encode(e)
}

// DecodeMsgpack reads a msgpack value and keeps it as compact JSON text.
// Binary and extension values have no JSON form and are rejected; map keys
// must be strings.
func (r *RawJSON) DecodeMsgpack(d *msgpack.Decoder) error {
	c, err := d.PeekCode()
	if err != nil {
		return err
	}
	if c == msgpcode.Nil {
		*r = nil
		return d.DecodeNil()
	}
	out, err := appendMsgpackAsJSON((*r)[:0], d, 0)
	if err != nil {
		return err
	}
	*r = out
	return nil
}

// jsonNode is a parsed JSON value that remembers object key order.
type jsonNode struct {
	kind  byte // 'o' object, 'a' array, 's' string, 'n' number, 't' bool, 'z' null
	str   string
	b     bool
	keys  []string
	elems []jsonNode
}

func readJSONValue(d *json.Decoder) (jsonNode, error) {
	tok, err := d.Token()
	if err != nil {
		return jsonNode{}, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			n := jsonNode{kind: 'o'}
			for d.More() {
				kt, err := d.Token()
				if err != nil {
					return n, err
				}
				n.keys = append(n.keys, kt.(string))
				v, err := readJSONValue(d)
				if err != nil {
					return n, err
				}
				n.elems = append(n.elems, v)
			}
			_, err := d.Token() // '}'
			return n, err
		case '[':
			n := jsonNode{kind: 'a'}
			for d.More() {
				v, err := readJSONValue(d)
				if err != nil {
					return n, err
				}
				n.elems = append(n.elems, v)
			}
			_, err := d.Token() // ']'
			return n, err
		}
		return jsonNode{}, fmt.Errorf("unexpected %v", t)
	case string:
		return jsonNode{kind: 's', str: t}, nil
	case json.Number:
		return jsonNode{kind: 'n', str: string(t)}, nil
	case bool:
		return jsonNode{kind: 't', b: t}, nil
	case nil:
		return jsonNode{kind: 'z'}, nil
	}
	return jsonNode{}, fmt.Errorf("unexpected token %v", tok)
}

func (n jsonNode) encode(e *msgpack.Encoder) error {
	switch n.kind {
	case 'o':
		if err := e.EncodeMapLen(len(n.keys)); err != nil {
			return err
		}
		for i, k := range n.keys {
			if err := e.EncodeString(k); err != nil {
				return err
			}
			if err := n.elems[i].encode(e); err != nil {
				return err
			}
		}
		return nil
	case 'a':
		if err := e.EncodeArrayLen(len(n.elems)); err != nil {
			return err
		}
		for _, v := range n.elems {
			if err := v.encode(e); err != nil {
				return err
			}
		}
		return nil
	case 's':
		return e.EncodeString(n.str)
	case 'n':
		if i, err := strconv.ParseInt(n.str, 10, 64); err == nil {
			return e.EncodeInt(i)
		}
		if u, err := strconv.ParseUint(n.str, 10, 64); err == nil {
			return e.EncodeUint(u)
		}
		f, err := strconv.ParseFloat(n.str, 64)
		if err != nil {
			return fmt.Errorf("raw JSON: number %s: %w", n.str, err)
		}
		return e.EncodeFloat64(f)
	case 't':
		return e.EncodeBool(n.b)
	default:
		return e.EncodeNil()
	}
}

// appendMsgpackAsJSON appends the next msgpack value of d to out as compact
// JSON.
func appendMsgpackAsJSON(out []byte, d *msgpack.Decoder, depth int) ([]byte, error) {
	if depth > MaxDepth {
		return out, fmt.Errorf("raw JSON: nested deeper than %d", MaxDepth)
	}
	c, err := d.PeekCode()
	if err != nil {
		return out, err
	}
	switch k := codeKind(c); k {
	case kindNil:
		return append(out, "null"...), d.DecodeNil()
	case kindBool:
		v, err := d.DecodeBool()
		return strconv.AppendBool(out, v), err
	case kindInt:
		v, err := d.DecodeInt64()
		return strconv.AppendInt(out, v, 10), err
	case kindUint:
		v, err := d.DecodeUint64()
		return strconv.AppendUint(out, v, 10), err
	case kindFloat:
		v, err := d.DecodeFloat64()
		if err != nil {
			return out, err
		}
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return out, fmt.Errorf("raw JSON: %v has no JSON form", v)
		}
		return appendJSONFloat(out, v), nil
	case kindString:
		s, err := d.DecodeString()
		return appendJSONString(out, s), err
	case kindArray:
		n, err := d.DecodeArrayLen()
		if err != nil {
			return out, err
		}
		out = append(out, '[')
		for i := 0; i < n; i++ {
			if i > 0 {
				out = append(out, ',')
			}
			if out, err = appendMsgpackAsJSON(out, d, depth+1); err != nil {
				return out, err
			}
		}
		return append(out, ']'), nil
	case kindMap:
		n, err := d.DecodeMapLen()
		if err != nil {
			return out, err
		}
		out = append(out, '{')
		for i := 0; i < n; i++ {
			if i > 0 {
				out = append(out, ',')
			}
			kc, err := d.PeekCode()
			if err != nil {
				return out, err
			}
			if codeKind(kc) != kindString {
				return out, fmt.Errorf("raw JSON: map key is %s, want string", codeKind(kc))
			}
			key, err := d.DecodeString()
			if err != nil {
				return out, err
			}
			out = append(appendJSONString(out, key), ':')
			if out, err = appendMsgpackAsJSON(out, d, depth+1); err != nil {
				return out, err
			}
		}
		return append(out, '}'), nil
	default:
		return out, fmt.Errorf("raw JSON: %s has no JSON form", k)
	}
}

// appendJSONFloat formats like encoding/json does.
func appendJSONFloat(out []byte, f float64) []byte {
	abs := math.Abs(f)
	format := byte('f')
	if abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	out = strconv.AppendFloat(out, f, format, -1, 64)
	if format == 'e' {
		// clean up e-09 to e-9
		n := len(out)
		if n >= 4 && out[n-4] == 'e' && out[n-3] == '-' && out[n-2] == '0' {
			out[n-2] = out[n-1]
			out = out[:n-1]
		}
	}
	return out
}

// appendJSONString appends s as a JSON string, escaping only what JSON
// requires: '"', '\\' and control characters. Invalid UTF-8 becomes U+FFFD.
func appendJSONString(out []byte, s string) []byte {
	const hex = "0123456789abcdef"
	out = append(out, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				out = append(out, '\\', c)
			case c == '\n':
				out = append(out, '\\', 'n')
			case c == '\r':
				out = append(out, '\\', 'r')
			case c == '\t':
				out = append(out, '\\', 't')
			case c < 0x20:
				out = append(out, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			default:
				out = append(out, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			out = append(out, "\ufffd"...)
		} else {
			out = append(out, s[i:i+size]...)
		}
		i += size
	}
	return append(out, '"')
}
