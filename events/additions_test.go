package events

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

// The compatible additions (store scope, resource directory, catalog view
// and omissions, tool result digest, revision and truncation, decision
// reason) survive both encodings.
func TestAdditionsRoundTrip(t *testing.T) {
	values := []any{
		PreStep{V: 1, Session: "s1", Step: "1", Tools: []Tool{{Name: "skill", Owner: "o"}}, Project: "web-app", ResourceDir: "/var/skills"},
		SkillCall{V: 1, Session: "s1", Call: "c1", Args: SkillArgs{Name: "x"}, Project: "p_1", ResourceDir: "/r"},
		Catalog{V: 1, Session: "s1", Step: "1", ID: "i", Role: "user", Text: "t", Source: CatalogSource{
			Kind: SourceKindCatalog, Producer: "p", Update: "initial", Entries: []Entry{{Name: "a", Description: ""}}, Digest: "d",
			Omitted: 3, View: &View{Revision: 42, Instance: "member-a"}}},
		ToolResult{V: 1, Session: "s1", Call: "c1", Text: "t", Value: &SkillValue{Name: "a", Provider: "store", Content: "c",
			Digest: "ab12", Revision: 7, Truncated: &Truncated{Kept: 1024, Total: 4096}}},
		Decision{V: 1, Session: "s1", Step: "1", Outcome: OutcomeEmpty, Reason: "no skills"},
		CatalogHead{V: 1, Session: "s1", Step: "1", Digest: "d", View: View{Revision: 42, Instance: "member-a"}},
	}
	for _, v := range values {
		for _, enc := range []Encoding{Msgpack, JSON} {
			b, err := Encode(enc, v)
			if err != nil {
				t.Fatal(err)
			}
			got, err := decodeAny(enc, v, b)
			if err != nil {
				t.Fatalf("%T %v: %v", v, enc, err)
			}
			if !reflect.DeepEqual(got, v) {
				t.Errorf("%T %v:\n got %+v\nwant %+v", v, enc, got, v)
			}
		}
	}
}

// A catalog head names its session and step; one without is refused.
func TestCatalogHeadBadInput(t *testing.T) {
	for name, b := range map[string]string{
		"no session": `{"v":1,"step":"1","digest":"d","view":{"revision":0,"instance":""}}`,
		"no step":    `{"v":1,"session":"s1","digest":"d","view":{"revision":0,"instance":""}}`,
		"bad v":      `{"v":2,"session":"s1","step":"1"}`,
		"not a map":  `[1]`,
	} {
		if _, err := DecodeCatalogHead(JSON, []byte(b)); !errors.Is(err, ErrBadPayload) {
			t.Errorf("%s: %v, want a bad payload error", name, err)
		}
	}
}

func TestAdditionsBadInput(t *testing.T) {
	tools := []m{{"name": "skill", "owner": "skillstream"}}
	cases := []struct {
		kv             []any
		field, problem string
	}{
		{[]any{"project", "a b"}, "project", "not a project id"},
		{[]any{"project", "../x"}, "project", "not a project id"},
		{[]any{"resourceDir", "relative/dir"}, "resourceDir", "not an absolute path"},
		{[]any{"resourceDir", "/a/../b"}, "resourceDir", "not a clean path"},
		{[]any{"resourceDir", "/a\nb"}, "resourceDir", "control character"},
		{[]any{"project", 5}, "project", "want string"},
		{[]any{"minStoreEpoch", "a b"}, "minStoreEpoch", "not a store epoch"},
		{[]any{"minStoreEpoch", strings.Repeat("e", 65)}, "minStoreEpoch", "not a store epoch"},
		{[]any{"minStoreEpoch", 5}, "minStoreEpoch", "want string"},
	}
	for _, c := range cases {
		kv := append([]any{"v", 1, "session", "s1", "step", "1", "tools", tools}, c.kv...)
		_, err := DecodePreStep(Msgpack, mp(t, kv...))
		fieldErr(t, err, c.field, c.problem)
		kv = append([]any{"v", 1, "session", "s1", "call", "c", "args", m{"name": "x"}}, c.kv...)
		_, err = DecodeSkillCall(Msgpack, mp(t, kv...))
		fieldErr(t, err, c.field, c.problem)
	}
}
