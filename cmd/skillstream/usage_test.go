package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/processor/usage"
)

// usageLog publishes records on a session stream the way a processor and
// its workers would.
type usageLog struct {
	t   *testing.T
	js  jetstream.JetStream
	nc  *nats.Conn
	ctx context.Context
	// project is named by the skill calls load and fail publish.
	project string
}

func newUsageLog(t *testing.T) (*usageLog, string) {
	srv := natstest.Start(t, natstest.WithTCP())
	nc := srv.Connect()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "SESSIONS", Subjects: []string{"ev.>"}}); err != nil {
		t.Fatal(err)
	}
	return &usageLog{t: t, js: js, nc: nc, ctx: ctx}, srv.URL()
}

// pub publishes v on ev.<sid>.<kind> and returns its stream sequence.
func (l *usageLog) pub(sid string, kind events.Kind, enc events.Encoding, v any) uint64 {
	l.t.Helper()
	b, err := events.Encode(enc, v)
	if err != nil {
		l.t.Fatal(err)
	}
	return l.raw(events.Subject("ev", sid, kind), enc.ContentType(), b)
}

func (l *usageLog) raw(subject, contentType string, b []byte) uint64 {
	l.t.Helper()
	m := nats.NewMsg(subject)
	m.Data = b
	m.Header.Set(events.HeaderContentType, contentType)
	ack, err := l.js.PublishMsg(l.ctx, m)
	if err != nil {
		l.t.Fatal(err)
	}
	return ack.Sequence
}

func (l *usageLog) catalog(sid, update string, names ...string) {
	c := events.Catalog{V: 1, Session: sid, Step: "s" + update, ID: "c", Role: "user", Text: strings.Repeat("x", 10*len(names)+1),
		Source: events.CatalogSource{Kind: events.SourceKindCatalog, Producer: "test", Update: update, Entries: []events.Entry{}}}
	for _, n := range names {
		c.Source.Entries = append(c.Source.Entries, events.Entry{Name: n, Description: "d"})
	}
	l.pub(sid, events.KindCatalog, events.Msgpack, c)
}

func (l *usageLog) load(sid, call, name, digest string, rev uint64) {
	seq := l.pub(sid, events.KindSkillCall, events.Msgpack, events.SkillCall{V: 1, Session: sid, Call: call, Args: events.SkillArgs{Name: name}, Project: l.project})
	l.pub(sid, events.KindToolResult, events.Msgpack, events.ToolResult{V: 1, Session: sid, Call: call, TriggerSeq: seq, Text: "body",
		Value: &events.SkillValue{Name: name, Provider: "store", Digest: digest, Revision: rev}})
}

func (l *usageLog) fail(sid, call, name, code string) {
	seq := l.pub(sid, events.KindSkillCall, events.JSON, events.SkillCall{V: 1, Session: sid, Call: call, Args: events.SkillArgs{Name: name}})
	l.pub(sid, events.KindToolResult, events.JSON, events.ToolResult{V: 1, Session: sid, Call: call, TriggerSeq: seq, IsError: true, Text: "no",
		Error: &events.ErrorInfo{Code: code, Message: "no"}})
}

// recordWorkload writes the known workload: a loaded 4 times (2 sessions)
// and failed once (provider), b loaded twice and invoked once, one unknown
// name, c listed and never used, two foreign records, and catalogs of each
// kind.
func (l *usageLog) recordWorkload() {
	l.pub("s1", events.KindPreStep, events.Msgpack, events.PreStep{V: 1, Session: "s1", Step: "1", Tools: []events.Tool{}})
	l.catalog("s1", "initial", "a", "b", "c")
	for i, call := range []string{"c1", "c2", "c3"} {
		l.load("s1", call, "a", "d1aaaaaaaaaaaaaaaa", uint64(5+i%2))
	}
	l.load("s1", "c4", "b", "d2bbbbbbbbbbbbbbbb", 6)
	l.fail("s1", "c5", "zzz", events.CodeUnknown)
	l.fail("s1", "c6", "a", events.CodeProvider)
	l.catalog("s2", "initial", "a", "b", "c")
	l.catalog("s2", "replacement", "a", "b")
	l.load("s2", "c1", "a", "d1aaaaaaaaaaaaaaaa", 6)
	l.load("s2", "c2", "b", "d2bbbbbbbbbbbbbbbb", 6)
	l.raw("ev.s2.skill.invocation", events.ContentTypeJSON, []byte(`{"v":1,"session":"s2","name":"b","extra":[1,2]}`))
	l.raw("ev.s2.tool.result", events.ContentTypeJSON, []byte(`hello, not a tool result`))
	l.raw("ev.s2.catalog.append", "text/plain", []byte(`{}`))
	l.catalog("s2", "replacement")
}

func TestUsageCountsRecordedWorkload(t *testing.T) {
	l, url := newUsageLog(t)
	l.recordWorkload()

	code, stdout, stderr := runMain(t, "usage", "--nats-url", url, "--json")
	if code != 0 {
		t.Fatalf("usage --json: exit %d, stderr:\n%s", code, stderr)
	}
	var rep usage.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("decode %s: %v", stdout, err)
	}
	rows := map[string]usage.SkillUsage{}
	for _, s := range rep.Skills {
		rows[s.Name] = s
	}
	check := func(name string, loads, inv, sessions int, errs map[string]int) {
		t.Helper()
		r, ok := rows[name]
		if !ok {
			t.Fatalf("no row for %s in %s", name, stdout)
		}
		if r.Loads != loads || r.Invocations != inv || r.Sessions != sessions || len(r.Errors) != len(errs) {
			t.Errorf("%s: loads %d invocations %d sessions %d errors %v, want %d %d %d %v", name, r.Loads, r.Invocations, r.Sessions, r.Errors, loads, inv, sessions, errs)
		}
		for c, n := range errs {
			if r.Errors[c] != n {
				t.Errorf("%s: errors[%s] = %d, want %d", name, c, r.Errors[c], n)
			}
		}
	}
	check("a", 4, 0, 2, map[string]int{"provider": 1})
	check("b", 2, 1, 2, nil)
	check("_unknown", 0, 0, 1, map[string]int{"unknown": 1})
	if len(rep.Skills) != 3 {
		t.Errorf("%d rows, want 3: %+v", len(rep.Skills), rep.Skills)
	}
	if got := rows["a"].Revisions; len(got) != 2 || got[0] != 5 || got[1] != 6 {
		t.Errorf("a revisions = %v, want [5 6]", got)
	}
	if got := rows["a"].Digests; len(got) != 1 || got[0] != "d1aaaaaaaaaaaaaaaa" {
		t.Errorf("a digests = %v", got)
	}
	if !rows["a"].First.Before(rows["a"].Last) {
		t.Errorf("a first %v not before last %v", rows["a"].First, rows["a"].Last)
	}
	if got := rep.ListedNeverUsed; len(got) != 1 || got[0] != "c" {
		t.Errorf("listedNeverUsed = %v, want [c]", got)
	}
	ap := rep.Catalogs.Appends
	if ap["initial"] != 2 || ap["replacement"] != 1 || ap["tombstone"] != 1 {
		t.Errorf("appends = %v, want 2 initial, 1 replacement, 1 tombstone", ap)
	}
	// Text: 31 + 31 + 21 + 1 bytes.
	if rep.Catalogs.TextBytes != 84 || rep.Catalogs.EstimatedTokens != 21 || rep.Catalogs.Listed != 3 {
		t.Errorf("catalogs = %+v, want 84 bytes, 21 tokens, 3 listed", rep.Catalogs)
	}
	if rep.Unreadable != 2 {
		t.Errorf("unreadable = %d, want 2 (the two foreign records)", rep.Unreadable)
	}
	// 4 catalogs + 8 results + 1 invocation + 2 foreign; the triggers are not read.
	if rep.Records != 15 {
		t.Errorf("records = %d, want 15", rep.Records)
	}

	code, stdout, stderr = runMain(t, "usage", "--nats-url", url)
	if code != 0 {
		t.Fatalf("usage: exit %d, stderr:\n%s", code, stderr)
	}
	for _, want := range []string{
		"15 records read, 2 unreadable",
		"catalogs: 2 initial, 1 replacement, 1 tombstone; 84 bytes of text (~21 tokens at 4 bytes a token); 3 skills listed",
		"listed, never used (1): c\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
	for _, row := range [][]string{
		{"a", "4", "0", "provider=1", "2"},
		{"b", "2", "1", "0", "2"},
		{"_unknown", "0", "0", "unknown=1", "1"},
	} {
		if !hasRow(stdout, row) {
			t.Errorf("table lacks row %v:\n%s", row, stdout)
		}
	}
}

// hasRow reports whether a line of out starts with the fields of row.
func hasRow(out string, row []string) bool {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= len(row) && strings.Join(f[:len(row)], " ") == strings.Join(row, " ") {
			return true
		}
	}
	return false
}

func TestUsageWindowAndSession(t *testing.T) {
	l, url := newUsageLog(t)
	l.load("s1", "old", "a", "d1", 1)
	st, err := l.js.Stream(l.ctx, "SESSIONS")
	if err != nil {
		t.Fatal(err)
	}
	last, err := st.GetLastMsgForSubject(l.ctx, "ev.s1.tool.result")
	if err != nil {
		t.Fatal(err)
	}
	since := last.Time.Add(time.Nanosecond).UTC().Format(time.RFC3339Nano)
	l.load("s1", "new", "b", "d2", 2)
	l.load("s2", "new", "b", "d2", 2)

	code, stdout, stderr := runMain(t, "usage", "--nats-url", url, "--json", "--since", since)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep usage.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Skills) != 1 || rep.Skills[0].Name != "b" || rep.Skills[0].Loads != 2 || rep.Records != 2 {
		t.Errorf("--since after the old load: %+v, want only b's 2 loads", rep)
	}
	code, stdout, stderr = runMain(t, "usage", "--nats-url", url, "--json", "--session", "s1")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rep = usage.Report{}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Skills) != 2 || rep.Records != 2 {
		t.Errorf("--session s1: %+v, want a and b once each", rep)
	}
}

func TestUsageProject(t *testing.T) {
	l, url := newUsageLog(t)
	l.pub("s1", events.KindPreStep, events.Msgpack, events.PreStep{V: 1, Session: "s1", Step: "1", Tools: []events.Tool{}, Project: "web"})
	l.project = "web"
	l.load("s1", "c1", "a", "d1", 1)
	l.project = "api"
	l.pub("s2", events.KindPreStep, events.Msgpack, events.PreStep{V: 1, Session: "s2", Step: "1", Tools: []events.Tool{}, Project: "api"})
	l.load("s2", "c1", "b", "d1", 1)
	code, stdout, stderr := runMain(t, "usage", "--nats-url", url, "--json", "--project", "web")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep usage.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Skills) != 1 || rep.Skills[0].Name != "a" {
		t.Errorf("--project web: %+v, want a only", rep)
	}
}

func TestUsageBadInput(t *testing.T) {
	l, url := newUsageLog(t)
	if _, err := l.js.CreateStream(l.ctx, jetstream.StreamConfig{Name: "ORDERS", Subjects: []string{"orders.>"}}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--stream", "ORDERS"}, 1, "stream ORDERS holds subjects [\"orders.>\"], not ev.>: not a skillstream session stream"},
		{[]string{"--stream", "NOPE"}, 1, "stream NOPE does not exist"},
		{[]string{"--since", "yesterday"}, 2, `--since "yesterday": want a duration`},
		{[]string{"--since", "-5m"}, 2, "must be positive"},
		{[]string{"--session", "a.b"}, 2, "--session"},
		{[]string{"one", "two"}, 2, "usage takes at most one skill name"},
		{[]string{"Bad Name"}, 2, `usage "Bad Name": invalid skill name`},
		{[]string{"deploy", "--rebuild"}, 2, "it takes no skill name"},
	}
	for _, tt := range tests {
		code, _, stderr := runMain(t, append([]string{"usage", "--nats-url", url}, tt.args...)...)
		if code != tt.code || !strings.Contains(stderr, tt.want) {
			t.Errorf("usage %v: exit %d, stderr %q; want exit %d and %q", tt.args, code, stderr, tt.code, tt.want)
		}
	}
	// Garbage only, on every kind the reader reads: counted, never a crash.
	for _, kind := range []string{"catalog.append", "tool.result", "skill.invocation", "other.kind"} {
		l.raw("ev.s1."+kind, events.ContentTypeMsgpack, []byte{0xc1, 0xff, 0x00})
	}
	l.raw("ev.s1.tool.result", events.ContentTypeMsgpack, nil)
	code, stdout, stderr := runMain(t, "usage", "--nats-url", url, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep usage.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Records != 4 || rep.Unreadable != 4 || len(rep.Skills) != 0 {
		t.Errorf("garbage: %+v, want 4 records read, all unreadable", rep)
	}
	// Names that are not skill names (huge, spaced) get one row, _invalid.
	l.fail("s1", "h1", strings.Repeat("x", 100000), events.CodeInvalidName)
	l.fail("s1", "h2", "Bad Name", events.CodeInvalidName)
	l.raw("ev.s1.skill.invocation", events.ContentTypeJSON, []byte(`{"name":"../../etc"}`))
	code, stdout, stderr = runMain(t, "usage", "--nats-url", url, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rep = usage.Report{}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if len(rep.Skills) != 1 || rep.Skills[0].Name != usage.InvalidSkill || rep.Skills[0].Errors["invalid_name"] != 2 || rep.Skills[0].Invocations != 1 {
		t.Errorf("hostile names: %+v, want one _invalid row with 2 errors and 1 invocation", rep.Skills)
	}
}

// search publishes a search of query answered with the names found.
func (l *usageLog) search(sid, call, query string, names ...string) {
	seq := l.pub(sid, events.KindSkillSearch, events.Msgpack, events.SkillSearch{V: 1, Session: sid, Call: call, Args: events.SearchArgs{Query: query}})
	v := &events.SearchValue{Query: query, Total: len(names), Results: []events.Entry{}}
	for _, n := range names {
		v.Results = append(v.Results, events.Entry{Name: n, Description: "d"})
	}
	l.pub(sid, events.KindToolResult, events.Msgpack, events.ToolResult{V: 1, Session: sid, Call: call, TriggerSeq: seq, Text: "t", Search: v})
}

// TestUsageSearches: the report counts searches per session, the skills
// found then loaded and the queries that found nothing, in the table and
// under --json's searches key, beside the keys it always had.
func TestUsageSearches(t *testing.T) {
	l, url := newUsageLog(t)
	l.search("s1", "q1", "deploy", "k8s-deploy", "deploy-preview")
	l.load("s1", "c1", "k8s-deploy", "d1", 1)
	l.search("s1", "q2", "quantum \"chromodynamics\"")
	l.search("s2", "q1", "quantum \"chromodynamics\"")
	l.fail("s2", "c1", "zzz", events.CodeUnknown)

	code, stdout, stderr := runMain(t, "usage", "--nats-url", url, "--json")
	if code != 0 {
		t.Fatalf("usage --json: exit %d, stderr:\n%s", code, stderr)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &keys); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"stream", "prefix", "records", "unreadable", "skills", "catalogs", "listedNeverUsed", "searches"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("--json lacks key %q", k)
		}
	}
	var s map[string]json.RawMessage
	json.Unmarshal(keys["searches"], &s)
	for _, k := range []string{"searches", "found", "noMatch", "errors", "sessions", "perSession", "foundThenLoaded", "bySession", "skills", "noMatchQueries", "noMatchOther"} {
		if _, ok := s[k]; !ok {
			t.Errorf("--json searches lack key %q: %s", k, keys["searches"])
		}
	}
	var rep usage.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	su := rep.Searches
	if su.Searches != 3 || su.Found != 1 || su.NoMatch != 2 || su.Sessions != 2 || su.FoundThenLoaded != 1 ||
		len(su.NoMatchQueries) != 1 || su.NoMatchQueries[0].Count != 2 {
		t.Errorf("searches %+v", su)
	}

	code, stdout, stderr = runMain(t, "usage", "--nats-url", url)
	if code != 0 {
		t.Fatalf("usage: exit %d, stderr:\n%s", code, stderr)
	}
	for _, want := range []string{
		"searches: 3 in 2 sessions (1.5 per session): 1 found skills, 2 found nothing, 0 failed (0); 1 skills found then loaded\n",
		`found nothing (2): "quantum \"chromodynamics\"" ×2` + "\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("table lacks %q:\n%s", want, stdout)
		}
	}
	for _, row := range [][]string{
		{"k8s-deploy", "1", "1", "1"},
		{"deploy-preview", "1", "1", "0"},
		{"s1", "2", "1", "1"},
		{"s2", "1", "1", "0"},
		{"_unknown", "0", "0", "unknown=1", "1"},
	} {
		if !hasRow(stdout, row) {
			t.Errorf("table lacks row %v:\n%s", row, stdout)
		}
	}
}
