package events

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the wire fixtures in testdata/")

func fixtureExt(enc Encoding) string {
	if enc == JSON {
		return ".json"
	}
	return ".msgpack"
}

func sampleNames() []string {
	var names []string
	for name := range samples() {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// TestFixtures pins the wire format: every committed fixture must decode to
// the expected value, and encoding that value must give the fixture's bytes
// again. A renamed key, a changed type or a reordered field breaks it; if the
// change is intended, run `go test ./events -run TestFixtures -update` and
// read the diff.
func TestFixtures(t *testing.T) {
	all := samples()
	for _, name := range sampleNames() {
		want := all[name]
		for _, enc := range []Encoding{Msgpack, JSON} {
			path := filepath.Join("testdata", name+fixtureExt(enc))
			t.Run(filepath.Base(path), func(t *testing.T) {
				encoded, err := Encode(enc, want)
				if err != nil {
					t.Fatal(err)
				}
				if *update {
					if enc == JSON {
						encoded = append(encoded, '\n')
					}
					if err := os.WriteFile(path, encoded, 0o644); err != nil {
						t.Fatal(err)
					}
					return
				}
				fixture, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run with -update to create it)", err)
				}
				fixture = bytes.TrimSuffix(fixture, []byte("\n"))
				got, err := decodeAny(enc, want, fixture)
				if err != nil {
					t.Fatalf("committed fixture no longer decodes: %v", err)
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("committed fixture decodes to\n%#v\nwant\n%#v", got, want)
				}
				if !bytes.Equal(encoded, fixture) {
					t.Errorf("encoding changed:\n got %q\nwant %q", encoded, fixture)
				}
			})
		}
	}
}

// TestFixturesCoverEveryPayload makes sure a fixture exists for each payload
// type, so a new type cannot slip in without one.
func TestFixturesCoverEveryPayload(t *testing.T) {
	seen := map[reflect.Type]bool{}
	for _, v := range samples() {
		seen[reflect.TypeOf(v)] = true
	}
	for _, v := range []any{PreStep{}, SkillCall{}, Compaction{}, Catalog{}, ToolResult{}, Decision{}, ToolDefinition{}, SkillInvocation{},
		SkillSearch{}, []ToolDefinition{}} {
		if !seen[reflect.TypeOf(v)] {
			t.Errorf("no sample/fixture for %T", v)
		}
	}
}
