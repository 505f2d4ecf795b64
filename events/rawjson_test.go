package events

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

func TestRawJSONMsgpackRoundTrip(t *testing.T) {
	for _, doc := range []string{
		skillParameters,
		`{"z":1,"a":2,"m":{"y":[],"b":{}}}`, // key order is kept, not sorted
		`[1,-1,0,9223372036854775807,-9223372036854775808,18446744073709551615]`,
		`[1.5,-0.25,1e+21,1e-7,3.141592653589793]`,
		`{"s":"quote \" backslash \\ newline \n tab \t ctl \u0001 <tag> & é 日本"}`,
		`[true,false,null,"",[[]],{}]`,
		`"just a string"`,
		`42`,
	} {
		var buf bytes.Buffer
		if err := msgpack.NewEncoder(&buf).Encode(RawJSON(doc)); err != nil {
			t.Fatalf("%s: encode: %v", doc, err)
		}
		if err := checkMsgpack(buf.Bytes()); err != nil {
			t.Fatalf("%s: encoded form does not validate: %v", doc, err)
		}
		var got RawJSON
		if err := msgpack.Unmarshal(buf.Bytes(), &got); err != nil {
			t.Fatalf("%s: decode: %v", doc, err)
		}
		if string(got) != doc {
			t.Errorf("msgpack round trip\n got %s\nwant %s", got, doc)
		}
	}
}

// TestRawJSONIsAMsgpackValue: in msgpack the parameters are a real map, not
// a string holding JSON, so msgpack workers read them natively.
func TestRawJSONIsAMsgpackValue(t *testing.T) {
	b, err := Encode(Msgpack, ToolDefinition{Name: "skill", Parameters: RawJSON(skillParameters)})
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]any
	if err := msgpack.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	params, ok := v["parameters"].(map[string]any)
	if !ok || params["type"] != "object" {
		t.Fatalf("parameters = %#v, want a map", v["parameters"])
	}
	if req, _ := params["required"].([]any); len(req) != 1 || req[0] != "name" {
		t.Errorf("required = %#v", params["required"])
	}
}

func TestRawJSONBad(t *testing.T) {
	for _, doc := range []string{`{"a":`, `{"a":1} x`, `[1,]`} {
		if _, err := Encode(Msgpack, ToolDefinition{Name: "x", Parameters: RawJSON(doc)}); err == nil {
			t.Errorf("encoding invalid raw JSON %s succeeded", doc)
		}
	}
	deep := strings.Repeat("[", MaxDepth+1) + strings.Repeat("]", MaxDepth+1)
	if _, err := Encode(Msgpack, ToolDefinition{Name: "x", Parameters: RawJSON(deep)}); !errors.Is(err, ErrBadPayload) {
		t.Errorf("encoding too deep raw JSON: %v", err)
	}
	// A map with an integer key has no JSON form.
	b := mp(t, "name", "x", "parameters", map[int]string{1: "a"})
	if _, err := DecodeToolDefinition(Msgpack, b); err == nil || !strings.Contains(err.Error(), "map key") {
		t.Errorf("integer map key: err = %v", err)
	}
	// Empty parameters mean null in both encodings.
	for _, enc := range []Encoding{Msgpack, JSON} {
		b, err := Encode(enc, ToolDefinition{Name: "x"})
		if err != nil {
			t.Fatal(err)
		}
		d, err := DecodeToolDefinition(enc, b)
		if err != nil || len(d.Parameters) != 0 && string(d.Parameters) != "null" {
			t.Errorf("%v: empty parameters came back as %q, %v", enc, d.Parameters, err)
		}
	}
	// JSON text is kept verbatim when decoding JSON.
	d, err := DecodeToolDefinition(JSON, []byte(`{"name":"x","parameters": { "a" : [ 1 ] } }`))
	if err != nil || string(d.Parameters) != `{ "a" : [ 1 ] }` {
		t.Errorf("verbatim JSON: %q, %v", d.Parameters, err)
	}
}

func TestNilListsEncodeEmpty(t *testing.T) {
	for _, enc := range []Encoding{Msgpack, JSON} {
		b, err := Encode(enc, Catalog{V: 1, Session: "s", Step: "x"})
		if err != nil {
			t.Fatal(err)
		}
		c, err := DecodeCatalog(enc, b)
		if err != nil || c.Source.Entries == nil {
			t.Errorf("%v: entries of an empty catalog decode as %#v (%v), want an empty list", enc, c.Source.Entries, err)
		}
		b, err = Encode(enc, PreStep{V: 1, Session: "s", Step: "x"})
		if err != nil {
			t.Fatal(err)
		}
		p, err := DecodePreStep(enc, b)
		if err != nil || p.Tools == nil {
			t.Errorf("%v: tools decode as %#v (%v), want an empty list", enc, p.Tools, err)
		}
	}
	b, _ := Encode(JSON, Catalog{V: 1, Session: "s", Step: "x", Text: "<a> & b"})
	if !bytes.Contains(b, []byte(`"entries":[]`)) || !bytes.Contains(b, []byte(`"<a> & b"`)) {
		t.Errorf("JSON catalog: %s", b)
	}
}

func TestIDControlCharacters(t *testing.T) {
	for _, id := range []string{"a\r\nNats-Msg-Id: x", "a\x00", "a\x7f", "\xff\xfe"} {
		_, err := DecodeSkillCall(Msgpack, mp(t, "v", 1, "session", "s", "call", id, "args", m{"name": "x"}))
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "call" {
			t.Errorf("call %q: err = %v, want a FieldError for call", id, err)
		}
	}
	if _, err := DecodePreStep(JSON, []byte(`{"v":1,"session":"s","step":"ünïcødé step"}`)); err != nil {
		t.Errorf("unicode step rejected: %v", err)
	}
}

// TestBadParametersKeepReading: parameters without a JSON form are reported,
// and the keys after them are still read.
func TestBadParametersKeepReading(t *testing.T) {
	b := mp(t, "parameters", map[string]any{"a": []byte{1, 2}, "b": 1}, "name", "skill")
	d, err := DecodeToolDefinition(Msgpack, b)
	fieldErr(t, err, "parameters", "binary has no JSON form")
	if d.Name != "skill" {
		t.Errorf("name after bad parameters = %q, want skill", d.Name)
	}
}
