package projection

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/processor/usage"
)

// sessionLog writes session records as a processor and its workers do:
// each output after the trigger it answers, in msgpack or JSON.
type sessionLog struct {
	t      testing.TB
	js     jetstream.JetStream
	layout events.Layout
	n      int
}

func newSessionLog(t testing.TB, layout events.Layout) (*natstest.Server, *sessionLog) {
	t.Helper()
	srv := natstest.Start(t)
	if _, err := srv.JS.CreateStream(context.Background(), jetstream.StreamConfig{Name: "SESSIONS", Subjects: []string{"ev.>"}, AllowDirect: true}); err != nil {
		t.Fatal(err)
	}
	return srv, &sessionLog{t: t, js: srv.JS, layout: layout}
}

// sid is the id of session i in the log's layout.
func (l *sessionLog) sid(i int) string {
	if l.layout == events.LayoutOwner {
		return "w" + strconv.Itoa(i%3) + ".s" + strconv.Itoa(i)
	}
	return "s" + strconv.Itoa(i)
}

func (l *sessionLog) pub(sid string, kind events.Kind, enc events.Encoding, v any) uint64 {
	l.t.Helper()
	b, err := events.Encode(enc, v)
	if err != nil {
		l.t.Fatal(err)
	}
	return l.raw(events.Subject("ev", sid, kind), enc.ContentType(), b, summary(enc, b, v))
}

// summary is the Usage-Summary header a processor writes on output v
// encoded as b ("" for none): catalogs and loads in msgpack, as a
// processor appends them; JSON ones are read from their payload.
func summary(enc events.Encoding, b []byte, v any) string {
	if enc != events.Msgpack {
		return ""
	}
	switch o := v.(type) {
	case events.Catalog:
		parts, ok := events.SplitCatalog(b)
		if !ok {
			return ""
		}
		return events.UsageSummary{Kind: events.UsageCatalog, Update: events.ReportedUpdate(o.Source), TextBytes: int64(len(o.Text)), Body: events.CatalogBodyKey(parts.Body)}.Header()
	case events.ToolResult:
		if o.IsError || o.Search != nil || o.Value == nil {
			return ""
		}
		return events.UsageSummary{Kind: events.UsageLoad, Skill: o.Value.Name, Digest: o.Value.Digest, Revision: o.Value.Revision}.Header()
	}
	return ""
}

func (l *sessionLog) raw(subject, contentType string, b []byte, usageSummary ...string) uint64 {
	l.t.Helper()
	m := nats.NewMsg(subject)
	m.Data = b
	m.Header.Set(events.HeaderContentType, contentType)
	if len(usageSummary) > 0 && usageSummary[0] != "" {
		m.Header.Set(events.HeaderUsageSummary, usageSummary[0])
	}
	ack, err := l.js.PublishMsg(context.Background(), m)
	if err != nil {
		l.t.Fatal(err)
	}
	return ack.Sequence
}

func (l *sessionLog) call() string {
	l.n++
	return "c" + strconv.Itoa(l.n)
}

func (l *sessionLog) catalog(sid, update string, names ...string) uint64 {
	c := events.Catalog{V: 1, Session: sid, Step: l.call(), ID: "c", Role: "user", Text: strings.Repeat("x", 40*len(names)+3),
		Source: events.CatalogSource{Kind: events.SourceKindCatalog, Producer: "skillstream", Update: update, Entries: []events.Entry{}, Digest: "d"}}
	for _, n := range names {
		c.Source.Entries = append(c.Source.Entries, events.Entry{Name: n, Description: "Does " + n + "."})
	}
	return l.pub(sid, events.KindCatalog, events.Msgpack, c)
}

func (l *sessionLog) changes(sid string, base uint64, add string) {
	l.pub(sid, events.KindCatalog, events.Msgpack, events.Catalog{V: 1, Session: sid, Step: l.call(), ID: "x", Role: "user", Text: "<skill_catalog_changes>" + add,
		Source: events.CatalogSource{Kind: events.SourceKindCatalog, Producer: "skillstream", Update: events.UpdateChanges,
			Base: base, Changes: []events.Change{{Name: add, Change: events.ChangeAdded, Description: "New."}}, Count: 5, Digest: "d2"}})
}

func (l *sessionLog) load(sid, name, digest string, rev uint64) {
	call := l.call()
	seq := l.pub(sid, events.KindSkillCall, events.Msgpack, events.SkillCall{V: 1, Session: sid, Call: call, Args: events.SkillArgs{Name: name}})
	l.pub(sid, events.KindToolResult, events.Msgpack, events.ToolResult{V: 1, Session: sid, Call: call, TriggerSeq: seq, Text: "<skill_content>body</skill_content>",
		Value: &events.SkillValue{Name: name, Provider: "store", Digest: digest, Revision: rev}})
}

func (l *sessionLog) fail(sid, name, code string) {
	call := l.call()
	seq := l.pub(sid, events.KindSkillCall, events.JSON, events.SkillCall{V: 1, Session: sid, Call: call, Args: events.SkillArgs{Name: name}})
	l.pub(sid, events.KindToolResult, events.JSON, events.ToolResult{V: 1, Session: sid, Call: call, TriggerSeq: seq, IsError: true, Text: "Error: no",
		Error: &events.ErrorInfo{Code: code, Message: "no"}})
}

func (l *sessionLog) search(sid, query string, names ...string) {
	call := l.call()
	seq := l.pub(sid, events.KindSkillSearch, events.Msgpack, events.SkillSearch{V: 1, Session: sid, Call: call, Args: events.SearchArgs{Query: query}})
	v := &events.SearchValue{Query: query, Total: len(names), Results: []events.Entry{}}
	for _, n := range names {
		v.Results = append(v.Results, events.Entry{Name: n, Description: "d"})
	}
	l.pub(sid, events.KindToolResult, events.Msgpack, events.ToolResult{V: 1, Session: sid, Call: call, TriggerSeq: seq, Text: "t", Search: v})
}

func (l *sessionLog) searchError(sid string) {
	call := l.call()
	seq := l.pub(sid, events.KindSkillSearch, events.JSON, events.SkillSearch{V: 1, Session: sid, Call: call, Args: events.SearchArgs{Limit: int64(99)}})
	l.pub(sid, events.KindToolResult, events.JSON, events.ToolResult{V: 1, Session: sid, Call: call, TriggerSeq: seq, IsError: true,
		Text: "Error: invalid search arguments", Error: &events.ErrorInfo{Code: events.CodeBadRequest, Message: "invalid search arguments"}})
}

func (l *sessionLog) invoke(sid, name string) {
	l.raw(events.Subject("ev", sid, usage.KindInvocation), events.ContentTypeJSON, []byte(`{"v":1,"session":"`+sid+`","step":"1","name":"`+name+`"}`))
}

// record writes sessions from..to-1 of the workload: per session a
// pre-step, a catalog, loads, and by turns skill errors, searches (found,
// nothing found, failed), invocations, change lists and tombstones; and,
// every 25 sessions, records of something else on the output subjects.
func (l *sessionLog) record(from, to int) {
	for i := from; i < to; i++ {
		sid := l.sid(i)
		l.pub(sid, events.KindPreStep, events.Msgpack, events.PreStep{V: 1, Session: sid, Step: "1", Tools: []events.Tool{{Name: "skill", Owner: "skillstream"}}})
		base := l.catalog(sid, "initial", "a-skill", "b-skill", "c-skill", "d-skill")
		l.load(sid, "a-skill", "d1aaaaaaaaaaaaaa", uint64(1+i%2))
		if i%3 == 0 {
			l.load(sid, "b-skill", "d2bbbbbbbbbbbbbb", 4)
		}
		if i%4 == 0 {
			l.fail(sid, "zzz-skill", events.CodeUnknown)
		}
		if i%5 == 0 {
			l.search(sid, "deploy", "a-skill", "c-skill")
			l.load(sid, "c-skill", "d3cccccccccccccc", 7)
		}
		if i%6 == 0 {
			l.search(sid, "quantum "+strconv.Itoa(i%12))
		}
		if i%7 == 0 {
			l.searchError(sid)
		}
		if i%8 == 0 {
			l.invoke(sid, "b-skill")
			l.invoke(sid, "Not A Name")
		}
		if i%9 == 0 {
			l.changes(sid, base, "e-skill")
		}
		if i%10 == 0 {
			l.catalog(sid, "replacement")
		}
		if i%25 == 0 {
			l.raw(events.Subject("ev", sid, events.KindToolResult), events.ContentTypeMsgpack, []byte{0xc1, 0xff})
			l.raw(events.Subject("ev", sid, events.KindCatalog), "text/plain", []byte("{}"))
		}
	}
}

// opts are the projection options of the test stream.
func (l *sessionLog) opts() Options {
	return Options{Stream: "SESSIONS", Prefix: "ev", Layout: l.layout, FlushWait: 50 * time.Millisecond, LeaseTTL: time.Second}
}

// scan is usage.Read of the whole stream.
func (l *sessionLog) scan() *usage.Report {
	l.t.Helper()
	rep, err := usage.Read(context.Background(), l.js, usage.Options{Stream: "SESSIONS", Prefix: "ev", Layout: l.layout})
	if err != nil {
		l.t.Fatal(err)
	}
	return rep
}

// caughtUp waits until the projection has applied every output record.
func caughtUp(t testing.TB, js jetstream.JetStream, o Options) *usage.Report {
	t.Helper()
	var rep *usage.Report
	natstest.Eventually(t, 60*time.Second, "projection caught up", func() error {
		r, err := Read(context.Background(), js, o, time.Time{})
		if err != nil {
			return err
		}
		if r.Projection.LagRecords != 0 {
			return fmt.Errorf("%d records behind", r.Projection.LagRecords)
		}
		rep = r
		return nil
	})
	return rep
}

// sameCounts fails t where the projection's report differs from the
// scan's in anything the projection keeps. Distinct sessions are compared
// exactly when the projection says they are exact, else within 15%.
func sameCounts(t testing.TB, scan, proj *usage.Report) {
	t.Helper()
	if proj.Records != scan.Records || proj.Unreadable != scan.Unreadable {
		t.Errorf("records %d, unreadable %d; the scan: %d, %d", proj.Records, proj.Unreadable, scan.Records, scan.Unreadable)
	}
	if len(proj.Skills) != len(scan.Skills) {
		t.Errorf("%d rows, the scan %d: %+v", len(proj.Skills), len(scan.Skills), proj.Skills)
	}
	for i := range min(len(proj.Skills), len(scan.Skills)) {
		p, s := proj.Skills[i], scan.Skills[i]
		if p.Name != s.Name || p.Loads != s.Loads || p.Invocations != s.Invocations || !reflect.DeepEqual(p.Errors, s.Errors) ||
			!p.First.Equal(s.First) || !p.Last.Equal(s.Last) || !reflect.DeepEqual(p.Digests, s.Digests) || !reflect.DeepEqual(p.Revisions, s.Revisions) {
			t.Errorf("row %d:\n projection %+v\n scan       %+v", i, p, s)
		}
		sessionsClose(t, "row "+s.Name, p.Sessions, p.SessionsEstimated, s.Sessions)
	}
	if !reflect.DeepEqual(proj.Catalogs, scan.Catalogs) {
		t.Errorf("catalogs %+v, the scan %+v", proj.Catalogs, scan.Catalogs)
	}
	if !reflect.DeepEqual(proj.ListedNeverUsed, scan.ListedNeverUsed) {
		t.Errorf("listed never used %v, the scan %v", proj.ListedNeverUsed, scan.ListedNeverUsed)
	}
	ps, ss := proj.Searches, scan.Searches
	if ps.Searches != ss.Searches || ps.Found != ss.Found || ps.NoMatch != ss.NoMatch || ps.NoMatchOther != ss.NoMatchOther ||
		!reflect.DeepEqual(ps.Errors, ss.Errors) || !reflect.DeepEqual(ps.NoMatchQueries, ss.NoMatchQueries) {
		t.Errorf("searches %+v, the scan %+v", ps, ss)
	}
	sessionsClose(t, "searches", ps.Sessions, ps.SessionsEstimated, ss.Sessions)
	if len(ps.Skills) != len(ss.Skills) {
		t.Errorf("found skills %+v, the scan %+v", ps.Skills, ss.Skills)
	}
	for i := range min(len(ps.Skills), len(ss.Skills)) {
		if ps.Skills[i].Name != ss.Skills[i].Name || ps.Skills[i].Found != ss.Skills[i].Found {
			t.Errorf("found skill %d: %+v, the scan %+v", i, ps.Skills[i], ss.Skills[i])
		}
	}
}

func sessionsClose(t testing.TB, what string, got int, estimated bool, want int) {
	t.Helper()
	if !estimated && got != want {
		t.Errorf("%s: %d sessions (exact), the scan %d", what, got, want)
	}
	if estimated && math.Abs(float64(got-want)) > 0.15*float64(want) {
		t.Errorf("%s: ~%d sessions, the scan %d", what, got, want)
	}
}

// logBuffer collects a projector's log lines.
type logBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *logBuffer) logger() *slog.Logger { return slog.New(slog.NewTextHandler(l, nil)) }

// run runs a projector until the test ends or stop is called.
func run(t testing.TB, js jetstream.JetStream, o Options) (p *Projector, stop func()) {
	t.Helper()
	p, err := New(js, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx) }()
	stop = sync.OnceFunc(func() { cancel(); <-done })
	t.Cleanup(stop)
	return p, stop
}

func itoa(i int) string { return strconv.Itoa(i) }

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }

// output is a load of name by session sid.
func output(name, sid string) usage.Output {
	return usage.Output{Kind: usage.OutputLoad, Session: sid, Skill: name}
}

// invocation is an invocation of name in session sid.
func invocation(name, sid string) usage.Output {
	return usage.Output{Kind: usage.OutputInvocation, Session: sid, Skill: name}
}

// usageSince is usage.Read of the window from since.
func usageSince(l *sessionLog, since time.Time) (*usage.Report, error) {
	return usage.Read(context.Background(), l.js, usage.Options{Stream: "SESSIONS", Prefix: "ev", Layout: l.layout, Since: since})
}
