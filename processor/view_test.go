package processor

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
)

// These tests run several members of one consumer group on one server,
// each with its own registry (its own folders, its own store watch), as
// members on different hosts would be.

// records is a slog handler keeping every record (and printing them
// under -v).
type records struct {
	mu   sync.Mutex
	recs []slog.Record
	next slog.Handler
}

func (r *records) Enabled(ctx context.Context, l slog.Level) bool { return true }
func (r *records) Handle(ctx context.Context, rec slog.Record) error {
	r.mu.Lock()
	r.recs = append(r.recs, rec.Clone())
	r.mu.Unlock()
	if testing.Verbose() {
		return r.next.Handle(ctx, rec)
	}
	return nil
}
func (r *records) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *records) WithGroup(string) slog.Handler      { return r }

// matching returns the records at level whose message starts with prefix.
func (r *records) matching(level slog.Level, prefix string) []slog.Record {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []slog.Record
	for _, rec := range r.recs {
		if rec.Level == level && strings.HasPrefix(rec.Message, prefix) {
			out = append(out, rec)
		}
	}
	return out
}

func attrs(rec slog.Record) map[string]string {
	m := map[string]string{}
	rec.Attrs(func(a slog.Attr) bool {
		m[a.Key] = a.Value.String()
		return true
	})
	return m
}

// member is one processor of the group with its own registry, metrics and
// logs.
type member struct {
	p        *Processor
	registry *providers.Registry
	metrics  *prometheus.Registry
	logs     *records
	stop     func()
}

// startMember runs a processor over registry until stop or the test's end.
func startMember(t *testing.T, srv *natstest.Server, registry *providers.Registry, cfg Config, h hooks) *member {
	t.Helper()
	logs := &records{next: slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})}
	mreg := prometheus.NewRegistry()
	p, err := New(srv.Connect(), registry, cfg, WithLogger(slog.New(logs)), WithRegisterer(mreg))
	if err != nil {
		t.Fatal(err)
	}
	p.hooks = h
	p.recheckPeriod = 100 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	select {
	case <-p.Ready():
	case err := <-done:
		done <- err
		t.Fatalf("Run: %v", err)
	case <-time.After(waitTimeout):
		t.Fatal("processor not ready")
	}
	return &member{p: p, registry: registry, metrics: mreg, logs: logs, stop: stop}
}

func (m *member) divergenceGauge(t *testing.T) float64 {
	t.Helper()
	return testutil.ToFloat64(m.p.m.divergence)
}

// viewConfig is the members' configuration: quick redelivery, generous
// deliveries (take hooks hand triggers back), short waits for the store.
func viewConfig(instance string) Config {
	return Config{Instance: instance, AckWait: time.Second, NakDelay: 50 * time.Millisecond, MaxDeliver: 1000,
		Workers: 16, CatchUpWait: 300 * time.Millisecond}
}

// turns hands each pre-step to one member: the one whose index is the
// step number modulo the number of members, unless only is set (>= 0).
type turns struct {
	members int
	only    atomic.Int32
}

func newTurns(members int) *turns {
	tu := &turns{members: members}
	tu.only.Store(-1)
	return tu
}

// hook is the take hook of member i.
func (tu *turns) hook(i int) func(jetstream.Msg) bool {
	return func(msg jetstream.Msg) bool {
		if o := tu.only.Load(); o >= 0 {
			return int(o) == i
		}
		ps, err := events.DecodePreStep(events.Msgpack, msg.Data())
		if err != nil {
			return true
		}
		n, err := strconv.Atoi(ps.Step)
		if err != nil {
			return true
		}
		return n%tu.members == i
	}
}

// localRegistry is a member's registry over its own custom skills folder.
func localRegistry(t *testing.T, dir string) *providers.Registry {
	t.Helper()
	fs, err := agentskills.New(agentskills.Config{NoUserDir: true, CustomDirs: []string{dir}})
	if err != nil {
		t.Fatal(err)
	}
	r := providers.NewRegistry([]providers.Provider{fs}, providers.WithLogger(quietLogger()))
	t.Cleanup(func() { r.Close() })
	return r
}

func writeLocal(t *testing.T, dir, name, desc string) {
	t.Helper()
	d := filepath.Join(dir, name)
	if err := os.MkdirAll(d, 0o755); err != nil {
		t.Fatal(err)
	}
	md := fmt.Sprintf("---\nname: %s\ndescription: %s\n---\nBody of %s.\n", name, desc, name)
	if err := os.WriteFile(filepath.Join(d, "SKILL.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
}

// digestOf waits until registry's catalog for q has exactly names and
// returns its digest.
func digestOf(t *testing.T, registry *providers.Registry, q catalog.Query, names ...string) string {
	t.Helper()
	var digest string
	poll(t, func() error {
		v, err := registry.Prepared(context.Background(), q, catalog.DefaultOptions())
		if err != nil {
			return err
		}
		var got []string
		for _, e := range v.Entries {
			got = append(got, e.Name)
		}
		if !v.Complete || strings.Join(got, ",") != strings.Join(names, ",") {
			return fmt.Errorf("skills %v, want %v", got, names)
		}
		digest = v.Digest
		return nil
	})
	return digest
}

// askStep publishes a pre-step (again as a new message when no answer
// comes) and returns its decision.
func askStep(t *testing.T, w *worker, ps events.PreStep) events.Decision {
	t.Helper()
	var retries atomic.Int32
	ds, err := w.ask(ps, false, &retries)
	if err != nil {
		t.Fatal(err)
	}
	return ds[0]
}

// checkCatalogs checks that a session's catalogs answer distinct steps
// (exactly-once) and have the digests want, in order.
func checkCatalogs(t *testing.T, e *env, sid string, want ...string) []events.Catalog {
	t.Helper()
	cats := e.catalogs(sid)
	steps := map[string]bool{}
	var got []string
	for _, c := range cats {
		if steps[c.Step] {
			t.Fatalf("%s: two catalogs for step %s", sid, c.Step)
		}
		steps[c.Step] = true
		got = append(got, short(c.Source.Digest))
	}
	var ws []string
	for _, d := range want {
		ws = append(ws, short(d))
	}
	if strings.Join(got, " ") != strings.Join(ws, " ") {
		t.Fatalf("%s: catalog digests %v, want %v", sid, got, ws)
	}
	return cats
}

// Members whose local folders differ: 40 sequential steps of one session,
// alternating between them, append one catalog; the member that would
// replace the other's catalog asks it, finds that it still sees other
// skills, appends nothing and reports the divergence (error log once,
// gauge, Divergences). Once the folders agree the divergence resolves;
// when the member that produced the catalog is gone, the other replaces it
// once.
func TestViewsDivergeBetweenLocalFolders(t *testing.T) {
	e := newEnv(t)
	dirA, dirB := t.TempDir(), t.TempDir()
	writeLocal(t, dirA, "a-skill", "Everywhere.")
	writeLocal(t, dirB, "a-skill", "Everywhere.")
	writeLocal(t, dirB, "b-skill", "Only on B.")
	regA, regB := localRegistry(t, dirA), localRegistry(t, dirB)
	q := catalog.Query{}
	dA := digestOf(t, regA, q, "a-skill")
	dB := digestOf(t, regB, q, "a-skill", "b-skill")
	tu := newTurns(2)
	a := startMember(t, e.srv, regA, viewConfig("member-a"), hooks{take: tu.hook(0)})
	b := startMember(t, e.srv, regB, viewConfig("member-b"), hooks{take: tu.hook(1)})
	w := e.worker()
	const sid = "diverge"
	start := time.Now()
	reported := time.Duration(0)
	outcomes := map[string]int{}
	for step := 2; step < 42; step++ { // step 2 goes to A: A's catalog comes first
		d := askStep(t, w, events.PreStep{V: 1, Session: sid, Step: fmt.Sprint(step), Tools: ourTool()})
		outcomes[d.Outcome]++
		if d.Outcome == events.OutcomeDiverged && d.Reason != events.ReasonMemberSeesOtherSkills {
			t.Fatalf("step %d: %+v", step, d)
		}
		if reported == 0 && len(b.p.Divergences()) > 0 {
			reported = time.Since(start)
		}
	}
	t.Logf("outcomes %v, divergence reported after %v", outcomes, reported)
	cats := checkCatalogs(t, e, sid, dA)
	if v := cats[0].Source.View; v == nil || v.Instance != "member-a" || v.Revision != 0 {
		t.Fatalf("catalog view %+v", v)
	}
	if outcomes[events.OutcomeDiverged] != 20 || outcomes[events.OutcomeUnchanged] != 19 {
		t.Fatalf("outcomes %v: want B's 20 steps diverged, A's later 19 unchanged", outcomes)
	}
	if reported == 0 || reported > 10*time.Second {
		t.Fatalf("divergence reported after %v, want within 10s", reported)
	}
	ds := b.p.Divergences()
	if len(ds) != 1 || ds[0].Instance != "member-b" || ds[0].Digest != dB || ds[0].Peer != "member-a" || ds[0].PeerDigest != dA {
		t.Fatalf("divergences %+v", ds)
	}
	if !strings.Contains(ds[0].String(), "member-a") || !strings.Contains(ds[0].String(), short(dB)) {
		t.Fatalf("divergence line %q", ds[0].String())
	}
	if g := b.divergenceGauge(t); g != 1 {
		t.Fatalf("B's divergence gauge %v, want 1", g)
	}
	if g := a.divergenceGauge(t); g != 0 || len(a.p.Divergences()) != 0 {
		t.Fatalf("A's divergence gauge %v, divergences %v", g, a.p.Divergences())
	}
	logged := b.logs.matching(slog.LevelError, "members see different skills")
	if len(logged) != 1 {
		t.Fatalf("%d error logs of the divergence, want 1 (once per cause)", len(logged))
	}
	if at := attrs(logged[0]); at["instance"] != "member-b" || at["other_instance"] != "member-a" ||
		at["digest"] != dB || at["other_digest"] != dA || at["cwd"] != "" {
		t.Fatalf("divergence log %v", at)
	}

	// The folders agree again: the divergence resolves without a session
	// meeting it (rechecked in the background).
	if err := os.RemoveAll(filepath.Join(dirB, "b-skill")); err != nil {
		t.Fatal(err)
	}
	digestOf(t, regB, q, "a-skill")
	poll(t, func() error {
		if n := len(b.p.Divergences()); n != 0 || b.divergenceGauge(t) != 0 {
			return fmt.Errorf("%d divergences, gauge %v", n, b.divergenceGauge(t))
		}
		return nil
	})
	if len(b.logs.matching(slog.LevelInfo, "view divergence resolved")) != 1 {
		t.Fatal("resolution not logged")
	}

	// B differs again and A, which produced the catalog, goes away: B
	// replaces A's catalog, once.
	writeLocal(t, dirB, "b-skill", "Only on B.")
	digestOf(t, regB, q, "a-skill", "b-skill")
	a.stop()
	tu.only.Store(1)
	for step := 42; step < 46; step++ {
		d := askStep(t, w, events.PreStep{V: 1, Session: sid, Step: fmt.Sprint(step), Tools: ourTool()})
		if want := map[bool]string{true: events.OutcomeAppended, false: events.OutcomeUnchanged}[step == 42]; d.Outcome != want {
			t.Fatalf("step %d with A gone: %+v, want %s", step, d, want)
		}
	}
	checkCatalogs(t, e, sid, dA, dB)
}
