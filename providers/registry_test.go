package providers_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers"
)

// fake is a scriptable provider.
type fake struct {
	name  string
	mu    sync.Mutex
	cands []providers.Candidate
	err   error
	lists atomic.Int64
	loads atomic.Int64
	// onList runs inside List (after counting); it may block.
	onList  func(ctx context.Context) error
	loadErr error
}

func (f *fake) Name() string { return f.name }

func (f *fake) List(ctx context.Context, q catalog.Query) ([]providers.Candidate, error) {
	f.lists.Add(1)
	if f.onList != nil {
		if err := f.onList(ctx); err != nil {
			return nil, err
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.cands), f.err
}

func (f *fake) Load(ctx context.Context, name string, q catalog.Query) (catalog.Skill, error) {
	f.loads.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.loadErr != nil {
		return catalog.Skill{}, f.loadErr
	}
	for _, c := range f.cands {
		if c.Name == name {
			return catalog.Skill{Summary: c.Summary, Content: "body of " + name + " from " + f.name}, nil
		}
	}
	return catalog.Skill{}, fmt.Errorf("no %q: %w", name, catalog.ErrNotFound)
}

func (f *fake) set(cands ...providers.Candidate) {
	f.mu.Lock()
	f.cands = cands
	f.mu.Unlock()
}

// notifying is a fake that announces changes.
type notifying struct {
	*fake
	chMu sync.Mutex
	ch   chan struct{}
}

func newNotifying(name string, cands ...providers.Candidate) *notifying {
	return &notifying{fake: &fake{name: name, cands: cands}, ch: make(chan struct{})}
}

func (n *notifying) Changes(catalog.Query) <-chan struct{} {
	n.chMu.Lock()
	defer n.chMu.Unlock()
	return n.ch
}

func (n *notifying) changed() {
	n.chMu.Lock()
	close(n.ch)
	n.ch = make(chan struct{})
	n.chMu.Unlock()
}

// static is a fake whose answers never change (nil channel).
type static struct{ *fake }

func (static) Changes(catalog.Query) <-chan struct{} { return nil }

func cand(name, desc, source string, rank int) providers.Candidate {
	return providers.Candidate{
		Summary: catalog.Summary{
			Name: name, Description: desc, Source: source,
			Invocation: catalog.Invocation{ModelInvocable: true, UserInvocable: true},
		},
		Rank: rank,
	}
}

func names(s catalog.Snapshot) []string {
	var out []string
	for _, sk := range s.Skills {
		out = append(out, sk.Name+"="+sk.Description)
	}
	return out
}

func snapshot(t *testing.T, r *providers.Registry, cwd string) catalog.Snapshot {
	t.Helper()
	s, err := r.Snapshot(context.Background(), catalog.At(cwd))
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	return s
}

func newRegistry(t *testing.T, ps []providers.Provider, opts ...providers.RegistryOption) *providers.Registry {
	t.Helper()
	r := providers.NewRegistry(ps, opts...)
	t.Cleanup(func() {
		if err := r.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return r
}

func TestRankingAndShadowing(t *testing.T) {
	a := &fake{name: "a", cands: []providers.Candidate{
		cand("shared", "from a (user)", catalog.SourceUser, providers.RankUser),
		cand("tie", "a first", catalog.SourceUser, providers.RankUser),
		cand("tie", "a second", catalog.SourceUser, providers.RankUser),
		cand("only-a", "a", catalog.SourceUser, providers.RankUser),
	}}
	b := &fake{name: "b", cands: []providers.Candidate{
		cand("shared", "from b (project)", catalog.SourceProject, providers.RankProject),
		cand("tie", "b", catalog.SourceUser, providers.RankUser),
		cand("Zed", "z", catalog.SourceUser, providers.RankUser), // invalid name
	}}
	r := newRegistry(t, []providers.Provider{a, b})
	s := snapshot(t, r, "/w")
	want := []string{"only-a=a", "shared=from b (project)", "tie=a first"}
	if got := names(s); !slices.Equal(got, want) || !s.Complete {
		t.Fatalf("snapshot = %v complete=%v, want %v complete", got, s.Complete, want)
	}
	if s.Skills[1].Provider != "b" {
		t.Errorf("provider of winner = %q, want b (filled in by the registry)", s.Skills[1].Provider)
	}

	rep := r.Inspect(context.Background(), catalog.At("/w"))
	var sh []string
	for _, x := range rep.Shadowed {
		sh = append(sh, fmt.Sprintf("%s:%s(%s) by %s(%s)", x.Candidate.Name, x.Candidate.Provider, x.Candidate.Description, x.By.Provider, x.By.Description))
	}
	wantSh := []string{
		"shared:a(from a (user)) by b(from b (project))",
		"tie:a(a second) by a(a first)",
		"tie:b(b) by a(a first)",
	}
	slices.Sort(sh)
	if !slices.Equal(sh, wantSh) {
		t.Errorf("shadowed = %q, want %q", sh, wantSh)
	}
	if len(rep.Rejected) != 1 || !errors.Is(rep.Rejected[0].Err, providers.ErrInvalidCandidate) ||
		!strings.Contains(rep.Rejected[0].Err.Error(), `provider "b"`) {
		t.Errorf("rejected = %+v, want one invalid candidate naming provider b", rep.Rejected)
	}
	if !rep.Snapshot.Complete || len(rep.Errors) != 0 {
		t.Errorf("report complete=%v errors=%v", rep.Snapshot.Complete, rep.Errors)
	}
}

func TestSortedByteOrderAndRejectsEmptyDescription(t *testing.T) {
	p := &fake{name: "p", cands: []providers.Candidate{
		cand("b", "b", "", 0), cand("a-b", "x", "", 0), cand("a", "a", "", 0),
		cand("a0", "a0", "", 0), cand("blank", " \t\n", "", 0),
	}}
	r := newRegistry(t, []providers.Provider{p})
	s := snapshot(t, r, "")
	want := []string{"a=a", "a-b=x", "a0=a0", "b=b"}
	if got := names(s); !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	rep := r.Inspect(context.Background(), catalog.At(""))
	if len(rep.Rejected) != 1 || !strings.Contains(rep.Rejected[0].Err.Error(), `"blank" has an empty description`) {
		t.Errorf("rejected = %v", rep.Rejected)
	}
}

func TestFailingProviderMakesSnapshotIncompleteOnly(t *testing.T) {
	good := &fake{name: "good", cands: []providers.Candidate{cand("ok", "fine", "", 0)}}
	bad := &fake{name: "bad", err: errors.New("disk on fire"),
		cands: []providers.Candidate{cand("partial", "listed despite the error", "", 0)}}
	panicky := &fake{name: "panicky", onList: func(context.Context) error { panic("boom") }}
	r := newRegistry(t, []providers.Provider{bad, good, panicky})
	s := snapshot(t, r, "/w")
	if s.Complete {
		t.Fatal("snapshot complete despite a failing provider")
	}
	if got, want := names(s), []string{"ok=fine", "partial=listed despite the error"}; !slices.Equal(got, want) {
		t.Fatalf("skills = %v, want %v", got, want)
	}
	rep := r.Inspect(context.Background(), catalog.At("/w"))
	var errs []string
	for _, e := range rep.Errors {
		errs = append(errs, e.Error())
	}
	want := []string{`provider "bad": disk on fire`, `provider "panicky": provider panicked: boom`}
	if !slices.Equal(errs, want) {
		t.Errorf("errors = %q, want %q", errs, want)
	}
	// Incomplete snapshots still resolve.
	if _, err := r.Resolve(context.Background(), "partial", catalog.At("/w")); err != nil {
		t.Errorf("Resolve from incomplete snapshot: %v", err)
	}
}

func TestHangingProviderPastDeadline(t *testing.T) {
	release := make(chan struct{})
	hang := &fake{name: "hang", onList: func(ctx context.Context) error {
		<-release // ignores ctx on purpose
		return nil
	}}
	good := &fake{name: "good", cands: []providers.Candidate{cand("ok", "fine", "", 0)}}
	r := providers.NewRegistry([]providers.Provider{hang, good})
	defer func() {
		close(release)
		if err := r.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	s, err := r.Snapshot(ctx, catalog.At("/w"))
	if err != nil {
		t.Fatalf("Snapshot past deadline returned error %v, want incomplete snapshot", err)
	}
	if s.Complete || !slices.Equal(names(s), []string{"ok=fine"}) {
		t.Fatalf("snapshot = %v complete=%v, want [ok=fine] incomplete", names(s), s.Complete)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel2()
	rep := r.Inspect(ctx2, catalog.At("/w"))
	if len(rep.Errors) != 1 || !errors.Is(rep.Errors[0].Err, providers.ErrNoAnswer) || rep.Errors[0].Provider != "hang" {
		t.Errorf("errors = %v, want hang: ErrNoAnswer", rep.Errors)
	}
}

func TestCancelledContextReturnsPromptly(t *testing.T) {
	entered := make(chan struct{}, 1)
	release := make(chan struct{})
	hang := &fake{name: "hang", onList: func(ctx context.Context) error {
		entered <- struct{}{}
		<-release
		return nil
	}}
	r := providers.NewRegistry([]providers.Provider{hang})
	defer func() {
		close(release)
		if err := r.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-entered; cancel() }()
	_, err := r.Snapshot(ctx, catalog.At("/w"))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want context.Canceled", err)
	}
	// Already cancelled: no provider is asked.
	before := hang.lists.Load()
	if _, err := r.Snapshot(ctx, catalog.At("/w")); !errors.Is(err, context.Canceled) {
		t.Fatalf("second err = %v", err)
	}
	if hang.lists.Load() != before {
		t.Error("provider asked with an already cancelled context")
	}
}

func TestStuckProviderIsBounded(t *testing.T) {
	release := make(chan struct{})
	var running atomic.Int64
	hang := &fake{name: "hang", onList: func(ctx context.Context) error {
		running.Add(1)
		defer running.Add(-1)
		<-release
		return nil
	}}
	r := providers.NewRegistry([]providers.Provider{hang}, providers.WithMaxStuck(2), providers.WithProviderTimeout(10*time.Millisecond))
	for range 5 {
		s, err := r.Snapshot(context.Background(), catalog.At("/w"))
		if err != nil || s.Complete {
			t.Fatalf("snapshot err=%v complete=%v", err, s.Complete)
		}
	}
	if n := hang.lists.Load(); n != 2 {
		t.Errorf("provider called %d times, want 2 (then skipped as stuck)", n)
	}
	rep := r.Inspect(context.Background(), catalog.At("/w"))
	if len(rep.Errors) != 1 || !errors.Is(rep.Errors[0].Err, providers.ErrStuck) {
		t.Errorf("errors = %v, want ErrStuck", rep.Errors)
	}
	close(release)
	// Once the stuck calls return, the provider is asked again.
	waitFor(t, func() bool {
		s, _ := r.Snapshot(context.Background(), catalog.At("/w"))
		return s.Complete
	})
	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if running.Load() != 0 {
		t.Error("provider calls still running after Close")
	}
}

func TestCacheInvalidatedByNotification(t *testing.T) {
	n := newNotifying("n", cand("one", "first", "", 0))
	st := static{&fake{name: "s", cands: []providers.Candidate{cand("bundled", "b", "", 9)}}}
	r := newRegistry(t, []providers.Provider{n, st})
	s1 := snapshot(t, r, "/w")
	s2 := snapshot(t, r, "/w")
	if n.lists.Load() != 1 || st.lists.Load() != 1 {
		t.Fatalf("lists = %d,%d after two snapshots, want 1,1 (cached)", n.lists.Load(), st.lists.Load())
	}
	if !slices.Equal(names(s1), names(s2)) {
		t.Fatalf("cached snapshot differs: %v vs %v", names(s1), names(s2))
	}
	// The caller may not corrupt the cache.
	s2.Skills[0].Name = "mutated"
	if got := names(snapshot(t, r, "/w")); got[0] != "bundled=b" {
		t.Fatalf("cache corrupted by caller: %v", got)
	}
	n.set(cand("one", "second", "", 0))
	if got := names(snapshot(t, r, "/w")); got[1] != "one=first" {
		t.Fatalf("served %v before any notification; the cache should still hold", got)
	}
	n.changed()
	if got := names(snapshot(t, r, "/w")); got[1] != "one=second" {
		t.Fatalf("after notification got %v, want one=second", got)
	}
	// A different cwd is cached separately.
	snapshot(t, r, "/other")
	if n.lists.Load() != 3 {
		t.Errorf("lists = %d, want 3", n.lists.Load())
	}
}

func TestPreparedFollowsTheSnapshot(t *testing.T) {
	n := newNotifying("n", cand("one", "first   one", "", 0), cand("two", "second", "", 0))
	r := newRegistry(t, []providers.Provider{n})
	ctx := context.Background()
	opts := catalog.DefaultOptions()
	prepared := func(opts catalog.Options) catalog.View {
		t.Helper()
		v, err := r.Prepared(ctx, catalog.At("/w"), opts)
		if err != nil {
			t.Fatalf("Prepared: %v", err)
		}
		return v
	}
	v1 := prepared(opts)
	if want := catalog.Prepare(snapshot(t, r, "/w"), opts); !reflect.DeepEqual(v1, want) {
		t.Fatalf("prepared %+v, want %+v", v1, want)
	}
	v2 := prepared(opts)
	if n.lists.Load() != 1 {
		t.Fatalf("lists = %d, want 1 (cached)", n.lists.Load())
	}
	if &v1.Entries[0] != &v2.Entries[0] {
		t.Error("the prepared view was built again for the same snapshot")
	}
	// Other options, other view, same snapshot.
	short := catalog.Options{DescriptionMaxLength: 5}
	if v := prepared(short); v.Entries[0].Description != "fi..." || n.lists.Load() != 1 {
		t.Errorf("options %+v: %+v (lists %d)", short, v.Entries, n.lists.Load())
	}
	// A change on disk not yet announced: the cache holds.
	n.set(cand("one", "edited", "", 0))
	if v := prepared(opts); v.Digest != v1.Digest {
		t.Fatalf("view changed before any notification: %+v", v.Entries)
	}
	// Announced: a new snapshot, a new view.
	n.changed()
	v3 := prepared(opts)
	want := []catalog.Entry{{Name: "one", Description: "edited"}}
	if !reflect.DeepEqual(v3.Entries, want) || v3.Digest != catalog.Digest(want) || !v3.Complete {
		t.Fatalf("after the change: %+v, want entries %+v", v3, want)
	}
	if v := prepared(short); v.Entries[0].Description != "ed..." {
		t.Errorf("short view after the change: %+v", v.Entries)
	}
}

func TestPreparedUncached(t *testing.T) {
	p := &fake{name: "p", cands: []providers.Candidate{cand("a", "a", "", 0)}}
	r := newRegistry(t, []providers.Provider{p})
	for i, desc := range []string{"a", "b"} {
		p.set(cand("a", desc, "", 0))
		v, err := r.Prepared(context.Background(), catalog.At("/w"), catalog.DefaultOptions())
		if err != nil {
			t.Fatal(err)
		}
		if len(v.Entries) != 1 || v.Entries[0].Description != desc || p.lists.Load() != int64(i+1) {
			t.Fatalf("call %d: %+v (lists %d)", i, v, p.lists.Load())
		}
	}
	p.mu.Lock()
	p.err = errors.New("down")
	p.mu.Unlock()
	if v, err := r.Prepared(context.Background(), catalog.At("/w"), catalog.DefaultOptions()); err != nil || v.Complete || v.Entries != nil {
		t.Fatalf("failing provider: %+v, %v", v, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := r.Prepared(ctx, catalog.At("/w"), catalog.DefaultOptions()); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
}

func TestPreparedConcurrently(t *testing.T) {
	n := newNotifying("n", cand("a", "a", "", 0), cand("b", "b", "", 0))
	r := newRegistry(t, []providers.Provider{n})
	want := catalog.Prepare(snapshot(t, r, "/w"), catalog.DefaultOptions())
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			v, err := r.Prepared(context.Background(), catalog.At("/w"), catalog.DefaultOptions())
			if err == nil && v.Digest != want.Digest {
				err = fmt.Errorf("digest %s, want %s", v.Digest, want.Digest)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestNonNotifierIsNeverCached(t *testing.T) {
	p := &fake{name: "p", cands: []providers.Candidate{cand("a", "a", "", 0)}}
	r := newRegistry(t, []providers.Provider{p})
	snapshot(t, r, "/w")
	snapshot(t, r, "/w")
	if p.lists.Load() != 2 {
		t.Errorf("lists = %d, want 2", p.lists.Load())
	}
}

func TestIncompleteIsNeverCached(t *testing.T) {
	n := newNotifying("n", cand("a", "a", "", 0))
	n.err = errors.New("flaky")
	r := newRegistry(t, []providers.Provider{n})
	if s := snapshot(t, r, "/w"); s.Complete {
		t.Fatal("complete despite error")
	}
	n.mu.Lock()
	n.err = nil
	n.mu.Unlock()
	if s := snapshot(t, r, "/w"); !s.Complete {
		t.Fatal("incomplete snapshot was cached")
	}
}

func TestCacheIsBounded(t *testing.T) {
	n := newNotifying("n", cand("a", "a", "", 0))
	r := newRegistry(t, []providers.Provider{n}, providers.WithCacheSize(2))
	for _, cwd := range []string{"/1", "/2", "/3", "/1"} {
		snapshot(t, r, cwd)
	}
	if got := n.lists.Load(); got != 4 {
		t.Errorf("lists = %d, want 4 (/1 evicted by /3)", got)
	}
	snapshot(t, r, "/3")
	if got := n.lists.Load(); got != 4 {
		t.Errorf("lists = %d, want 4 (/3 still cached)", got)
	}
}

func TestChangeDuringCollection(t *testing.T) {
	t.Run("once is absorbed", func(t *testing.T) {
		n := newNotifying("n", cand("a", "a", "", 0))
		var calls atomic.Int64
		n.onList = func(context.Context) error {
			if calls.Add(1) == 1 {
				n.changed()
			}
			return nil
		}
		r := newRegistry(t, []providers.Provider{n})
		if s := snapshot(t, r, "/w"); !s.Complete {
			t.Fatal("one change during collection made the snapshot incomplete")
		}
		if calls.Load() != 2 {
			t.Errorf("List called %d times, want 2", calls.Load())
		}
	})
	t.Run("twice is incomplete", func(t *testing.T) {
		n := newNotifying("n", cand("a", "a", "", 0))
		n.onList = func(context.Context) error { n.changed(); return nil }
		r := newRegistry(t, []providers.Provider{n})
		s := snapshot(t, r, "/w")
		if s.Complete || len(s.Skills) != 1 {
			t.Fatalf("complete=%v skills=%v, want incomplete with the skill", s.Complete, names(s))
		}
		rep := r.Inspect(context.Background(), catalog.At("/w"))
		if len(rep.Errors) != 1 || !errors.Is(rep.Errors[0].Err, providers.ErrChanging) {
			t.Errorf("errors = %v, want ErrChanging", rep.Errors)
		}
	})
}

// forgot is like changed but leaves the old channel open: the provider
// stopped watching, nothing changed.
func (n *notifying) forgot() {
	n.chMu.Lock()
	n.ch = make(chan struct{})
	n.chMu.Unlock()
}

// TestForgettingDuringCollection: a provider that replaces its channel
// without closing it (it stopped watching, as a bounded provider does)
// did not announce a change: however often it happens the snapshot stays
// complete, but it is not cached.
func TestForgettingDuringCollection(t *testing.T) {
	n := newNotifying("n", cand("a", "a", "", 0))
	n.onList = func(context.Context) error { n.forgot(); return nil }
	r := newRegistry(t, []providers.Provider{n})
	for i := range 3 {
		if s := snapshot(t, r, "/w"); !s.Complete || len(s.Skills) != 1 {
			t.Fatalf("snapshot %d: complete=%v skills=%v, want complete with the skill", i, s.Complete, names(s))
		}
	}
	if got := n.lists.Load(); got != 6 {
		t.Errorf("List called %d times for 3 snapshots, want 6 (one retry each, never cached)", got)
	}
	n.onList = nil
	snapshot(t, r, "/w")
	snapshot(t, r, "/w")
	if got := n.lists.Load(); got != 7 {
		t.Errorf("List called %d times, want 7: once the channel stays, the snapshot is cached", got)
	}
}

func TestResolveAndLoad(t *testing.T) {
	proj := &fake{name: "proj", cands: []providers.Candidate{cand("x", "project x", "", providers.RankProject)}}
	user := &fake{name: "user", cands: []providers.Candidate{
		cand("x", "user x", "", providers.RankUser), cand("y", "user y", "", providers.RankUser)}}
	r := newRegistry(t, []providers.Provider{user, proj})
	ctx := context.Background()

	sum, err := r.Resolve(ctx, "x", catalog.At("/w"))
	if err != nil || sum.Provider != "proj" {
		t.Fatalf("Resolve x = %+v, %v; want from proj", sum, err)
	}
	sk, err := r.Load(ctx, "x", catalog.At("/w"))
	if err != nil || sk.Content != "body of x from proj" || sk.Provider != "proj" {
		t.Fatalf("Load x = %+v, %v", sk, err)
	}
	if user.loads.Load() != 0 {
		t.Error("shadowed provider was asked to load")
	}
	for _, name := range []string{"missing", "../etc/passwd", ""} {
		if _, err := r.Resolve(ctx, name, catalog.At("/w")); !errors.Is(err, catalog.ErrNotFound) {
			t.Errorf("Resolve %q: %v, want ErrNotFound", name, err)
		}
		if _, err := r.Load(ctx, name, catalog.At("/w")); !errors.Is(err, catalog.ErrNotFound) {
			t.Errorf("Load %q: %v, want ErrNotFound", name, err)
		}
	}
	// The provider no longer has it: not found.
	proj.set()
	proj.loadErr = nil
	user.set(cand("y", "user y", "", providers.RankUser))
	if _, err := r.Load(ctx, "x", catalog.At("/w")); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("Load of vanished skill: %v, want ErrNotFound", err)
	}
	// A provider failure is reported readably.
	user.mu.Lock()
	user.loadErr = errors.New("permission denied")
	user.mu.Unlock()
	_, err = r.Load(ctx, "y", catalog.At("/w"))
	if err == nil || err.Error() != `read skill "y": permission denied` || errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("Load with provider failure: %v", err)
	}
}

func TestLoadedNameMustMatch(t *testing.T) {
	p := &lying{fake: &fake{name: "liar", cands: []providers.Candidate{cand("a", "a", "", 0)}}}
	r := newRegistry(t, []providers.Provider{p})
	_, err := r.Load(context.Background(), "a", catalog.At(""))
	if err == nil || !strings.Contains(err.Error(), `returned skill "b"`) {
		t.Fatalf("err = %v", err)
	}
}

type lying struct{ *fake }

func (l *lying) Load(context.Context, string, catalog.Query) (catalog.Skill, error) {
	return catalog.Skill{Summary: catalog.Summary{Name: "b"}}, nil
}

type closer struct {
	*fake
	closed atomic.Bool
}

func (c *closer) Close() error { c.closed.Store(true); return nil }

func TestCloseClosesProviders(t *testing.T) {
	c := &closer{fake: &fake{name: "c"}}
	r := providers.NewRegistry([]providers.Provider{c})
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if !c.closed.Load() {
		t.Error("provider not closed")
	}
	s, err := r.Snapshot(context.Background(), catalog.At(""))
	if err != nil || s.Complete {
		t.Errorf("snapshot after Close: %v complete=%v, want incomplete", err, s.Complete)
	}
}

// waitFor polls cond until it holds or 10 s pass.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10s")
		}
		<-tick.C
	}
}

func TestShadowingLoggedOnce(t *testing.T) {
	var buf strings.Builder
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	}), nil))
	a := &fake{name: "a", cands: []providers.Candidate{cand("x", "a", "", 1)}}
	b := &fake{name: "b", cands: []providers.Candidate{cand("x", "b", "", 2), cand("Bad", "b", "", 2)}, err: errors.New("half broken")}
	r := newRegistry(t, []providers.Provider{a, b}, providers.WithLogger(log))
	for range 3 {
		snapshot(t, r, "/w")
	}
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	for _, want := range []string{"skill shadowed", "skill candidate rejected", "skill snapshot incomplete"} {
		if n := strings.Count(out, want); n != 1 {
			t.Errorf("%q logged %d times, want once:\n%s", want, n, out)
		}
	}
	if !strings.Contains(out, "shadowed=b/") || !strings.Contains(out, "by=a/") {
		t.Errorf("shadowing log does not say where from:\n%s", out)
	}
}

// A winner whose description holds control or bidi characters is logged
// once, whatever the working directory, and again when it changes; the
// description itself is left as it is.
func TestControlCharactersInDescriptionLoggedOnce(t *testing.T) {
	var buf strings.Builder
	var mu sync.Mutex
	log := slog.New(slog.NewTextHandler(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	}), nil))
	a := &fake{name: "a", cands: []providers.Candidate{cand("term", "Formats \x1b]0;owned\x07 code \u202e", "", 1), cand("plain", "Plain.", "", 1)}}
	r := newRegistry(t, []providers.Provider{a}, providers.WithLogger(log))
	for _, cwd := range []string{"/w", "/v", "/w"} {
		s := snapshot(t, r, cwd)
		if d := s.Skills[1].Description; d != "Formats \x1b]0;owned\x07 code \u202e" {
			t.Fatalf("description = %q, want it as written", d)
		}
	}
	a.mu.Lock()
	a.cands[0].Description = "\u202e then \x1b"
	a.mu.Unlock()
	snapshot(t, r, "/u")
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	if n := strings.Count(out, "skill description holds control characters"); n != 2 {
		t.Errorf("logged %d times, want once per description:\n%s", n, out)
	}
	for _, want := range []string{"skill=term", "char=U+001B", "count=3", "char=U+202E", `kind="a bidirectional-text control"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "skill=plain") || strings.ContainsAny(out, "\x1b\x07") {
		t.Errorf("log names a plain skill or holds raw control characters:\n%s", out)
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

func TestCloseReportsCallsThatNeverReturn(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	hang := &fake{name: "hang", onList: func(context.Context) error { <-release; return nil }}
	r := providers.NewRegistry([]providers.Provider{hang},
		providers.WithProviderTimeout(5*time.Millisecond), providers.WithCloseTimeout(20*time.Millisecond))
	if s, err := r.Snapshot(context.Background(), catalog.At("/w")); err != nil || s.Complete {
		t.Fatalf("snapshot: %v complete=%v", err, s.Complete)
	}
	err := r.Close()
	if !errors.Is(err, providers.ErrStuck) || !strings.Contains(err.Error(), "1 provider calls still running") {
		t.Fatalf("Close = %v, want ErrStuck naming one running call", err)
	}
}

// TestLoadRetriesAfterUnannouncedRemoval: the cached winner's provider no
// longer has the skill (its change notification has not arrived yet); Load
// resolves again and the shadowed candidate answers.
func TestLoadRetriesAfterUnannouncedRemoval(t *testing.T) {
	over := newNotifying("override", cand("x", "override", "", providers.RankProject))
	base := static{&fake{name: "base", cands: []providers.Candidate{cand("x", "base", "", providers.RankBundled)}}}
	r := newRegistry(t, []providers.Provider{over, base})
	if got := names(snapshot(t, r, "/w")); got[0] != "x=override" {
		t.Fatalf("snapshot %v", got)
	}
	over.set() // removed, not announced: the cached view still says override
	sk, err := r.Load(context.Background(), "x", catalog.At("/w"))
	if err != nil || sk.Provider != "base" || sk.Content != "body of x from base" {
		t.Fatalf("Load = %+v, %v; want the base skill", sk, err)
	}
}

// Load of a name no provider offers, whose ctx ends while the registry
// collects a fresh view to be sure: the cancellation is returned (it
// loaded from the failed collection's nil view before).
func TestLoadCancelledDuringFreshCollection(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	release := make(chan struct{})
	f := &fake{name: "f"}
	f.onList = func(context.Context) error {
		if f.lists.Load() == 2 { // the fresh collection after ErrNotFound
			cancel()
			<-release // still listing when the caller gives up
		}
		return nil
	}
	r := providers.NewRegistry([]providers.Provider{f}, providers.WithCacheSize(0))
	defer r.Close()
	defer close(release) // before Close, which waits for the call
	_, err := r.Load(ctx, "missing", catalog.Query{})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Load = %v, want the cancellation", err)
	}
}
