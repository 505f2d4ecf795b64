package eval

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/processor"
	"github.com/skillstream/skillstream/processor/replay"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
	"github.com/skillstream/skillstream/providers/search"
)

// baseSkills are the skills the fixture session ran with. A search for
// "invoice reconciliation" ranks inv-target fourth (it matches one word
// of two, three skills match both); one for "rotate certificates" finds
// key-keeper by its description alone; release-notes is loaded, then
// removed by the candidate.
var baseSkills = map[string]string{
	"inv-alpha":     "Invoice reconciliation for ledgers.",
	"inv-beta":      "Invoice reconciliation for banks.",
	"inv-gamma":     "Invoice reconciliation for vendors.",
	"inv-target":    "Tidy the invoice notes folder.",
	"key-keeper":    "Rotate TLS certificates before they expire.",
	"release-notes": "Draft release notes from merged pull requests.",
	"unit-tests":    "Write unit tests for a Go package.",
	"db-migrate":    "Write and check database schema migrations.",
}

// writeProject writes skills into a fresh project (a .git marker makes it
// a project root) and returns its path.
func writeProject(t testing.TB, skills map[string]string) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "project")
	for name, desc := range skills {
		dir := filepath.Join(root, ".agents", "skills", name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		md := "---\nname: " + name + "\ndescription: " + desc + "\n---\nSteps of " + name + ".\n"
		if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

func newRegistry(t testing.TB) *providers.Registry {
	t.Helper()
	p, err := agentskills.New(agentskills.Config{NoUserDir: true})
	if err != nil {
		t.Fatal(err)
	}
	reg := providers.NewRegistry([]providers.Provider{p})
	t.Cleanup(func() { reg.Close() })
	return reg
}

func searchOptions() catalog.Options {
	o := catalog.DefaultOptions()
	o.SkillSearch = true
	return o
}

// runProcessor runs the real processor with search on srv until the test
// ends.
func runProcessor(t testing.TB, srv *natstest.Server, opts catalog.Options) {
	t.Helper()
	reg := newRegistry(t)
	ix := search.New(reg, search.Options{})
	t.Cleanup(func() { ix.Close() })
	p, err := processor.New(srv.Conn, reg, processor.Config{Catalog: opts},
		processor.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))), processor.WithSearcher(ix))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("processor: %v", err)
		}
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := srv.JS.Consumer(ctx, processor.DefaultStream, processor.DefaultConsumer)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream and consumer not provisioned: %v", err)
		}
	}
}

// worker plays an agent worker on the wire.
type worker struct {
	t   testing.TB
	nc  *nats.Conn
	js  jetstream.JetStream
	sid string
	cwd string
}

func (w *worker) ask(kind events.Kind, enc events.Encoding, v any) []byte {
	w.t.Helper()
	b, err := events.Encode(enc, v)
	if err != nil {
		w.t.Fatal(err)
	}
	inbox := nats.NewInbox()
	sub, err := w.nc.SubscribeSync(inbox)
	if err != nil {
		w.t.Fatal(err)
	}
	defer sub.Unsubscribe()
	msg := nats.NewMsg(events.Subject(events.DefaultPrefix, w.sid, kind))
	msg.Data = b
	msg.Header.Set(events.HeaderContentType, enc.ContentType())
	msg.Header.Set(events.HeaderReplyInbox, inbox)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := w.js.PublishMsg(ctx, msg); err != nil {
		w.t.Fatal(err)
	}
	reply, err := sub.NextMsg(20 * time.Second)
	if err != nil {
		w.t.Fatalf("no answer to %s: %v", kind, err)
	}
	return reply.Data
}

var tools = []events.Tool{{Name: "read", Owner: "host"}, {Name: "skill", Owner: processor.DefaultToolOwner},
	{Name: catalog.SearchToolName, Owner: processor.DefaultToolOwner}}

func (w *worker) preStep(step string) {
	w.t.Helper()
	b := w.ask(events.KindPreStep, events.JSON, events.PreStep{V: 1, Session: w.sid, Step: step, Cwd: w.cwd, Tools: tools})
	if _, err := events.DecodeDecision(events.JSON, b); err != nil {
		w.t.Fatalf("decision for step %s: %v", step, err)
	}
}

func (w *worker) search(id, query string) events.ToolResult {
	w.t.Helper()
	b := w.ask(events.KindSkillSearch, events.Msgpack, events.SkillSearch{V: 1, Session: w.sid, Call: id, Cwd: w.cwd, Args: events.SearchArgs{Query: query}})
	r, err := events.DecodeToolResult(events.Msgpack, b)
	if err != nil {
		w.t.Fatalf("result of search %s: %v", id, err)
	}
	return r
}

func (w *worker) call(id, name string) events.ToolResult {
	w.t.Helper()
	b := w.ask(events.KindSkillCall, events.Msgpack, events.SkillCall{V: 1, Session: w.sid, Call: id, Cwd: w.cwd, Args: events.SkillArgs{Name: name}})
	r, err := events.DecodeToolResult(events.Msgpack, b)
	if err != nil {
		w.t.Fatalf("result of call %s: %v", id, err)
	}
	return r
}

// rankIn is name's place in a recorded search's results, 0 when absent.
func rankIn(r events.ToolResult, name string) int {
	if r.Search == nil {
		return 0
	}
	return rank(r.Search.Offset, r.Search.Results, name)
}

// recordFixture plays the fixture session through the real processor,
// checks the recorded ranks the fixture is built on, and returns its
// recording and the project it ran in.
func recordFixture(t *testing.T) (rec []byte, project string) {
	t.Helper()
	srv := natstest.Start(t)
	project = writeProject(t, baseSkills)
	runProcessor(t, srv, searchOptions())
	w := &worker{t: t, nc: srv.Conn, js: srv.JS, sid: "eval-1", cwd: project}
	w.preStep("1")
	if r := w.search("s1", "invoice reconciliation"); rankIn(r, "inv-target") != 4 {
		t.Fatalf("fixture: inv-target ranks %d, want 4:\n%s", rankIn(r, "inv-target"), r.Text)
	}
	if r := w.call("c1", "inv-target"); r.IsError {
		t.Fatalf("c1: %s", r.Text)
	}
	w.preStep("2")
	if r := w.search("s2", "rotate certificates"); rankIn(r, "key-keeper") != 1 {
		t.Fatalf("fixture: key-keeper ranks %d, want 1:\n%s", rankIn(r, "key-keeper"), r.Text)
	}
	w.preStep("3")
	if r := w.call("c2", "key-keeper"); r.IsError {
		t.Fatalf("c2: %s", r.Text)
	}
	w.preStep("4")
	if r := w.call("c3", "release-notes"); r.IsError {
		t.Fatalf("c3: %s", r.Text)
	}
	w.preStep("5")
	var buf bytes.Buffer
	if err := replay.Record(context.Background(), srv.JS, processor.DefaultStream, events.DefaultPrefix, "eval-1", &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), project
}

func sourceOf(name string, rec []byte) Source {
	return Source{Name: name, Open: func(context.Context) (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(rec)), nil }}
}

// candidateSkills: inv-target's description now says what the search
// asks (rank 4 → 1), key-keeper's no longer does (rank 1 → out of the
// top 5), release-notes is removed (its recorded call now fails).
func candidateSkills() map[string]string {
	c := map[string]string{}
	for k, v := range baseSkills {
		c[k] = v
	}
	c["inv-target"] = "Invoice reconciliation, reconcile every invoice against the ledger, invoice by invoice."
	c["key-keeper"] = "Keep the team's key ring tidy."
	delete(c, "release-notes")
	return c
}

func evaluate(t *testing.T, rec []byte, recorded string, skills map[string]string, opts catalog.Options) *Report {
	t.Helper()
	dir := writeProject(t, skills)
	rep, err := Run(context.Background(), []Source{sourceOf("eval-1.jsonl", rec)}, Options{Steps: true, Candidate: Candidate{
		ToolOwner: processor.DefaultToolOwner, Catalog: opts, Skills: newRegistry(t),
		CwdMap: []replay.CwdMapping{{Old: recorded, New: dir}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestEvalFixture: a changed description moves a searched-then-loaded
// skill from rank 4 to 1, another falls out of the top 5, a removal
// breaks a recorded call; the figures are exact. The unchanged candidate
// reports no change at all.
func TestEvalFixture(t *testing.T) {
	rec, project := recordFixture(t)

	same := evaluate(t, rec, project, baseSkills, searchOptions())
	s := same.Summary
	if s.Pairs != 2 || s.RanksBefore != s.RanksAfter || s.Failures != 0 || s.OtherText != 0 ||
		s.Before != s.After || s.Added+s.Removed+s.Changed+s.Bare != 0 || s.Steps != 5 {
		t.Fatalf("unchanged candidate: %+v\n%+v", s, same.Sessions)
	}

	rep := evaluate(t, rec, project, candidateSkills(), searchOptions())
	s = rep.Summary
	if len(rep.Sessions) != 1 {
		t.Fatalf("%d sessions", len(rep.Sessions))
	}
	got := rep.Sessions[0]
	want := []Pair{
		{Query: "invoice reconciliation", Skill: "inv-target", Before: 4, After: 1},
		{Query: "rotate certificates", Skill: "key-keeper", Before: 1, After: 0},
	}
	if len(got.Pairs) != len(want) {
		t.Fatalf("pairs: %+v", got.Pairs)
	}
	for i, p := range got.Pairs {
		if p.Query != want[i].Query || p.Skill != want[i].Skill || p.Before != want[i].Before || p.After != want[i].After {
			t.Errorf("pair %d: %+v, want %+v", i, p, want[i])
		}
	}
	if wb, wa := (Ranks{Hit1: 0.5, Hit5: 1, MRR: 0.625}), (Ranks{Hit1: 0.5, Hit5: 0.5, MRR: 0.5}); s.RanksBefore != wb || s.RanksAfter != wa {
		t.Errorf("ranks before %+v after %+v, want %+v and %+v", s.RanksBefore, s.RanksAfter, wb, wa)
	}
	if len(got.Loads) != 1 || got.Loads[0].Skill != "release-notes" || got.Loads[0].Verdict != Fails || got.Loads[0].ID != "c3" ||
		got.Loads[0].Code != string(catalog.CodeUnknown) {
		t.Errorf("loads: %+v", got.Loads)
	}
	if s.Failures != 1 || s.OtherText != 0 || s.Fixed != 0 {
		t.Errorf("failures %d, other text %d, fixed %d", s.Failures, s.OtherText, s.Fixed)
	}
	if strings.Join(got.Changed, ",") != "inv-target,key-keeper" || strings.Join(got.Removed, ",") != "release-notes" ||
		len(got.Added)+len(got.Bare) != 0 {
		t.Errorf("entries: %+v", got.Entries)
	}
	if s.Steps != 5 || len(got.StepRows) != 5 {
		t.Fatalf("steps %d, rows %d", s.Steps, len(got.StepRows))
	}
	// The catalog in view: the recorded text before, the candidate's
	// rendered with the same template after.
	var before, after, tb, ta int64
	for _, r := range got.StepRows {
		before += int64(r.Before)
		after += int64(r.After)
		tb += int64(r.TokensBefore)
		ta += int64(r.TokensAfter)
		if r.TokensBefore != (r.Before+3)/4 || r.TokensAfter != (r.After+3)/4 { // ASCII: a character a byte
			t.Errorf("step %s: %+v", r.Step, r)
		}
	}
	if s.Before.Bytes != before || s.After.Bytes != after || s.Before.Tokens != tb || s.After.Tokens != ta {
		t.Errorf("bytes: %+v %+v, rows sum %d %d", s.Before, s.After, before, after)
	}
	delta := len(candidateSkills()["inv-target"]) - len(baseSkills["inv-target"]) +
		len(candidateSkills()["key-keeper"]) - len(baseSkills["key-keeper"]) -
		len("- `release-notes`: "+baseSkills["release-notes"]+"\n")
	if after-before != int64(5*delta) {
		t.Errorf("bytes after - before = %d, want 5 steps × %d", after-before, delta)
	}
}

// TestEvalSearchOff: a candidate without search refuses every search:
// each pair ranks 0 after.
func TestEvalSearchOff(t *testing.T) {
	rec, project := recordFixture(t)
	rep := evaluate(t, rec, project, baseSkills, catalog.DefaultOptions())
	if s := rep.Summary; s.Pairs != 2 || s.RanksAfter != (Ranks{}) || s.RanksBefore.Hit5 != 1 {
		t.Fatalf("%+v", s)
	}
}

// TestEvalBadRecordings: a missing, a corrupt and a truncated recording
// are errors naming the source and the problem.
func TestEvalBadRecordings(t *testing.T) {
	rec, project := recordFixture(t)
	dir := writeProject(t, baseSkills)
	cand := Candidate{ToolOwner: processor.DefaultToolOwner, Catalog: searchOptions(), Skills: newRegistry(t),
		CwdMap: []replay.CwdMapping{{Old: project, New: dir}}}
	corrupt := bytes.Replace(rec, []byte(`"type":"event"`), []byte(`"type":"evnt"`), 1)
	truncated := rec[:bytes.LastIndexByte(rec[:len(rec)-1], '\n')+1]
	for _, c := range []struct {
		src  Source
		want error
		text string
	}{
		{Source{Name: "gone.jsonl", Open: func(context.Context) (io.ReadCloser, error) { return os.Open(filepath.Join(t.TempDir(), "gone.jsonl")) }}, os.ErrNotExist, "gone.jsonl: open"},
		{sourceOf("corrupt.jsonl", corrupt), replay.ErrCorrupt, `corrupt.jsonl: corrupt recording: record 2`},
		{sourceOf("truncated.jsonl", truncated), replay.ErrTruncated, "truncated.jsonl: truncated recording"},
	} {
		_, err := Run(context.Background(), []Source{sourceOf("good.jsonl", rec), c.src}, Options{Candidate: cand})
		var se *SourceError
		if !errors.Is(err, c.want) || !errors.As(err, &se) || !strings.Contains(err.Error(), c.text) {
			t.Errorf("%s: %v, want %v containing %q", c.src.Name, err, c.want, c.text)
		}
	}
}

// TestGates: the --fail-on syntax, its errors, and the verdicts.
func TestGates(t *testing.T) {
	gs, err := ParseGates("hit5-drop=0.05, failures=0,bytes-growth=10%")
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 3 || gs[0] != (Gate{GateHit5Drop, 0.05}) || gs[1] != (Gate{GateFailures, 0}) || gs[2] != (Gate{GateBytesGrowth, 0.1}) {
		t.Fatalf("%+v", gs)
	}
	for _, bad := range []string{"hit5-dorp=0.05", "hit5-drop", "hit5-drop=abc", "failures=1.5", "failures=-1", "hit5-drop=2", "", "mrr-drop=NaN"} {
		_, err := ParseGates(bad)
		if !errors.Is(err, ErrBadGate) {
			t.Errorf("%q: %v", bad, err)
		}
	}
	if _, err := ParseGates("hit5-dorp=0.05"); err == nil || !strings.Contains(err.Error(), `unknown key "hit5-dorp"`) || !strings.Contains(err.Error(), "hit5-drop") {
		t.Errorf("unknown key: %v", err)
	}
	s := Summary{Failures: 1, RanksBefore: Ranks{Hit5: 1}, RanksAfter: Ranks{Hit5: 0.5}, Before: Bytes{Bytes: 100}, After: Bytes{Bytes: 110}}
	for _, c := range []struct {
		gate    string
		tripped bool
	}{
		{"hit5-drop=0.5", false}, {"hit5-drop=0.49", true}, {"failures=0", true}, {"failures=1", false},
		{"bytes-growth=10%", false}, {"bytes-growth=0.09", true}, {"hit1-drop=0", false}, {"mrr-drop=0", false},
	} {
		gs, err := ParseGates(c.gate)
		if err != nil {
			t.Fatal(err)
		}
		if v := gs[0].Check(s); v.Tripped != c.tripped {
			t.Errorf("%s: %+v, want tripped %v", c.gate, v, c.tripped)
		}
	}
}

// TestEvalChangeLists: a session recorded with change lists, whose skill
// changed between steps, evaluated against the skills as they are at its
// end: the steps with the change list in view count the same bytes before
// and after, and no entry changes; the steps before it see the change.
func TestEvalChangeLists(t *testing.T) {
	srv := natstest.Start(t)
	project := writeProject(t, baseSkills)
	opts := catalog.DefaultOptions()
	opts.Updates, opts.UserInvocation = catalog.UpdatesChanges, true
	runProcessor(t, srv, opts)
	w := &worker{t: t, nc: srv.Conn, js: srv.JS, sid: "changes-1", cwd: project}
	noSearch := tools[:2]
	ask := func(step string) events.Decision {
		t.Helper()
		b := w.ask(events.KindPreStep, events.JSON, events.PreStep{V: 1, Session: w.sid, Step: step, Cwd: w.cwd, Tools: noSearch})
		d, err := events.DecodeDecision(events.JSON, b)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	ask("1")
	md := "---\nname: unit-tests\ndescription: Write table tests for a Go package.\n---\nSteps of unit-tests.\n"
	if err := os.WriteFile(filepath.Join(project, ".agents", "skills", "unit-tests", "SKILL.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	// Until the processor's registry sees the change: a change list.
	n := 2
	deadline := time.Now().Add(20 * time.Second)
	for ask(fmt.Sprint(n)).Outcome != events.OutcomeAppended {
		if time.Now().After(deadline) {
			t.Fatal("the change never reached the catalog")
		}
		n++
	}
	ask(fmt.Sprint(n + 1))
	var buf bytes.Buffer
	if err := replay.Record(context.Background(), srv.JS, processor.DefaultStream, events.DefaultPrefix, w.sid, &buf); err != nil {
		t.Fatal(err)
	}
	// The change list is in view at the last two steps.
	r, err := replay.NewReader(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	var updates []string
	if _, err := replay.Run(context.Background(), r, replay.Options{ToolOwner: processor.DefaultToolOwner, HistoryOnly: true,
		Emit: func(s replay.Step) error {
			if s.Seen != nil {
				updates = append(updates, s.Seen.Update)
			}
			return nil
		}}); err != nil {
		t.Fatal(err)
	}
	if len(updates) < 3 || updates[len(updates)-1] != events.UpdateChanges || updates[len(updates)-2] != events.UpdateChanges {
		t.Fatalf("catalogs in view: %v", updates)
	}

	rep, err := Run(context.Background(), []Source{sourceOf("changes-1.jsonl", buf.Bytes())}, Options{Steps: true,
		Candidate: Candidate{ToolOwner: processor.DefaultToolOwner, Catalog: opts, Skills: newRegistry(t)}})
	if err != nil {
		t.Fatal(err)
	}
	rows := rep.Sessions[0].StepRows
	for i, row := range rows {
		changesInView := i >= len(rows)-2
		if changesInView && (row.Before != row.After || !row.Entries.empty()) {
			t.Errorf("step %s (change list in view): %+v", row.Step, row)
		}
		if !changesInView && strings.Join(row.Changed, ",") != "unit-tests" {
			t.Errorf("step %s (before the change): %+v", row.Step, row)
		}
	}
}

// TestEvalInvocations: a skill a user invoked (/name) that the candidate
// removed, or that a candidate without user invocation would not invoke,
// is a failure, counted in the summary.
func TestEvalInvocations(t *testing.T) {
	srv := natstest.Start(t)
	project := writeProject(t, baseSkills)
	opts := catalog.DefaultOptions()
	opts.UserInvocation = true
	runProcessor(t, srv, opts)
	w := &worker{t: t, nc: srv.Conn, js: srv.JS, sid: "inv-1", cwd: project}
	b := w.ask(events.KindPreStep, events.JSON, events.PreStep{V: 1, Session: w.sid, Step: "1", Cwd: w.cwd, Tools: tools[:2],
		UserText: []string{"/release-notes for 2.0, then /unit-tests"}})
	if d, err := events.DecodeDecision(events.JSON, b); err != nil || d.Outcome != events.OutcomeAppended {
		t.Fatalf("step 1: %+v %v", d, err)
	}
	var buf bytes.Buffer
	if err := replay.Record(context.Background(), srv.JS, processor.DefaultStream, events.DefaultPrefix, w.sid, &buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(buf.Bytes(), []byte(string(events.KindInvocation))) {
		t.Fatal("no invocation recorded")
	}
	loads := func(skills map[string]string, o catalog.Options) []string {
		t.Helper()
		dir := writeProject(t, skills)
		rep, err := Run(context.Background(), []Source{sourceOf("inv-1.jsonl", buf.Bytes())}, Options{Candidate: Candidate{
			ToolOwner: processor.DefaultToolOwner, Catalog: o, Skills: newRegistry(t), CwdMap: []replay.CwdMapping{{Old: project, New: dir}}}})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, l := range rep.Sessions[0].Loads {
			out = append(out, l.Kind+" "+l.Skill+" "+l.Verdict)
		}
		if rep.Summary.Failures != strings.Count(strings.Join(out, ","), Fails) {
			t.Errorf("summary failures %d for %v", rep.Summary.Failures, out)
		}
		return out
	}
	if got := loads(baseSkills, opts); len(got) != 0 {
		t.Errorf("unchanged: %v", got)
	}
	cand := candidateSkills() // release-notes removed
	if got := strings.Join(loads(cand, opts), ","); got != "invocation release-notes fails" {
		t.Errorf("release-notes removed: %s", got)
	}
	if got := strings.Join(loads(baseSkills, catalog.DefaultOptions()), ","); got != "invocation release-notes fails,invocation unit-tests fails" {
		t.Errorf("user invocation off: %s", got)
	}
}
