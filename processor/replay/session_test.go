package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/processor"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
)

var update = flag.Bool("update", false, "rewrite the golden recording under testdata/")

// goldenRecording is a session played through the real processor: initial
// catalog, unchanged step, a successful and a failed skill call, a
// compaction masking the catalog (re-established), the tool hidden
// (tombstone), the tool back (replacement), an unchanged step.
const goldenRecording = "testdata/lifecycle.jsonl"

// copyProject copies testdata/project into a fresh directory with a .git
// marker, so that it is a project root of its own, and returns its path.
func copyProject(t testing.TB) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "project")
	err := filepath.WalkDir("testdata/project", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("testdata/project", path)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dst, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	return dst
}

// newRegistry builds a registry over the project skills only.
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

// worker plays an agent worker on the wire: it publishes triggers with a
// Reply-Inbox and waits for the processor's answer.
type worker struct {
	t   testing.TB
	nc  *nats.Conn
	js  jetstream.JetStream
	sid string
	cwd string
	// layout is the session layout answers are read in (the zero value:
	// flat).
	layout events.Layout
}

func (w *worker) publish(kind events.Kind, enc events.Encoding, v any, inbox string) uint64 {
	w.t.Helper()
	b, err := events.Encode(enc, v)
	if err != nil {
		w.t.Fatal(err)
	}
	msg := nats.NewMsg(events.Subject(events.DefaultPrefix, w.sid, kind))
	msg.Data = b
	msg.Header.Set(events.HeaderContentType, enc.ContentType())
	if inbox != "" {
		msg.Header.Set(events.HeaderReplyInbox, inbox)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ack, err := w.js.PublishMsg(ctx, msg)
	if err != nil {
		w.t.Fatal(err)
	}
	return ack.Sequence
}

// ask publishes a trigger and returns the answer's payload.
func (w *worker) ask(kind events.Kind, enc events.Encoding, v any) []byte {
	w.t.Helper()
	inbox := nats.NewInbox()
	sub, err := w.nc.SubscribeSync(inbox)
	if err != nil {
		w.t.Fatal(err)
	}
	defer sub.Unsubscribe()
	w.publish(kind, enc, v, inbox)
	reply, err := sub.NextMsg(20 * time.Second)
	if err != nil {
		w.t.Fatalf("no answer to %s: %v", kind, err)
	}
	return reply.Data
}

func (w *worker) preStep(step string, tools []events.Tool) string {
	w.t.Helper()
	b := w.ask(events.KindPreStep, events.JSON, events.PreStep{V: 1, Session: w.sid, Step: step, Cwd: w.cwd, Tools: tools})
	d, err := events.DecodeDecision(events.JSON, b)
	if err != nil {
		w.t.Fatalf("decision for step %s: %v", step, err)
	}
	return d.Outcome
}

func (w *worker) call(id, name string) bool {
	w.t.Helper()
	b := w.ask(events.KindSkillCall, events.Msgpack, events.SkillCall{V: 1, Session: w.sid, Call: id, Cwd: w.cwd, Args: events.SkillArgs{Name: name}})
	r, err := events.DecodeToolResultIn(w.layout, events.Msgpack, b)
	if err != nil {
		w.t.Fatalf("result of call %s: %v", id, err)
	}
	return !r.IsError
}

// runProcessor runs the real processor on srv, with skills from the test
// registry and cfg, until the test ends.
func runProcessor(t testing.TB, srv *natstest.Server, cfg processor.Config) {
	t.Helper()
	p, err := processor.New(srv.Conn, newRegistry(t), cfg, processor.WithLogger(discardLogger()))
	if err != nil {
		t.Fatal(err)
	}
	runUntilCleanup(t, p)
}

// runUntilCleanup runs p until the test ends, and reports its error then.
func runUntilCleanup(t testing.TB, p *processor.Processor) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("processor: %v", err)
		}
	})
}

// playLifecycle runs the real processor on srv with skills from project and
// plays the golden session, checking each answer.
func playLifecycle(t testing.TB, srv *natstest.Server, project, sid string) {
	t.Helper()
	runProcessor(t, srv, processor.Config{})
	w := &worker{t: t, nc: srv.Conn, js: srv.JS, sid: sid, cwd: filepath.Join(project, "src")}
	if err := os.MkdirAll(w.cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	waitStream(t, srv.JS, processor.DefaultStream)
	tools := []events.Tool{{Name: "read", Owner: "host"}, {Name: "skill", Owner: processor.DefaultToolOwner}}
	hidden := []events.Tool{{Name: "read", Owner: "host"}}
	steps := []struct {
		do   func() string
		want string
	}{
		{func() string { return w.preStep("1", tools) }, events.OutcomeAppended},
		{func() string { return w.preStep("2", tools) }, events.OutcomeUnchanged},
		{func() string { return strconv.FormatBool(w.call("call-1", "b-skill")) }, "true"},
		{func() string { return strconv.FormatBool(w.call("call-2", "no-such-skill")) }, "false"},
		{func() string {
			seq := w.publish("message.user", events.JSON, map[string]any{"v": 1, "text": "hello"}, "")
			w.publish(events.KindCompaction, events.JSON, events.Compaction{V: 1, Session: sid, RetainFrom: seq + 1}, "")
			return "compacted"
		}, "compacted"},
		{func() string { return w.preStep("3", tools) }, events.OutcomeAppended},
		{func() string { return w.preStep("4", hidden) }, events.OutcomeAppended},
		{func() string { return w.preStep("5", tools) }, events.OutcomeAppended},
		{func() string { return strconv.FormatBool(w.call("call-3", "release-notes")) }, "true"},
		{func() string { return w.preStep("6", tools) }, events.OutcomeUnchanged},
	}
	for i, s := range steps {
		if got := s.do(); got != s.want {
			t.Fatalf("step %d: got %s, want %s", i+1, got, s.want)
		}
	}
}

func waitStream(t testing.TB, js jetstream.JetStream, name string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_, err := js.Consumer(ctx, name, processor.DefaultConsumer)
		cancel()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("stream %s and consumer not provisioned: %v", name, err)
		}
	}
}

// recordingCwd returns the working directory of the recording's first
// pre-step.
func recordingCwd(t testing.TB, rec []byte) string {
	t.Helper()
	r, err := NewReader(bytes.NewReader(rec))
	if err != nil {
		t.Fatal(err)
	}
	for {
		it, err := r.Next()
		if err != nil {
			t.Fatalf("no pre-step in the recording: %v", err)
		}
		if it.Event != nil && strings.HasSuffix(it.Event.Subject, "."+string(events.KindPreStep)) {
			if cwd, ok := triggerCwd(r.Header().Layout, r.Header().Prefix, *it.Event); ok {
				return cwd
			}
		}
	}
}

// projectOf returns the project directory of a recorded cwd (…/project/src).
func projectOf(cwd string) string { return filepath.Dir(cwd) }

func TestRoundTripThroughProcessor(t *testing.T) {
	srv := natstest.Start(t)
	project := copyProject(t)
	playLifecycle(t, srv, project, "golden-1")

	var rec bytes.Buffer
	if err := Record(context.Background(), srv.JS, processor.DefaultStream, events.DefaultPrefix, "golden-1", &rec); err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(goldenRecording, rec.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	reg := newRegistry(t)
	opts := Options{ToolOwner: processor.DefaultToolOwner, Catalog: catalog.DefaultOptions(), Skills: reg}
	steps, sum := replayBytes(t, rec.Bytes(), opts)
	if sum.Differ != 0 || sum.Triggers != 9 {
		t.Fatalf("replay of the unchanged session: %+v\n%s", sum, outcomes(steps))
	}

	// Change one skill's description on disk: exactly the steps whose
	// catalog text depends on it differ.
	path := filepath.Join(project, ".agents/skills/a-skill/SKILL.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(b), "why & what.", "why, and what changed.", 1)
	if err := os.WriteFile(path, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	waitDescription(t, reg, filepath.Join(project, "src"), "a-skill", "Write commit messages that <explain> why, and what changed.")
	steps, sum = replayBytes(t, rec.Bytes(), opts)
	var differ []string
	for _, s := range steps {
		if s.Differs {
			differ = append(differ, s.ID)
		}
	}
	// 1, 3 and 5 appended catalogs listing a-skill; 2 and 6 now find the
	// visible catalog stale and would append a replacement; the tombstone
	// (4) and the calls are unaffected.
	if want := []string{"1", "2", "3", "5", "6"}; !slices.Equal(differ, want) {
		t.Errorf("differing steps = %v, want %v\n%s", differ, want, outcomes(steps))
	}
	want := "--- recorded\n+++ replayed\n@@ -2,7 +2,7 @@\n" +
		" A skill is a reusable set of task-specific instructions. The following skills are available in this session:\n \n <available_skills>\n" +
		"-- `a-skill`: Write commit messages that &lt;explain&gt; why &amp; what.\n" +
		"+- `a-skill`: Write commit messages that &lt;explain&gt; why, and what changed.\n" +
		" - `b-skill`: Review a pull request.\n - `release-notes`: Draft release notes from merged changes.\n </available_skills>\n"
	if steps[0].Diff != want {
		t.Errorf("diff of step 1:\n%s\nwant:\n%s", steps[0].Diff, want)
	}
}

func waitDescription(t testing.TB, reg *providers.Registry, cwd, name, desc string) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		snap, err := reg.Snapshot(context.Background(), catalog.At(cwd))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range snap.Skills {
			if s.Name == name && s.Description == desc && snap.Complete {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("registry never showed the new description of %s: %+v", name, snap)
		}
	}
}

// TestGoldenRecording replays the committed recording (made by
// TestRoundTripThroughProcessor with -update) against the committed skills:
// compaction, tombstone, tool calls, all identical.
func TestGoldenRecording(t *testing.T) {
	rec, err := os.ReadFile(goldenRecording)
	if err != nil {
		t.Fatal(err)
	}
	project := copyProject(t)
	recorded := projectOf(recordingCwd(t, rec))
	reg := newRegistry(t)
	opts := Options{ToolOwner: processor.DefaultToolOwner, Catalog: catalog.DefaultOptions(), Skills: reg,
		CwdMap: []CwdMapping{{Old: recorded, New: project}}}
	steps, sum := replayBytes(t, rec, opts)
	if sum.Differ != 0 {
		t.Fatalf("golden recording replays with differences: %+v\n%s", sum, outcomes(steps))
	}
	kinds := map[string]int{}
	for _, s := range steps {
		kinds[s.Kind+" "+s.Recorded.Outcome+" "+s.Recorded.Update]++
	}
	want := map[string]int{
		"pre-step appended initial":     1,
		"pre-step appended replacement": 2,
		"pre-step appended tombstone":   1,
		"pre-step none ":                2,
		"skill-call ok ":                2,
		"skill-call error unknown":      0,
		"skill-call error ":             1,
	}
	for k, n := range want {
		if kinds[k] != n {
			t.Errorf("%q: %d steps, want %d (all: %v)", k, kinds[k], n, kinds)
		}
	}
	// The recording holds a compaction that masked the first catalog.
	steps, _ = replayBytes(t, rec, Options{ToolOwner: processor.DefaultToolOwner, HistoryOnly: true})
	masked := false
	for _, s := range steps {
		if s.ID == "3" && s.MaskedBy != 0 && s.Seen != nil && s.Seen.Update == UpdateReplacement {
			masked = true
		}
	}
	if !masked {
		t.Errorf("golden recording lacks the compaction re-establishing the catalog at step 3")
	}
}

// TestExportReadOnly checks that exporting publishes nothing and leaves no
// consumer behind that could take triggers.
func TestExportReadOnly(t *testing.T) {
	srv := natstest.Start(t)
	ctx := context.Background()
	if _, err := srv.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"ev.>"}, AllowDirect: true}); err != nil {
		t.Fatal(err)
	}
	for i := range 300 {
		sid := "one"
		if i%3 == 0 {
			sid = "two"
		}
		msg := nats.NewMsg("ev." + sid + ".message.user")
		msg.Data = []byte(strconv.Itoa(i))
		msg.Header.Set("X-N", strconv.Itoa(i))
		if _, err := srv.JS.PublishMsg(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	before, err := srv.JS.Stream(ctx, "S")
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	var progress []int
	n, err := Export(ctx, srv.JS, ExportOptions{Stream: "S", Prefix: "ev", Session: "one", Progress: func(done int, _ uint64) { progress = append(progress, done) }}, &buf)
	if err != nil {
		t.Fatal(err)
	}
	if n != 200 || len(progress) != 200 || progress[199] != 200 {
		t.Errorf("exported %d events, progress %d calls", n, len(progress))
	}
	h, items, err := readAll(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	if h.Session != "one" || h.Stream != "S" || len(items) != 200 {
		t.Fatalf("header %+v, %d items", h, len(items))
	}
	for i, it := range items {
		e := it.Event
		want := i + 2 + i/2 // sequences of session "one": 2,3,5,6,8,...
		if e.Seq != uint64(want) || e.Header("X-N") != strconv.Itoa(want-1) || string(e.Data) != strconv.Itoa(want-1) || e.Time.IsZero() {
			t.Fatalf("event %d = %+v, want seq %d", i, e, want)
		}
	}
	after, err := srv.JS.Stream(ctx, "S")
	if err != nil {
		t.Fatal(err)
	}
	info, _ := after.Info(ctx)
	binfo := before.CachedInfo()
	if info.State.Msgs != binfo.State.Msgs || info.State.LastSeq != binfo.State.LastSeq {
		t.Errorf("stream changed by the export: %+v -> %+v", binfo.State, info.State)
	}
	if _, err := Export(ctx, srv.JS, ExportOptions{Stream: "S", Prefix: "ev", Session: "nobody"}, io.Discard); err == nil || !strings.Contains(err.Error(), ErrEmptySession.Error()) {
		t.Errorf("export of an empty session: %v", err)
	}
	if _, err := Export(ctx, srv.JS, ExportOptions{Stream: "S", Prefix: "ev", Session: "a.b"}, io.Discard); err == nil {
		t.Error("export of an invalid session id accepted")
	}
}

// TestExportCapturesSkills checks the skills capture and a replay against
// it.
func TestExportCapturesSkills(t *testing.T) {
	srv := natstest.Start(t)
	project := copyProject(t)
	playLifecycle(t, srv, project, "cap")
	var buf bytes.Buffer
	reg := newRegistry(t)
	if _, err := Export(context.Background(), srv.JS, ExportOptions{Stream: processor.DefaultStream, Session: "cap", Skills: reg}, &buf); err != nil {
		t.Fatal(err)
	}
	_, items, err := readAll(buf.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	var sets []*SkillSet
	for i, it := range items {
		if it.Skills != nil {
			sets = append(sets, it.Skills)
			if i != 0 {
				t.Errorf("skills captured at item %d, after the first trigger", i)
			}
		}
	}
	if len(sets) != 1 || len(sets[0].Skills) != 3 || sets[0].Skills[0].Content == "" {
		b, _ := json.Marshal(sets)
		t.Fatalf("captured skills: %s", b)
	}
	// Remove every skill on disk: the recorded skills still replay the
	// session identically.
	if err := os.RemoveAll(filepath.Join(project, ".agents")); err != nil {
		t.Fatal(err)
	}
	steps, sum := replayBytes(t, buf.Bytes(), Options{ToolOwner: processor.DefaultToolOwner, Catalog: catalog.DefaultOptions(), Recorded: true})
	if sum.Differ != 0 || sum.Triggers != 9 {
		t.Errorf("replay against recorded skills: %+v\n%s", sum, outcomes(steps))
	}
}

func discardLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }
