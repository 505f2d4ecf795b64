package catalog_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/skillstream/skillstream/catalog"
)

// detail lengthens the descriptions of shortenSkills.
const detail = " It explains when to use it, what it needs, and what it produces, in some detail."

// sized is a model-invocable skill of the given source.
func sized(name, source, desc string) catalog.Summary {
	return catalog.Summary{Name: name, Description: desc, Source: source, Invocation: catalog.Invocation{ModelInvocable: true}}
}

// inner returns the text between "<available_skills>\n" and
// "\n</available_skills>" of a rendered catalog ("" for an empty block).
func inner(t testing.TB, text string) string {
	t.Helper()
	_, rest, ok := strings.Cut(text, "<available_skills>\n")
	if !ok {
		t.Fatalf("no opening tag in:\n%s", text)
	}
	if strings.HasPrefix(rest, "</available_skills>") {
		return ""
	}
	in, _, ok := strings.Cut(rest, "\n</available_skills>")
	if !ok {
		t.Fatalf("no closing tag in:\n%s", text)
	}
	return in
}

// shortenSkills has one skill of every source, with descriptions long
// enough that a tight limit has to take some.
func shortenSkills() []catalog.Summary {
	return []catalog.Summary{
		sized("project-a", catalog.SourceProject, "Project skill on disk: highest precedence, the last to give way."+detail),
		sized("project-b", catalog.SourceProject, "Another project skill, <kept> & escaped."+detail),
		sized("store-proj", catalog.SourceStoreProject, "Store skill of the session's project scope."+detail),
		sized("custom-a", catalog.SourceCustom, "Skill from a custom root given with --skills-dir."+detail),
		sized("store-glob", catalog.SourceStoreGlobal, "Store skill of the global scope."+detail),
		sized("user-a", catalog.SourceUser, "Skill from the user root."+detail),
		sized("bundled-a", catalog.SourceBundled, "First bundled starter skill."+detail),
		sized("bundled-b", catalog.SourceBundled, "Second bundled starter skill."+detail),
	}
}

// prepared renders the initial catalog of skills under a size limit.
func prepared(t testing.TB, skills []catalog.Summary, maxLen int) (catalog.View, string) {
	t.Helper()
	opts := catalog.DefaultOptions()
	opts.MaxLength = maxLen
	if err := opts.Validate(); err != nil {
		t.Fatal(err)
	}
	v := catalog.Prepare(catalog.Snapshot{Skills: skills, Complete: true}, opts)
	d := catalog.DecideView(true, v, catalog.History{})
	if d.Outcome != catalog.OutcomeAppended || d.Digest != v.Digest || d.Omitted != v.Omitted {
		t.Fatalf("decision %+v does not append the view", d)
	}
	return v, d.Text
}

func fullLength(t testing.TB, skills []catalog.Summary) int {
	_, text := prepared(t, skills, 0)
	return utf8.RuneCountInString(inner(t, text))
}

func TestShortenDescriptionsOnly(t *testing.T) {
	skills := shortenSkills()
	// Room for the notice once both bundled descriptions are gone: each
	// gives back ": " and its text.
	limit := fullLength(t, skills) + 1 + len(catalog.Notice(2, 0)) -
		len(": First bundled starter skill."+detail) - len(": Second bundled starter skill."+detail)
	v, text := prepared(t, skills, limit)
	golden(t, "shortened-descriptions", text)
	in := inner(t, text)
	if n := utf8.RuneCountInString(in); n > limit {
		t.Errorf("list of %d code points, limit %d", n, limit)
	}
	if v.Omitted != 0 {
		t.Errorf("omitted %d, want only descriptions dropped", v.Omitted)
	}
	// Lowest precedence first, the last name first within a source.
	var bare []string
	for _, e := range v.Entries {
		if e.Bare {
			bare = append(bare, e.Name)
			if e.Description != "" {
				t.Errorf("bare entry %s keeps description %q", e.Name, e.Description)
			}
		}
	}
	if want := []string{"bundled-a", "bundled-b"}; !slices.Equal(bare, want) {
		t.Errorf("bare entries %v, want %v", bare, want)
	}
	if !strings.Contains(in, "\n- `bundled-b`\n") || !strings.HasSuffix(in, "\n"+catalog.Notice(2, 0)) {
		t.Errorf("list does not show bare entries and the notice:\n%s", in)
	}
	if d, ok := catalog.Recognize(text); !ok || d != v.Digest || d != catalog.DigestList(v.Entries, v.Omitted) {
		t.Errorf("Recognize = %q, %v; want the view's digest %q", d, ok, v.Digest)
	}
}

func TestShortenEntriesLeftOut(t *testing.T) {
	skills := shortenSkills()
	limit := 250
	v, text := prepared(t, skills, limit)
	golden(t, "shortened-omitted", text)
	if n := utf8.RuneCountInString(inner(t, text)); n > limit {
		t.Errorf("list of %d code points, limit %d", n, limit)
	}
	if v.Omitted == 0 {
		t.Fatal("nothing left out")
	}
	for _, e := range v.Entries {
		if !e.Bare {
			t.Errorf("entry %s keeps its description although entries were left out", e.Name)
		}
	}
	// The survivors are the highest-precedence skills.
	var names []string
	for _, e := range v.Entries {
		names = append(names, e.Name)
	}
	if !slices.Contains(names, "project-a") || slices.Contains(names, "bundled-a") {
		t.Errorf("shown %v: want project skills kept and bundled ones left out first", names)
	}
	if !strings.Contains(text, catalog.Notice(len(v.Entries), v.Omitted)) {
		t.Errorf("notice %q missing", catalog.Notice(len(v.Entries), v.Omitted))
	}
	if d, ok := catalog.Recognize(text); !ok || d != v.Digest {
		t.Errorf("Recognize = %q, %v; want %q", d, ok, v.Digest)
	}
}

func TestShortenLimitExactlyMet(t *testing.T) {
	skills := shortenSkills()
	limit := fullLength(t, skills)
	v, text := prepared(t, skills, limit)
	golden(t, "shortened-exact", text)
	_, whole := prepared(t, skills, 0)
	if text != whole || v.Omitted != 0 || strings.Contains(text, "Shortened") {
		t.Errorf("a list exactly at the limit changed:\n%s", text)
	}
	// One code point less and it must give way.
	_, less := prepared(t, skills, limit-1)
	in := inner(t, less)
	if !strings.Contains(in, "(Shortened to fit") || utf8.RuneCountInString(in) > limit-1 {
		t.Errorf("limit-1 did not shorten within the limit:\n%s", in)
	}
	// A shortened list can meet its limit exactly too.
	sv, _ := prepared(t, skills, limit-1)
	exact := utf8.RuneCountInString(inner(t, catalog.RenderList(catalog.UpdateInitial, sv.Entries, sv.Omitted)))
	ev, etext := prepared(t, skills, exact)
	if ev.Digest != sv.Digest || utf8.RuneCountInString(inner(t, etext)) != exact {
		t.Errorf("a shortened list of %d code points changed under a limit of exactly %d", exact, exact)
	}
}

func TestShortenSmallestLimit(t *testing.T) {
	skills := shortenSkills()
	v, text := prepared(t, skills, catalog.MinMaxLength)
	golden(t, "shortened-smallest", text)
	if n := utf8.RuneCountInString(inner(t, text)); n > catalog.MinMaxLength {
		t.Errorf("list of %d code points, limit %d", n, catalog.MinMaxLength)
	}
	if len(v.Entries)+v.Omitted != len(skills) {
		t.Errorf("%d shown + %d omitted, want %d skills", len(v.Entries), v.Omitted, len(skills))
	}
	if d, ok := catalog.Recognize(text); !ok || d != v.Digest {
		t.Errorf("Recognize = %q, %v; want %q", d, ok, v.Digest)
	}
}

// TestShortenNothingShown: a list that gives way entirely is a notice
// alone, never a tombstone, and never "empty".
func TestShortenNothingShown(t *testing.T) {
	long := strings.Repeat("x", 60)
	var skills []catalog.Summary
	for i := range 3 {
		skills = append(skills, sized(fmt.Sprintf("%s-%d", long, i), catalog.SourceUser, "d"))
	}
	v, text := prepared(t, skills, catalog.MinMaxLength)
	if len(v.Entries) != 0 || v.Omitted != 3 {
		t.Fatalf("shown %d, omitted %d; want 0 and 3", len(v.Entries), v.Omitted)
	}
	if inner(t, text) != catalog.Notice(0, 3) {
		t.Errorf("list %q, want the notice alone", inner(t, text))
	}
	rep := catalog.DecideView(true, v, catalog.History{Published: true, Visible: true, Digest: "other"})
	if strings.Contains(rep.Text, "No skills are currently available") {
		t.Errorf("a list of left-out skills renders as a tombstone:\n%s", rep.Text)
	}
	if d, ok := catalog.Recognize(text); !ok || d != v.Digest {
		t.Errorf("Recognize = %q, %v; want %q", d, ok, v.Digest)
	}
}

func TestRecognizeShortenedRejects(t *testing.T) {
	for _, block := range []string{
		"- `a`\n(Shortened to fit the catalog size limit: x skills listed without a description, 0 skills not listed. Any available skill can still be loaded with the skill tool by its exact name.)",
		catalog.Notice(1, 0) + "\n- `a`",
		"- `a`\n" + catalog.Notice(01, 2) + " ",
		"- `Bad`",
		"- `a`` ",
	} {
		text := "<available_skills>\n" + block + "\n</available_skills>"
		if _, ok := catalog.Recognize(text); ok {
			t.Errorf("Recognize accepted %q", block)
		}
	}
}

// randomSkills draws n skills of random sources, names and descriptions
// (ASCII, escapable characters, multi-byte code points, white space).
func randomSkills(r *rand.Rand, n int) []catalog.Summary {
	sources := []string{catalog.SourceProject, catalog.SourceStoreProject, catalog.SourceCustom,
		catalog.SourceStoreGlobal, catalog.SourceUser, catalog.SourceBundled, "other"}
	pieces := []string{"word", "<b>", "&", "é", "日本", "🙂", "  ", "\t", "long-token", ">"}
	out := make([]catalog.Summary, n)
	for i := range out {
		var b strings.Builder
		for range r.IntN(40) {
			b.WriteString(pieces[r.IntN(len(pieces))])
			b.WriteByte(' ')
		}
		name := fmt.Sprintf("s%d-%x", r.IntN(1000), r.Uint32())
		out[i] = sized(name, sources[r.IntN(len(sources))], b.String())
	}
	return out
}

// TestShortenProperties checks, over random skill sets and limits, that the
// list never exceeds its limit, that the same skills in any order give the
// same text, and that adding a lowest-precedence skill to a shortened
// catalog changes the notice and so the digest.
func TestShortenProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 2024))
	shortened := 0
	defer func() {
		if shortened < 100 {
			t.Errorf("only %d of 300 random catalogs were shortened: the properties were hardly exercised", shortened)
		}
	}()
	for iter := range 300 {
		skills := randomSkills(r, 1+r.IntN(60))
		limit := catalog.MinMaxLength + r.IntN(3000)
		v, text := prepared(t, skills, limit)
		in := inner(t, text)
		if n := utf8.RuneCountInString(in); n > limit {
			t.Fatalf("iteration %d: list of %d code points over the limit %d:\n%s", iter, n, limit, in)
		}
		if d, ok := catalog.Recognize(text); !ok || d != v.Digest {
			t.Fatalf("iteration %d: Recognize = %q, %v; want %q", iter, d, ok, v.Digest)
		}
		shuffled := slices.Clone(skills)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		if _, again := prepared(t, shuffled, limit); again != text {
			t.Fatalf("iteration %d: the same skills in another order gave another text", iter)
		}
		if v.Omitted == 0 && !strings.Contains(in, "(Shortened") {
			continue
		}
		shortened++
		// The new skill is the first to give way: unknown source, last name.
		extra := append(slices.Clone(skills), sized("zzz-added", "other", "An added skill of the lowest precedence."))
		w, more := prepared(t, extra, limit)
		noticeOf := func(s string) string { return s[strings.LastIndexByte(s, '\n')+1:] }
		if noticeOf(inner(t, more)) == noticeOf(in) || w.Digest == v.Digest {
			t.Fatalf("iteration %d: adding a lowest-precedence skill left the notice %q (digest %v)",
				iter, noticeOf(in), w.Digest == v.Digest)
		}
	}
}

func TestPrecedence(t *testing.T) {
	order := []string{"unknown", catalog.SourceBundled, catalog.SourceUser, catalog.SourceStoreGlobal,
		catalog.SourceCustom, catalog.SourceStoreProject, catalog.SourceProject}
	for i := 1; i < len(order); i++ {
		if catalog.Precedence(order[i-1]) >= catalog.Precedence(order[i]) {
			t.Errorf("Precedence(%q) >= Precedence(%q)", order[i-1], order[i])
		}
	}
}
