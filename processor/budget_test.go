package processor

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

func mustAcquire(t *testing.T, b *budget, n int64) func() {
	t.Helper()
	release, err := b.acquire(context.Background(), n)
	if err != nil {
		t.Fatal(err)
	}
	return release
}

// granted reports whether acquire(n) got its bytes within a short wait:
// used only where the answer must be "no", or "yes" right after a release.
func tryAcquire(b *budget, n int64) (func(), bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	release, err := b.acquire(ctx, n)
	return release, err == nil
}

func TestBudget(t *testing.T) {
	b := newBudget(100)
	r60 := mustAcquire(t, b, 60)
	r40 := mustAcquire(t, b, 40)
	if _, ok := tryAcquire(b, 1); ok {
		t.Fatal("granted past the budget")
	}
	r40()
	r30, ok := tryAcquire(b, 30)
	if !ok {
		t.Fatal("not granted after a release")
	}
	// Larger than the whole budget: capped, so it runs alone once all is
	// free.
	big := make(chan func())
	go func() {
		release, err := b.acquire(context.Background(), 1000)
		if err != nil {
			t.Error(err)
		}
		big <- release
	}()
	// First come, first served: a small request queued behind the big one
	// waits although it would fit.
	// Queued once a probe of 1 byte is refused although 10 are free.
	poll(t, func() error {
		if b.sem.TryAcquire(1) {
			b.sem.Release(1)
			return errors.New("big request not queued yet")
		}
		return nil
	})
	if _, ok := tryAcquire(b, 5); ok {
		t.Fatal("a later request overtook a waiting one")
	}
	r60()
	r30()
	rBig := <-big
	if b.sem.TryAcquire(1) {
		t.Fatal("bytes free while the capped request holds everything")
	}
	rBig()
	// All 100 free and nobody waiting: only then is the whole budget
	// granted at once.
	if !b.sem.TryAcquire(100) {
		t.Fatal("the budget is not whole and idle after every release")
	}
}

func TestBudgetConcurrent(t *testing.T) {
	b := newBudget(10)
	var (
		mu         sync.Mutex
		held, peak int64
		wg         sync.WaitGroup
	)
	for i := range 50 {
		wg.Go(func() {
			n := int64(i%4 + 1)
			release := mustAcquire(t, b, n)
			mu.Lock()
			held += n
			peak = max(peak, held)
			mu.Unlock()
			runtime.Gosched() // let others try while this one holds
			mu.Lock()
			held -= n
			mu.Unlock()
			release()
		})
	}
	wg.Wait()
	if peak > 10 {
		t.Fatalf("held %d of 10 at once", peak)
	}
	if !b.sem.TryAcquire(10) {
		t.Fatal("the budget is not whole and idle at the end")
	}
}

func TestPreStepBytes(t *testing.T) {
	small := catalog.View{Entries: []catalog.Entry{{Name: "a", Description: "A."}}}
	big := catalog.View{Entries: make([]catalog.Entry, 1000)}
	for i := range big.Entries {
		big.Entries[i] = catalog.Entry{Name: "skill-name-0000", Description: string(make([]byte, 120))}
	}
	if preStepBytes(nil) >= preStepBytes(&small) || preStepBytes(&small) >= preStepBytes(&big) {
		t.Fatalf("estimates not ordered: hidden %d, 1 skill %d, 1000 skills %d", preStepBytes(nil), preStepBytes(&small), preStepBytes(&big))
	}
	if n := preStepBytes(&big); n < 500<<10 || n > 1<<20 {
		t.Errorf("1000 skills estimated at %d bytes", n)
	}
}

// A budget smaller than one pre-step runs pre-steps one at a time, and
// they still all get their answers.
func TestTinyInflightBudget(t *testing.T) {
	e := newEnv(t)
	e.writeSkill("a-skill", "A skill.")
	e.waitSkills("a-skill")
	e.start(func(c *Config, _ *options) { c.InflightBytes = 1 })
	w := e.worker()
	var wg sync.WaitGroup
	for _, sid := range []string{"t1", "t2", "t3", "t4"} {
		wg.Go(func() {
			d := w.preStep(events.PreStep{Session: sid, Step: "1", Cwd: e.cwd, Tools: ourTool()})
			if d.Outcome != events.OutcomeAppended {
				t.Errorf("%s: %+v", sid, d)
			}
		})
	}
	wg.Wait()
}
