package providers_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers"
)

// quick is a fake that can answer some loads from memory.
type quick struct {
	*fake
	known  map[string]bool // names LoadQuick answers
	quicks atomic.Int64
}

func (q *quick) LoadQuick(name string, _ catalog.Query) (catalog.Skill, bool) {
	q.quicks.Add(1)
	if !q.known[name] {
		return catalog.Skill{}, false
	}
	return catalog.Skill{Summary: catalog.Summary{Name: name}, Content: "quick body of " + name}, true
}

// The registry takes a QuickLoader's answer without a supervised Load,
// names the provider on it, checks its name, and loads as usual when the
// provider cannot answer at once or the caller's context is done.
func TestRegistryQuickLoad(t *testing.T) {
	p := &quick{fake: &fake{name: "q"}, known: map[string]bool{"a-skill": true}}
	p.set(cand("a-skill", "A.", "src", 1), cand("b-skill", "B.", "src", 1))
	r := providers.NewRegistry([]providers.Provider{p})
	defer r.Close()
	ctx := context.Background()

	sk, err := r.Load(ctx, "a-skill", catalog.Query{})
	if err != nil || sk.Content != "quick body of a-skill" || sk.Provider != "q" || p.loads.Load() != 0 {
		t.Fatalf("quick load = %+v, %v (loads %d)", sk, err, p.loads.Load())
	}
	sk, err = r.Load(ctx, "b-skill", catalog.Query{})
	if err != nil || sk.Content != "body of b-skill from q" || p.loads.Load() != 1 {
		t.Fatalf("load the provider cannot answer at once = %+v, %v (loads %d)", sk, err, p.loads.Load())
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	before := p.quicks.Load()
	if _, err := r.Load(cancelled, "a-skill", catalog.Query{}); err == nil || p.quicks.Load() != before {
		t.Fatalf("load under a cancelled context: %v, quick loads %d -> %d", err, before, p.quicks.Load())
	}
}

// synced is a notifying fake that can answer some loads from memory and
// counts how often it is asked to bring itself up to date: by Changes, by
// LoadQuick, not by LoadQuickAfterChanges.
type synced struct {
	*notifying
	known   map[string]bool
	changes atomic.Int64
	quicks  atomic.Int64 // LoadQuick
	afters  atomic.Int64 // LoadQuickAfterChanges
}

func (s *synced) Changes(q catalog.Query) <-chan struct{} {
	s.changes.Add(1)
	return s.notifying.Changes(q)
}

func (s *synced) LoadQuick(name string, q catalog.Query) (catalog.Skill, bool) {
	s.quicks.Add(1)
	return s.answer(name)
}

func (s *synced) LoadQuickAfterChanges(name string, q catalog.Query) (catalog.Skill, bool) {
	s.afters.Add(1)
	return s.answer(name)
}

func (s *synced) answer(name string) (catalog.Skill, bool) {
	if !s.known[name] {
		return catalog.Skill{}, false
	}
	return catalog.Skill{Summary: cand(name, "From memory.", "src", 1).Summary, Content: "quick body of " + name}, true
}

// A Notifier that Changes brings up to date is not brought up to date
// again by the load that follows: the registry asks LoadQuickAfterChanges,
// never LoadQuick. A QuickLoader that is no Notifier is asked LoadQuick.
func TestRegistryQuickLoadAfterChanges(t *testing.T) {
	p := &synced{notifying: newNotifying("s", cand("a-skill", "A.", "src", 1)), known: map[string]bool{"a-skill": true}}
	r := providers.NewRegistry([]providers.Provider{p})
	defer r.Close()
	ctx := context.Background()
	for range 3 {
		sk, err := r.Load(ctx, "a-skill", catalog.Query{})
		if err != nil || sk.Content != "quick body of a-skill" || sk.Provider != "s" {
			t.Fatalf("load = %+v, %v", sk, err)
		}
	}
	if p.afters.Load() != 3 || p.quicks.Load() != 0 || p.loads.Load() != 0 {
		t.Fatalf("after-changes loads %d, quick loads %d, loads %d; want 3, 0, 0", p.afters.Load(), p.quicks.Load(), p.loads.Load())
	}

	// No Notifier: nothing brought it up to date, LoadQuick does.
	q := &struct {
		*quick
		afters atomic.Int64
	}{quick: &quick{fake: &fake{name: "q"}, known: map[string]bool{"a-skill": true}}}
	q.set(cand("a-skill", "A.", "src", 1))
	r2 := providers.NewRegistry([]providers.Provider{q.quick})
	defer r2.Close()
	if sk, err := r2.Load(ctx, "a-skill", catalog.Query{}); err != nil || sk.Content != "quick body of a-skill" || q.quicks.Load() != 1 {
		t.Fatalf("load from a QuickLoader that is no Notifier = %+v, %v (quick loads %d)", sk, err, q.quicks.Load())
	}
}

// A Lookup resolves and loads with one check that the cached view is
// current (one Changes), answering what Resolve and Load answer; a change
// announced before the next Lookup is seen by it; a name gone since the
// view was taken is looked up again in a fresh one; an incomplete view is
// not kept for the Load.
func TestRegistryLookup(t *testing.T) {
	p := &synced{notifying: newNotifying("s", cand("a-skill", "A.", "src", 1), cand("b-skill", "B.", "src", 1)),
		known: map[string]bool{"a-skill": true}}
	r := providers.NewRegistry([]providers.Provider{p})
	defer r.Close()
	ctx := context.Background()
	q := catalog.Query{Cwd: "/work"}
	if _, err := r.Snapshot(ctx, q); err != nil {
		t.Fatal(err)
	}

	before := p.changes.Load()
	res := catalog.Execute(ctx, r.Lookup(q), "a-skill", catalog.Options{})
	if res.Value == nil || res.Value.Content != "quick body of a-skill" || res.Value.Provider != "s" {
		t.Fatalf("skill call through a Lookup = %+v", res)
	}
	if n := p.changes.Load() - before; n != 1 {
		t.Fatalf("a skill call through a Lookup asked Changes %d times, want 1", n)
	}
	if p.quicks.Load() != 0 || p.afters.Load() != 1 {
		t.Fatalf("quick loads %d, after-changes loads %d; want 0, 1", p.quicks.Load(), p.afters.Load())
	}
	// Same answers as the registry's own Resolve and Load.
	l := r.Lookup(q)
	sum, err := l.Resolve(ctx, "b-skill")
	want, werr := r.Resolve(ctx, "b-skill", q)
	if err != nil || werr != nil || sum != want {
		t.Fatalf("Lookup.Resolve = %+v, %v; Registry.Resolve = %+v, %v", sum, err, want, werr)
	}
	sk, err := l.Load(ctx, "b-skill")
	if err != nil || sk.Content != "body of b-skill from s" {
		t.Fatalf("Lookup.Load = %+v, %v", sk, err)
	}
	if _, err := r.Lookup(q).Resolve(ctx, "c-skill"); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("Lookup.Resolve of an unknown name: %v", err)
	}

	// A change announced before a Lookup's first call is in its answers.
	p.set(cand("a-skill", "A.", "src", 1), cand("c-skill", "C.", "src", 1))
	p.changed()
	l = r.Lookup(q)
	if _, err := l.Resolve(ctx, "c-skill"); err != nil {
		t.Fatalf("Lookup.Resolve after a change: %v", err)
	}
	if sk, err := l.Load(ctx, "c-skill"); err != nil || sk.Content != "body of c-skill from s" {
		t.Fatalf("Lookup.Load after a change = %+v, %v", sk, err)
	}

	// Gone since the view was taken, not announced yet: Load looks again
	// in a fresh view, which no longer offers it.
	l = r.Lookup(q)
	if _, err := l.Resolve(ctx, "c-skill"); err != nil {
		t.Fatal(err)
	}
	p.set(cand("a-skill", "A.", "src", 1))
	if _, err := l.Load(ctx, "c-skill"); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("Lookup.Load of a skill removed meanwhile: %v", err)
	}

	// A cancelled context is refused even with a view kept.
	l = r.Lookup(q)
	if _, err := l.Resolve(ctx, "a-skill"); err != nil {
		t.Fatal(err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.Load(cancelled, "a-skill"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Lookup.Load under a cancelled context: %v", err)
	}
}

// An incomplete view (a provider failed) is not kept between a Lookup's
// Resolve and Load: Load collects again, as Registry.Load does, and sees
// the provider answer.
func TestRegistryLookupIncomplete(t *testing.T) {
	good := newNotifying("good", cand("a-skill", "A.", "src", 1))
	bad := newNotifying("bad", cand("a-skill", "A from bad.", "src", 0))
	bad.err = errors.New("disk on fire")
	r := providers.NewRegistry([]providers.Provider{good, bad})
	defer r.Close()
	ctx := context.Background()
	l := r.Lookup(catalog.Query{})
	sum, err := l.Resolve(ctx, "a-skill")
	if err != nil || sum.Description != "A from bad." {
		t.Fatalf("Resolve from an incomplete view = %+v, %v", sum, err)
	}
	bad.mu.Lock()
	bad.err = nil
	bad.cands = []providers.Candidate{cand("b-skill", "B.", "src", 0)}
	bad.mu.Unlock()
	lists := bad.lists.Load()
	sk, err := l.Load(ctx, "a-skill")
	if err != nil || sk.Content != "body of a-skill from good" || bad.lists.Load() == lists {
		t.Fatalf("Load after an incomplete Resolve = %+v, %v (lists of the failed provider %d -> %d)", sk, err, lists, bad.lists.Load())
	}
}
