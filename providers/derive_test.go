package providers_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers"
)

// descriptions is what the tests derive: the snapshot's descriptions.
func descriptions(s catalog.Snapshot) any {
	var out []string
	for _, sk := range s.Skills {
		out = append(out, sk.Description)
	}
	return out
}

type deriveKey struct{ name string }

func TestDeriveFollowsTheSnapshot(t *testing.T) {
	n := newNotifying("n", cand("one", "first", "", 0), cand("two", "second", "", 0))
	r := newRegistry(t, []providers.Provider{n})
	ctx := context.Background()
	var builds atomic.Int64
	derive := func(key any) []string {
		t.Helper()
		v, err := r.Derive(ctx, catalog.At("/w"), key, func(s catalog.Snapshot) any {
			builds.Add(1)
			if !s.Complete {
				t.Error("derived from an incomplete snapshot")
			}
			return descriptions(s)
		})
		if err != nil {
			t.Fatalf("Derive: %v", err)
		}
		return v.([]string)
	}
	a := deriveKey{"a"}
	if got := derive(a); len(got) != 2 || got[0] != "first" {
		t.Fatalf("derived %q", got)
	}
	derive(a)
	if builds.Load() != 1 || n.lists.Load() != 1 {
		t.Fatalf("builds = %d, lists = %d; want 1 and 1 (cached)", builds.Load(), n.lists.Load())
	}
	// Another key, another value of the same snapshot.
	derive(deriveKey{"b"})
	if builds.Load() != 2 || n.lists.Load() != 1 {
		t.Fatalf("second key: builds = %d, lists = %d", builds.Load(), n.lists.Load())
	}
	// A change not announced yet: the value holds.
	n.set(cand("one", "edited", "", 0))
	if got := derive(a); got[0] != "first" {
		t.Fatalf("value changed before any notification: %q", got)
	}
	// Announced: a new snapshot, built for again.
	n.changed()
	if got := derive(a); len(got) != 1 || got[0] != "edited" || builds.Load() != 3 {
		t.Fatalf("after the change: %q (builds %d)", got, builds.Load())
	}
}

func TestDeriveUncached(t *testing.T) {
	p := &fake{name: "p", cands: []providers.Candidate{cand("a", "a", "", 0)}}
	r := newRegistry(t, []providers.Provider{p})
	builds := 0
	build := func(s catalog.Snapshot) any { builds++; return s.Complete }
	for i := range 2 {
		if v, err := r.Derive(context.Background(), catalog.At("/w"), deriveKey{}, build); err != nil || v != true || builds != i+1 {
			t.Fatalf("call %d: %v, %v (builds %d)", i, v, err, builds)
		}
	}
	p.mu.Lock()
	p.err = errors.New("down")
	p.mu.Unlock()
	if v, err := r.Derive(context.Background(), catalog.At("/w"), deriveKey{}, build); err != nil || v != false {
		t.Fatalf("failing provider: %v, %v", v, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Derive(ctx, catalog.At("/w"), deriveKey{}, build); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestDeriveConcurrently(t *testing.T) {
	n := newNotifying("n", cand("a", "a", "", 0), cand("b", "b", "", 0))
	r := newRegistry(t, []providers.Provider{n})
	snapshot(t, r, "/w") // cached: every caller below shares one view
	var builds atomic.Int64
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			v, err := r.Derive(context.Background(), catalog.At("/w"), deriveKey{}, func(s catalog.Snapshot) any {
				builds.Add(1)
				return descriptions(s)
			})
			if err != nil || len(v.([]string)) != 2 {
				t.Errorf("Derive: %v, %v", v, err)
			}
		})
	}
	wg.Wait()
	if builds.Load() != 1 {
		t.Errorf("builds = %d, want 1", builds.Load())
	}
}
