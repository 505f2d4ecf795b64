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

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
	"github.com/skillstream/skillstream/providers/store"
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

// storeRegistry is a member's registry over the skill store, on its own
// connection (its own watch); gate, when not nil, holds the watch back.
func storeRegistry(t *testing.T, e *env, gate <-chan struct{}) *providers.Registry {
	t.Helper()
	js, err := jetstream.New(e.srv.Connect())
	if err != nil {
		t.Fatal(err)
	}
	sp, err := store.Open(context.Background(), js, store.Config{WatchGate: gate})
	if err != nil {
		t.Fatal(err)
	}
	r := providers.NewRegistry([]providers.Provider{sp}, providers.WithLogger(quietLogger()))
	t.Cleanup(func() { r.Close() })
	return r
}

// pushSkill publishes one global store skill and returns the revision.
func pushSkill(t *testing.T, e *env, name, desc string) uint64 {
	t.Helper()
	ctx := context.Background()
	pb, err := store.NewPublisher(ctx, e.js, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := store.ReadSkill(storeSkill(t, t.TempDir(), name, desc, "Body of "+name+"."), store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	changes, err := pb.Push(ctx, skillstore.Global, []store.Local{l}, false)
	if err != nil || len(changes) != 1 {
		t.Fatalf("push %s: %v %+v", name, err, changes)
	}
	return changes[0].Revision
}

// storeDigest waits until registry has applied rev and returns its
// catalog digest for q.
func storeDigest(t *testing.T, registry *providers.Registry, q catalog.Query, rev uint64) string {
	t.Helper()
	var digest string
	poll(t, func() error {
		v, err := registry.Prepared(context.Background(), q, catalog.DefaultOptions())
		if err != nil {
			return err
		}
		if !v.Complete || v.Revision < rev {
			return fmt.Errorf("complete %v at revision %d, want %d", v.Complete, v.Revision, rev)
		}
		digest = v.Digest
		return nil
	})
	return digest
}

// A member whose store watch is held back never replaces a catalog that
// reflects a newer revision: it answers "behind" and appends nothing; once
// released it catches up and agrees.
func TestViewHeldBackMemberNeverGoesBack(t *testing.T) {
	e := newEnv(t)
	r0 := pushSkill(t, e, "s-one", "First version.")
	gate := make(chan struct{})
	regA, regB := storeRegistry(t, e, gate), storeRegistry(t, e, nil)
	q := catalog.Query{}
	d0 := storeDigest(t, regA, q, r0)
	storeDigest(t, regB, q, r0)
	tu := newTurns(2)
	startMember(t, e.srv, regA, viewConfig("member-a"), hooks{take: tu.hook(0)})
	startMember(t, e.srv, regB, viewConfig("member-b"), hooks{take: tu.hook(1)})
	w := e.worker()
	const sid = "held"
	step := func(n int, want string) events.Decision {
		t.Helper()
		d := askStep(t, w, events.PreStep{V: 1, Session: sid, Step: fmt.Sprint(n), Tools: ourTool()})
		if d.Outcome != want {
			t.Fatalf("step %d: %+v, want %s", n, d, want)
		}
		return d
	}
	step(1, events.OutcomeAppended) // B: initial
	step(2, events.OutcomeUnchanged)

	r1 := pushSkill(t, e, "s-one", "Second version.")
	d1 := storeDigest(t, regB, q, r1)
	if regA.Revision() >= r1 {
		t.Fatal("the gate did not hold A's watch back")
	}
	if d := step(3, events.OutcomeAppended); d.Catalog.Source.View == nil || d.Catalog.Source.View.Revision < r1 ||
		d.Catalog.Source.View.Instance != "member-b" {
		t.Fatalf("B's replacement: view %+v", d.Catalog.Source.View)
	}
	for n := 4; n < 12; n++ {
		if n%2 == 0 {
			if d := step(n, events.OutcomeBehind); d.Reason != events.ReasonStoreRevisionAhead {
				t.Fatalf("step %d: reason %q", n, d.Reason)
			}
		} else {
			step(n, events.OutcomeUnchanged)
		}
	}
	checkCatalogs(t, e, sid, d0, d1)

	close(gate)
	storeDigest(t, regA, q, r1)
	for n := 12; n < 16; n++ {
		step(n, events.OutcomeUnchanged)
	}
	checkCatalogs(t, e, sid, d0, d1)
}

// Two store members, 50 concurrent sessions of 20 steps, a publish during
// the run that reaches one member late, crashes between append and ack,
// and a member replaced by a new instance: every session shows the
// published catalogs in publish order, each at most once, and every step
// is answered and appears at most once.
func TestViewStoreGroupPublishDuringRun(t *testing.T) {
	sessions, steps := 50, 20
	if testing.Short() {
		sessions, steps = 10, 10
	}
	e := newEnv(t)
	r0 := pushSkill(t, e, "s-one", "First version.")
	pushSkill(t, e, "s-two", "Another skill.")
	gateB := make(chan struct{})
	regA, regB := storeRegistry(t, e, nil), storeRegistry(t, e, gateB)
	q := catalog.Query{}
	d0 := storeDigest(t, regA, q, r0+1)
	storeDigest(t, regB, q, r0+1)

	// B crashes after its append for the first few sessions it appends to.
	var crashes atomic.Int32
	crashed := sync.Map{}
	crash := func(sid string, _ uint64) error {
		if _, seen := crashed.LoadOrStore(sid, true); !seen && crashes.Add(1) <= 4 {
			return errCrash
		}
		return nil
	}
	a := startMember(t, e.srv, regA, viewConfig("member-a"), hooks{})
	b := startMember(t, e.srv, regB, viewConfig("member-b"), hooks{afterAppend: crash})
	w := e.worker()

	var answered atomic.Int64
	var mu sync.Mutex
	outcomes := map[string]int{}
	errs := make(chan error, sessions)
	var wg sync.WaitGroup
	for s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var retries atomic.Int32
			sid := fmt.Sprintf("pub-%d", s)
			for n := 1; n <= steps; n++ {
				ds, err := w.ask(events.PreStep{V: 1, Session: sid, Step: fmt.Sprint(n), Tools: ourTool()}, false, &retries)
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				outcomes[ds[0].Outcome]++
				mu.Unlock()
				answered.Add(1)
			}
		}()
	}
	waitAnswered := func(n int64) {
		t.Helper()
		poll(t, func() error {
			if got := answered.Load(); got < n {
				return fmt.Errorf("%d of %d steps answered", got, n)
			}
			return nil
		})
	}
	total := int64(sessions * steps)
	waitAnswered(total * 3 / 10)
	r1 := pushSkill(t, e, "s-one", "Second version.")
	d1 := storeDigest(t, regA, q, r1)
	// B stays behind while more steps run, then catches up...
	waitAnswered(total * 5 / 10)
	poll(t, func() error { // B met a newer catalog than its view at least once
		if n := testutil.ToFloat64(b.p.m.viewChecks.WithLabelValues(checkBehind)); n < 1 {
			return fmt.Errorf("B answered behind %v times", n)
		}
		return nil
	})
	close(gateB)
	// ...and is replaced by a new instance (a restart) while sessions run.
	waitAnswered(total * 7 / 10)
	b.stop()
	startMember(t, e.srv, regB, viewConfig("member-b2"), hooks{})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// One more step each: every session ends on the published catalog.
	for s := range sessions {
		sid := fmt.Sprintf("pub-%d", s)
		d := askStep(t, w, events.PreStep{V: 1, Session: sid, Step: "final", Tools: ourTool()})
		if d.Outcome != events.OutcomeUnchanged && d.Outcome != events.OutcomeAppended {
			t.Fatalf("%s final step: %+v", sid, d)
		}
		checkCatalogs(t, e, sid, d0, d1)
	}
	if crashes.Load() < 1 {
		t.Fatal("no crash happened")
	}
	if outcomes[events.OutcomeDiverged] != 0 || outcomes[events.OutcomeRejected] != 0 || outcomes[events.OutcomeIncomplete] != 0 {
		t.Fatalf("outcomes %v", outcomes)
	}
	t.Logf("outcomes %v, %d crashes; view checks: A %s, B %s", outcomes, min(crashes.Load(), 4), viewChecks(a), viewChecks(b))
}

// A rolling update of local folders: member A gets a new skill, B some
// steps later. Each session gets exactly one replacement for the change,
// also when a member crashes between an append and its ack.
func TestViewRollingUpdate(t *testing.T) {
	const sessions = 10
	e := newEnv(t)
	dirA, dirB := t.TempDir(), t.TempDir()
	writeLocal(t, dirA, "a-skill", "Everywhere.")
	writeLocal(t, dirB, "a-skill", "Everywhere.")
	regA, regB := localRegistry(t, dirA), localRegistry(t, dirB)
	q := catalog.Query{}
	d0 := digestOf(t, regA, q, "a-skill")
	digestOf(t, regB, q, "a-skill")
	var appends sync.Map // sid -> *atomic.Int32, B's appends
	var crashes atomic.Int32
	crash := func(sid string, _ uint64) error {
		c, _ := appends.LoadOrStore(sid, new(atomic.Int32))
		n := c.(*atomic.Int32).Add(1)
		if (sid == "roll-3" && n == 1) || (sid == "roll-4" && n == 2) {
			crashes.Add(1)
			return errCrash
		}
		return nil
	}
	tu := newTurns(2)
	a := startMember(t, e.srv, regA, viewConfig("member-a"), hooks{take: tu.hook(0)})
	b := startMember(t, e.srv, regB, viewConfig("member-b"), hooks{take: tu.hook(1), afterAppend: crash})
	w := e.worker()
	phase := func(from, to int) {
		t.Helper()
		var wg sync.WaitGroup
		errs := make(chan error, sessions)
		for s := range sessions {
			wg.Add(1)
			go func() {
				defer wg.Done()
				var retries atomic.Int32
				for n := from; n < to; n++ {
					sid := fmt.Sprintf("roll-%d", s)
					ds, err := w.ask(events.PreStep{V: 1, Session: sid, Step: fmt.Sprint(n), Tools: ourTool()}, false, &retries)
					if err == nil && ds[0].Outcome != events.OutcomeAppended && ds[0].Outcome != events.OutcomeUnchanged &&
						ds[0].Outcome != events.OutcomeDiverged {
						err = fmt.Errorf("%s step %d: %+v", sid, n, ds[0])
					}
					if err != nil {
						errs <- err
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
	phase(1, 5)
	writeLocal(t, dirA, "c-skill", "New.")
	d1 := digestOf(t, regA, q, "a-skill", "c-skill")
	phase(5, 11) // A sees the new skill, B not yet
	writeLocal(t, dirB, "c-skill", "New.")
	digestOf(t, regB, q, "a-skill", "c-skill")
	phase(11, 17)
	for s := range sessions {
		checkCatalogs(t, e, fmt.Sprintf("roll-%d", s), d0, d1)
	}
	if crashes.Load() != 2 {
		t.Fatalf("%d crashes, want 2", crashes.Load())
	}
	// The divergence seen while the update rolled resolves.
	poll(t, func() error {
		if n := len(a.p.Divergences()) + len(b.p.Divergences()); n != 0 {
			return fmt.Errorf("%d divergences", n)
		}
		return nil
	})
}

// viewChecks describes a member's view check counts.
func viewChecks(m *member) string {
	var out []string
	for _, r := range viewCheckResults {
		if n := testutil.ToFloat64(m.p.m.viewChecks.WithLabelValues(r)); n > 0 {
			out = append(out, fmt.Sprintf("%s=%v", r, n))
		}
	}
	return strings.Join(out, " ")
}

// The view endpoint holds a request to a trigger's rules: a relative cwd,
// a cwd outside the cwd roots, a bad project or resourceDir, and bytes
// that do not decode are refused with a reason, and nothing is read for
// them; a good request is answered with what a pre-step would decide on.
func TestViewEndpointBounds(t *testing.T) {
	e := newEnv(t)
	e.withoutFlaky()
	e.writeSkill("a-skill", "A skill.")
	e.waitSkills("a-skill")
	p := e.start(func(c *Config, _ *options) {
		c.Instance = "bounded"
		c.CwdRoots = []string{e.cwd}
	})
	nc := e.srv.Connect()
	ask := func(body string) events.ViewReply {
		t.Helper()
		m, err := nc.RequestMsg(&nats.Msg{Subject: events.ViewSubject("bounded"), Data: []byte(body),
			Header: nats.Header{events.HeaderContentType: []string{events.ContentTypeJSON}}}, waitTimeout)
		if err != nil {
			t.Fatal(err)
		}
		r, err := events.DecodeViewReply(events.JSON, m.Data)
		if err != nil {
			t.Fatalf("reply %s: %v", m.Data, err)
		}
		if r.Instance != "bounded" {
			t.Fatalf("reply from %q", r.Instance)
		}
		return r
	}
	for body, want := range map[string]string{
		`{"v":1,"cwd":"relative/dir"}`:            "not an absolute path",
		`{"v":1,"cwd":"/etc"}`:                    "outside the allowed cwd roots",
		`{"v":1,"cwd":"` + e.cwd + `/../../etc"}`: "outside the allowed cwd roots",
		`{"v":1,"project":"a.b"}`:                 "project",
		`{"v":1,"resourceDir":"res"}`:             "resourceDir",
		`{"v":2}`:                                 "bad view request",
		`not json`:                                "bad view request",
	} {
		if r := ask(body); r.Complete || r.Digest != "" || !strings.Contains(r.Error, want) {
			t.Errorf("%s: %+v, want an error containing %q", body, r, want)
		}
	}
	v, err := e.registry.Prepared(context.Background(), catalog.Query{Cwd: e.cwd}, p.Config().Catalog)
	if err != nil {
		t.Fatal(err)
	}
	if r := ask(`{"v":1,"cwd":"` + e.cwd + `"}`); !r.Complete || r.Digest != v.Digest || r.Error != "" {
		t.Fatalf("good request: %+v, want digest %s", r, v.Digest)
	}
}

func TestInstanceConfig(t *testing.T) {
	id := DefaultInstance()
	if !events.ValidInstance(id) {
		t.Fatalf("default instance %q is not a subject token", id)
	}
	if DefaultInstance() == id {
		t.Fatal("two default instances are equal")
	}
	err := Config{Instance: "a.b"}.WithDefaults().Validate()
	if err == nil || !strings.Contains(err.Error(), `instance "a.b"`) {
		t.Fatalf("bad instance: %v", err)
	}
}
