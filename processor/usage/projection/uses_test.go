package projection

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
)

// TestUsesReadsLoads: Uses reads every skill's loads from a real
// projection, the same as Read reports them; before there is a projection
// its ranking is empty (a catalog then lists by name) and that is no
// error; Run reads at once.
func TestUsesReadsLoads(t *testing.T) {
	_, l := newSessionLog(t, events.LayoutFlat)
	o := l.opts()
	u := NewUses(l.js, o, 0, 0)
	if r, v := u.VersionedRanking(); r != nil || v != 0 {
		t.Fatalf("before a read: ranking %v, version %d", r, v)
	}
	if err := u.Refresh(context.Background()); err != nil || u.Ranking() != nil || u.Reads() != 1 {
		t.Fatalf("without a projection: ranking %v, reads %d, %v", u.Ranking(), u.Reads(), err)
	}
	_, first := u.VersionedRanking()
	l.record(0, 20)
	run(t, l.js, o)
	proj := caughtUp(t, l.js, o)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = u.Run(ctx) }()
	natstest.Eventually(t, 30*time.Second, "a read at once", func() error {
		if u.Reads() < 2 {
			return errors.New("not read yet")
		}
		return nil
	})
	cancel()
	<-done
	got, version := u.VersionedRanking()
	if first == 0 || version <= first {
		t.Errorf("versions %d then %d: a read must give a new one", first, version)
	}
	loaded := 0
	for _, s := range proj.Skills {
		if s.Loads > 0 {
			loaded++
			if got[s.Name] != s.Loads {
				t.Errorf("%s: %d loads ranked, the projection says %d", s.Name, got[s.Name], s.Loads)
			}
		}
	}
	if loaded == 0 || len(got) != loaded {
		t.Errorf("ranking %v of %d loaded skills", got, loaded)
	}
}
