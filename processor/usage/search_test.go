package usage_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/usage"
)

// searchLog publishes a session's searches and loads as a processor and
// its workers do: the trigger, then its tool.result naming it.
type searchLog struct {
	t  *testing.T
	js jetstream.JetStream
	n  int
}

func (l *searchLog) pub(sid string, kind events.Kind, enc events.Encoding, v any) uint64 {
	l.t.Helper()
	b, err := events.Encode(enc, v)
	if err != nil {
		l.t.Fatal(err)
	}
	m := nats.NewMsg(events.Subject("ev", sid, kind))
	m.Data = b
	m.Header.Set(events.HeaderContentType, enc.ContentType())
	ack, err := l.js.PublishMsg(context.Background(), m)
	if err != nil {
		l.t.Fatal(err)
	}
	return ack.Sequence
}

func (l *searchLog) call() string {
	l.n++
	return "c" + string(rune('a'+l.n%26)) + string(rune('0'+l.n/26))
}

// search publishes a search of query answered with the names found (of
// total matches).
func (l *searchLog) search(sid, query string, total int, names ...string) {
	call := l.call()
	seq := l.pub(sid, events.KindSkillSearch, events.Msgpack, events.SkillSearch{V: 1, Session: sid, Call: call, Args: events.SearchArgs{Query: query}})
	v := &events.SearchValue{Query: query, Total: total, Results: []events.Entry{}}
	for _, n := range names {
		v.Results = append(v.Results, events.Entry{Name: n, Description: "d"})
	}
	l.pub(sid, events.KindToolResult, events.Msgpack, events.ToolResult{V: 1, Session: sid, Call: call, TriggerSeq: seq, Text: "t", Search: v})
}

// searchError publishes a search answered with an error of code.
func (l *searchLog) searchError(sid, code string) {
	call := l.call()
	seq := l.pub(sid, events.KindSkillSearch, events.JSON, events.SkillSearch{V: 1, Session: sid, Call: call, Args: events.SearchArgs{Limit: int64(99)}})
	l.pub(sid, events.KindToolResult, events.JSON, events.ToolResult{V: 1, Session: sid, Call: call, TriggerSeq: seq, IsError: true,
		Text: "Error: invalid search arguments: query is missing", Error: &events.ErrorInfo{Code: code, Message: "invalid search arguments: query is missing"}})
}

// load publishes a skill call of name answered with its body.
func (l *searchLog) load(sid, name string) {
	call := l.call()
	seq := l.pub(sid, events.KindSkillCall, events.Msgpack, events.SkillCall{V: 1, Session: sid, Call: call, Args: events.SkillArgs{Name: name}})
	l.pub(sid, events.KindToolResult, events.Msgpack, events.ToolResult{V: 1, Session: sid, Call: call, TriggerSeq: seq, Text: "body",
		Value: &events.SkillValue{Name: name, Provider: "p"}})
}

// TestReadSearches: searches are counted per session, apart from skill
// loads and errors; a skill a session's search found and its skill tool
// loaded afterwards counts once, one loaded before it was found not at
// all; the queries that found nothing are listed.
func TestReadSearches(t *testing.T) {
	l := &searchLog{t: t, js: sessionStream(t)}
	l.search("s1", "deploy", 2, "k8s-deploy", "deploy-preview")
	l.load("s1", "k8s-deploy")
	l.load("s1", "k8s-deploy")
	l.load("s1", "git-review")
	l.search("s1", "quantum", 0)
	l.searchError("s1", events.CodeBadRequest)
	l.search("s1", "quantum", 0)
	l.load("s2", "pdf-forms")
	l.search("s2", "pdf", 1, "pdf-forms")
	l.search("s3", "zzz", 0)
	l.search("s3", "deploy", 2) // a page past the last match: found, nothing shown

	rep, err := usage.Read(context.Background(), l.js, usage.Options{Stream: "SESSIONS", Prefix: "ev"})
	if err != nil {
		t.Fatal(err)
	}
	want := usage.SearchUsage{
		Searches: 7, Found: 3, NoMatch: 3, Errors: map[string]int{events.CodeBadRequest: 1},
		Sessions: 3, PerSession: 7.0 / 3, FoundThenLoaded: 1,
		BySession: []usage.SessionSearches{
			{Session: "s1", Searches: 4, NoMatch: 2, FoundThenLoaded: 1},
			{Session: "s3", Searches: 2, NoMatch: 1},
			{Session: "s2", Searches: 1},
		},
		Skills: []usage.FoundSkill{
			{Name: "deploy-preview", Found: 1, Sessions: 1},
			{Name: "k8s-deploy", Found: 1, Sessions: 1, LoadedAfter: 1},
			{Name: "pdf-forms", Found: 1, Sessions: 1},
		},
		NoMatchQueries: []usage.QueryCount{{Query: "quantum", Count: 2}, {Query: "zzz", Count: 1}},
	}
	if !reflect.DeepEqual(rep.Searches, want) {
		t.Errorf("searches:\n got %+v\nwant %+v", rep.Searches, want)
	}
	// Skill rows hold loads only: no row for a search, nor for the
	// search that failed.
	rows := map[string]int{}
	for _, s := range rep.Skills {
		rows[s.Name] = s.Loads
		if s.ErrorCount() != 0 {
			t.Errorf("row %s has errors %v", s.Name, s.Errors)
		}
	}
	if !reflect.DeepEqual(rows, map[string]int{"k8s-deploy": 2, "git-review": 1, "pdf-forms": 1}) {
		t.Errorf("skill rows (loads) %v", rows)
	}
	if rep.Records != 11 || rep.Unreadable != 0 {
		t.Errorf("records %d, unreadable %d; want 11 results, none unreadable", rep.Records, rep.Unreadable)
	}

	// One session only, and a window without searches.
	rep, err = usage.Read(context.Background(), l.js, usage.Options{Stream: "SESSIONS", Prefix: "ev", Session: "s2"})
	if err != nil {
		t.Fatal(err)
	}
	if s := rep.Searches; s.Searches != 1 || s.Found != 1 || s.FoundThenLoaded != 0 || len(s.BySession) != 1 {
		t.Errorf("session s2: %+v", s)
	}
	publishLoad(t, l.js, "s4", "a")
	rep, err = usage.Read(context.Background(), l.js, usage.Options{Stream: "SESSIONS", Prefix: "ev", Session: "s4"})
	if err != nil {
		t.Fatal(err)
	}
	empty := usage.SearchUsage{Errors: map[string]int{}, BySession: []usage.SessionSearches{}, Skills: []usage.FoundSkill{}, NoMatchQueries: []usage.QueryCount{}}
	if !reflect.DeepEqual(rep.Searches, empty) {
		t.Errorf("no searches: %+v", rep.Searches)
	}
}

// TestReadSearchesProject: a project filter reads the searches' triggers
// too, which name the project.
func TestReadSearchesProject(t *testing.T) {
	l := &searchLog{t: t, js: sessionStream(t)}
	for _, c := range []struct{ sid, project string }{{"s1", "web"}, {"s2", "api"}} {
		seq := l.pub(c.sid, events.KindSkillSearch, events.Msgpack, events.SkillSearch{V: 1, Session: c.sid, Call: "c1", Project: c.project, Args: events.SearchArgs{Query: "x"}})
		l.pub(c.sid, events.KindToolResult, events.Msgpack, events.ToolResult{V: 1, Session: c.sid, Call: "c1", TriggerSeq: seq, Text: "t",
			Search: &events.SearchValue{Query: "x", Results: []events.Entry{}}})
	}
	rep, err := usage.Read(context.Background(), l.js, usage.Options{Stream: "SESSIONS", Prefix: "ev", Project: "web"})
	if err != nil {
		t.Fatal(err)
	}
	if s := rep.Searches; s.Searches != 1 || len(s.BySession) != 1 || s.BySession[0].Session != "s1" {
		t.Errorf("--project web: %+v", s)
	}
}
