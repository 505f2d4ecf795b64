package processor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/providers/search"
)

// withSearch turns skill search on, over the real index of the env's
// registry, with at most listed entries in an offered catalog.
func (e *env) withSearch(listed int) func(*Config, *options) {
	e.t.Helper()
	ix := search.New(e.registry, search.Options{})
	e.t.Cleanup(func() { ix.Close() })
	return func(c *Config, o *options) {
		c.Catalog = catalog.DefaultOptions()
		c.Catalog.SkillSearch, c.Catalog.ListedMax = true, listed
		o.search = ix
	}
}

// searchTools is a tool view that holds our skill and skill_search tools.
func searchTools() []events.Tool {
	return append(ourTool(), events.Tool{Name: catalog.SearchToolName, Owner: DefaultToolOwner})
}

// search publishes a skill search and returns its result.
func (w *worker) search(ss events.SkillSearch) events.ToolResult {
	w.t.Helper()
	if ss.V == 0 {
		ss.V = events.Version
	}
	return w.result(w.publish(ss.Session, events.KindSkillSearch, ss, nil))
}

// fleetOnDisk writes skills whose descriptions a search can tell apart.
func (e *env) fleetOnDisk() {
	e.writeSkill("pdf-forms", "Fill PDF forms from JSON data.")
	e.writeSkill("pdf-tables", "Extract tables from PDF files into CSV.")
	e.writeSkill("release-notes", "Write release notes from merged pull requests.")
	e.waitSkills("pdf-forms", "pdf-tables", "release-notes")
}

// storedResults decodes the session's stored tool results.
func (e *env) storedResults(sid string) []events.ToolResult {
	e.t.Helper()
	var out []events.ToolResult
	for _, m := range e.outputs(sid, events.KindToolResult) {
		r, err := events.DecodeToolResultIn(e.cfg.Layout, events.Msgpack, m.Data)
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// TestSkillSearch: a search is answered with the search's exact text and
// typed value, appended once as the call's tool.result; the text is the
// catalog package's for the same index.
func TestSkillSearch(t *testing.T) {
	e := newEnv(t)
	e.fleetOnDisk()
	on := e.withSearch(0)
	p := e.start(on)
	w := e.worker()
	const sid = "search"
	r := w.search(events.SkillSearch{Session: sid, Call: "s1", Cwd: e.cwd, Args: events.SearchArgs{Query: "  fill a PDF form  ", Limit: 1}})
	if r.IsError || r.Search == nil || r.Value != nil {
		t.Fatalf("result %+v", r)
	}
	v := r.Search
	if v.Query != "fill a PDF form" || v.Offset != 0 || v.Total < 1 || len(v.Results) != 1 || v.Results[0].Name != "pdf-forms" ||
		v.Results[0].Description != "Fill PDF forms from JSON data." {
		t.Fatalf("value %+v", v)
	}
	want := catalog.Search(context.Background(), p.search.Searcher(catalog.At(e.cwd)), catalog.SearchArgs{Query: "fill a PDF form", Limit: 1}, p.cfg.Catalog)
	if r.Text != want.Text() || !strings.HasPrefix(r.Text, `<skill_search_results query="fill a PDF form" shown="1" total="`) {
		t.Fatalf("text:\n%s\nwant:\n%s", r.Text, want.Text())
	}
	if v.Total > 1 && !strings.Contains(r.Text, "More matches: call `skill_search` again with \"offset\": 1.") {
		t.Errorf("no paging line:\n%s", r.Text)
	}
	stored := e.storedResults(sid)
	if len(stored) != 1 || stored[0].Text != r.Text || stored[0].Search == nil || stored[0].Call != "s1" {
		t.Fatalf("stored %+v", stored)
	}
	// Nothing matching is a result, not an error.
	r = w.search(events.SkillSearch{Session: sid, Call: "s2", Cwd: e.cwd, Args: events.SearchArgs{Query: "kubernetes helm charts"}})
	if r.IsError || r.Search == nil || len(r.Search.Results) != 0 || r.Search.Total != 0 ||
		r.Text != `No available skill matches "kubernetes helm charts". Continue without a skill, or search again with other words.` {
		t.Fatalf("no match: %+v", r)
	}
	// A search in JSON is answered in JSON; the stored result is msgpack.
	w.enc = events.JSON
	m := w.answer(w.publish(sid, events.KindSkillSearch, events.SkillSearch{V: 1, Session: sid, Call: "s3", Cwd: e.cwd,
		Args: events.SearchArgs{Query: "release notes"}}, nil))
	if m.Header.Get(events.HeaderContentType) != events.ContentTypeJSON || !strings.Contains(string(m.Data), `"value":{"query":"release notes","offset":0,"total":1,"results":[{"name":"release-notes"`) {
		t.Fatalf("JSON answer %s", m.Data)
	}
	if n := len(e.storedResults(sid)); n != 3 {
		t.Fatalf("%d results stored, want 3", n)
	}
	met := e.mustMetrics(t)
	if counter(t, met.searches.WithLabelValues(searchFound)) != 2 || counter(t, met.searches.WithLabelValues(searchNoMatch)) != 1 ||
		counter(t, met.triggers.WithLabelValues("skill-search", searchFound)) != 2 {
		t.Errorf("search metrics: found %v, no_match %v", counter(t, met.searches.WithLabelValues(searchFound)), counter(t, met.searches.WithLabelValues(searchNoMatch)))
	}
}

// TestSkillSearchExactlyOnce: a worker's retry of a search, after another
// call's result, gets the first answer; a member killed between its append
// and its ack leaves one result.
func TestSkillSearchExactlyOnce(t *testing.T) {
	e := newEnv(t)
	e.fleetOnDisk()
	hook, crashes := crashOnce("crash-search")
	e.start(e.withSearch(0), hook)
	w := e.worker()

	r := w.search(events.SkillSearch{Session: "crash-search", Call: "s1", Cwd: e.cwd, Args: events.SearchArgs{Query: "pdf"}})
	if crashes.Load() != 1 {
		t.Fatal("the hook did not crash")
	}
	if r.IsError || r.Search == nil || len(r.Search.Results) != 2 {
		t.Fatalf("result after the crash %+v", r)
	}
	if n := len(e.outputs("crash-search", events.KindToolResult)); n != 1 {
		t.Fatalf("%d results stored, want 1", n)
	}

	const sid = "retry-search"
	r1 := w.search(events.SkillSearch{Session: sid, Call: "s1", Cwd: e.cwd, Args: events.SearchArgs{Query: "pdf"}})
	r2 := w.call(events.SkillCall{Session: sid, Call: "c2", Cwd: e.cwd, Args: events.SkillArgs{Name: "pdf-forms"}})
	// The skills change between the search and its retry: the retry still
	// gets the original answer.
	e.removeSkill("pdf-tables")
	e.waitSkills("pdf-forms", "release-notes")
	again := w.search(events.SkillSearch{Session: sid, Call: "s1", Cwd: e.cwd, Args: events.SearchArgs{Query: "pdf"}})
	if again.Text != r1.Text || again.Call != "s1" || again.IsError || len(again.Search.Results) != 2 {
		t.Fatalf("retry answered %+v, want %+v", again, r1)
	}
	if r2.IsError {
		t.Fatalf("skill call %+v", r2)
	}
	if n := len(e.outputs(sid, events.KindToolResult)); n != 2 {
		t.Fatalf("%d results stored, want 2", n)
	}
	if got := counter(t, e.mustMetrics(t).duplicates.WithLabelValues("skill-search")); got < 2 {
		t.Fatalf("duplicate counter %v, want at least 2 (the crash's redelivery and the retry)", got)
	}
	// Counted once per call: the retry is not counted again (nor is the
	// search of the member that "died" after its append: its counters die
	// with it).
	if got := counter(t, e.mustMetrics(t).searches.WithLabelValues(searchFound)); got != 1 {
		t.Fatalf("searches counted %v, want 1", got)
	}
}

func TestSkillSearchDeadline(t *testing.T) {
	e := newEnv(t)
	e.fleetOnDisk()
	e.start(e.withSearch(0))
	w := e.worker()
	r := w.search(events.SkillSearch{Session: "late", Call: "s1", Cwd: e.cwd, Args: events.SearchArgs{Query: "pdf"}, DeadlineMs: 1})
	if !r.IsError || r.Error == nil || r.Error.Code != events.CodeExpired || r.Text != "Error: skill search expired before it could be handled" {
		t.Fatalf("expired search: %+v", r)
	}
	// A deadline that passes while the index is asked: nothing appended
	// either (the flaky provider holds the snapshot past it).
	e.flaky.delay.Store(int64(300 * time.Millisecond))
	r = w.search(events.SkillSearch{Session: "late", Call: "s2", Cwd: e.cwd, Args: events.SearchArgs{Query: "pdf"},
		DeadlineMs: time.Now().Add(150 * time.Millisecond).UnixMilli()})
	if !r.IsError || r.Error == nil || r.Error.Code != events.CodeExpired {
		t.Fatalf("search past its deadline: %+v", r)
	}
	if got := e.outputs("late", events.KindToolResult); len(got) != 0 {
		t.Fatalf("%d results appended for expired searches", len(got))
	}
}

// TestSkillSearchStoreToken: a search naming a store revision this
// processor cannot reach (it has no store) is answered unavailable,
// nothing appended, as a skill call.
func TestSkillSearchStoreToken(t *testing.T) {
	e := newEnv(t)
	e.fleetOnDisk()
	e.start(e.withSearch(0))
	w := e.worker()
	r := w.search(events.SkillSearch{Session: "fresh", Call: "s1", Cwd: e.cwd, Args: events.SearchArgs{Query: "pdf"}, MinStoreRevision: 7})
	if !r.IsError || r.Error == nil || r.Error.Code != codeUnavailable || !strings.HasPrefix(r.Text, "Error: skill search unavailable: ") {
		t.Fatalf("result %+v", r)
	}
	if got := e.outputs("fresh", events.KindToolResult); len(got) != 0 {
		t.Fatalf("%d results appended", len(got))
	}
}

// TestSkillSearchOff: a processor without the option answers a search
// with a bad_request result saying that search is off, appended once for
// the call; its catalogs and definitions are as they were.
func TestSkillSearchOff(t *testing.T) {
	e := newEnv(t)
	e.fleetOnDisk()
	e.start()
	w := e.worker()
	const sid = "off"
	r := w.search(events.SkillSearch{Session: sid, Call: "s1", Cwd: e.cwd, Args: events.SearchArgs{Query: "pdf"}})
	want := "Error: skill search is off: this processor does not serve the skill_search tool"
	if !r.IsError || r.Error == nil || r.Error.Code != events.CodeBadRequest || r.Text != want || r.Call != "s1" {
		t.Fatalf("result %+v", r)
	}
	stored := e.storedResults(sid)
	if len(stored) != 1 || stored[0].Text != want {
		t.Fatalf("stored %+v", stored)
	}
	if n := len(e.sessionLog(sid)); n != 2 { // the search and its result
		t.Fatalf("%d events in the session, want 2", n)
	}
	if got := counter(t, e.mustMetrics(t).rejects.WithLabelValues(reasonSearchOff)); got != 1 {
		t.Fatalf("rejects{search_off} = %v", got)
	}
	// The tool view holds skill_search: the catalog is not shortened for
	// search, since this processor does not serve it.
	d := w.preStep(events.PreStep{Session: sid, Step: "1", Cwd: e.cwd, Tools: searchTools()})
	if d.Outcome != events.OutcomeAppended || strings.Contains(d.Catalog.Text, "skill_search") || len(d.Catalog.Source.Entries) != 3 {
		t.Fatalf("decision %+v", d)
	}
	defs := requestDefinitions(t, e.srv.Connect(), events.JSON)
	if len(defs) != 1 || defs[0].Name != catalog.ToolName {
		t.Fatalf("definitions %+v", defs)
	}
	if _, err := New(e.srv.Connect(), e.registry, Config{Catalog: catalog.Options{DescriptionMaxLength: 500, SkillSearch: true}}); err == nil ||
		!strings.Contains(err.Error(), "no search index") {
		t.Errorf("search on without an index: %v", err)
	}
}

// TestBadSkillSearches: every argument out of bounds is answered with the
// tool's exact error, appended as the call's result; nothing else is
// appended. A search that is not a payload is answered as a malformed one.
func TestBadSkillSearches(t *testing.T) {
	e := newEnv(t)
	e.fleetOnDisk()
	e.start(e.withSearch(0))
	w := e.worker()
	const sid = "badsearch"
	const prefix = "Error: invalid search arguments: "
	cases := []struct {
		name string
		args any
		want string // the text after prefix
	}{
		{"no query", map[string]any{}, "query is missing"},
		{"empty", map[string]any{"query": "   "}, "query is empty"},
		{"513 code points", map[string]any{"query": strings.Repeat("é", 513)}, "query has 513 code points once trimmed, at most 512 are allowed"},
		{"control character", map[string]any{"query": "pdf\x1b[2J"}, "query holds the control character U+001B"},
		{"invalid UTF-8", map[string]any{"query": "pdf \xff"}, "query is not valid UTF-8"},
		{"query a number", map[string]any{"query": 42}, "query must be a string, not a number"},
		{"limit 0", map[string]any{"query": "pdf", "limit": 0}, "limit must be an integer from 1 to 16, not 0"},
		{"limit 17", map[string]any{"query": "pdf", "limit": 17}, "limit must be an integer from 1 to 16, not 17"},
		{"limit a string", map[string]any{"query": "pdf", "limit": "5"}, "limit must be an integer from 1 to 16, not a string"},
		{"offset -1", map[string]any{"query": "pdf", "offset": -1}, "offset must be an integer from 0 to 100000, not -1"},
		{"offset 100001", map[string]any{"query": "pdf", "offset": 100001}, "offset must be an integer from 0 to 100000, not 100001"},
	}
	results := 0
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			call := fmt.Sprintf("c%d", i)
			p := w.publish(sid, events.KindSkillSearch, nil, mustEncode(t, map[string]any{"v": 1, "session": sid, "call": call, "cwd": e.cwd, "args": c.args}))
			var r events.ToolResult
			decodeAnswer(t, w.answer(p), &r)
			if r.TriggerSeq != p.seq || r.Call != call {
				t.Fatalf("answer to %d/%s: %+v", p.seq, call, r)
			}
			if !r.IsError || r.Error == nil || r.Error.Code != events.CodeBadRequest || r.Text != prefix+c.want || r.Search != nil {
				t.Fatalf("answer %+v, want the text %q", r, prefix+c.want)
			}
			results++
			stored := e.storedResults(sid)
			if len(stored) != results || stored[len(stored)-1].Text != r.Text {
				t.Fatalf("%d results stored, want %d ending with this one", len(stored), results)
			}
		})
	}
	// Unknown arguments are ignored.
	r := w.search(events.SkillSearch{Session: sid, Call: "extra", Cwd: e.cwd, Args: events.SearchArgs{Query: "pdf"}})
	b, _ := events.Encode(events.JSON, map[string]any{"v": 1, "session": sid, "call": "extra2", "cwd": e.cwd,
		"args": map[string]any{"query": "pdf", "mode": "fuzzy", "limit": 8.0}})
	w.enc = events.JSON
	var r2 events.ToolResult
	decodeAnswer(t, w.answer(w.publish(sid, events.KindSkillSearch, nil, b)), &r2)
	if r.IsError || r2.IsError || r2.Text != r.Text {
		t.Fatalf("with an unknown argument: %+v, without: %+v", r2, r)
	}
	results += 2
	// Malformed searches: rejected as malformed; a readable call id gets
	// a bad_request result, an unreadable one nothing.
	w.enc = events.Msgpack
	for _, c := range []struct {
		name, call string
		payload    []byte
		reason     string
	}{
		{"no args", "noargs", mustEncode(t, map[string]any{"v": 1, "session": sid, "call": "noargs"}), reasonField},
		{"args a string", "argstr", mustEncode(t, map[string]any{"v": 1, "session": sid, "call": "argstr", "args": "pdf"}), reasonField},
		{"version 2", "v2", mustEncode(t, map[string]any{"v": 2, "session": sid, "call": "v2", "args": map[string]any{"query": "x"}}), reasonVersion},
		{"relative cwd", "rel", mustEncode(t, map[string]any{"v": 1, "session": sid, "call": "rel", "cwd": "rel/dir", "args": map[string]any{"query": "x"}}), reasonCwd},
		{"undecodable", "", []byte("\xde\xad\xbe\xef"), reasonUndecodable},
	} {
		before := counter(t, e.mustMetrics(t).rejects.WithLabelValues(c.reason))
		var r events.ToolResult
		decodeAnswer(t, w.answer(w.publish(sid, events.KindSkillSearch, nil, c.payload)), &r)
		if !r.IsError || r.Error == nil || r.Error.Code != events.CodeBadRequest || r.Call != c.call ||
			!(strings.HasPrefix(r.Text, "Error: malformed skill search: ") || strings.HasPrefix(r.Text, "Error: skill search refused: ")) {
			t.Fatalf("%s: %+v", c.name, r)
		}
		if c.call != "" {
			results++
		}
		if n := len(e.storedResults(sid)); n != results {
			t.Fatalf("%s: %d results stored, want %d", c.name, n, results)
		}
		if got := counter(t, e.mustMetrics(t).rejects.WithLabelValues(c.reason)); got != before+1 {
			t.Fatalf("%s: rejects{%s} = %v", c.name, c.reason, got)
		}
	}
	e.waitSettled()
	for _, m := range e.sessionLog(sid) {
		if k := strings.TrimPrefix(m.Subject, "ev."+sid+"."); k != string(events.KindSkillSearch) && k != string(events.KindToolResult) {
			t.Errorf("appended %s", m.Subject)
		}
	}
}

func mustEncode(t testing.TB, v any) []byte {
	t.Helper()
	b, err := events.Encode(events.Msgpack, v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestOfferedCatalog: with search on, a pre-step whose tool view holds
// skill_search gets a catalog of at most --catalog-listed-max entries that
// points to the search; a view without it gets the catalog as it always
// was; a view that gains or loses skill_search changes the catalog at the
// next pre-step.
func TestOfferedCatalog(t *testing.T) {
	e := newEnv(t)
	e.fleetOnDisk()
	e.start(e.withSearch(2))
	w := e.worker()
	const sid = "offered"
	notice := "(1 more skills are available but not listed here. Call the `skill_search` tool to find them by what they do.)"

	// Not offered (the view lacks skill_search): every skill, as before.
	d := w.preStep(events.PreStep{Session: sid, Step: "1", Cwd: e.cwd, Tools: ourTool()})
	e.expect(d, events.OutcomeAppended, 1)
	full := d.Catalog.Text
	if strings.Contains(full, "skill_search") || len(d.Catalog.Source.Entries) != 3 || d.Catalog.Source.Omitted != 0 {
		t.Fatalf("catalog not offered search:\n%s", full)
	}
	off := newEnv(t)
	off.fleetOnDisk()
	off.start()
	if want := off.worker().preStep(events.PreStep{Session: sid, Step: "1", Cwd: off.cwd, Tools: ourTool()}).Catalog.Text; strings.ReplaceAll(want, off.cwd, "") != strings.ReplaceAll(full, e.cwd, "") {
		t.Fatalf("the option on changed a catalog not offered search:\n%s\nwant:\n%s", full, want)
	}

	// The view gains skill_search: a replacement listing two, with the
	// notice; the skill left out is the last name.
	d = w.preStep(events.PreStep{Session: sid, Step: "2", Cwd: e.cwd, Tools: searchTools()})
	e.expect(d, events.OutcomeAppended, 2)
	src := d.Catalog.Source
	if src.Update != "replacement" || len(src.Entries) != 2 || src.Omitted != 1 || src.Entries[1].Name != "pdf-tables" ||
		!strings.Contains(d.Catalog.Text, "\n"+notice+"\n</available_skills>") {
		t.Fatalf("offered catalog %+v:\n%s", src, d.Catalog.Text)
	}
	if dg, ok := catalog.Recognize(d.Catalog.Text); !ok || dg != src.Digest {
		t.Fatalf("Recognize = %q, %v; source digest %q", dg, ok, src.Digest)
	}
	// Unchanged while the view stays.
	e.expect(w.preStep(events.PreStep{Session: sid, Step: "3", Cwd: e.cwd, Tools: searchTools()}), events.OutcomeUnchanged, 2)

	// The view loses it again: the whole catalog is back.
	d = w.preStep(events.PreStep{Session: sid, Step: "4", Cwd: e.cwd, Tools: ourTool()})
	e.expect(d, events.OutcomeAppended, 3)
	if len(d.Catalog.Source.Entries) != 3 || strings.Contains(d.Catalog.Text, "skill_search") {
		t.Fatalf("catalog after losing skill_search:\n%s", d.Catalog.Text)
	}

	// A skill_search tool of another owner first in the view is not ours:
	// not offered.
	other := append(ourTool(), events.Tool{Name: catalog.SearchToolName, Owner: "someone"}, events.Tool{Name: catalog.SearchToolName, Owner: DefaultToolOwner})
	e.expect(w.preStep(events.PreStep{Session: sid, Step: "5", Cwd: e.cwd, Tools: other}), events.OutcomeUnchanged, 3)

	// A first pre-step offered search gets the initial template with the
	// notice.
	d = w.preStep(events.PreStep{Session: "offered-first", Step: "1", Cwd: e.cwd, Tools: searchTools()})
	if d.Catalog == nil || d.Catalog.Source.Update != "initial" || !strings.Contains(d.Catalog.Text, notice) {
		t.Fatalf("first offered catalog %+v", d)
	}
}

// requestDefinitions asks skillstream.tool.definitions in enc.
func requestDefinitions(t testing.TB, nc *nats.Conn, enc events.Encoding) []events.ToolDefinition {
	t.Helper()
	m := &nats.Msg{Subject: events.ToolDefinitionsSubject, Header: nats.Header{}}
	if enc == events.Msgpack {
		m.Header.Set(events.HeaderContentType, events.ContentTypeMsgpack)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	reply, err := nc.RequestMsgWithContext(ctx, m)
	if err != nil {
		t.Fatal(err)
	}
	if got := reply.Header.Get(events.HeaderContentType); got != enc.ContentType() {
		t.Fatalf("Content-Type %q, want %q", got, enc.ContentType())
	}
	defs, err := events.DecodeToolDefinitions(enc, reply.Data)
	if err != nil {
		t.Fatal(err)
	}
	return defs
}

// TestToolDefinitions: the definitions endpoint lists every tool served,
// in JSON or msgpack, answered only where requests may be answered; the
// single definition is unchanged.
func TestToolDefinitions(t *testing.T) {
	e := newEnv(t)
	e.start(e.withSearch(0))
	nc := e.srv.Connect()
	for _, enc := range []events.Encoding{events.JSON, events.Msgpack} {
		defs := requestDefinitions(t, nc, enc)
		if len(defs) != 2 || defs[0].Name != "skill" || defs[1].Name != "skill_search" ||
			defs[1].Description != catalog.SearchToolDescription || string(defs[1].Parameters) != catalog.SearchToolParameters ||
			defs[0].Description != catalog.ToolDescription || string(defs[0].Parameters) != catalog.ToolParameters {
			t.Fatalf("%v: definitions %+v", enc, defs)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	one, err := nc.RequestWithContext(ctx, events.ToolDefinitionSubject, nil)
	if err != nil {
		t.Fatal(err)
	}
	var def struct{ Name string }
	if err := json.Unmarshal(one.Data, &def); err != nil || def.Name != "skill" {
		t.Fatalf("single definition %s (%v)", one.Data, err)
	}
	// A reply subject no trigger could name is not answered.
	sub, err := nc.SubscribeSync("forbidden.reply")
	if err != nil {
		t.Fatal(err)
	}
	if err := nc.PublishMsg(&nats.Msg{Subject: events.ToolDefinitionsSubject, Reply: "forbidden.reply"}); err != nil {
		t.Fatal(err)
	}
	if m, err := sub.NextMsg(300 * time.Millisecond); !errors.Is(err, nats.ErrTimeout) {
		t.Fatalf("answered on a forbidden reply subject: %v %v", m, err)
	}
}
