package processor

import (
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

// sharedRounds changes skills in one folder and asks for a pre-step at
// once after each change (no pause), counting the decisions that did not
// reflect the change: the session's visible catalog after the step must
// list exactly the skills on disk.
type sharedRounds struct {
	t       *testing.T
	dir     string
	w       *worker
	sid     string
	want    map[string]string
	visible []string // the session's catalog entries, name=description
	stale   int
	report  []string
	counts  map[string]int // outcomes
}

func (s *sharedRounds) change(i int) string {
	name := fmt.Sprintf("s%d", i%5)
	switch i % 3 {
	case 0, 1: // add or edit (a description the skill never had before)
		desc := fmt.Sprintf("Version %d.", i)
		writeLocal(s.t, s.dir, name, desc)
		s.want[name] = desc
		return "write " + name
	default:
		if err := os.RemoveAll(filepath.Join(s.dir, name)); err != nil {
			s.t.Fatal(err)
		}
		delete(s.want, name)
		return "delete " + name
	}
}

func (s *sharedRounds) step(i int, what string) {
	s.t.Helper()
	d := askStep(s.t, s.w, events.PreStep{V: 1, Session: s.sid, Step: fmt.Sprint(i), Tools: ourTool()})
	s.counts[d.Outcome]++
	switch d.Outcome {
	case events.OutcomeAppended:
		s.visible = s.visible[:0]
		for _, e := range d.Catalog.Source.Entries {
			s.visible = append(s.visible, e.Name+"="+e.Description)
		}
	case events.OutcomeUnchanged, events.OutcomeEmpty, events.OutcomeDiverged:
	default:
		s.t.Fatalf("step %d: %+v", i, d)
	}
	var want []string
	for _, n := range slices.Sorted(maps.Keys(s.want)) {
		want = append(want, n+"="+s.want[n])
	}
	if !slices.Equal(s.visible, want) || d.Outcome == events.OutcomeDiverged {
		s.stale++
		if len(s.report) < 5 {
			s.report = append(s.report, fmt.Sprintf("step %d after %s: %s, sees %v, want %v", i, what, d.Outcome, s.visible, want))
		}
	}
}

// TestReadYourWritesSharedFolder: two members with the same flags share
// one skills folder, as on one host. A skill written, edited or removed
// just before a pre-step is in that pre-step's decision, whichever member
// takes it: no stale catalog, no diverged answer, no divergence logged.
func TestReadYourWritesSharedFolder(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	regA, regB := localRegistry(t, dir), localRegistry(t, dir)
	tu := newTurns(2)
	a := startMember(t, e.srv, regA, viewConfig("member-a"), hooks{take: tu.hook(0)})
	b := startMember(t, e.srv, regB, viewConfig("member-b"), hooks{take: tu.hook(1)})
	s := &sharedRounds{t: t, dir: dir, w: e.worker(), sid: "fresh", want: map[string]string{}, counts: map[string]int{}}
	rounds := 1000
	if testing.Short() {
		rounds = 200
	}
	for i := range rounds {
		s.step(i, s.change(i))
	}
	t.Logf("outcomes %v", s.counts)
	if s.stale > 0 {
		t.Fatalf("%d of %d decisions did not reflect the change made before them:\n%s", s.stale, rounds, strings.Join(s.report, "\n"))
	}
	for _, m := range []*member{a, b} {
		if n := len(m.logs.matching(slog.LevelError, "members see different skills")); n != 0 || len(m.p.Divergences()) != 0 {
			t.Fatalf("%s logged %d divergences, reports %v", m.p.cfg.Instance, n, m.p.Divergences())
		}
	}
	if s.counts[events.OutcomeAppended] < rounds/3 {
		t.Fatalf("outcomes %v: the changes did not make catalogs", s.counts)
	}
}

// TestReadYourWritesStore: a worker pushes a skill and at once asks for a
// pre-step carrying the revision the push returned (minStoreRevision).
// Two members take turns; the second one's index watch applies changes
// slowly (held back by a test gate). Every decision reflects the push.
func TestReadYourWritesStore(t *testing.T) {
	e := newEnv(t)
	pushSkill(t, e, "s-one", "Version 0.")
	gate := make(chan struct{})
	regA, regB := storeRegistry(t, e, nil), storeRegistry(t, e, gate)
	tu := newTurns(2)
	startMember(t, e.srv, regA, viewConfig("member-a"), hooks{take: tu.hook(0)})
	b := startMember(t, e.srv, regB, Config{Instance: "member-b", AckWait: time.Second, NakDelay: 50 * time.Millisecond,
		MaxDeliver: 1000, Workers: 16, CatchUpWait: 10 * time.Second}, hooks{take: tu.hook(1)})
	// B's watch applies one change every 3 ms at the most, so that it is
	// behind when its turn comes.
	stop := make(chan struct{})
	var released sync.WaitGroup
	released.Add(1)
	go func() {
		defer released.Done()
		tick := time.NewTicker(3 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			select {
			case gate <- struct{}{}:
			case <-stop:
				return
			}
		}
	}()
	defer func() { close(stop); released.Wait() }()

	w := e.worker()
	rounds := 1000
	if testing.Short() {
		rounds = 200
	}
	stale := 0
	var report []string
	outcomes := map[string]int{}
	for i := 1; i <= rounds; i++ {
		want := fmt.Sprintf("Version %d.", i)
		rev := pushSkill(t, e, "s-one", want)
		d := askStep(t, w, events.PreStep{V: 1, Session: "store-fresh", Step: fmt.Sprint(i), Tools: ourTool(), MinStoreRevision: rev})
		outcomes[d.Outcome]++
		ok := d.Outcome == events.OutcomeAppended && len(d.Catalog.Source.Entries) == 1 && d.Catalog.Source.Entries[0].Description == want &&
			d.Catalog.Source.View != nil && d.Catalog.Source.View.Revision >= rev
		if !ok {
			stale++
			if len(report) < 5 {
				report = append(report, fmt.Sprintf("step %d (revision %d): %+v", i, rev, d))
			}
		}
	}
	waited := testutil.CollectAndCount(b.p.m.freshWaits)
	t.Logf("outcomes %v; member B waited for the store in %d series", outcomes, waited)
	if stale > 0 {
		t.Fatalf("%d of %d pre-steps were not decided on the revision pushed before them:\n%s", stale, rounds, strings.Join(report, "\n"))
	}
	if n := histCount(t, b.p.m.freshWaits.WithLabelValues("pre-step", freshReached)); n == 0 {
		t.Fatal("member B never had to wait: the test did not hold its watch back")
	}
}

// histCount is how many observations a histogram series holds.
func histCount(t *testing.T, o prometheus.Observer) uint64 {
	t.Helper()
	var m dto.Metric
	if err := o.(prometheus.Metric).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetHistogram().GetSampleCount()
}

// A member whose watch is stopped cannot reach the revision a trigger asks
// for: the pre-step is answered incomplete (unavailable) and the skill call
// unavailable, within the trigger's deadline, and nothing is appended. A
// member without a skill store says so.
func TestMinStoreRevisionNotReached(t *testing.T) {
	e := newEnv(t)
	pushSkill(t, e, "s-one", "Version 0.")
	gate := make(chan struct{}) // never released
	reg := storeRegistry(t, e, gate)
	storeDigest(t, reg, catalog.Query{}, 1)
	startMember(t, e.srv, reg, Config{Instance: "stopped", AckWait: time.Second, NakDelay: 50 * time.Millisecond,
		Workers: 4, CatchUpWait: 10 * time.Second}, hooks{})
	w := e.worker()
	d := askStep(t, w, events.PreStep{V: 1, Session: "held", Step: "1", Tools: ourTool(), MinStoreRevision: 1})
	if d.Outcome != events.OutcomeAppended {
		t.Fatalf("revision already applied: %+v", d)
	}
	rev := pushSkill(t, e, "s-one", "Version 1.")

	start := time.Now()
	deadline := start.Add(time.Second)
	d = askStep(t, w, events.PreStep{V: 1, Session: "held", Step: "2", Tools: ourTool(), MinStoreRevision: rev, DeadlineMs: deadline.UnixMilli()})
	if d.Outcome != events.OutcomeIncomplete || d.Error == nil || d.Error.Code != codeUnavailable ||
		!strings.Contains(d.Error.Message, fmt.Sprintf("store revision %d", rev)) {
		t.Fatalf("pre-step past the member's view: %+v", d)
	}
	if answered := time.Now(); answered.After(deadline) {
		t.Fatalf("answered %v after the deadline", answered.Sub(deadline))
	}
	r := w.call(events.SkillCall{V: 1, Session: "held", Call: "c1", Args: events.SkillArgs{Name: "s-one"},
		MinStoreRevision: rev, DeadlineMs: time.Now().Add(time.Second).UnixMilli()})
	if !r.IsError || r.Error == nil || r.Error.Code != codeUnavailable {
		t.Fatalf("skill call past the member's view: %+v", r)
	}
	if n := len(e.catalogs("held")); n != 1 {
		t.Fatalf("%d catalogs in the session, want the first only", n)
	}
	if n := len(e.outputs("held", events.KindToolResult)); n != 0 {
		t.Fatalf("%d tool results appended, want none", n)
	}

	// A member without a skill store cannot reach any revision.
	e2 := newEnv(t)
	e2.start()
	d = askStep(t, e2.worker(), events.PreStep{V: 1, Session: "nostore", Step: "1", Tools: ourTool(), MinStoreRevision: 3})
	if d.Outcome != events.OutcomeIncomplete || d.Error == nil || !strings.Contains(d.Error.Message, "follows no skill store") {
		t.Fatalf("member without a store: %+v", d)
	}
}
