package providers

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillstream/skillstream/catalog"
)

// gated is a notifying provider whose List waits for its gate.
type gated struct {
	lists atomic.Int64
	gate  chan struct{}
	ch    chan struct{}
	mu    sync.Mutex
}

func (g *gated) Name() string { return "gated" }

func (g *gated) List(ctx context.Context, q catalog.Query) ([]Candidate, error) {
	g.lists.Add(1)
	select {
	case <-g.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return []Candidate{{Summary: catalog.Summary{Name: "a", Description: "A.", Invocation: catalog.Invocation{ModelInvocable: true}}}}, nil
}

func (g *gated) Load(context.Context, string, catalog.Query) (catalog.Skill, error) {
	return catalog.Skill{}, catalog.ErrNotFound
}

func (g *gated) Changes(catalog.Query) <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.ch
}

func (g *gated) changed() {
	g.mu.Lock()
	close(g.ch)
	g.ch = make(chan struct{})
	g.mu.Unlock()
}

// waitFlight polls until the flight for cwd exists and has n joiners.
func waitFlight(t *testing.T, r *Registry, cwd string, n int32) *flight {
	t.Helper()
	var f *flight
	poll(t, func() bool {
		r.mu.Lock()
		f = r.flights[catalog.At(cwd)]
		r.mu.Unlock()
		return f != nil && f.joined.Load() == n
	})
	return f
}

// poll checks cond every millisecond until it holds, failing after 10 s.
func poll(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached within 10s")
		}
		<-tick.C
	}
}

func TestConcurrentMissesShareOneCollection(t *testing.T) {
	g := &gated{gate: make(chan struct{}), ch: make(chan struct{})}
	r := NewRegistry([]Provider{g})
	defer r.Close()
	ctx := context.Background()
	const callers = 8
	results := make(chan error, callers)
	snap := func() {
		s, err := r.Snapshot(ctx, catalog.At("/w"))
		if err == nil && (!s.Complete || len(s.Skills) != 1) {
			err = errors.New("wrong snapshot")
		}
		results <- err
	}
	go snap() // the one collecting
	waitFlight(t, r, "/w", 0)
	for range callers - 1 {
		go snap()
	}
	waitFlight(t, r, "/w", callers-1)
	close(g.gate)
	for range callers {
		if err := <-results; err != nil {
			t.Fatal(err)
		}
	}
	if n := g.lists.Load(); n != 1 {
		t.Fatalf("%d collections for %d concurrent misses, want 1", n, callers)
	}
	r.mu.Lock()
	left := len(r.flights)
	r.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d flights left over", left)
	}
}

// A change announced while a collection is under way: later callers do
// not join it.
func TestChangedCollectionIsNotJoined(t *testing.T) {
	g := &gated{gate: make(chan struct{}), ch: make(chan struct{})}
	r := NewRegistry([]Provider{g})
	defer r.Close()
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = r.Snapshot(context.Background(), catalog.At("/w"))
	}()
	waitFlight(t, r, "/w", 0)
	g.changed()
	errc := make(chan error, 1)
	go func() {
		_, err := r.Snapshot(context.Background(), catalog.At("/w"))
		errc <- err
	}()
	// The later caller lists for itself while the first collection is
	// still blocked.
	poll(t, func() bool { return g.lists.Load() >= 2 })
	close(g.gate)
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	<-done
}

// A joiner whose own context is cancelled stops waiting.
func TestJoinerCancelled(t *testing.T) {
	g := &gated{gate: make(chan struct{}), ch: make(chan struct{})}
	r := NewRegistry([]Provider{g})
	defer r.Close()
	go func() { _, _ = r.Snapshot(context.Background(), catalog.At("/w")) }()
	waitFlight(t, r, "/w", 0)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := r.Snapshot(ctx, catalog.At("/w"))
		errc <- err
	}()
	waitFlight(t, r, "/w", 1)
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled joiner: %v", err)
	}
	close(g.gate)
}
