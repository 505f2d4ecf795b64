package catalog_test

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/catalog"
)

// workedExample is the skill set of the worked example: four skills
// covering escaping, capping, user-only and model-only invocation.
func workedExample() []catalog.Summary {
	return []catalog.Summary{
		{Name: "z-skill", Description: strings.Repeat("Long   description ", 5), Invocation: catalog.Invocation{ModelInvocable: true, UserInvocable: true}},
		{Name: "a-skill", Description: "Use {{placeholder}} <safely> & carefully.", Invocation: catalog.Invocation{ModelInvocable: true, UserInvocable: true}},
		{Name: "model-only-skill", Description: "Model-only skill.", Invocation: catalog.Invocation{ModelInvocable: true, UserInvocable: false}},
		{Name: "user-only-skill", Description: "User-only skill.", Invocation: catalog.Invocation{ModelInvocable: false, UserInvocable: true}},
	}
}

func TestWorkedExample(t *testing.T) {
	entries := catalog.Entries(workedExample(), 50)
	var lines []string
	for _, e := range entries {
		lines = append(lines, catalog.Line(e))
	}
	want := []string{
		"- `a-skill`: Use {{placeholder}} &lt;safely&gt; &amp; carefully.",
		"- `model-only-skill`: Model-only skill.",
		"- `z-skill`: Long description Long description Long descript...",
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("entry lines:\n%s\nwant:\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
	// Entries keep descriptions unescaped.
	if got := entries[0].Description; got != "Use {{placeholder}} <safely> & carefully." {
		t.Errorf("entry description %q is not the unescaped normalised text", got)
	}
	text := catalog.Render(catalog.UpdateInitial, entries)
	block := "<available_skills>\n" + strings.Join(want, "\n") + "\n</available_skills>"
	if !strings.Contains(text, block) {
		t.Errorf("initial catalog does not hold the block %q", block)
	}
	golden(t, "worked-example", text)

	sum := sha256.Sum256([]byte(strings.Join(want, "\n")))
	if got, want := catalog.Digest(entries), hex.EncodeToString(sum[:]); got != want {
		t.Errorf("Digest = %s, want %s", got, want)
	}
	if d, ok := catalog.Recognize(text); !ok || d != catalog.Digest(entries) {
		t.Errorf("Recognize(initial) = %q, %v; want %q, true", d, ok, catalog.Digest(entries))
	}
}

func TestRenderReplacement(t *testing.T) {
	entries := catalog.Entries([]catalog.Summary{
		{Name: "new-skill", Description: "Added \"later\"\n& quoted.", Invocation: catalog.Invocation{ModelInvocable: true}},
		{Name: "a-skill", Description: "Use {{placeholder}} <safely> & carefully.", Invocation: catalog.Invocation{ModelInvocable: true}},
	}, catalog.DefaultDescriptionMaxLength)
	text := catalog.Render(catalog.UpdateReplacement, entries)
	golden(t, "replacement", text)
	if d, ok := catalog.Recognize(text); !ok || d != catalog.Digest(entries) {
		t.Errorf("Recognize(replacement) = %q, %v; want %q, true", d, ok, catalog.Digest(entries))
	}
}

func TestRenderTombstone(t *testing.T) {
	for _, entries := range [][]catalog.Entry{nil, {}} {
		text := catalog.Render(catalog.UpdateReplacement, entries)
		golden(t, "tombstone", text)
		if !strings.Contains(text, "<available_skills>\n</available_skills>") {
			t.Errorf("tombstone has something between the tags:\n%s", text)
		}
		empty := sha256.Sum256(nil)
		d, ok := catalog.Recognize(text)
		if !ok || d != hex.EncodeToString(empty[:]) || d != catalog.Digest(entries) {
			t.Errorf("Recognize(tombstone) = %q, %v; want digest of the empty string", d, ok)
		}
	}
}

func TestDigestEmpty(t *testing.T) {
	const sha256OfEmpty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	if got := catalog.Digest(nil); got != sha256OfEmpty {
		t.Errorf("Digest(nil) = %s, want %s", got, sha256OfEmpty)
	}
}

func TestEntriesOrderAndFilter(t *testing.T) {
	mi := catalog.Invocation{ModelInvocable: true}
	got := catalog.Entries([]catalog.Summary{
		{Name: "b", Description: "second b", Invocation: mi},
		{Name: "a-2", Description: "a2", Invocation: mi},
		{Name: "a", Description: "a", Invocation: mi},
		{Name: "b", Description: "duplicate b", Invocation: mi},
		{Name: "a-1", Description: "a1", Invocation: catalog.Invocation{UserInvocable: true}},
		{Name: "Bad_Name", Description: "outside the grammar", Invocation: mi},
		{Name: "0", Description: "digit", Invocation: mi},
	}, 500)
	want := []catalog.Entry{{Name: "0", Description: "digit"}, {Name: "a", Description: "a"}, {Name: "a-2", Description: "a2"}, {Name: "b", Description: "second b"}}
	if len(got) != len(want) {
		t.Fatalf("Entries = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("entry %d = %v, want %v", i, got[i], want[i])
		}
	}
	if e := catalog.Entries(nil, 500); e == nil || len(e) != 0 {
		t.Errorf("Entries(nil) = %#v, want an empty non-nil slice", e)
	}
}

func TestRecognizeRejects(t *testing.T) {
	valid := catalog.Render(catalog.UpdateInitial, []catalog.Entry{{Name: "a-skill", Description: "A."}})
	for _, text := range []string{
		"",
		"hello",
		"<available_skills>",
		"<available_skills>\n",
		"<available_skills></available_skills>",
		"<available_skills>\n- `a`: x",
		"<available_skills>\n- `a`: x\n</available_skills",
		"<available_skills>\nnot an entry\n</available_skills>",
		"<available_skills>\n- `Bad_Name`: x\n</available_skills>",
		"<available_skills>\n- `a`: x\n\n</available_skills>",
		"<available_skills>\n- `a` x\n</available_skills>",
		"<available_skills>\n- `a`: x\n</available_skills>trailing",
		"prefix<available_skills>\n- `a`: x\n</available_skills>",
		"<available_skills>\n\n</available_skills>",
		strings.Replace(valid, "- `a-skill`", "* `a-skill`", 1),
		valid[:strings.Index(valid, "</available_skills>")+5],
		"\xff\xfe<available_skills>\n\xff\n</available_skills>",
	} {
		if d, ok := catalog.Recognize(text); ok {
			t.Errorf("Recognize(%q) = %q, true; want not recognisable", text, d)
		}
	}
}

func TestRecognizeAccepts(t *testing.T) {
	for _, tc := range []struct{ text, inner string }{
		{"<available_skills>\n</available_skills>", ""},
		{"<available_skills>\n- `a`: x\n</available_skills>", "- `a`: x"},
		{"x\n<available_skills>\n- `a`: \n- `b`: y `z`: w\n</available_skills>\ny", "- `a`: \n- `b`: y `z`: w"},
	} {
		sum := sha256.Sum256([]byte(tc.inner))
		d, ok := catalog.Recognize(tc.text)
		if !ok || d != hex.EncodeToString(sum[:]) {
			t.Errorf("Recognize(%q) = %q, %v; want digest of %q", tc.text, d, ok, tc.inner)
		}
	}
}
