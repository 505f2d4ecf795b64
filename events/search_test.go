package events

import (
	"math"
	"reflect"
	"strings"
	"testing"
)

// TestSearchArgsReachTheTool: a search's arguments are passed on whatever
// their type, in the forms SearchArgs documents, so that the tool answers
// a wrong one in its own words; unknown arguments are ignored.
func TestSearchArgsReachTheTool(t *testing.T) {
	for _, tc := range []struct {
		name string
		enc  Encoding
		b    []byte
		want SearchArgs
	}{
		{"json plain", JSON, []byte(`{"v":1,"session":"s","call":"c","args":{"query":"pdf","limit":5,"offset":0}}`),
			SearchArgs{Query: "pdf", Limit: int64(5), Offset: int64(0)}},
		{"json wrong types", JSON, []byte(`{"v":1,"session":"s","call":"c","args":{"query":12,"limit":"5","offset":2.5}}`),
			SearchArgs{Query: int64(12), Limit: "5", Offset: 2.5}},
		{"json integral float", JSON, []byte(`{"v":1,"session":"s","call":"c","args":{"query":"q","limit":5.0,"offset":1e20}}`),
			SearchArgs{Query: "q", Limit: int64(5), Offset: 1e20}},
		{"json containers and unknown", JSON, []byte(`{"v":1,"session":"s","call":"c","args":{"query":["a",{"b":1}],"limit":{"x":[1]},"offset":true,"mode":"fast"}}`),
			SearchArgs{Query: []any{}, Limit: map[string]any{}, Offset: true}},
		{"json empty args", JSON, []byte(`{"v":1,"session":"s","call":"c","args":{}}`), SearchArgs{}},
		{"json nulls", JSON, []byte(`{"v":1,"session":"s","call":"c","args":{"query":null,"limit":null}}`), SearchArgs{}},
		{"msgpack plain", Msgpack, mp(t, "v", 1, "session", "s", "call", "c", "args", m{"query": "pdf", "limit": 3}),
			SearchArgs{Query: "pdf", Limit: int64(3)}},
		{"msgpack wrong types", Msgpack, mp(t, "v", 1, "session", "s", "call", "c", "args", m{"query": []byte("pdf"), "limit": "3", "offset": -1}),
			SearchArgs{Query: "pdf", Limit: "3", Offset: int64(-1)}},
		{"msgpack numbers", Msgpack, mp(t, "v", 1, "session", "s", "call", "c", "args", m{"query": 1.5, "limit": uint64(math.MaxUint64), "offset": float32(4)}),
			SearchArgs{Query: 1.5, Limit: uint64(math.MaxUint64), Offset: int64(4)}},
		{"msgpack containers", Msgpack, mp(t, "v", 1, "session", "s", "call", "c", "args", m{"query": m{"a": 1}, "limit": []any{1}, "extra": 1}),
			SearchArgs{Query: map[string]any{}, Limit: []any{}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := DecodeSkillSearch(tc.enc, tc.b)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(s.Args, tc.want) {
				t.Fatalf("args %#v, want %#v", s.Args, tc.want)
			}
		})
	}
}

// TestSkillSearchAsAWorkerBuildsIt: a worker sets the query and plain Go
// integers; the processor reads them back.
func TestSkillSearchAsAWorkerBuildsIt(t *testing.T) {
	in := SkillSearch{V: Version, Session: "s", Call: "c", Args: SearchArgs{Query: "pdf forms", Limit: 4, Offset: 8}}
	for _, enc := range []Encoding{Msgpack, JSON} {
		b, err := Encode(enc, in)
		if err != nil {
			t.Fatal(err)
		}
		out, err := DecodeSkillSearch(enc, b)
		if err != nil {
			t.Fatal(err)
		}
		if out.Args.QueryText() != "pdf forms" || out.Args.Limit != int64(4) || out.Args.Offset != int64(8) {
			t.Errorf("%v: %#v", enc, out.Args)
		}
		// Absent arguments stay absent.
		b, _ = Encode(enc, SkillSearch{V: Version, Session: "s", Call: "c", Args: SearchArgs{Query: "x"}})
		if strings.Contains(string(b), "limit") || strings.Contains(string(b), "offset") {
			t.Errorf("%v: absent arguments written: %q", enc, b)
		}
	}
	if (SearchArgs{Query: 3}).QueryText() != "" {
		t.Error("QueryText of a number")
	}
}

// TestToolResultValues: a result's value is a skill call's or a search's,
// told apart by its keys, in both encodings; an empty result list is an
// empty list on the wire.
func TestToolResultValues(t *testing.T) {
	search := ToolResult{V: 1, Session: "s", Call: "c", TriggerSeq: 3, Text: "No available skill matches \"x\".",
		Search: &SearchValue{Query: "x", Offset: 16, Total: 2}}
	skill := ToolResult{V: 1, Session: "s", Call: "c", TriggerSeq: 3, Text: "t", Value: &SkillValue{Name: "a", Provider: "p"}}
	for _, enc := range []Encoding{Msgpack, JSON} {
		b, err := Encode(enc, search)
		if err != nil {
			t.Fatal(err)
		}
		if enc == JSON && !strings.Contains(string(b), `"value":{"query":"x","offset":16,"total":2,"results":[]}`) {
			t.Errorf("json: %s", b)
		}
		got, err := DecodeToolResult(enc, b)
		if err != nil {
			t.Fatal(err)
		}
		if got.Value != nil || got.Search == nil || got.Search.Query != "x" || got.Search.Offset != 16 || got.Search.Total != 2 ||
			got.Search.Results == nil || len(got.Search.Results) != 0 {
			t.Errorf("%v: search result decoded as %#v (search %#v)", enc, got, got.Search)
		}
		b, err = Encode(enc, skill)
		if err != nil {
			t.Fatal(err)
		}
		got, err = DecodeToolResult(enc, b)
		if err != nil || got.Search != nil || !reflect.DeepEqual(got, skill) {
			t.Errorf("%v: skill result decoded as %#v, %v", enc, got, err)
		}
	}
}

func TestDecodeToolDefinitions(t *testing.T) {
	defs := samples()["tooldefinitions"].([]ToolDefinition)
	for _, enc := range []Encoding{Msgpack, JSON} {
		b, err := Encode(enc, defs)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeToolDefinitions(enc, b)
		if err != nil || !reflect.DeepEqual(got, defs) {
			t.Errorf("%v: %#v, %v", enc, got, err)
		}
		if string(got[1].Parameters) != searchParameters {
			t.Errorf("%v: parameters changed: %s", enc, got[1].Parameters)
		}
	}
	for _, tc := range []struct {
		enc  Encoding
		b    []byte
		want string
	}{
		{JSON, []byte(`{"name":"skill"}`), "want array"},
		{JSON, []byte(`null`), "want array"},
		{JSON, []byte(`[{"name":"skill"},{"name":""}]`), `"[1].name": missing`},
		{Msgpack, mp(t, "name", "skill"), "want array"},
		{Msgpack, []byte{0x91, 0xc0}, "[0]"},
		{Msgpack, []byte{0x92, 0x80}, "declares 2 values"},
	} {
		_, err := DecodeToolDefinitions(tc.enc, tc.b)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v %q: %v, want an error containing %q", tc.enc, tc.b, err, tc.want)
		}
	}
}

// An explicit limit or offset of 0 reaches the tool (it is an argument
// error there), in msgpack as in JSON; absent ones stay absent.
func TestSkillSearchZeroArgumentsKept(t *testing.T) {
	for _, enc := range []Encoding{Msgpack, JSON} {
		b, err := Encode(enc, SkillSearch{V: 1, Session: "s", Call: "c", Args: SearchArgs{Query: "x", Limit: 0, Offset: 0}})
		if err != nil {
			t.Fatal(err)
		}
		s, err := DecodeSkillSearch(enc, b)
		if err != nil {
			t.Fatal(err)
		}
		if s.Args.Limit == nil || s.Args.Offset == nil {
			t.Errorf("%v: limit %#v, offset %#v; want both 0", enc, s.Args.Limit, s.Args.Offset)
		}
	}
}
