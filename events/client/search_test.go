package client

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor"
	"github.com/skillstream/skillstream/providers/search"
)

// searchSkills are the project skills of a search world, beside a-skill.
var searchSkills = map[string]string{
	"pdf-forms":   "Fill in PDF forms and flatten them.",
	"rotate-logs": "Rotate and compress the log files of a service.",
	"log-search":  "Find errors in the logs of a service.",
	"deploy-k8s":  "Deploy services to Kubernetes clusters.",
}

// searchWorld is a world of five project skills whose processors serve
// skill search (serve --skill-search) with at most listedMax catalog
// entries (--catalog-listed-max, 0: no count limit).
func searchWorld(t *testing.T, listedMax int) *world {
	t.Helper()
	w := newWorld(t)
	for name, desc := range searchSkills {
		dir := filepath.Join(w.cwd, ".agents", "skills", name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		md := "---\nname: " + name + "\ndescription: " + desc + "\n---\n\nDo it.\n"
		if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ix := search.New(w.registry, search.Options{})
	t.Cleanup(func() { ix.Close() })
	w.options = append(w.options, processor.WithSearcher(ix))
	w.configure = func(cfg *processor.Config) {
		cfg.Catalog = catalog.DefaultOptions()
		cfg.Catalog.SkillSearch = true
		cfg.Catalog.ListedMax = listedMax
	}
	return w
}

// searchTools is a tool view offering search: our skill and skill_search
// tools.
func searchTools() []events.Tool {
	return append(tools(), SkillSearchTool(processor.DefaultToolOwner))
}

// names are the names of a search value's results.
func names(v *events.SearchValue) []string {
	var out []string
	for _, e := range v.Results {
		out = append(out, e.Name)
	}
	return out
}

// A search finds a skill by what it does, answered with the text the
// model reads and the typed value; recorded as one tool.result.
func TestSearchSkills(t *testing.T) {
	w := searchWorld(t, 0)
	w.startProcessor()
	c := w.client()
	ctx := timeout(t)
	r, err := c.SearchSkills(ctx, events.SkillSearch{Session: "find", Call: "s1", Cwd: w.cwd,
		Args: events.SearchArgs{Query: "  fill in a PDF form  "}})
	if err != nil {
		t.Fatal(err)
	}
	want := "<skill_search_results query=\"fill in a PDF form\" shown=\"1\" total=\"1\">\n" +
		"- `pdf-forms`: Fill in PDF forms and flatten them.\n" +
		"</skill_search_results>\n\n" +
		"Load a skill with the `skill` tool by its exact name before following it."
	if r.IsError || r.Text != want {
		t.Fatalf("search: isError %v, text\n%s\nwant\n%s", r.IsError, r.Text, want)
	}
	if r.Session != "find" || r.Call != "s1" || r.Value != nil || r.Search == nil {
		t.Fatalf("search result: %+v", r)
	}
	wantValue := events.SearchValue{Query: "fill in a PDF form", Offset: 0, Total: 1,
		Results: []events.Entry{{Name: "pdf-forms", Description: "Fill in PDF forms and flatten them."}}}
	if got := *r.Search; got.Query != wantValue.Query || got.Offset != 0 || got.Total != 1 || !slices.Equal(got.Results, wantValue.Results) {
		t.Fatalf("search value %+v, want %+v", got, wantValue)
	}
	stored := w.stored("find", events.KindToolResult)
	if len(stored) != 1 {
		t.Fatalf("%d tool results stored, want 1", len(stored))
	}
	got, err := events.DecodeToolResult(events.Msgpack, stored[0].Data)
	if err != nil || got.Text != want || got.Search == nil || got.TriggerSeq != r.TriggerSeq {
		t.Fatalf("stored result %+v, %v", got, err)
	}
	if n := len(w.stored("find", events.KindSkillSearch)); n != 1 {
		t.Errorf("%d searches stored, want 1", n)
	}
}

// Matches come a page at a time: a page short of the total says at which
// offset the next one starts, the last page does not, and an offset past
// them all is answered as no match.
func TestSearchSkillsPages(t *testing.T) {
	w := searchWorld(t, 0)
	w.startProcessor()
	c := w.client(WithEncoding(events.JSON))
	ctx := timeout(t)
	search := func(call string, args events.SearchArgs) events.ToolResult {
		t.Helper()
		r, err := c.SearchSkills(ctx, events.SkillSearch{Session: "pages", Call: call, Cwd: w.cwd, Args: args})
		if err != nil || r.IsError || r.Search == nil {
			t.Fatalf("search %s: %+v, %v", call, r, err)
		}
		return r
	}
	first := search("p1", events.SearchArgs{Query: "logs", Limit: int64(1)})
	more := "\nMore matches: call `skill_search` again with \"offset\": 1.\n"
	if v := first.Search; v.Total != 2 || v.Offset != 0 || len(v.Results) != 1 ||
		!strings.Contains(first.Text, `shown="1" total="2"`) || !strings.Contains(first.Text, more) {
		t.Fatalf("first page: %+v\n%s", *v, first.Text)
	}
	second := search("p2", events.SearchArgs{Query: "logs", Limit: int64(1), Offset: int64(1)})
	if v := second.Search; v.Total != 2 || v.Offset != 1 || len(v.Results) != 1 ||
		!strings.Contains(second.Text, `shown="1" total="2"`) || strings.Contains(second.Text, "More matches") {
		t.Fatalf("second page: %+v\n%s", *v, second.Text)
	}
	both := append(names(first.Search), names(second.Search)...)
	slices.Sort(both)
	if !slices.Equal(both, []string{"log-search", "rotate-logs"}) {
		t.Fatalf("the two pages show %v, want log-search and rotate-logs once each", both)
	}
	past := search("p3", events.SearchArgs{Query: "logs", Offset: int64(2)})
	if want := `No available skill matches "logs". Continue without a skill, or search again with other words.`; past.Text != want ||
		past.Search.Total != 2 || len(past.Search.Results) != 0 {
		t.Fatalf("past the last match: %+v\n%s", *past.Search, past.Text)
	}
}

// Nothing matching is a result for the model, not an error.
func TestSearchSkillsNoMatch(t *testing.T) {
	w := searchWorld(t, 0)
	w.startProcessor()
	c := w.client()
	ctx := timeout(t)
	r, err := c.SearchSkills(ctx, events.SkillSearch{Session: "none", Call: "s1", Cwd: w.cwd,
		Args: events.SearchArgs{Query: `zebra "husbandry" & <care>`}})
	want := `No available skill matches "zebra &quot;husbandry&quot; &amp; &lt;care>". Continue without a skill, or search again with other words.`
	if err != nil || r.IsError || r.Text != want {
		t.Fatalf("no match: %+v, %v\nwant text %s", r, err, want)
	}
	if r.Search == nil || r.Search.Total != 0 || len(r.Search.Results) != 0 || r.Search.Query != `zebra "husbandry" & <care>` {
		t.Fatalf("no match value: %+v", r.Search)
	}
}

// Arguments the tool refuses are answered with its error for the model,
// recorded like any result: not an error of the client.
func TestSearchSkillsBadArguments(t *testing.T) {
	w := searchWorld(t, 0)
	w.startProcessor()
	c := w.client()
	ctx := timeout(t)
	for i, tc := range []struct {
		args events.SearchArgs
		want string
	}{
		{events.SearchArgs{}, "query is missing"},
		{events.SearchArgs{Query: " \t "}, "query is empty"},
		{events.SearchArgs{Query: int64(5)}, "query must be a string, not a number"},
		{events.SearchArgs{Query: "logs", Limit: int64(99)}, "limit must be an integer from 1 to 16, not 99"},
		{events.SearchArgs{Query: "logs", Limit: "4"}, "limit must be an integer from 1 to 16, not a string"},
		{events.SearchArgs{Query: "logs", Offset: -1.5}, "offset must be an integer from 0 to 100000, not -1.5"},
	} {
		call := "bad-" + string(rune('a'+i))
		r, err := c.SearchSkills(ctx, events.SkillSearch{Session: "bad", Call: call, Cwd: w.cwd, Args: tc.args})
		want := "Error: invalid search arguments: " + tc.want
		if err != nil || !r.IsError || r.Text != want || r.Error == nil || r.Error.Code != events.CodeBadRequest || !IsSearchArgsError(r) {
			t.Errorf("%+v: result %+v, error %v; want the text %q and no error", tc.args, r, err, want)
		}
	}
	if n := len(w.stored("bad", events.KindToolResult)); n != 6 {
		t.Errorf("%d results stored, want one per call (6)", n)
	}
}

// A lost answer: the client publishes the search again, and the processor
// answers it from the log with the result it appended.
func TestSearchSkillsRetry(t *testing.T) {
	w := searchWorld(t, 0)
	w.startProcessor()
	c := w.client(WithRetryInterval(200 * time.Millisecond))
	var answers atomic.Int64
	c.dropAnswer = func(*nats.Msg) bool { return answers.Add(1) == 1 }
	ctx := timeout(t)
	var attempts int
	r, err := c.SearchSkills(ctx, events.SkillSearch{Session: "retry", Call: "s1", Cwd: w.cwd,
		Args: events.SearchArgs{Query: "kubernetes deploy"}}, Attempts(&attempts))
	if err != nil || r.IsError || r.Search == nil || !slices.Equal(names(r.Search), []string{"deploy-k8s"}) {
		t.Fatalf("search: %+v, %v", r, err)
	}
	if attempts < 2 || answers.Load() < 2 {
		t.Fatalf("%d attempts, %d answers; want a retry after the lost first answer", attempts, answers.Load())
	}
	triggers := w.stored("retry", events.KindSkillSearch)
	if len(triggers) < 2 || triggers[0].Header.Get(events.HeaderMsgID) == triggers[1].Header.Get(events.HeaderMsgID) {
		t.Fatalf("%d searches stored; want one per attempt with distinct Msg-Ids", len(triggers))
	}
	results := w.stored("retry", events.KindToolResult)
	if len(results) != 1 {
		t.Fatalf("%d tool results stored, want 1", len(results))
	}
	stored, err := events.DecodeToolResult(events.Msgpack, results[0].Data)
	if err != nil || stored.Text != r.Text || stored.TriggerSeq != triggers[0].Sequence {
		t.Errorf("stored result %+v, %v; want the answer's text, for the first attempt (%d)", stored, err, triggers[0].Sequence)
	}
}

// A search carries the client's store floor, as a skill call does.
func TestSearchSkillsStoreFloor(t *testing.T) {
	w := searchWorld(t, 0)
	w.startProcessor()
	c := w.client(WithStoreToken("e1:7"), WithMaxAttempts(1), WithRetryInterval(2*time.Second))
	ctx := timeout(t)
	_, err := c.SearchSkills(ctx, events.SkillSearch{Session: "floor", Call: "s1", Cwd: w.cwd, Args: events.SearchArgs{Query: "logs"}})
	if !errors.Is(err, ErrUnavailable) && !errors.Is(err, ErrTimeout) {
		t.Fatalf("a search for a store this processor does not have: %v", err)
	}
	stored := w.stored("floor", events.KindSkillSearch)
	if len(stored) == 0 {
		t.Fatal("no search stored")
	}
	ss, err := events.DecodeSkillSearch(events.Msgpack, stored[0].Data)
	if err != nil || ss.MinStoreEpoch != "e1" || ss.MinStoreRevision != 7 || ss.DeadlineMs == 0 {
		t.Fatalf("stored search %+v, %v; want minStoreEpoch e1, minStoreRevision 7 and a deadline", ss, err)
	}
}

// Invalid input fails before anything is sent.
func TestSearchSkillsBadInput(t *testing.T) {
	w := newWorld(t)
	c := w.client()
	ctx := timeout(t)
	if _, err := c.SearchSkills(ctx, events.SkillSearch{Session: "a.b", Call: "s1"}); !errors.Is(err, events.ErrBadPayload) || !strings.Contains(err.Error(), `"session"`) {
		t.Fatalf("bad session: %v", err)
	}
	if _, err := c.SearchSkills(ctx, events.SkillSearch{Session: "a"}); !errors.Is(err, events.ErrBadPayload) || !strings.Contains(err.Error(), `"call"`) {
		t.Fatalf("no call id: %v", err)
	}
}

// The definitions list holds both tools with search on, only the skill
// tool without; a processor without search rejects a search.
func TestToolDefinitions(t *testing.T) {
	ctx := timeout(t)
	defs := func(w *world, enc events.Encoding) []string {
		t.Helper()
		ds, err := w.client(WithEncoding(enc)).ToolDefinitions(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, d := range ds {
			out = append(out, d.Name)
			if d.Description == "" || !strings.Contains(string(d.Parameters), `"type":"object"`) {
				t.Errorf("definition %+v", d)
			}
			if d.Name == "skill_search" && (d.Description != catalog.SearchToolDescription || string(d.Parameters) != catalog.SearchToolParameters) {
				t.Errorf("skill_search definition %+v", d)
			}
		}
		return out
	}
	on := searchWorld(t, 0)
	on.startProcessor()
	for _, enc := range []events.Encoding{events.Msgpack, events.JSON} {
		if got := defs(on, enc); !slices.Equal(got, []string{"skill", "skill_search"}) {
			t.Errorf("with search (%v): %v", enc, got)
		}
	}

	off := newWorld(t)
	off.startProcessor()
	if got := defs(off, events.Msgpack); !slices.Equal(got, []string{"skill"}) {
		t.Errorf("without search: %v", got)
	}
	r, err := off.client().SearchSkills(ctx, events.SkillSearch{Session: "off", Call: "s1", Args: events.SearchArgs{Query: "logs"}})
	var re *RejectedError
	if !errors.Is(err, ErrRejected) || !errors.As(err, &re) || re.Code != events.CodeBadRequest || !r.IsError || IsSearchArgsError(r) ||
		!strings.Contains(r.Text, "skill search is off") {
		t.Fatalf("a search sent to a processor without search: %+v, %v", r, err)
	}
}

// A worker whose tool view holds both tools sees a catalog of at most
// --catalog-listed-max skills that says how many more search finds; a view
// with the skill tool alone sees them all.
func TestSearchCatalogNotice(t *testing.T) {
	w := searchWorld(t, 2)
	w.startProcessor()
	c := w.client()
	ctx := timeout(t)
	notice := "(3 more skills are available but not listed here. Call the `skill_search` tool to find them by what they do.)"
	d, err := c.PreStep(ctx, events.PreStep{Session: "offered", Step: "1", Cwd: w.cwd, Tools: searchTools()})
	if err != nil || d.Catalog == nil {
		t.Fatalf("pre-step: %+v, %v", d, err)
	}
	if n := len(d.Catalog.Source.Entries); n != 2 || !strings.Contains(d.Catalog.Text, notice) {
		t.Fatalf("catalog with search offered lists %d entries:\n%s\nwant 2 and the notice", n, d.Catalog.Text)
	}
	d, err = c.PreStep(ctx, events.PreStep{Session: "plain", Step: "1", Cwd: w.cwd, Tools: tools()})
	if err != nil || d.Catalog == nil {
		t.Fatalf("pre-step: %+v, %v", d, err)
	}
	if n := len(d.Catalog.Source.Entries); n != 5 || strings.Contains(d.Catalog.Text, "skill_search") {
		t.Fatalf("catalog without skill_search in the view lists %d entries:\n%s\nwant all 5, no notice", n, d.Catalog.Text)
	}
}
