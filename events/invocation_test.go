package events

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestInvocationReadsBothForms reads the committed fixtures of a
// skill.invocation written with the instructions twice (in the text and in
// the value's content, as records were written before) and once (in the
// text only, as processors append them now): WithContent gives the same
// invocation from either, in either encoding, and the text, which the
// model reads, is the same byte for byte.
func TestInvocationReadsBothForms(t *testing.T) {
	for _, enc := range []Encoding{Msgpack, JSON} {
		read := func(name string) SkillInvocation {
			t.Helper()
			b, err := os.ReadFile(filepath.Join("testdata", name+fixtureExt(enc)))
			if err != nil {
				t.Fatal(err)
			}
			inv, err := DecodeSkillInvocation(enc, trimNewline(b))
			if err != nil {
				t.Fatal(err)
			}
			return inv
		}
		old, now := read("skillinvocation-twocopies"), read("skillinvocation")
		if now.Value.Content != "" {
			t.Fatalf("%v: the record as appended now carries value.content %q", enc, now.Value.Content)
		}
		if old.Text != now.Text {
			t.Fatalf("%v: the texts differ:\n%q\n%q", enc, old.Text, now.Text)
		}
		if a, b := old.WithContent(), now.WithContent(); !reflect.DeepEqual(a, b) {
			t.Fatalf("%v: the two forms read differently:\n%#v\n%#v", enc, a, b)
		}
		if got := now.WithContent().Value.Content; got != "# PDF tools\n\nUse pdftotext." {
			t.Fatalf("%v: content %q", enc, got)
		}
		if got := old.WithoutContent(); !reflect.DeepEqual(got, now) {
			t.Fatalf("%v: WithoutContent of the old form is not the new one:\n%#v", enc, got)
		}
	}
	for _, text := range []string{"", "Error: x", "<skill_instructions>\nno end"} {
		if got := InstructionsOf(text); got != "" {
			t.Errorf("InstructionsOf(%q) = %q, want none", text, got)
		}
	}
}

func trimNewline(b []byte) []byte {
	if n := len(b); n > 0 && b[n-1] == '\n' {
		return b[:n-1]
	}
	return b
}
