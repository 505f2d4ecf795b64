package processor

import (
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skillstream/skillstream/events"
)

// cpuTime is the process's user and system CPU time so far.
func cpuTime(t testing.TB) time.Duration {
	t.Helper()
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestLongCwdAnsweredAtOnce: a pre-step whose cwd has 10,000 components
// (20 KB), and one of 60 KB in a single component run, is answered
// rejected with the bound it breaks, and a following honest pre-step is
// still served. The CPU the hostile triggers cost is logged (-v), never
// asserted.
func TestLongCwdAnsweredAtOnce(t *testing.T) {
	e := newEnv(t)
	e.writeSkill("alpha", "First.")
	e.start()
	w := e.worker()
	cases := []struct {
		name, cwd, why string
	}{
		{"10000 components", e.cwd + strings.Repeat("/a", 10000), "too long"},
		{"10000 components, no project", "/nowhere" + strings.Repeat("/a", 10000), "too long"},
		{"2000 components within PATH_MAX", "/n" + strings.Repeat("/a", 1999), "too many components"},
		{"60 KB", e.cwd + "/" + strings.Repeat("b", 60<<10), "too long"},
	}
	for i, c := range cases {
		before := cpuTime(t)
		d := w.preStep(events.PreStep{Session: "long", Step: "s" + string(rune('0'+i)), Cwd: c.cwd, Tools: ourTool()})
		spent := cpuTime(t) - before
		t.Logf("%s (%d bytes): outcome %s, error %+v, %v CPU", c.name, len(c.cwd), d.Outcome, d.Error, spent)
		if d.Outcome != events.OutcomeRejected || d.Error == nil || !strings.Contains(d.Error.Message, c.why) {
			t.Errorf("%s: outcome %s error %+v, want rejected naming %q", c.name, d.Outcome, d.Error, c.why)
		}
		if d.Error != nil && len(d.Error.Message) > 1024 {
			t.Errorf("%s: error message of %d bytes carries the whole cwd", c.name, len(d.Error.Message))
		}
	}
	// Twelve 40 KB ones, as a flood.
	before := cpuTime(t)
	for i := range 12 {
		d := w.preStep(events.PreStep{Session: "flood", Step: "f" + strconv.Itoa(i), Cwd: e.cwd + strings.Repeat("/a", 20000), Tools: ourTool()})
		if d.Outcome != events.OutcomeRejected {
			t.Errorf("40 KB cwd %d: %s", i, d.Outcome)
		}
	}
	t.Logf("12 pre-steps with a 40 KB cwd: %v CPU", cpuTime(t)-before)
	d := w.preStep(events.PreStep{Session: "honest", Step: "1", Cwd: e.cwd, Tools: ourTool()})
	if d.Outcome != events.OutcomeAppended {
		t.Errorf("honest pre-step after the long ones: %s, want appended", d.Outcome)
	}
	// As deep as the bounds allow, below the project: served.
	deep := e.cwd + strings.Repeat("/a", events.MaxPathComponents-strings.Count(e.cwd, "/"))
	before = cpuTime(t)
	d = w.preStep(events.PreStep{Session: "deep", Step: "1", Cwd: deep, Tools: ourTool()})
	t.Logf("%d components (%d bytes): outcome %s, %v CPU", strings.Count(deep, "/"), len(deep), d.Outcome, cpuTime(t)-before)
	if d.Outcome != events.OutcomeAppended {
		t.Errorf("pre-step at the component bound: %s %+v, want appended", d.Outcome, d.Error)
	}
}
