package processor

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// waitTimeout bounds every wait of these tests.
const waitTimeout = 30 * time.Second

// quietLogger discards logs unless -v is set.
func quietLogger() *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

// flaky is a provider that can offer one skill ("flaky-skill") and fail on
// demand: with listBroken its List fails, which makes the real registry's
// snapshots incomplete; with loadBroken its Load fails.
type flaky struct {
	delay      atomic.Int64 // List takes this long (a slow provider)
	offer      atomic.Bool
	listBroken atomic.Bool
	loadBroken atomic.Bool
	lists      atomic.Int64 // List calls
	// hold, when set before the processor starts, keeps every List
	// waiting until it is closed.
	hold chan struct{}
}

const flakyMessage = "disk on fire"

func (f *flaky) Name() string { return "flaky" }

func (f *flaky) List(ctx context.Context, q catalog.Query) ([]providers.Candidate, error) {
	f.lists.Add(1)
	if f.hold != nil {
		select {
		case <-f.hold:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if d := time.Duration(f.delay.Load()); d > 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if f.listBroken.Load() {
		return nil, errors.New(flakyMessage)
	}
	if !f.offer.Load() {
		return nil, nil
	}
	return []providers.Candidate{{Summary: f.summary(), Rank: providers.RankCustom}}, nil
}

func (f *flaky) summary() catalog.Summary {
	return catalog.Summary{
		Name: "flaky-skill", Description: "Sometimes there.", Source: catalog.SourceCustom, Provider: "flaky",
		Invocation:   catalog.Invocation{ModelInvocable: true, UserInvocable: true},
		ResourceBase: &catalog.ResourceBase{Kind: catalog.ResourceOpaque, Description: "a flaky store"},
	}
}

func (f *flaky) Load(ctx context.Context, name string, q catalog.Query) (catalog.Skill, error) {
	if f.loadBroken.Load() {
		return catalog.Skill{}, errors.New(flakyMessage)
	}
	if !f.offer.Load() || name != "flaky-skill" {
		return catalog.Skill{}, fmt.Errorf("flaky: %w", catalog.ErrNotFound)
	}
	return catalog.Skill{Summary: f.summary(), Content: "Flaky instructions."}, nil
}

// Changes says "cannot tell": the registry does not cache while flaky is
// part of it, so a toggle shows at the next snapshot.
func (f *flaky) Changes(q catalog.Query) <-chan struct{} { return closed }

var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// env is one test's world: a JetStream server, a project directory with
// skills on disk, the real registry over them, and processors.
type env struct {
	t        testing.TB
	srv      *natstest.Server
	js       jetstream.JetStream
	cwd      string // project root (has .git)
	skillDir string // <cwd>/.agents/skills
	flaky    *flaky
	registry *providers.Registry
	reg      *prometheus.Registry
	cfg      Config
}

func newEnv(t testing.TB, opts ...natstest.Option) *env {
	t.Helper()
	srv := natstest.Start(t, opts...)
	cwd := t.TempDir()
	if err := os.Mkdir(filepath.Join(cwd, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	skillDir := filepath.Join(cwd, ".agents", "skills")
	if err := os.MkdirAll(skillDir, 0o755); err != nil {
		t.Fatal(err)
	}
	fs, err := agentskills.New(agentskills.Config{NoUserDir: true})
	if err != nil {
		t.Fatal(err)
	}
	fl := &flaky{}
	registry := providers.NewRegistry([]providers.Provider{fs, fl}, providers.WithLogger(quietLogger()))
	t.Cleanup(func() { registry.Close() })
	return &env{
		t: t, srv: srv, js: srv.JS, cwd: cwd, skillDir: skillDir, flaky: fl, registry: registry,
		reg: prometheus.NewRegistry(),
		cfg: Config{AckWait: 2 * time.Second, NakDelay: 50 * time.Millisecond, Workers: 8},
	}
}

// withoutFlaky rebuilds the registry with the filesystem provider only, so
// that it caches snapshots as in production.
func (e *env) withoutFlaky() {
	e.t.Helper()
	fs, err := agentskills.New(agentskills.Config{NoUserDir: true})
	if err != nil {
		e.t.Fatal(err)
	}
	e.registry = providers.NewRegistry([]providers.Provider{fs}, providers.WithLogger(quietLogger()))
	r := e.registry
	e.t.Cleanup(func() { r.Close() })
}

// start builds a processor on its own connection and runs it until the test
// ends; it returns once stream and consumer exist.
func (e *env) start(mutate ...func(*Config, *options)) *Processor {
	e.t.Helper()
	return e.startOn(e.srv.Connect(), mutate...)
}

func (e *env) startOn(nc *nats.Conn, mutate ...func(*Config, *options)) *Processor {
	e.t.Helper()
	cfg := e.cfg
	o := options{}
	for _, m := range mutate {
		m(&cfg, &o)
	}
	p, err := New(nc, e.registry, cfg, WithLogger(quietLogger()), WithRegisterer(e.reg), WithVersion(o.version), WithSearcher(o.search), WithRanker(o.ranker))
	if err != nil {
		e.t.Fatal(err)
	}
	p.hooks = o.hooks
	if o.headMin != 0 {
		p.headMin = max(o.headMin, 0)
	}
	done := runUntilCleanup(e.t, p)
	select {
	case <-p.Ready():
	case err := <-done:
		done <- err // for the cleanup
		e.t.Fatalf("Run: %v", err)
	case <-time.After(waitTimeout):
		e.t.Fatal("processor not ready")
	}
	return p
}

// runUntilCleanup runs p until the test ends, reporting an error of Run's
// then; Run's result comes on the channel returned (put it back when
// taken early, for the cleanup).
func runUntilCleanup(t testing.TB, p *Processor) chan error {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	return done
}

// poll calls f every 10ms until it returns nil, failing the test with f's
// last error after waitTimeout.
func poll(t testing.TB, f func() error) {
	t.Helper()
	natstest.Eventually(t, waitTimeout, "gave up", f)
}

// writeSkill writes <skillDir>/<name>/SKILL.md.
func (e *env) writeSkill(name, description string, frontmatter ...string) {
	e.t.Helper()
	dir := filepath.Join(e.skillDir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		e.t.Fatal(err)
	}
	body := "---\nname: " + name + "\ndescription: " + strconv.Quote(description) + "\n" +
		strings.Join(frontmatter, "\n")
	if len(frontmatter) > 0 {
		body += "\n"
	}
	body += "---\n\nInstructions of " + name + ".\n"
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(body), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) removeSkill(name string) {
	e.t.Helper()
	if err := os.RemoveAll(filepath.Join(e.skillDir, name)); err != nil {
		e.t.Fatal(err)
	}
}

// waitSkills waits until the registry's snapshot for the project lists
// exactly names (the watcher has seen the disk change).
func (e *env) waitSkills(names ...string) {
	e.t.Helper()
	want := strings.Join(names, ",")
	poll(e.t, func() error {
		snap, err := e.registry.Snapshot(context.Background(), catalog.At(e.cwd))
		if err != nil {
			return err
		}
		got := make([]string, len(snap.Skills))
		for i, s := range snap.Skills {
			got[i] = s.Name
		}
		if g := strings.Join(got, ","); g != want || !snap.Complete {
			return fmt.Errorf("registry lists %q (complete %v), want %q", g, snap.Complete, want)
		}
		return nil
	})
}

// ourTool is the tool view of an agent that has our skill tool.
func ourTool() []events.Tool {
	return []events.Tool{{Name: "bash", Owner: "agent"}, {Name: catalog.ToolName, Owner: DefaultToolOwner}}
}

// worker publishes triggers and waits for answers, like an agent worker.
type worker struct {
	t      testing.TB
	nc     *nats.Conn
	js     jetstream.JetStream
	enc    events.Encoding
	layout events.Layout // of the answers' session ids
}

func (e *env) worker() *worker {
	nc := e.srv.Connect()
	js, err := jetstream.New(nc)
	if err != nil {
		e.t.Fatal(err)
	}
	return &worker{t: e.t, nc: nc, js: js, enc: events.Msgpack, layout: e.cfg.Layout}
}

// published is a trigger in the stream and where its answer arrives.
type published struct {
	seq   uint64
	reply *nats.Subscription
}

// publish appends a trigger payload of kind k to session sid with a reply
// inbox. raw, when non-nil, is sent instead of encoding v.
func (w *worker) publish(sid string, k events.Kind, v any, raw []byte, hdr ...string) published {
	w.t.Helper()
	data := raw
	if data == nil {
		var err error
		data, err = events.Encode(w.enc, v)
		if err != nil {
			w.t.Fatal(err)
		}
	}
	inbox := w.nc.NewInbox()
	if owner, _, ok := strings.Cut(sid, "."); ok && w.layout == events.LayoutOwner {
		// The owner's own inbox, where the owner layout answers.
		inbox = "_INBOX." + owner + "." + strings.TrimPrefix(inbox, "_INBOX.")
	}
	sub, err := w.nc.SubscribeSync(inbox)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { sub.Unsubscribe() })
	m := &nats.Msg{
		Subject: events.Subject(events.DefaultPrefix, sid, k),
		Header: nats.Header{
			events.HeaderContentType: []string{w.enc.ContentType()},
			events.HeaderReplyInbox:  []string{inbox},
		},
		Data: data,
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		m.Header.Set(hdr[i], hdr[i+1])
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	ack, err := w.js.PublishMsg(ctx, m)
	if err != nil {
		w.t.Fatalf("publish %s: %v", m.Subject, err)
	}
	return published{seq: ack.Sequence, reply: sub}
}

// answer waits for the reply to p.
func (w *worker) answer(p published) *nats.Msg {
	w.t.Helper()
	m, err := p.reply.NextMsg(waitTimeout)
	if err != nil {
		w.t.Fatalf("no answer to trigger %d: %v", p.seq, err)
	}
	return m
}

func (w *worker) decision(p published) events.Decision {
	w.t.Helper()
	m := w.answer(p)
	enc, err := events.EncodingOf(m.Header.Get(events.HeaderContentType))
	if err != nil {
		w.t.Fatal(err)
	}
	d, err := events.DecodeDecisionIn(w.layout, enc, m.Data)
	if err != nil {
		w.t.Fatalf("decode decision: %v", err)
	}
	if d.TriggerSeq != p.seq {
		w.t.Fatalf("decision answers trigger %d, want %d", d.TriggerSeq, p.seq)
	}
	return d
}

func (w *worker) result(p published) events.ToolResult {
	w.t.Helper()
	m := w.answer(p)
	enc, err := events.EncodingOf(m.Header.Get(events.HeaderContentType))
	if err != nil {
		w.t.Fatal(err)
	}
	r, err := events.DecodeToolResultIn(w.layout, enc, m.Data)
	if err != nil {
		w.t.Fatalf("decode tool result: %v", err)
	}
	if r.TriggerSeq != p.seq {
		w.t.Fatalf("result answers trigger %d, want %d", r.TriggerSeq, p.seq)
	}
	return r
}

// preStep publishes a pre-step and returns its decision.
func (w *worker) preStep(ps events.PreStep) events.Decision {
	w.t.Helper()
	if ps.V == 0 {
		ps.V = events.Version
	}
	return w.decision(w.publish(ps.Session, events.KindPreStep, ps, nil))
}

// call publishes a skill call and returns its result.
func (w *worker) call(sc events.SkillCall) events.ToolResult {
	w.t.Helper()
	if sc.V == 0 {
		sc.V = events.Version
	}
	return w.result(w.publish(sc.Session, events.KindSkillCall, sc, nil))
}

// sessionLog returns every stored event of a session, in order (a test
// scan; the processor never does this).
func (e *env) sessionLog(sid string) []*jetstream.RawStreamMsg {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	st, err := e.js.Stream(ctx, DefaultStream)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []*jetstream.RawStreamMsg
	var seq uint64
	for {
		m, err := st.GetMsg(ctx, seq+1, jetstream.WithGetMsgSubject(events.SessionWildcard(events.DefaultPrefix, sid)))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return out
		}
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, m)
		seq = m.Sequence
	}
}

// outputs returns the session's stored events of kind k.
func (e *env) outputs(sid string, k events.Kind) []*jetstream.RawStreamMsg {
	var out []*jetstream.RawStreamMsg
	for _, m := range e.sessionLog(sid) {
		if m.Subject == events.Subject(events.DefaultPrefix, sid, k) {
			out = append(out, m)
		}
	}
	return out
}

// catalogs decodes the session's stored catalogs.
func (e *env) catalogs(sid string) []events.Catalog {
	e.t.Helper()
	var out []events.Catalog
	for _, m := range e.outputs(sid, events.KindCatalog) {
		enc, err := events.EncodingOf(m.Header.Get(events.HeaderContentType))
		if err != nil {
			e.t.Fatal(err)
		}
		c, err := events.DecodeCatalogIn(e.cfg.Layout, enc, m.Data)
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, c)
	}
	return out
}

// golden compares got with testdata/<name>, rewriting it under -update.
func golden(t testing.TB, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs:\n--- want\n%s\n--- got\n%s", name, want, got)
	}
}

// counter reads a counter of the processor's metrics.
func counter(t testing.TB, c prometheus.Collector) float64 {
	t.Helper()
	return testutil.ToFloat64(c)
}
