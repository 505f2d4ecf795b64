package processor

import (
	"testing"

	"github.com/skillstream/skillstream/events"
)

// A processor lists the skills and prepares the catalog before it says it
// serves: the first sessions after a start do not wait for the scan.
func TestSkillsListedBeforeReady(t *testing.T) {
	e := newEnv(t)
	e.flaky.offer.Store(true)
	e.start()
	if n := e.flaky.lists.Load(); n < 1 {
		t.Fatalf("ready after %d listings of the skills, want the catalog prepared first", n)
	}
	w := e.worker()
	d := w.preStep(events.PreStep{V: events.Version, Session: "warm-1", Step: "1", Tools: ourTool()})
	if d.Catalog == nil {
		t.Fatalf("first pre-step: no catalog (%+v)", d)
	}
}
