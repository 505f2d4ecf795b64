package events

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/vmihailenco/msgpack/v5"
)

// compileSchemas compiles every embedded schema, by file name.
func compileSchemas(t *testing.T) map[string]*jsonschema.Schema {
	t.Helper()
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	names, err := fs.Glob(Schemas, "schema/*.json")
	if err != nil || len(names) == 0 {
		t.Fatalf("no embedded schemas: %v", err)
	}
	for _, n := range names {
		b, err := Schemas.ReadFile(n)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		if id, _ := doc.(map[string]any)["$id"].(string); id != SchemaBase+filepath.Base(n) {
			t.Fatalf("%s: $id %q, want %q", n, id, SchemaBase+filepath.Base(n))
		}
		if err := c.AddResource(SchemaBase+filepath.Base(n), doc); err != nil {
			t.Fatal(err)
		}
	}
	out := map[string]*jsonschema.Schema{}
	for _, n := range names {
		s, err := c.Compile(SchemaBase + filepath.Base(n))
		if err != nil {
			t.Fatalf("compile %s: %v", n, err)
		}
		out[strings.TrimSuffix(filepath.Base(n), ".json")] = s
	}
	return out
}

// schemaOf maps a fixture file name (decision-rejected.msgpack) to the
// schema of its payload (decision).
func schemaOf(name string) string {
	base := strings.TrimSuffix(name, filepath.Ext(name))
	base, _, _ = strings.Cut(base, "-")
	return base
}

// asJSONValue turns a fixture into the generic value a schema validates:
// JSON as it is, msgpack decoded and re-encoded as JSON.
func asJSONValue(t *testing.T, name string, b []byte) any {
	t.Helper()
	if strings.HasSuffix(name, ".msgpack") {
		var v any
		if err := msgpack.Unmarshal(b, &v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var err error
		if b, err = json.Marshal(v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return v
}

// TestSchemasAcceptFixtures validates every fixture of testdata, in both
// encodings, against its payload's schema.
func TestSchemasAcceptFixtures(t *testing.T) {
	schemas := compileSchemas(t)
	files, err := os.ReadDir("testdata")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, f := range files {
		ext := filepath.Ext(f.Name())
		if f.IsDir() || (ext != ".json" && ext != ".msgpack") {
			continue
		}
		s := schemas[schemaOf(f.Name())]
		if s == nil {
			t.Errorf("%s: no schema %s.json", f.Name(), schemaOf(f.Name()))
			continue
		}
		seen[schemaOf(f.Name())] = true
		b, err := os.ReadFile(filepath.Join("testdata", f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(asJSONValue(t, f.Name(), b)); err != nil {
			t.Errorf("%s: %v", f.Name(), err)
		}
	}
	for name := range schemas {
		if name != "defs" && !seen[name] {
			t.Errorf("schema %s.json has no fixture in testdata", name)
		}
	}
}

// TestSchemasAcceptEncodedPayloads validates payloads this package encodes
// with every optional field set, so that a field added to a struct but not
// to its schema's properties is noticed below.
func TestSchemasAcceptEncodedPayloads(t *testing.T) {
	schemas := compileSchemas(t)
	digest := strings.Repeat("ab", 32)
	cat := Catalog{V: 1, Session: "s", Step: "1", ID: "s:1:catalog.append", Role: "user", Text: "t",
		Source: CatalogSource{Kind: SourceKindCatalog, Producer: "skillstream", Update: "initial",
			Entries: []Entry{{Name: "a", Description: "d"}}, Digest: digest, Omitted: 2, View: &View{Revision: 3, Instance: "i", Epoch: "e"}}}
	payloads := map[string]any{
		"prestep": PreStep{V: 1, Session: "s", Step: "1", Cwd: "/p", Tools: []Tool{{Name: "skill", Owner: "skillstream"}},
			DeadlineMs: 5, Project: "p1", ResourceDir: "/r", MinStoreRevision: 3, MinStoreEpoch: "e1", UserText: []string{"/a b\tc\n"}},
		"skillinvocation": invocationSample,
		"skillcall": SkillCall{V: 1, Session: "s", Call: "c", Cwd: "/p", Args: SkillArgs{Name: "a"}, DeadlineMs: 5, Project: "p1", ResourceDir: "/r",
			MinStoreRevision: 3, MinStoreEpoch: "e1"},
		"compaction": Compaction{V: 1, Session: "s", RetainFrom: 4, Keep: []uint64{1}},
		"catalog":    cat,
		"decision": Decision{V: 1, Session: "s", Step: "1", TriggerSeq: 9, Outcome: OutcomeEmpty, Catalog: &cat,
			Error: &ErrorInfo{Code: "c", Message: "m"}, Reason: ReasonNoSkills,
			Invocations: []SkillInvocation{invocationSample}, Ignored: []Ignored{{Name: "b", Reason: IgnoredLoadFailed}}},
		"toolresult": ToolResult{V: 1, Session: "s", Call: "c", TriggerSeq: 9, IsError: true, Text: "t",
			Value: &SkillValue{Name: "a", Provider: "store", ResourceBase: &ResourceBase{Kind: "directory", Path: "/r/a/0123"},
				Content: "x", Digest: digest, Revision: 4, Truncated: &Truncated{Kept: 1, Total: 2}},
			Error: &ErrorInfo{Code: CodeUnknown, Message: "m"}},
		"tooldefinition": ToolDefinition{Name: "skill", Description: "d", Parameters: RawJSON(`{"type":"object"}`)},
		"tooldefinitions": []ToolDefinition{{Name: "skill", Description: "d", Parameters: RawJSON(`{"type":"object"}`)},
			{Name: "skill_search", Description: "d", Parameters: RawJSON(`{"type":"object"}`)}},
		"skillsearch": SkillSearch{V: 1, Session: "s", Call: "c", Cwd: "/p", Args: SearchArgs{Query: "q", Limit: int64(3), Offset: int64(8)},
			DeadlineMs: 5, Project: "p1", ResourceDir: "/r", MinStoreRevision: 3, MinStoreEpoch: "e1"},
		"cataloghead": CatalogHead{V: 1, Session: "s", Step: "1", Digest: digest, View: View{Revision: 3, Instance: "i", Epoch: "e"}},
	}
	changes := Catalog{V: 1, Session: "s", Step: "2", ID: "s:2:catalog.append", Role: "user", Text: "t",
		Source: CatalogSource{Kind: SourceKindCatalog, Producer: "skillstream", Update: UpdateChanges, Base: 4,
			Changes: []Change{{Name: "a", Change: ChangeChanged, Description: "d"}, {Name: "b", Change: ChangeRemoved}},
			Count:   1, Digest: digest, Omitted: 2, View: &View{Revision: 3, Instance: "i", Epoch: "e"}}}
	searched := ToolResult{V: 1, Session: "s", Call: "c", TriggerSeq: 9, Text: "t",
		Search: &SearchValue{Query: "q", Offset: 2, Total: 3, Results: []Entry{{Name: "a", Description: "d"}},
			Learned: "1-00000000000000ff", LearnedTerms: []LearnedTerm{{Term: "q", Skills: []LearnedWeight{{Name: "a", Weight: 0.25}}}}}}
	type payload struct {
		schema string
		v      any
	}
	var all []payload
	for name, v := range payloads {
		all = append(all, payload{name, v})
	}
	all = append(all, payload{"toolresult", searched}, payload{"catalog", changes},
		payload{"decision", Decision{V: 1, Session: "s", Step: "2", TriggerSeq: 9, Outcome: OutcomeAppended, Catalog: &changes,
			CatalogSeq: 10, CatalogSeqs: []uint64{4, 10}, CurrentList: &CurrentList{Entries: []Entry{{Name: "a", Description: "d"}}, Digest: digest}}})
	for _, pl := range all {
		name, v := pl.schema, pl.v
		for _, enc := range []Encoding{JSON, Msgpack} {
			b, err := Encode(enc, v)
			if err != nil {
				t.Fatal(err)
			}
			file := name + "." + map[Encoding]string{JSON: "json", Msgpack: "msgpack"}[enc]
			doc := asJSONValue(t, file, b)
			if err := schemas[name].Validate(doc); err != nil {
				t.Errorf("%s: %v", file, err)
			}
			// Every key written is a property of the schema.
			checkKeysDeclared(t, file, doc, schemaDoc(t, name))
		}
	}
}

// schemaDoc reads an embedded schema as a generic value.
func schemaDoc(t *testing.T, name string) map[string]any {
	t.Helper()
	b, err := Schemas.ReadFile("schema/" + name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// checkKeysDeclared walks doc and the schema's nested properties together
// and reports keys the schema does not declare ($ref'd parts are skipped).
func checkKeysDeclared(t *testing.T, where string, doc any, schema map[string]any) {
	t.Helper()
	switch d := doc.(type) {
	case map[string]any:
		props, _ := schema["properties"].(map[string]any)
		if props == nil {
			return
		}
		for k, v := range d {
			sub, ok := props[k].(map[string]any)
			if !ok {
				t.Errorf("%s: key %q is not a property of its schema", where, k)
				continue
			}
			checkKeysDeclared(t, where+"."+k, v, sub)
		}
	case []any:
		items, _ := schema["items"].(map[string]any)
		for _, v := range d {
			if items != nil {
				checkKeysDeclared(t, where+"[]", v, items)
			}
		}
	}
}

// TestSchemasRefuse: each schema can fail — a required field missing, a
// wrong type, a value outside its set.
func TestSchemasRefuse(t *testing.T) {
	schemas := compileSchemas(t)
	bad := []struct{ schema, doc string }{
		{"prestep", `{"v":1,"session":"s","step":"1"}`},                  // no tools
		{"prestep", `{"v":2,"session":"s","step":"1","tools":[]}`},       // version
		{"prestep", `{"v":1,"session":"a.b.c","step":"1","tools":[]}`},   // session id: three tokens
		{"prestep", `{"v":1,"session":".b","step":"1","tools":[]}`},      // session id: empty owner
		{"prestep", `{"v":1,"session":"s","step":"a\u0001","tools":[]}`}, // control character
		{"skillcall", `{"v":1,"session":"s","call":"c","args":{}}`},      // no args.name
		{"prestep", `{"v":1,"session":"s","step":"1","tools":[],"cwd":"/` + strings.Repeat("b", 4100) + `"}`},
		{"prestep", `{"v":1,"session":"s","step":"1","tools":[],"cwd":"/` + strings.Repeat("b", 256) + `"}`},
		{"skillcall", `{"v":1,"session":"s","call":"c","args":{"name":"x"},"cwd":"/a\nb"}`},
		{"skillcall", `{"v":1,"session":"s","call":"c","args":{"name":"x"},"resourceDir":"` + strings.Repeat("/a", 513) + `"}`},
		{"compaction", `{"v":1,"session":"s","retainFrom":-1}`}, // negative seq
		{"decision", `{"v":1,"session":"s","step":"1","triggerSeq":1,"outcome":"maybe"}`},
		{"decision", `{"v":1,"session":"s","step":"1","triggerSeq":1,"outcome":"empty","reason":"because"}`},
		{"toolresult", `{"v":1,"session":"s","call":"c","triggerSeq":1,"isError":"no","text":""}`},
		{"toolresult", `{"v":1,"session":"s","call":"c","triggerSeq":1,"isError":true,"text":"","error":{"code":"oops","message":""}}`},
		{"catalog", `{"v":1,"session":"s","step":"1","id":"x","role":"system","text":"","source":{"kind":"skill-catalog","producer":"p","update":"initial","entries":[],"digest":"` + strings.Repeat("0", 64) + `"}}`},
		{"tooldefinition", `{"name":"skill","description":"d"}`},
		{"tooldefinitions", `{"name":"skill","description":"d","parameters":{}}`},                                         // not an array
		{"tooldefinitions", `[{"name":"bash","description":"d","parameters":{}}]`},                                        // not ours
		{"skillsearch", `{"v":1,"session":"s","call":"c"}`},                                                               // no args
		{"skillsearch", `{"v":1,"session":"s","call":"c","args":{"query":"q","limit":17}}`},                               // limit out of bounds
		{"skillsearch", `{"v":1,"session":"s","call":"c","args":{"query":"q","offset":-1}}`},                              // offset out of bounds
		{"toolresult", `{"v":1,"session":"s","call":"c","triggerSeq":1,"isError":false,"text":"","value":{"query":"q"}}`}, // search value without total
		{"toolresult", `{"v":1,"session":"s","call":"c","triggerSeq":1,"isError":false,"text":"","value":{"name":"a","provider":"p","query":"q","offset":0,"total":0,"results":[]}}`},
		{"cataloghead", `{"v":1,"session":"s","step":"1","digest":"ab"}`},                  // no view
		{"prestep", `{"v":1,"session":"s","step":"1","tools":[],"userText":"/pdf"}`},       // not an array
		{"prestep", `{"v":1,"session":"s","step":"1","tools":[],"userText":[1]}`},          // not strings
		{"prestep", `{"v":1,"session":"s","step":"1","tools":[],"userText":["a\u0007b"]}`}, // control character
		{"prestep", `{"v":1,"session":"s","step":"1","tools":[{"name":"` + strings.Repeat("n", 257) + `","owner":"o"}]}`},
		{"prestep", `{"v":1,"session":"s","step":"1","tools":[` + strings.Repeat(`{"name":"t","owner":"o"},`, 1024) + `{"name":"t","owner":"o"}]}`},
		{"decision", `{"v":1,"session":"s","step":"1","triggerSeq":1,"outcome":"empty","ignored":[{"name":"a","reason":"bored"}]}`},
		{"skillinvocation", `{"v":1,"session":"s","step":"1","id":"i","role":"user","name":"a","text":"t","source":{"kind":"skill-catalog","name":"a","form":"instructions"},"value":{"name":"a","provider":"p"}}`},
	}
	for _, b := range bad {
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(b.doc))
		if err != nil {
			t.Fatal(err)
		}
		if err := schemas[b.schema].Validate(doc); err == nil {
			t.Errorf("%s accepts %s", b.schema, b.doc)
		}
	}
}

// TestSchemasCoverStructs: every wire key of a payload struct is a
// property of its schema, and every property is a key of the struct.
func TestSchemasCoverStructs(t *testing.T) {
	types := map[string]any{
		"prestep": PreStep{}, "skillcall": SkillCall{}, "compaction": Compaction{}, "catalog": Catalog{},
		"decision": Decision{}, "toolresult": ToolResult{}, "tooldefinition": ToolDefinition{},
		"cataloghead": CatalogHead{}, "skillinvocation": SkillInvocation{}, "skillsearch": SkillSearch{},
	}
	for name, v := range types {
		var keys []string
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			tag, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			if tag == "-" { // written under another field's key (ToolResult.Search)
				continue
			}
			keys = append(keys, tag)
		}
		props, _ := schemaDoc(t, name)["properties"].(map[string]any)
		var have []string
		for k := range props {
			have = append(have, k)
		}
		slices.Sort(keys)
		slices.Sort(have)
		if !slices.Equal(keys, have) {
			t.Errorf("%s: struct keys %v, schema properties %v", name, keys, have)
		}
	}
}

// TestProtocolExamples validates the JSON examples of protocol.md against
// the schema of the section they stand in.
func TestProtocolExamples(t *testing.T) {
	schemas := compileSchemas(t)
	b, err := os.ReadFile("protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	section, n := "", 0
	lines := strings.Split(string(b), "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if h, ok := strings.CutPrefix(line, "### "); ok {
			name, _, _ := strings.Cut(h, " ")
			section = strings.ToLower(name)
			continue
		}
		if line != "```json" {
			continue
		}
		var block []string
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			block = append(block, lines[i])
		}
		s := schemas[section]
		if s == nil {
			t.Errorf("protocol.md line %d: a JSON example outside a payload section (%q)", i, section)
			continue
		}
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(strings.Join(block, "\n")))
		if err != nil {
			t.Errorf("protocol.md %s example: %v", section, err)
			continue
		}
		if err := s.Validate(doc); err != nil {
			t.Errorf("protocol.md %s example: %v", section, err)
		}
		n++
	}
	if n < 7 {
		t.Errorf("%d JSON examples checked, want one per payload (7)", n)
	}
}

// TestSchemasAdmitBothLayouts: the schemas take a session id of either
// layout (which one a processor accepts is its configuration's), and no
// other form.
func TestSchemasAdmitBothLayouts(t *testing.T) {
	schemas := compileSchemas(t)
	for _, tc := range []struct {
		sid string
		ok  bool
	}{{"s7", true}, {"a1.s7", true}, {"a1.s7.x", false}, {".s7", false}, {"a1.", false}, {"a1.*", false}, {"a b", false}} {
		for name, doc := range map[string]string{
			"prestep":   `{"v":1,"session":"` + tc.sid + `","step":"1","tools":[]}`,
			"skillcall": `{"v":1,"session":"` + tc.sid + `","call":"c","args":{"name":"x"}}`,
			"catalog": `{"v":1,"session":"` + tc.sid + `","step":"1","id":"x","role":"user","text":"","source":{"kind":"skill-catalog","producer":"p","update":"initial","entries":[],"digest":"` +
				strings.Repeat("0", 64) + `"}}`,
		} {
			v, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
			if err != nil {
				t.Fatal(err)
			}
			if err := schemas[name].Validate(v); (err == nil) != tc.ok {
				t.Errorf("%s, session %q: %v, want ok %v", name, tc.sid, err, tc.ok)
			}
		}
	}
}
