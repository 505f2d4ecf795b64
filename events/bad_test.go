package events

import (
	"bytes"
	"encoding/binary"
	"errors"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// mp encodes key/value pairs as a msgpack map in the order given, so tests
// can build payloads with any types.
func mp(t testing.TB, kv ...any) []byte {
	t.Helper()
	var buf bytes.Buffer
	e := msgpack.NewEncoder(&buf)
	if err := e.EncodeMapLen(len(kv) / 2); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(kv); i += 2 {
		if err := e.Encode(kv[i]); err != nil {
			t.Fatal(err)
		}
		if err := e.Encode(kv[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

type m = map[string]any

func fieldErr(t *testing.T, err error, field, problem string) {
	t.Helper()
	var fe *FieldError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v (%T): want a FieldError for %q", err, err, field)
	}
	if fe.Field != field || !strings.Contains(fe.Problem, problem) {
		t.Fatalf("FieldError{%q, %q}: want field %q with problem containing %q", fe.Field, fe.Problem, field, problem)
	}
	if !errors.Is(err, ErrBadPayload) {
		t.Fatalf("%v does not match ErrBadPayload", err)
	}
}

func TestFieldErrorText(t *testing.T) {
	err := error(&FieldError{Field: "session", Problem: "missing"})
	if got, want := err.Error(), `bad payload: field "session": missing`; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}

func TestBadPayloadFields(t *testing.T) {
	tools := []m{{"name": "skill", "owner": "skillstream"}}
	cases := []struct {
		name    string
		enc     Encoding
		b       []byte
		decode  func(Encoding, []byte) (any, error)
		field   string
		problem string
	}{
		{"json step object", JSON, []byte(`{"v":1,"session":"s","step":{},"tools":[]}`), preStep, "step", "wrong type: got object, want string"},
		{"msgpack session int", Msgpack, mp(t, "v", 1, "session", 42, "step", "a"), preStep, "session", "wrong type: got integer, want string"},
		{"json session int", JSON, []byte(`{"v":1,"session":42,"step":"a"}`), preStep, "session", "want string"},
		{"msgpack missing session", Msgpack, mp(t, "v", 1, "step", "a", "tools", tools), preStep, "session", "missing"},
		{"json missing session", JSON, []byte(`{"v":1,"step":"a"}`), preStep, "session", "missing"},
		{"msgpack missing step", Msgpack, mp(t, "v", 1, "session", "s"), preStep, "step", "missing"},
		{"msgpack bad session token", Msgpack, mp(t, "v", 1, "session", "a.b", "step", "x"), preStep, "session", "invalid session token"},
		{"json session too long", JSON, []byte(`{"v":1,"session":"` + strings.Repeat("a", 129) + `","step":"x"}`), preStep, "session", "invalid session token"},
		{"msgpack step too long", Msgpack, mp(t, "v", 1, "session", "s", "step", strings.Repeat("x", 257)), preStep, "step", "too long: 257 bytes"},
		{"msgpack tool without name", Msgpack, mp(t, "v", 1, "session", "s", "step", "x", "tools", []m{{"name": "a"}, {"owner": "o"}}), preStep, "tools[1].name", "missing"},
		{"msgpack tool name int", Msgpack, mp(t, "v", 1, "session", "s", "step", "x", "tools", []any{m{"name": "a"}, m{"name": 3}}), preStep, "tools[1].name", "wrong type: got integer"},
		{"msgpack tool nil", Msgpack, mp(t, "v", 1, "session", "s", "step", "x", "tools", []any{nil}), preStep, "tools[0]", "got nil, want map"},
		{"msgpack too many tools", Msgpack, mp(t, "v", 1, "session", "s", "step", "x", "tools", manyTools(MaxTools+1)), preStep, "tools", "too many tools: 1025, limit 1024"},
		{"json tool name too long", JSON, []byte(`{"v":1,"session":"s","step":"x","tools":[{"name":"a","owner":"o"},{"name":"` + strings.Repeat("n", MaxToolFieldLength+1) + `","owner":"o"}]}`), preStep, "tools[1].name", "too long: 257 bytes, limit 256"},
		{"msgpack tool owner too long", Msgpack, mp(t, "v", 1, "session", "s", "step", "x", "tools", []m{{"name": "a", "owner": strings.Repeat("o", MaxToolFieldLength+1)}}), preStep, "tools[0].owner", "too long: 257 bytes, limit 256"},
		{"msgpack tools string", Msgpack, mp(t, "v", 1, "session", "s", "step", "x", "tools", "all"), preStep, "tools", "got string, want array"},
		{"json tool name int", JSON, []byte(`{"v":1,"session":"s","step":"x","tools":[{"name":3}]}`), preStep, "tools.name", "want string"},
		{"msgpack negative deadline", Msgpack, mp(t, "v", 1, "session", "s", "step", "x", "deadlineMs", -5), preStep, "deadlineMs", "negative"},
		{"msgpack missing v", Msgpack, mp(t, "session", "s", "step", "x"), preStep, "v", "missing"},
		{"json missing v", JSON, []byte(`{"session":"s","step":"x"}`), preStep, "v", "missing"},
		{"msgpack v string", Msgpack, mp(t, "v", "1", "session", "s", "step", "x"), preStep, "v", "wrong type: got string, want integer"},
		{"json v string", JSON, []byte(`{"v":"1","session":"s","step":"x"}`), preStep, "v", "wrong type: got string, want integer"},
		{"json non-integer step", JSON, []byte(`{"v":1,"session":"s","step":1.5}`), preStep, "step", "non-integer number"},
		{"msgpack missing args", Msgpack, mp(t, "v", 1, "session", "s", "call", "c"), skillCall, "args", "missing"},
		{"msgpack missing args.name", Msgpack, mp(t, "v", 1, "session", "s", "call", "c", "args", m{}), skillCall, "args.name", "missing"},
		{"json missing args.name", JSON, []byte(`{"v":1,"session":"s","call":"c","args":{"nom":"x"}}`), skillCall, "args.name", "missing"},
		{"json args.name null", JSON, []byte(`{"v":1,"session":"s","call":"c","args":{"name":null}}`), skillCall, "args.name", "missing"},
		{"msgpack args.name int", Msgpack, mp(t, "v", 1, "session", "s", "call", "c", "args", m{"name": 1}), skillCall, "args.name", "got integer, want string"},
		{"json args array", JSON, []byte(`{"v":1,"session":"s","call":"c","args":["x"]}`), skillCall, "args", "got array, want object"},
		{"msgpack missing call", Msgpack, mp(t, "v", 1, "session", "s", "args", m{"name": "x"}), skillCall, "call", "missing"},
		{"msgpack search without args", Msgpack, mp(t, "v", 1, "session", "s", "call", "c"), skillSearch, "args", "missing"},
		{"json search args null", JSON, []byte(`{"v":1,"session":"s","call":"c","args":null}`), skillSearch, "args", "missing"},
		{"json search args string", JSON, []byte(`{"v":1,"session":"s","call":"c","args":"pdf"}`), skillSearch, "args", "got string, want object"},
		{"msgpack search args array", Msgpack, mp(t, "v", 1, "session", "s", "call", "c", "args", []any{"pdf"}), skillSearch, "args", "got array, want map"},
		{"msgpack search without call", Msgpack, mp(t, "v", 1, "session", "s", "args", m{"query": "x"}), skillSearch, "call", "missing"},
		{"msgpack search bad session", Msgpack, mp(t, "v", 1, "session", "a b", "call", "c", "args", m{"query": "x"}), skillSearch, "session", "invalid session token"},
		{"json search relative resourceDir", JSON, []byte(`{"v":1,"session":"s","call":"c","args":{"query":"x"},"resourceDir":"r"}`), skillSearch, "resourceDir", "not an absolute path"},
		{"msgpack search bad epoch", Msgpack, mp(t, "v", 1, "session", "s", "call", "c", "args", m{"query": "x"}, "minStoreEpoch", "a b"), skillSearch, "minStoreEpoch", "not a store epoch"},
		{"msgpack search negative deadline", Msgpack, mp(t, "v", 1, "session", "s", "call", "c", "args", m{"query": "x"}, "deadlineMs", -1), skillSearch, "deadlineMs", "negative"},
		{"json definitions element without name", JSON, []byte(`[{"name":"skill"},{"description":"d"}]`), toolDefinitions, "[1].name", "missing"},
		{"msgpack negative retainFrom", Msgpack, mp(t, "v", 1, "session", "s", "retainFrom", -1), compaction, "retainFrom", "negative"},
		{"msgpack keep string element", Msgpack, mp(t, "v", 1, "session", "s", "keep", []any{1, "x"}), compaction, "keep[1]", "got string, want integer"},
		{"json keep negative", JSON, []byte(`{"v":1,"session":"s","keep":[-1]}`), compaction, "keep", "want non-negative integer"},
		{"msgpack entry name bool", Msgpack, mp(t, "v", 1, "session", "s", "step", "x", "source", m{"entries": []any{m{"name": true}}}), catalog, "source.entries[0].name", "got bool, want string"},
		{"msgpack decision nested catalog session", Msgpack, mp(t, "v", 1, "session", "s", "step", "x", "outcome", "appended", "catalog", m{"v": 1, "session": 5}), decision, "catalog.session", "got integer"},
		{"json decision nested catalog step", JSON, []byte(`{"v":1,"session":"s","step":"x","outcome":"appended","catalog":{"v":1,"session":"s","step":[]}}`), decision, "catalog.step", "got array, want string"},
		{"json decision without outcome", JSON, []byte(`{"v":1,"session":"s","step":"x"}`), decision, "outcome", "missing"},
		{"msgpack toolresult isError string", Msgpack, mp(t, "v", 1, "session", "s", "call", "c", "isError", "yes"), toolResult, "isError", "got string, want bool"},
		{"msgpack userText string", Msgpack, mp(t, "v", 1, "session", "s", "step", "x", "tools", tools, "userText", "/pdf"), preStep, "userText", "got string, want array"},
		{"json userText string", JSON, []byte(`{"v":1,"session":"s","step":"x","tools":[],"userText":"/pdf"}`), preStep, "userText", "want array"},
		{"msgpack userText int element", Msgpack, mp(t, "v", 1, "session", "s", "step", "x", "tools", tools, "userText", []any{"a", 3}), preStep, "userText[1]", "got integer, want string"},
		{"json userText object element", JSON, []byte(`{"v":1,"session":"s","step":"x","tools":[],"userText":[{}]}`), preStep, "userText", "want string"},
		{"msgpack userText too many", Msgpack, mp(t, "v", 1, "session", "s", "step", "x", "tools", tools, "userText", make([]string, MaxUserTexts+1)), preStep, "userText", "too many strings: 65, limit 64"},
		{"json userText too long", JSON, []byte(`{"v":1,"session":"s","step":"x","tools":[],"userText":["ok","` + strings.Repeat("a", MaxUserTextBytes+1) + `"]}`), preStep, "userText[1]", "too long: 262145 bytes, limit 262144"},
		{"msgpack userText control", Msgpack, mp(t, "v", 1, "session", "s", "step", "x", "tools", tools, "userText", []string{"/pdf\x1b[31m"}), preStep, "userText[0]", `control character '\x1b'`},
		{"msgpack userText bad utf8", Msgpack, mp(t, "v", 1, "session", "s", "step", "x", "tools", tools, "userText", []string{"/pdf \xff"}), preStep, "userText[0]", "not valid UTF-8"},
		{"msgpack invocation without name", Msgpack, mp(t, "v", 1, "session", "s", "step", "x"), skillInvocation, "name", "missing"},
		{"msgpack decision invocation session", Msgpack, mp(t, "v", 1, "session", "s", "step", "x", "outcome", "unchanged", "invocations", []any{m{"v": 1, "session": "a.b", "step": "x", "name": "n"}}), decision, "invocations[0].session", "invalid session token"},
		{"msgpack tooldefinition without name", Msgpack, mp(t, "description", "d"), toolDefinition, "name", "missing"},
		{"msgpack tooldefinition binary parameters", Msgpack, mp(t, "name", "skill", "parameters", []byte{1}), toolDefinition, "parameters", "no JSON form"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.decode(tc.enc, tc.b)
			fieldErr(t, err, tc.field, tc.problem)
		})
	}
}

func preStep(e Encoding, b []byte) (any, error)        { return DecodePreStep(e, b) }
func skillCall(e Encoding, b []byte) (any, error)      { return DecodeSkillCall(e, b) }
func compaction(e Encoding, b []byte) (any, error)     { return DecodeCompaction(e, b) }
func catalog(e Encoding, b []byte) (any, error)        { return DecodeCatalog(e, b) }
func toolResult(e Encoding, b []byte) (any, error)     { return DecodeToolResult(e, b) }
func decision(e Encoding, b []byte) (any, error)       { return DecodeDecision(e, b) }
func toolDefinition(e Encoding, b []byte) (any, error) { return DecodeToolDefinition(e, b) }
func catalogHead(e Encoding, b []byte) (any, error)    { return DecodeCatalogHead(e, b) }
func skillSearch(e Encoding, b []byte) (any, error)    { return DecodeSkillSearch(e, b) }
func toolDefinitions(e Encoding, b []byte) (any, error) {
	return DecodeToolDefinitions(e, b)
}
func skillInvocation(e Encoding, b []byte) (any, error) {
	return DecodeSkillInvocation(e, b)
}

func TestUnsupportedVersion(t *testing.T) {
	for _, tc := range []struct {
		name string
		enc  Encoding
		b    []byte
	}{
		{"msgpack", Msgpack, mp(t, "v", 2, "session", "s", "call", "c7", "args", m{"name": "x"})},
		{"json", JSON, []byte(`{"v":2,"session":"s","call":"c7","args":{"name":"x"}}`)},
		// The version wins over other problems: v2 may have another shape.
		{"msgpack with wrong types", Msgpack, mp(t, "session", 1, "call", "c7", "v", 2)},
		{"json with wrong types", JSON, []byte(`{"session":1,"call":"c7","v":2}`)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := DecodeSkillCall(tc.enc, tc.b)
			if !errors.Is(err, ErrUnsupportedVersion) || !errors.Is(err, ErrBadPayload) {
				t.Fatalf("err = %v, want ErrUnsupportedVersion", err)
			}
			if !strings.Contains(err.Error(), "got 2") {
				t.Errorf("error %q does not name the version seen", err)
			}
			if c.Call != "c7" {
				t.Errorf("partial value has call %q, want c7 (needed to address a bad_request)", c.Call)
			}
		})
	}
}

func TestIntegerIDsAccepted(t *testing.T) {
	p, err := DecodePreStep(Msgpack, mp(t, "v", 1, "session", "s", "step", 12, "tools", nil))
	if err != nil || p.Step != "12" {
		t.Fatalf("msgpack int step: %+v, %v", p, err)
	}
	p, err = DecodePreStep(Msgpack, mp(t, "v", 1, "session", "s", "step", -3))
	if err != nil || p.Step != "-3" {
		t.Fatalf("msgpack negative int step: %+v, %v", p, err)
	}
	p, err = DecodePreStep(Msgpack, mp(t, "v", 1, "session", "s", "step", uint64(18446744073709551615)))
	if err != nil || p.Step != "18446744073709551615" {
		t.Fatalf("msgpack uint64 step: %+v, %v", p, err)
	}
	p, err = DecodePreStep(JSON, []byte(`{"v":1,"session":"s","step":7}`))
	if err != nil || p.Step != "7" {
		t.Fatalf("json int step: %+v, %v", p, err)
	}
	c, err := DecodeSkillCall(JSON, []byte(`{"v":1,"session":"s","call":123456789012,"args":{"name":""}}`))
	if err != nil || c.Call != "123456789012" || c.Args.Name != "" {
		t.Fatalf("json int call with empty name: %+v, %v", c, err)
	}
	r, err := DecodeToolResult(Msgpack, mp(t, "v", 1, "session", "s", "call", 9))
	if err != nil || r.Call != "9" {
		t.Fatalf("msgpack int call in result: %+v, %v", r, err)
	}
}

func TestUnknownKeysIgnored(t *testing.T) {
	p, err := DecodePreStep(Msgpack, mp(t, "future", m{"a": []any{1, 2}}, "v", 1, 7, "int key", "session", "s", "step", "x", "tools", []m{{"name": "skill", "owner": "o", "extra": 1}}))
	if err != nil || p.Session != "s" || len(p.Tools) != 1 || p.Tools[0].Owner != "o" {
		t.Fatalf("%+v, %v", p, err)
	}
	p, err = DecodePreStep(JSON, []byte(`{"future":{"a":[1,2]},"v":1,"session":"s","step":"x","tools":[{"name":"skill","owner":"o","extra":1}]}`))
	if err != nil || p.Session != "s" || len(p.Tools) != 1 || p.Tools[0].Owner != "o" {
		t.Fatalf("%+v, %v", p, err)
	}
}

func TestTruncated(t *testing.T) {
	for name, v := range samples() {
		for _, enc := range []Encoding{Msgpack, JSON} {
			b, err := Encode(enc, v)
			if err != nil {
				t.Fatal(err)
			}
			for _, n := range []int{0, 1, len(b) / 2, len(b) - 1} {
				_, err := decodeAny(enc, v, b[:n])
				if !errors.Is(err, ErrBadPayload) {
					t.Errorf("%s/%v cut to %d of %d bytes: err = %v, want ErrBadPayload", name, enc, n, len(b), err)
				}
			}
		}
	}
}

func TestTrailingAndNonMap(t *testing.T) {
	good := mp(t, "v", 1, "session", "s", "step", "x")
	for _, b := range [][]byte{append(append([]byte{}, good...), 0xc0), {0x93, 1, 2, 3}, {0xa1, 'x'}, {0xc1}} {
		if _, err := DecodePreStep(Msgpack, b); !errors.Is(err, ErrBadPayload) {
			t.Errorf("%x: err = %v, want ErrBadPayload", b, err)
		}
	}
	for _, s := range []string{`[1,2]`, `"x"`, `null`, `{"v":1} {}`, `{"v":1,`} {
		if _, err := DecodePreStep(JSON, []byte(s)); !errors.Is(err, ErrBadPayload) {
			t.Errorf("%s: err = %v, want ErrBadPayload", s, err)
		}
	}
}

func TestOversized(t *testing.T) {
	big := strings.Repeat("x", 2<<20)
	for _, enc := range []Encoding{Msgpack, JSON} {
		b := make([]byte, 2<<20)
		_, err := DecodeCatalog(enc, b)
		if !errors.Is(err, ErrTooLarge) || !errors.Is(err, ErrBadPayload) {
			t.Errorf("%v: decode 2 MiB: err = %v, want ErrTooLarge", enc, err)
		}
		_, err = Encode(enc, Catalog{V: 1, Session: "s", Step: "x", Text: big})
		if !errors.Is(err, ErrTooLarge) {
			t.Errorf("%v: encode 2 MiB: err = %v, want ErrTooLarge", enc, err)
		}
	}
}

// TestHugeDeclaredLength: a five-byte array32 header declaring 2^32-1
// elements is rejected at once, without allocating for the declared count.
func TestHugeDeclaredLength(t *testing.T) {
	inputs := map[string][]byte{
		"array32":             {0xdd, 0xff, 0xff, 0xff, 0xff},
		"map32":               {0xdf, 0xff, 0xff, 0xff, 0xff},
		"str32":               {0xdb, 0xff, 0xff, 0xff, 0xff},
		"bin32":               {0xc6, 0xff, 0xff, 0xff, 0xff},
		"ext32":               {0xc9, 0xff, 0xff, 0xff, 0xff, 0x01},
		"tools array32":       {0x84, 0xa1, 'v', 1, 0xa7, 's', 'e', 's', 's', 'i', 'o', 'n', 0xa1, 's', 0xa4, 's', 't', 'e', 'p', 0xa1, 'x', 0xa5, 't', 'o', 'o', 'l', 's', 0xdd, 0xff, 0xff, 0xff, 0xff},
		"session str32":       {0x81, 0xa7, 's', 'e', 's', 's', 'i', 'o', 'n', 0xdb, 0x7f, 0xff, 0xff, 0xff, 'a'},
		"fixarray of array32": {0x91, 0xdd, 0x00, 0x10, 0x00, 0x00, 0xc0},
	}
	for name, b := range inputs {
		t.Run(name, func(t *testing.T) {
			if _, err := DecodePreStep(Msgpack, b); !errors.Is(err, ErrBadPayload) {
				t.Fatalf("err = %v, want ErrBadPayload", err)
			}
			allocated := bytesAllocated(func() { _, _ = DecodePreStep(Msgpack, b) })
			if allocated > 4<<10 {
				t.Errorf("rejecting %d bytes allocated %d bytes", len(b), allocated)
			}
		})
	}
}

// bytesAllocated returns the bytes f allocates, averaged over several runs.
func bytesAllocated(f func()) uint64 {
	const runs = 5
	f()
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range runs {
		f()
	}
	runtime.ReadMemStats(&after)
	return (after.TotalAlloc - before.TotalAlloc) / runs
}

func TestDeeplyNested(t *testing.T) {
	// msgpack: {"v":1,"tools":[[[[...]]]]} 40 deep.
	b := []byte{0x82, 0xa1, 'v', 1, 0xa5, 't', 'o', 'o', 'l', 's'}
	for range 40 {
		b = append(b, 0x91)
	}
	b = append(b, 0xc0)
	_, err := DecodePreStep(Msgpack, b)
	if !errors.Is(err, ErrBadPayload) || !strings.Contains(err.Error(), "nested deeper than 32") {
		t.Errorf("msgpack: err = %v, want nesting error", err)
	}
	// A million-deep JSON array is refused by the depth scan.
	j := `{"v":1,"tools":` + strings.Repeat("[", 1_000_000) + strings.Repeat("]", 1_000_000) + `}`
	_, err = DecodePreStep(JSON, []byte(j[:MaxPayloadSize]))
	if !errors.Is(err, ErrBadPayload) || !strings.Contains(err.Error(), "nested deeper than 32") {
		t.Errorf("json: err = %v, want nesting error", err)
	}
	// Brackets inside strings do not count.
	s := `{"v":1,"session":"s","step":"x","cwd":"` + strings.Repeat(`[{\"/`, 100) + `","tools":[]}`
	if _, err := DecodePreStep(JSON, []byte(s)); err != nil {
		t.Errorf("json with brackets in a string: %v", err)
	}
	// 32 levels are fine.
	ok := []byte{0x82, 0xa1, 'v', 1, 0xa1, 'x'}
	for range MaxDepth - 1 {
		ok = append(ok, 0x91)
	}
	ok = append(ok, 0xc0)
	if err := checkMsgpack(ok); err != nil {
		t.Errorf("depth %d rejected: %v", MaxDepth, err)
	}
}

// manyTools is a tool view of n tools.
func manyTools(n int) []m {
	tools := make([]m, n)
	for i := range tools {
		tools[i] = m{"name": "t" + strconv.Itoa(i), "owner": "agent"}
	}
	return tools
}

// TestDecodeMemoryProportional: a payload near the size limit made of
// minimal elements costs memory in proportion to its size, in both
// encodings. (Validation then refuses that many tools: decoding read them.)
func TestDecodeMemoryProportional(t *testing.T) {
	const n = 25_000
	head := []byte{0x84, 0xa1, 'v', 1, 0xa7, 's', 'e', 's', 's', 'i', 'o', 'n', 0xa1, 's', 0xa4, 's', 't', 'e', 'p', 0xa1, 'x', 0xa5, 't', 'o', 'o', 'l', 's', 0xdd}
	head = binary.BigEndian.AppendUint32(head, n)
	msg := append(head, bytes.Repeat([]byte{0x81, 0xa4, 'n', 'a', 'm', 'e', 0xa1, 'a'}, n)...)
	js := []byte(`{"v":1,"session":"s","step":"x","tools":[` + strings.Repeat(`{"name":"a"},`, n-1) + `{"name":"a"}]}`)
	for _, tc := range []struct {
		enc Encoding
		b   []byte
	}{{Msgpack, msg}, {JSON, js}} {
		p, err := DecodePreStep(tc.enc, tc.b)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != "tools" || len(p.Tools) != n {
			t.Fatalf("%v: %d tools, %v", tc.enc, len(p.Tools), err)
		}
		allocated := bytesAllocated(func() { _, _ = DecodePreStep(tc.enc, tc.b) })
		if limit := 32 * uint64(len(tc.b)); allocated > limit {
			t.Errorf("%v: decoding %d bytes allocated %d bytes (limit %d)", tc.enc, len(tc.b), allocated, limit)
		}
		t.Logf("%v: %d bytes in, %d bytes allocated", tc.enc, len(tc.b), allocated)
	}
}
