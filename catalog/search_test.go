package catalog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/skillstream/skillstream/catalog"
)

// fakeIndex ranks skills by how many of the query's words their name and
// description hold, then by name: enough to test what the tool makes of
// an index's answer.
type fakeIndex struct {
	skills []catalog.Summary
	err    error
	// asked records each search: text, limit, offset.
	asked []string
}

func (f *fakeIndex) Search(_ context.Context, text string, limit, offset int) (catalog.Matches, error) {
	f.asked = append(f.asked, fmt.Sprintf("%q %d %d", text, limit, offset))
	if f.err != nil {
		return catalog.Matches{}, f.err
	}
	type scored struct {
		s catalog.Summary
		n int
	}
	var hits []scored
	for _, s := range f.skills {
		n := 0
		for w := range strings.FieldsSeq(strings.ToLower(text)) {
			if strings.Contains(strings.ToLower(s.Name+" "+s.Description), w) {
				n++
			}
		}
		if n > 0 {
			hits = append(hits, scored{s, n})
		}
	}
	slices.SortStableFunc(hits, func(a, b scored) int {
		if a.n != b.n {
			return b.n - a.n
		}
		return strings.Compare(a.s.Name, b.s.Name)
	})
	m := catalog.Matches{Total: len(hits)}
	for i := offset; i < len(hits) && i < offset+limit; i++ {
		m.Skills = append(m.Skills, hits[i].s)
	}
	return m, nil
}

// searchSkills are a few skills of a fleet, with descriptions to normalise,
// cap and escape.
func searchSkills() []catalog.Summary {
	return []catalog.Summary{
		sized("pdf-tables", catalog.SourceStoreGlobal, "Extract   tables from PDF files\ninto CSV <fast> & exact."),
		sized("pdf-forms", catalog.SourceStoreGlobal, "Fill PDF forms from JSON data."),
		sized("pdf-merge", catalog.SourceBundled, "Merge several PDF files into one, keeping bookmarks. "+strings.Repeat("Long text. ", 80)),
		sized("csv-clean", catalog.SourceCustom, "Clean CSV files: encodings, separators, quotes."),
		sized("release-notes", catalog.SourceProject, "Write release notes from merged pull requests."),
	}
}

func search(t testing.TB, args catalog.SearchArgs, opts catalog.Options) catalog.SearchResult {
	t.Helper()
	return catalog.Search(context.Background(), &fakeIndex{skills: searchSkills()}, args, opts)
}

func TestSearchToolDefinition(t *testing.T) {
	d := catalog.SearchToolDefinition()
	if d.Name != "skill_search" || catalog.SearchToolName != "skill_search" {
		t.Errorf("name %q", d.Name)
	}
	if !json.Valid([]byte(d.Parameters)) {
		t.Errorf("parameters are not JSON: %s", d.Parameters)
	}
	var schema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal([]byte(d.Parameters), &schema); err != nil || schema.Type != "object" ||
		len(schema.Properties) != 3 || !slices.Equal(schema.Required, []string{"query"}) {
		t.Errorf("schema %+v (%v)", schema, err)
	}
	golden(t, "search-tool-definition", "name: "+d.Name+"\ndescription: "+d.Description+"\nparameters: "+d.Parameters)
}

func TestParseSearchArgs(t *testing.T) {
	long := strings.Repeat("é", 512)
	for _, tc := range []struct {
		name string
		args catalog.SearchArgs
		want catalog.SearchRequest
		err  string // "" = valid; else the message after "invalid search arguments: "
	}{
		{"defaults", catalog.SearchArgs{Query: "pdf tables"}, catalog.SearchRequest{Query: "pdf tables", Limit: 8}, ""},
		{"trimmed", catalog.SearchArgs{Query: " \t\n pdf\ttables\u3000 "}, catalog.SearchRequest{Query: "pdf\ttables", Limit: 8}, ""},
		{"512 code points", catalog.SearchArgs{Query: " " + long + " "}, catalog.SearchRequest{Query: long, Limit: 8}, ""},
		{"limit and offset", catalog.SearchArgs{Query: "x", Limit: int64(16), Offset: uint64(100000)}, catalog.SearchRequest{Query: "x", Limit: 16, Offset: 100000}, ""},
		{"integral floats", catalog.SearchArgs{Query: "x", Limit: 1.0, Offset: float32(0)}, catalog.SearchRequest{Query: "x", Limit: 1}, ""},
		{"small ints", catalog.SearchArgs{Query: "x", Limit: int8(3), Offset: uint16(7)}, catalog.SearchRequest{Query: "x", Limit: 3, Offset: 7}, ""},
		{"missing query", catalog.SearchArgs{}, catalog.SearchRequest{}, "query is missing"},
		{"query a number", catalog.SearchArgs{Query: 12.0}, catalog.SearchRequest{}, "query must be a string, not a number"},
		{"query an array", catalog.SearchArgs{Query: []any{"a"}}, catalog.SearchRequest{}, "query must be a string, not an array"},
		{"query an object", catalog.SearchArgs{Query: map[string]any{}}, catalog.SearchRequest{}, "query must be a string, not an object"},
		{"empty query", catalog.SearchArgs{Query: ""}, catalog.SearchRequest{}, "query is empty"},
		{"blank query", catalog.SearchArgs{Query: " \n\t\u00a0"}, catalog.SearchRequest{}, "query is empty"},
		{"513 code points", catalog.SearchArgs{Query: long + "x"}, catalog.SearchRequest{}, "query has 513 code points once trimmed, at most 512 are allowed"},
		{"control character", catalog.SearchArgs{Query: "pdf\x07tables"}, catalog.SearchRequest{}, "query holds the control character U+0007"},
		{"escape character", catalog.SearchArgs{Query: "pdf\x1b[2J"}, catalog.SearchRequest{}, "query holds the control character U+001B"},
		{"delete", catalog.SearchArgs{Query: "x\x7f"}, catalog.SearchRequest{}, "query holds the control character U+007F"},
		{"not UTF-8", catalog.SearchArgs{Query: "pdf \xff tables"}, catalog.SearchRequest{}, "query is not valid UTF-8"},
		{"limit 0", catalog.SearchArgs{Query: "x", Limit: 0}, catalog.SearchRequest{}, "limit must be an integer from 1 to 16, not 0"},
		{"limit 17", catalog.SearchArgs{Query: "x", Limit: int64(17)}, catalog.SearchRequest{}, "limit must be an integer from 1 to 16, not 17"},
		{"limit a string", catalog.SearchArgs{Query: "x", Limit: "5"}, catalog.SearchRequest{}, "limit must be an integer from 1 to 16, not a string"},
		{"limit a fraction", catalog.SearchArgs{Query: "x", Limit: 2.5}, catalog.SearchRequest{}, "limit must be an integer from 1 to 16, not 2.5"},
		{"limit a boolean", catalog.SearchArgs{Query: "x", Limit: true}, catalog.SearchRequest{}, "limit must be an integer from 1 to 16, not a boolean"},
		{"offset -1", catalog.SearchArgs{Query: "x", Offset: int64(-1)}, catalog.SearchRequest{}, "offset must be an integer from 0 to 100000, not -1"},
		{"offset 100001", catalog.SearchArgs{Query: "x", Offset: int64(100001)}, catalog.SearchRequest{}, "offset must be an integer from 0 to 100000, not 100001"},
		{"offset huge", catalog.SearchArgs{Query: "x", Offset: uint64(1 << 63)}, catalog.SearchRequest{}, "offset must be an integer from 0 to 100000, not 9223372036854775808"},
		{"offset a string", catalog.SearchArgs{Query: "x", Offset: "0"}, catalog.SearchRequest{}, "offset must be an integer from 0 to 100000, not a string"},
		{"query first", catalog.SearchArgs{Query: "", Limit: 0, Offset: -1}, catalog.SearchRequest{}, "query is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := catalog.ParseSearchArgs(tc.args)
			if tc.err == "" {
				if err != nil || got != tc.want {
					t.Fatalf("ParseSearchArgs = %+v, %v; want %+v", got, err, tc.want)
				}
				return
			}
			if err == nil {
				t.Fatalf("ParseSearchArgs = %+v, want the error %q", got, tc.err)
			}
			if err.Code != catalog.CodeBadRequest || err.Message != "invalid search arguments: "+tc.err {
				t.Fatalf("error %s %q, want bad_request %q", err.Code, err.Message, "invalid search arguments: "+tc.err)
			}
		})
	}
}

// TestSearchErrors: an argument error is the exact error text, and the
// index is not consulted; an index error is a provider error.
func TestSearchErrors(t *testing.T) {
	var lines []string
	for _, tc := range []struct {
		name string
		args catalog.SearchArgs
	}{
		{"missing", catalog.SearchArgs{}},
		{"empty", catalog.SearchArgs{Query: "   "}},
		{"too long", catalog.SearchArgs{Query: strings.Repeat("a", 513)}},
		{"control", catalog.SearchArgs{Query: "a\x00b"}},
		{"not UTF-8", catalog.SearchArgs{Query: "\xc3"}},
		{"limit 0", catalog.SearchArgs{Query: "pdf", Limit: 0}},
		{"limit 17", catalog.SearchArgs{Query: "pdf", Limit: 17}},
		{"limit string", catalog.SearchArgs{Query: "pdf", Limit: "8"}},
		{"offset -1", catalog.SearchArgs{Query: "pdf", Offset: -1}},
		{"offset 100001", catalog.SearchArgs{Query: "pdf", Offset: 100001}},
	} {
		idx := &fakeIndex{skills: searchSkills()}
		r := catalog.Search(context.Background(), idx, tc.args, catalog.DefaultOptions())
		if r.Value != nil || r.Err == nil || r.Err.Code != catalog.CodeBadRequest {
			t.Fatalf("%s: %+v, want a bad_request error", tc.name, r)
		}
		if len(idx.asked) != 0 {
			t.Errorf("%s: the index was asked %v", tc.name, idx.asked)
		}
		if !strings.HasPrefix(r.Text(), "Error: invalid search arguments: ") || r.Text() != "Error: "+r.Err.Message {
			t.Errorf("%s: text %q", tc.name, r.Text())
		}
		lines = append(lines, tc.name+": "+r.Text())
	}
	golden(t, "search-errors", strings.Join(lines, "\n"))

	idx := &fakeIndex{err: errors.New("search index closed")}
	r := catalog.Search(context.Background(), idx, catalog.SearchArgs{Query: "pdf"}, catalog.DefaultOptions())
	if r.Err == nil || r.Err.Code != catalog.CodeProvider || r.Text() != "Error: search index closed" {
		t.Errorf("index error: %+v %q", r, r.Text())
	}
	if r := (catalog.SearchResult{}); r.Text() != "Error: skill search failed" {
		t.Errorf("zero result reads %q", r.Text())
	}
}

func TestSearchResults(t *testing.T) {
	opts := catalog.DefaultOptions()
	opts.DescriptionMaxLength = 120
	// Every PDF skill matches; all three are shown.
	r := search(t, catalog.SearchArgs{Query: `  PDF "files" & <more>  `}, opts)
	if r.Err != nil {
		t.Fatal(r.Err)
	}
	golden(t, "search-results", r.Text())
	v := r.Value
	if v.Query != `PDF "files" & <more>` || v.Offset != 0 || v.Total != 3 || len(v.Results) != 3 {
		t.Fatalf("value %+v", v)
	}
	if !strings.HasPrefix(r.Text(), `<skill_search_results query="PDF &quot;files&quot; &amp; &lt;more>" shown="3" total="3">`+"\n") ||
		strings.Contains(r.Text(), "More matches") || strings.HasSuffix(r.Text(), "\n") {
		t.Errorf("text:\n%s", r.Text())
	}
	// Descriptions in the value are normalised and capped, not escaped;
	// the text shows them as catalog entries.
	for _, e := range v.Results {
		want := catalog.Entries([]catalog.Summary{byName(searchSkills(), e.Name)}, opts.DescriptionMaxLength)[0]
		if e != want {
			t.Errorf("result %+v, want the catalog entry %+v", e, want)
		}
		if !strings.Contains(r.Text(), "\n"+catalog.Line(e)+"\n") {
			t.Errorf("text does not show %q", catalog.Line(e))
		}
	}
	if v.Results[2].Name != "pdf-merge" || utf8.RuneCountInString(v.Results[2].Description) != 120 {
		t.Errorf("long description not capped: %+v", v.Results[2])
	}

	// A page with more after it says how to see them.
	r = search(t, catalog.SearchArgs{Query: "pdf csv files", Limit: 2}, opts)
	golden(t, "search-results-more", r.Text())
	if v := r.Value; v.Total != 4 || len(v.Results) != 2 ||
		!strings.Contains(r.Text(), "</skill_search_results>\nMore matches: call `skill_search` again with \"offset\": 2.\n\nLoad a skill") {
		t.Errorf("first page: %+v\n%s", v, r.Text())
	}
	// The next page from there.
	r = search(t, catalog.SearchArgs{Query: "pdf csv files", Limit: 2, Offset: 2}, opts)
	if v := r.Value; v.Offset != 2 || v.Total != 4 || len(v.Results) != 2 || strings.Contains(r.Text(), "More matches") ||
		!strings.Contains(r.Text(), `shown="2" total="4"`) {
		t.Errorf("last page: %+v\n%s", v, r.Text())
	}
	r = search(t, catalog.SearchArgs{Query: "pdf csv files", Limit: 1, Offset: 2}, opts)
	if !strings.Contains(r.Text(), "\"offset\": 3.") {
		t.Errorf("middle page:\n%s", r.Text())
	}
}

func byName(skills []catalog.Summary, name string) catalog.Summary {
	for _, s := range skills {
		if s.Name == name {
			return s
		}
	}
	return catalog.Summary{}
}

func TestSearchNoMatch(t *testing.T) {
	r := search(t, catalog.SearchArgs{Query: `kubernetes "helm" <charts>`}, catalog.DefaultOptions())
	golden(t, "search-no-match", r.Text())
	if r.Err != nil || r.Value.Total != 0 || len(r.Value.Results) != 0 || r.Value.Results == nil {
		t.Fatalf("%+v", r)
	}
	want := `No available skill matches "kubernetes &quot;helm&quot; &lt;charts>". Continue without a skill, or search again with other words.`
	if r.Text() != want {
		t.Errorf("text %q, want %q", r.Text(), want)
	}
	// An offset past every match reads the same; the value says how many
	// there are.
	r = search(t, catalog.SearchArgs{Query: "pdf", Offset: 3}, catalog.DefaultOptions())
	if r.Err != nil || r.Value.Total != 3 || len(r.Value.Results) != 0 || r.Value.Offset != 3 ||
		r.Text() != `No available skill matches "pdf". Continue without a skill, or search again with other words.` {
		t.Errorf("offset past the matches: %+v %q", r.Value, r.Text())
	}
}

// TestSearchShowsOnlyCatalogEntries: a match that could not be a catalog
// entry is not shown, and never more than the limit.
func TestSearchShowsOnlyCatalogEntries(t *testing.T) {
	hidden := sized("pdf-hidden", catalog.SourceBundled, "PDF tool hidden from the model.")
	hidden.Invocation.ModelInvocable = false
	bad := sized("PDF Bad`", catalog.SourceBundled, "PDF with a bad name.")
	idx := &fakeIndex{skills: append(searchSkills(), hidden, bad)}
	r := catalog.Search(context.Background(), idx, catalog.SearchArgs{Query: "pdf", Limit: 16}, catalog.DefaultOptions())
	for _, e := range r.Value.Results {
		if e.Name == hidden.Name || e.Name == bad.Name {
			t.Errorf("shown %q", e.Name)
		}
	}
	if len(r.Value.Results) != 3 {
		t.Errorf("shown %d, want 3", len(r.Value.Results))
	}
	many := &manyIndex{n: 40}
	r = catalog.Search(context.Background(), many, catalog.SearchArgs{Query: "x", Limit: 4}, catalog.DefaultOptions())
	if len(r.Value.Results) != 4 || r.Value.Total != 40 {
		t.Errorf("an index that answers too much: %d shown of %d", len(r.Value.Results), r.Value.Total)
	}
}

// manyIndex answers every search with n matches, whatever the limit.
type manyIndex struct{ n int }

func (m *manyIndex) Search(context.Context, string, int, int) (catalog.Matches, error) {
	out := catalog.Matches{Total: m.n}
	for i := range m.n {
		out.Skills = append(out.Skills, sized(fmt.Sprintf("s-%02d", i), catalog.SourceUser, "d"))
	}
	return out, nil
}

func TestSearchVisible(t *testing.T) {
	const us = "skillstream"
	skill := catalog.Tool{Name: "skill", Owner: us}
	find := catalog.Tool{Name: "skill_search", Owner: us}
	other := func(name string) catalog.Tool { return catalog.Tool{Name: name, Owner: "someone"} }
	for _, tc := range []struct {
		tools []catalog.Tool
		want  bool
	}{
		{[]catalog.Tool{skill, find}, true},
		{[]catalog.Tool{find, other("bash"), skill}, true},
		{[]catalog.Tool{skill}, false},
		{[]catalog.Tool{find}, false},
		{[]catalog.Tool{skill, other("skill_search"), find}, false},
		{[]catalog.Tool{other("skill"), skill, find}, false},
		{nil, false},
	} {
		if got := catalog.SearchVisible(tc.tools, us); got != tc.want {
			t.Errorf("SearchVisible(%v) = %v, want %v", tc.tools, got, tc.want)
		}
		on := catalog.DefaultOptions()
		on.SkillSearch = true
		if got := on.Offer(tc.tools, us).SearchOffered; got != tc.want {
			t.Errorf("Offer(%v) offered %v, want %v", tc.tools, got, tc.want)
		}
		if catalog.DefaultOptions().Offer(tc.tools, us).SearchOffered {
			t.Errorf("Offer(%v) offered search with the option off", tc.tools)
		}
	}
}

func TestOptionsListedMax(t *testing.T) {
	o := catalog.DefaultOptions()
	o.ListedMax = -1
	if err := o.Validate(); err == nil || !errors.Is(err, catalog.ErrInvalidOptions) || !strings.Contains(err.Error(), "listed max") {
		t.Errorf("ListedMax -1: %v", err)
	}
	o.ListedMax = 0
	if err := o.Validate(); err != nil {
		t.Error(err)
	}
	if d := catalog.DefaultOptions(); d.SkillSearch || d.ListedMax != 0 || d.SearchOffered {
		t.Errorf("defaults %+v turn search on", d)
	}
}

// offered prepares skills for a session to which search is offered.
func offered(t testing.TB, skills []catalog.Summary, maxLen, listedMax int) (catalog.View, string) {
	t.Helper()
	opts := catalog.DefaultOptions()
	opts.MaxLength, opts.ListedMax, opts.SkillSearch, opts.SearchOffered = maxLen, listedMax, true, true
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

// TestOfferedCatalogListsFewer: with search offered, a list over its
// limits leaves whole entries out, lowest precedence first and the last
// name first within a source, keeps every description of those it shows,
// and ends with the notice pointing to skill_search.
func TestOfferedCatalogListsFewer(t *testing.T) {
	skills := shortenSkills()
	v, text := offered(t, skills, 0, 5)
	golden(t, "search-notice-initial", text)
	var names []string
	for _, e := range v.Entries {
		names = append(names, e.Name)
		if e.Bare || e.Description == "" {
			t.Errorf("entry %s lost its description", e.Name)
		}
	}
	// Left out first: bundled-b, bundled-a, user-a.
	if want := []string{"custom-a", "project-a", "project-b", "store-glob", "store-proj"}; !slices.Equal(names, want) {
		t.Errorf("listed %v, want %v", names, want)
	}
	notice := "(3 more skills are available but not listed here. Call the `skill_search` tool to find them by what they do.)"
	if v.Omitted != 3 || catalog.SearchNotice(3) != notice || !strings.HasSuffix(inner(t, text), "\n"+notice) {
		t.Errorf("omitted %d; list:\n%s", v.Omitted, inner(t, text))
	}
	if strings.Contains(text, "Shortened to fit") {
		t.Error("the size limit's notice in an offered catalog")
	}
	// The digest is over the whole text between the tags, notice included.
	if d, ok := catalog.Recognize(text); !ok || d != v.Digest {
		t.Errorf("Recognize = %q, %v; want %q", d, ok, v.Digest)
	}
	if v.Digest == catalog.Digest(v.Entries) {
		t.Error("the digest leaves the notice out")
	}
	// The replacement form, and the user invocation line after it.
	rep := catalog.DecideView(true, v, catalog.History{Published: true, Visible: true, Digest: "other"})
	golden(t, "search-notice-replacement", rep.Text)
	if d, ok := catalog.Recognize(rep.Text); !ok || d != v.Digest || rep.Update != catalog.UpdateReplacement {
		t.Errorf("replacement: Recognize = %q, %v", d, ok)
	}
	if !strings.HasSuffix(inner(t, rep.Text), "\n"+notice) {
		t.Errorf("replacement list:\n%s", inner(t, rep.Text))
	}
}

// TestOfferedCatalogSizeLimit: the catalog size limit still caps the text,
// notice included, by leaving entries out rather than descriptions.
func TestOfferedCatalogSizeLimit(t *testing.T) {
	skills := shortenSkills()
	full := fullLength(t, skills)
	for _, limit := range []int{catalog.MinMaxLength, 400, 700, full - 1} {
		v, text := offered(t, skills, limit, 0)
		in := inner(t, text)
		if n := utf8.RuneCountInString(in); n > limit {
			t.Errorf("limit %d: list of %d code points", limit, n)
		}
		if v.Omitted == 0 || !strings.HasSuffix(in, catalog.SearchNotice(v.Omitted)) {
			t.Errorf("limit %d: nothing left out:\n%s", limit, in)
		}
		for _, e := range v.Entries {
			if e.Bare {
				t.Errorf("limit %d: %s shown without its description", limit, e.Name)
			}
		}
		// One more entry would not have fitted: the list is as long as it
		// can be.
		if len(v.Entries)+v.Omitted != len(skills) {
			t.Errorf("limit %d: %d + %d entries", limit, len(v.Entries), v.Omitted)
		}
	}
	// Nothing fits but the notice: the list is the notice alone, not a
	// tombstone.
	long := strings.Repeat("x", 60)
	var big []catalog.Summary
	for i := range 3 {
		big = append(big, sized(fmt.Sprintf("%s-%d", long, i), catalog.SourceUser, strings.Repeat("word ", 40)))
	}
	v, text := offered(t, big, catalog.MinMaxLength, 0)
	if len(v.Entries) != 0 || v.Omitted != 3 || inner(t, text) != catalog.SearchNotice(3) {
		t.Errorf("nothing shown: %d entries, %d omitted, list %q", len(v.Entries), v.Omitted, inner(t, text))
	}
	if d, ok := catalog.Recognize(text); !ok || d != v.Digest {
		t.Errorf("Recognize = %q, %v", d, ok)
	}
}

// TestNotOfferedKeepsEveryByte: with the option off, or on but not offered
// to the session, every catalog is what it was; offered with nothing to
// leave out, too.
func TestNotOfferedKeepsEveryByte(t *testing.T) {
	r := newRand()
	for iter := range 100 {
		skills := randomSkills(r, 1+r.IntN(40))
		limit := catalog.MinMaxLength + r.IntN(3000)
		_, want := prepared(t, skills, limit)
		on := catalog.DefaultOptions()
		on.MaxLength, on.SkillSearch, on.ListedMax = limit, true, 1+r.IntN(10)
		v := catalog.Prepare(catalog.Snapshot{Skills: skills, Complete: true}, on)
		if got := v.Text(catalog.UpdateInitial); got != want || v.Search {
			t.Fatalf("iteration %d: option on, not offered: the catalog changed", iter)
		}
		// Offered, but within both limits: the same text.
		on.SearchOffered, on.ListedMax, on.MaxLength = true, 0, 0
		_, unlimited := prepared(t, skills, 0)
		if got := catalog.Prepare(catalog.Snapshot{Skills: skills, Complete: true}, on).Text(catalog.UpdateInitial); got != unlimited {
			t.Fatalf("iteration %d: offered within the limits: the catalog changed", iter)
		}
	}
}

// TestOfferedProperties: over random skills and limits, an offered list
// keeps both limits, never shows a bare entry, and is recognised with its
// digest; a change of what it leaves out changes the digest.
func TestOfferedProperties(t *testing.T) {
	r := newRand()
	for iter := range 300 {
		skills := randomSkills(r, 1+r.IntN(60))
		limit := catalog.MinMaxLength + r.IntN(3000)
		listed := r.IntN(20)
		v, text := offered(t, skills, limit, listed)
		in := inner(t, text)
		if n := utf8.RuneCountInString(in); n > limit {
			t.Fatalf("iteration %d: %d code points over %d", iter, n, limit)
		}
		if listed > 0 && len(v.Entries) > listed {
			t.Fatalf("iteration %d: %d entries listed, at most %d", iter, len(v.Entries), listed)
		}
		if d, ok := catalog.Recognize(text); !ok || d != v.Digest {
			t.Fatalf("iteration %d: Recognize = %q, %v", iter, d, ok)
		}
		for _, e := range v.Entries {
			if e.Bare {
				t.Fatalf("iteration %d: bare entry %s", iter, e.Name)
			}
		}
		if v.Omitted == 0 {
			continue
		}
		extra := append(slices.Clone(skills), sized("zzz-added", "other", "An added skill of the lowest precedence."))
		w, _ := offered(t, extra, limit, listed)
		if w.Digest == v.Digest {
			t.Fatalf("iteration %d: a skill more left out, the same digest", iter)
		}
	}
}

func TestRecognizeSearchNotice(t *testing.T) {
	for _, block := range []string{
		catalog.SearchNotice(1),
		"- `a`: x\n" + catalog.SearchNotice(12),
	} {
		text := "<available_skills>\n" + block + "\n</available_skills>"
		if _, ok := catalog.Recognize(text); !ok {
			t.Errorf("Recognize refused %q", block)
		}
	}
	for _, block := range []string{
		catalog.SearchNotice(0),
		"- `a`: x\n(01 more skills are available but not listed here. Call the `skill_search` tool to find them by what they do.)",
		"- `a`: x\n(x more skills are available but not listed here. Call the `skill_search` tool to find them by what they do.)",
		catalog.SearchNotice(2) + "\n- `a`: x",
		"- `a`: x\n" + catalog.SearchNotice(2) + " ",
	} {
		text := "<available_skills>\n" + block + "\n</available_skills>"
		if _, ok := catalog.Recognize(text); ok {
			t.Errorf("Recognize accepted %q", block)
		}
	}
}

// TestDescribeToolOffered: the MCP description of a host shown the search
// tool leaves whole entries out, with the notice pointing to it.
func TestDescribeToolOffered(t *testing.T) {
	skills := fleetSkills(300)
	opts := catalog.DefaultOptions()
	opts.SkillSearch, opts.SearchOffered = true, true
	got := catalog.DescribeTool(catalog.Snapshot{Skills: skills, Complete: true}, opts, catalog.DefaultToolDescriptionMax)
	if utf16Len(got) > catalog.DefaultToolDescriptionMax || !strings.HasSuffix(got, closing) {
		t.Fatalf("description of %d units:\n%s", utf16Len(got), got)
	}
	if !strings.Contains(got, " more skills are available but not listed here. Call the `skill_search` tool") ||
		strings.Contains(got, "without a description") || strings.Contains(got, "`\n") {
		t.Errorf("description:\n%s", got)
	}
	opts.ListedMax = 2
	got = catalog.DescribeTool(catalog.Snapshot{Skills: skills, Complete: true}, opts, 0)
	if n := strings.Count(got, "\n- `"); n != 2 || !strings.Contains(got, catalog.SearchNotice(298)) {
		t.Errorf("%d entries listed with ListedMax 2:\n%s", n, got)
	}
	// Not offered: the description is as it was.
	opts.SearchOffered = false
	if got := catalog.DescribeTool(catalog.Snapshot{Skills: skills, Complete: true}, opts, catalog.DefaultToolDescriptionMax); got != catalog.DescribeTool(catalog.Snapshot{Skills: skills, Complete: true}, catalog.DefaultOptions(), catalog.DefaultToolDescriptionMax) {
		t.Error("the option on but not offered changed the description")
	}
}

// newRand is the random source of the property tests: seeded, so a
// failure repeats.
func newRand() *rand.Rand { return rand.New(rand.NewPCG(7, 2025)) }

func FuzzSearchArgs(f *testing.F) {
	for _, q := range []string{"pdf tables", "", "  ", "\x07", "\xff", strings.Repeat("é", 513), "a\u0085b", "a\u2028b"} {
		f.Add(q, int64(8), int64(0))
	}
	f.Add("x", int64(0), int64(-1))
	f.Add("x", int64(17), int64(100001))
	f.Fuzz(func(t *testing.T, q string, limit, offset int64) {
		req, err := catalog.ParseSearchArgs(catalog.SearchArgs{Query: q, Limit: limit, Offset: offset})
		if err != nil {
			if err.Code != catalog.CodeBadRequest || !strings.HasPrefix(err.Message, "invalid search arguments: ") {
				t.Fatalf("error %+v", err)
			}
			return
		}
		if req.Query == "" || utf8.RuneCountInString(req.Query) > catalog.MaxQueryLength || !utf8.ValidString(req.Query) ||
			req.Query != strings.TrimSpace(req.Query) || req.Limit < 1 || req.Limit > 16 || req.Offset < 0 || req.Offset > 100000 {
			t.Fatalf("accepted %+v", req)
		}
		r := catalog.Search(context.Background(), &fakeIndex{skills: searchSkills()}, catalog.SearchArgs{Query: q, Limit: limit, Offset: offset}, catalog.DefaultOptions())
		if r.Value == nil || !utf8.ValidString(r.Text()) {
			t.Fatalf("search %+v", r)
		}
	})
}

// TestOfferedCatalogSizes measures what search offered saves at a fleet's
// size (go test ./catalog -run TestOfferedCatalogSizes -v): 298 skills,
// the catalog without a limit, under the default size limit (descriptions
// dropped), and offered search with a few listed maxima (whole entries).
func TestOfferedCatalogSizes(t *testing.T) {
	snap := catalog.Snapshot{Skills: fleetSkills(298), Complete: true}
	measure := func(label string, o catalog.Options) catalog.View {
		v := catalog.Prepare(snap, o)
		text := v.Text(catalog.UpdateInitial)
		bare := 0
		for _, e := range v.Entries {
			if e.Bare {
				bare++
			}
		}
		t.Logf("%-28s %6d bytes, ~%5d tokens: %3d listed (%3d without a description), %3d left out",
			label, len(text), (utf8.RuneCountInString(text)+3)/4, len(v.Entries), bare, v.Omitted)
		return v
	}
	o := catalog.DefaultOptions()
	o.MaxLength = 0
	full := measure("no size limit", o)
	def := measure("size limit 24000", catalog.DefaultOptions())
	if full.Omitted != 0 || def.Omitted != 0 || !slices.ContainsFunc(def.Entries, func(e catalog.Entry) bool { return e.Bare }) {
		t.Fatalf("the size limit did not drop descriptions at 298 skills")
	}
	for _, n := range []int{0, 40, 100} {
		o := catalog.DefaultOptions()
		o.SkillSearch, o.SearchOffered, o.ListedMax = true, true, n
		v := measure(fmt.Sprintf("search offered, listed %d", n), o)
		if n > 0 && (len(v.Entries) != n || v.Omitted != 298-n) {
			t.Errorf("listed max %d: %d listed, %d left out", n, len(v.Entries), v.Omitted)
		}
		for _, e := range v.Entries {
			if e.Bare {
				t.Fatalf("listed max %d: %s without its description", n, e.Name)
			}
		}
	}
}
