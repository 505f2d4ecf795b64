package processor

import (
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

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
