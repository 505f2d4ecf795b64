package providertest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers"
)

// Seed is a skill to offer.
type Seed struct {
	Name        string
	Description string
	Body        string // compared after trimming surrounding white space
}

// Harness is a provider under test and the means to change what it offers.
type Harness struct {
	Provider providers.Provider
	// Query is what to ask about (a working directory, a store project).
	Query catalog.Query
	// Add offers one more skill; Remove stops offering one. Both nil for a
	// provider whose skills are fixed when it is built.
	Add    func(t testing.TB, s Seed)
	Remove func(t testing.TB, name string)
}

// Factory builds a fresh provider offering exactly seeds. It registers its
// own cleanup.
type Factory func(t *testing.T, seeds []Seed) Harness

// Seeds is the default set of skills offered to the factory.
func Seeds() []Seed {
	return []Seed{
		{Name: "alpha", Description: "First skill.", Body: "Alpha body.\n\nSecond paragraph."},
		{Name: "beta-2", Description: "Second skill with <markup> & ampersands.", Body: "Beta body with ünïcödé and `code`."},
		{Name: "z", Description: "Last skill.", Body: "# Heading\n\n- item"},
	}
}

// Run runs the conformance suite.
func Run(t *testing.T, f Factory) {
	t.Run("ListsExactlyTheSeeds", func(t *testing.T) { listsSeeds(t, f) })
	t.Run("Empty", func(t *testing.T) {
		h := f(t, nil)
		cs, err := h.Provider.List(context.Background(), h.Query)
		if err != nil || len(cs) != 0 {
			t.Fatalf("List with no skills = %d candidates, %v; want none, no error", len(cs), err)
		}
	})
	t.Run("LoadMatchesList", func(t *testing.T) { loadMatchesList(t, f) })
	t.Run("UnknownAndHostileNames", func(t *testing.T) { unknownNames(t, f) })
	t.Run("CancelledContext", func(t *testing.T) { cancelled(t, f) })
	t.Run("ConcurrentUse", func(t *testing.T) { concurrent(t, f) })
	t.Run("Changes", func(t *testing.T) { changes(t, f) })
	t.Run("InRegistry", func(t *testing.T) { inRegistry(t, f) })
}

func list(t *testing.T, h Harness) []providers.Candidate {
	t.Helper()
	cs, err := h.Provider.List(context.Background(), h.Query)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	return cs
}

func names(cs []providers.Candidate) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name)
	}
	slices.Sort(out)
	return out
}

func seedNames(seeds []Seed) []string {
	var out []string
	for _, s := range seeds {
		out = append(out, s.Name)
	}
	slices.Sort(out)
	return out
}

func listsSeeds(t *testing.T, f Factory) {
	seeds := Seeds()
	h := f(t, seeds)
	cs := list(t, h)
	if got, want := names(cs), seedNames(seeds); !slices.Equal(got, want) {
		t.Fatalf("List offers %v, want %v", got, want)
	}
	for _, c := range cs {
		if !catalog.ValidName(c.Name) {
			t.Errorf("invalid name %q", c.Name)
		}
		if c.Provider != h.Provider.Name() {
			t.Errorf("%s: provider %q, want %q", c.Name, c.Provider, h.Provider.Name())
		}
		if c.Source == "" {
			t.Errorf("%s: empty source", c.Name)
		}
		for _, s := range seeds {
			if s.Name == c.Name && c.Description != s.Description {
				t.Errorf("%s: description %q, want %q", c.Name, c.Description, s.Description)
			}
		}
		if !c.Invocation.ModelInvocable || !c.Invocation.UserInvocable {
			t.Errorf("%s: invocation %+v, want both (the default)", c.Name, c.Invocation)
		}
	}
	again := list(t, h)
	if !reflect.DeepEqual(again, cs) {
		t.Errorf("List is not stable:\n%v\n%v", cs, again)
	}
}

func loadMatchesList(t *testing.T, f Factory) {
	seeds := Seeds()
	h := f(t, seeds)
	for _, c := range list(t, h) {
		sk, err := h.Provider.Load(context.Background(), c.Name, h.Query)
		if err != nil {
			t.Errorf("Load %s: %v", c.Name, err)
			continue
		}
		if sk.Name != c.Name || sk.Description != c.Description || sk.Provider != c.Provider ||
			sk.Source != c.Source || sk.Invocation != c.Invocation {
			t.Errorf("Load %s summary %+v differs from List's %+v", c.Name, sk.Summary, c.Summary)
		}
		if (sk.ResourceBase == nil) != (c.ResourceBase == nil) ||
			(sk.ResourceBase != nil && *sk.ResourceBase != *c.ResourceBase) {
			t.Errorf("Load %s resource base %+v, List %+v", c.Name, sk.ResourceBase, c.ResourceBase)
		}
		for _, s := range seeds {
			if s.Name == c.Name && sk.Content != strings.TrimSpace(s.Body) {
				t.Errorf("Load %s content %q, want %q", c.Name, sk.Content, strings.TrimSpace(s.Body))
			}
		}
	}
}

func unknownNames(t *testing.T, f Factory) {
	h := f(t, Seeds())
	for _, name := range []string{"missing-skill", "", "ALPHA", "../alpha", "alpha/../alpha", "/etc/passwd",
		"alpha\x00", strings.Repeat("a", 65), "alpha.md", "SKILL.md"} {
		_, err := h.Provider.Load(context.Background(), name, h.Query)
		if !errors.Is(err, catalog.ErrNotFound) {
			t.Errorf("Load(%q) = %v, want an error wrapping catalog.ErrNotFound", name, err)
		}
	}
}

func cancelled(t *testing.T, f Factory) {
	h := f(t, Seeds())
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.Provider.List(ctx, h.Query); !errors.Is(err, context.Canceled) {
		t.Errorf("List with a cancelled context: %v, want context.Canceled", err)
	}
	if _, err := h.Provider.Load(ctx, "alpha", h.Query); !errors.Is(err, context.Canceled) {
		t.Errorf("Load with a cancelled context: %v, want context.Canceled", err)
	}
}

func concurrent(t *testing.T, f Factory) {
	h := f(t, Seeds())
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 20 {
				cs, err := h.Provider.List(context.Background(), h.Query)
				if err != nil || len(cs) != len(Seeds()) {
					errs <- fmt.Errorf("worker %d: List = %d, %v", i, len(cs), err)
					return
				}
				if _, err := h.Provider.Load(context.Background(), cs[i%len(cs)].Name, h.Query); err != nil {
					errs <- fmt.Errorf("worker %d: Load: %w", i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func changes(t *testing.T, f Factory) {
	h := f(t, Seeds())
	n, notifies := h.Provider.(providers.Notifier)
	if h.Add == nil || h.Remove == nil {
		t.Skip("provider's skills are fixed")
	}
	// The channel covers answers List gives after Changes was called.
	var ch <-chan struct{}
	if notifies {
		ch = n.Changes(h.Query)
	}
	list(t, h)
	added := Seed{Name: "added-later", Description: "Added after the first List.", Body: "Added body."}
	h.Add(t, added)
	eventually(t, "the added skill to be listed", func() bool {
		return slices.Contains(names(list(t, h)), added.Name)
	})
	if notifies && ch != nil {
		eventually(t, "the change channel to close", func() bool { return providers.Closed(ch) })
	}
	sk, err := h.Provider.Load(context.Background(), added.Name, h.Query)
	if err != nil || sk.Content != added.Body {
		t.Fatalf("Load added = %q, %v", sk.Content, err)
	}
	if notifies {
		ch = n.Changes(h.Query)
	}
	list(t, h)
	h.Remove(t, "alpha")
	eventually(t, "the removed skill to disappear", func() bool {
		return !slices.Contains(names(list(t, h)), "alpha")
	})
	if notifies && ch != nil {
		eventually(t, "the change channel to close", func() bool { return providers.Closed(ch) })
	}
	if _, err := h.Provider.Load(context.Background(), "alpha", h.Query); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("Load of removed skill: %v, want catalog.ErrNotFound", err)
	}
}

func inRegistry(t *testing.T, f Factory) {
	h := f(t, Seeds())
	r := providers.NewRegistry([]providers.Provider{h.Provider})
	// The registry closes the provider (if it is an io.Closer) and so may
	// the factory's cleanup: Close must be idempotent.
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("registry Close: %v", err)
		}
	})
	ctx := context.Background()
	s, err := r.Snapshot(ctx, h.Query)
	if err != nil || !s.Complete {
		t.Fatalf("Snapshot = complete %v, %v", s.Complete, err)
	}
	var got []string
	for _, sk := range s.Skills {
		got = append(got, sk.Name)
	}
	if want := seedNames(Seeds()); !slices.Equal(got, want) {
		t.Fatalf("Snapshot lists %v, want %v in byte order", got, want)
	}
	sk, err := r.Load(ctx, "beta-2", h.Query)
	if err != nil || sk.Name != "beta-2" || sk.Content == "" {
		t.Fatalf("registry Load = %+v, %v", sk, err)
	}
	again, err := r.Snapshot(ctx, h.Query)
	if err != nil || !reflect.DeepEqual(again, s) {
		t.Fatalf("second Snapshot differs: %v", err)
	}
}

// eventually polls cond for up to 10 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		<-tick.C
	}
}
