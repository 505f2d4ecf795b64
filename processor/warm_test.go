package processor

import (
	"context"
	"errors"
	"testing"
	"time"

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

// A starting processor pulls no trigger while it lists its skills: a
// trigger sent meanwhile stays in the stream (or goes to a member that is
// ready) instead of waiting on this one, and is answered once it serves.
func TestNoPullWhileListingSkills(t *testing.T) {
	e := newEnv(t)
	e.flaky.offer.Store(true)
	e.flaky.hold = make(chan struct{})
	p, err := New(e.srv.Connect(), e.registry, e.cfg, WithLogger(quietLogger()), WithRegisterer(e.reg))
	if err != nil {
		t.Fatal(err)
	}
	runUntilCleanup(t, p)
	ctx := context.Background()
	poll(t, func() error {
		if e.flaky.lists.Load() < 1 {
			return errors.New("the skills are not being listed yet")
		}
		return nil
	})
	cons, err := e.js.Consumer(ctx, DefaultStream, e.cfg.WithDefaults().Consumer)
	if err != nil {
		t.Fatal(err)
	}
	for range 10 { // half a second: room for a pull loop that started early
		info, err := cons.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.NumWaiting > 0 {
			t.Fatalf("%d pull requests wait on the consumer while the skills are being listed", info.NumWaiting)
		}
		select {
		case <-p.Ready():
			t.Fatal("ready while the skills are being listed")
		case <-time.After(50 * time.Millisecond):
		}
	}
	close(e.flaky.hold)
	select {
	case <-p.Ready():
	case <-time.After(waitTimeout):
		t.Fatal("processor not ready once the skills were listed")
	}
	d := e.worker().preStep(events.PreStep{V: events.Version, Session: "after-listing", Step: "1", Tools: ourTool()})
	if d.Catalog == nil {
		t.Fatalf("first pre-step after the listing: no catalog (%+v)", d)
	}
}
