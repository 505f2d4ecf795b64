package providers

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/skillstream/skillstream/catalog"
)

// Errors reported by the registry. Match them with errors.Is.
var (
	// ErrClosed reports a call on a closed registry.
	ErrClosed = errors.New("registry closed")
	// ErrNoAnswer reports a provider that did not answer in time.
	ErrNoAnswer = errors.New("provider did not answer in time")
	// ErrStuck reports a provider whose earlier calls never returned; the
	// registry stops calling it until they do.
	ErrStuck = errors.New("provider has calls that never returned")
	// ErrChanging reports that the skill set changed twice while a snapshot
	// was being collected.
	ErrChanging = errors.New("skills changed twice during collection")
	// ErrInvalidCandidate reports a candidate that breaks the skill rules
	// (bad name, empty description).
	ErrInvalidCandidate = errors.New("invalid candidate")
	// ErrStopping is wrapped by a provider's error when the process is
	// stopping (its connection closed on purpose): the snapshot is
	// incomplete, as with any failure, but there is nothing to warn an
	// operator about.
	ErrStopping = errors.New("stopping")
)

// Defaults of the registry options.
const (
	DefaultCacheSize       = 256
	DefaultProviderTimeout = 10 * time.Second
	DefaultCloseTimeout    = 5 * time.Second
	DefaultMaxStuck        = 4
)

// RegistryOption tunes a Registry.
type RegistryOption func(*Registry)

// WithCacheSize bounds the number of working directories whose complete
// snapshot is kept; 0 disables the cache.
func WithCacheSize(n int) RegistryOption {
	return func(r *Registry) {
		if n >= 0 {
			r.cacheSize = n
		}
	}
}

// WithProviderTimeout bounds how long a single provider call may take even
// when ctx has no earlier deadline.
func WithProviderTimeout(d time.Duration) RegistryOption {
	return func(r *Registry) {
		if d > 0 {
			r.timeout = d
		}
	}
}

// WithCloseTimeout bounds how long Close waits for provider calls.
func WithCloseTimeout(d time.Duration) RegistryOption {
	return func(r *Registry) {
		if d > 0 {
			r.closeTimeout = d
		}
	}
}

// WithMaxStuck sets how many abandoned, still running calls a provider may
// have before the registry stops calling it.
func WithMaxStuck(n int) RegistryOption {
	return func(r *Registry) {
		if n > 0 {
			r.maxStuck = n
		}
	}
}

// WithLogger makes the registry log shadowed and rejected candidates,
// provider errors and skills whose descriptions hold control or
// bidirectional-text characters, each distinct one once.
func WithLogger(l *slog.Logger) RegistryOption {
	return func(r *Registry) { r.log = l }
}

// Registry composes providers into one view per working directory. It is
// safe for concurrent use. See the package documentation for the rules.
type Registry struct {
	ps           []Provider
	names        []string
	timeout      time.Duration
	closeTimeout time.Duration
	maxStuck     int
	cacheSize    int
	log          *slog.Logger

	base    context.Context
	cancel  context.CancelFunc
	calls   *runner // the goroutines provider calls run on
	wg      sync.WaitGroup
	running atomic.Int64

	mu        sync.Mutex
	closed    bool
	cache     *simplelru.LRU[catalog.Query, *cacheEntry] // nil when cacheSize is 0
	stuck     []int
	logged    map[string]struct{}
	flights   map[catalog.Query]*flight // collections in progress, by q
	sameViews *sharedViews              // prepared views by content (sharedviews.go)
}

// NewRegistry composes ps in order. The registry takes ownership of the
// providers: Close closes those that implement io.Closer.
func NewRegistry(ps []Provider, opts ...RegistryOption) *Registry {
	r := &Registry{
		ps:           append([]Provider(nil), ps...),
		timeout:      DefaultProviderTimeout,
		closeTimeout: DefaultCloseTimeout,
		maxStuck:     DefaultMaxStuck,
		cacheSize:    DefaultCacheSize,
		stuck:        make([]int, len(ps)),
		logged:       make(map[string]struct{}),
		flights:      make(map[catalog.Query]*flight),
		sameViews:    newSharedViews(),
	}
	for _, p := range r.ps {
		r.names = append(r.names, p.Name())
	}
	for _, o := range opts {
		o(r)
	}
	if r.cacheSize > 0 {
		// The registry's own mutex guards the cache with the rest of its
		// state, so the LRU without locking of its own does.
		r.cache, _ = simplelru.NewLRU[catalog.Query, *cacheEntry](r.cacheSize, nil)
	}
	r.base, r.cancel = context.WithCancel(context.Background())
	r.calls = newRunner(r.base.Done())
	return r
}

// Snapshot returns the skills available in q, sorted by name in byte
// order. The snapshot is incomplete when a provider failed, did not answer
// before ctx's deadline (or the provider timeout), or the skill set changed
// twice during collection; the other providers' skills are still there. The
// only error is ctx's cancellation. The slice is the caller's; the
// ResourceBase values it points to are shared and must not be modified.
func (r *Registry) Snapshot(ctx context.Context, q catalog.Query) (catalog.Snapshot, error) {
	v, pos, err := r.viewAt(ctx, q)
	if err != nil {
		return catalog.Snapshot{}, err
	}
	return catalog.Snapshot{Skills: append([]catalog.Summary(nil), v.skills...), Complete: v.complete, Revision: pos.Revision, Epoch: pos.Epoch,
		Diagnostics: v.diags, Revoked: v.revoked}, nil
}

// Prepared returns catalog.Prepare of q's snapshot under opts: the
// catalog entries and their digest, which is what deciding a pre-step
// needs of the skills. The prepared view is kept with the cached snapshot,
// so while no provider announces a change every call after the first
// returns it without copying the snapshot or building entries again; any
// change announced (a skill edited, added or removed on disk) means a new
// snapshot and a new prepared view. An uncached snapshot (a provider that
// cannot announce changes, an incomplete one) is prepared at every call.
// Errors are Snapshot's. The View's entries are shared: the caller must
// not modify them.
func (r *Registry) Prepared(ctx context.Context, q catalog.Query, opts catalog.Options) (catalog.View, error) {
	v, pos, err := r.viewAt(ctx, q)
	if err != nil {
		return catalog.View{}, err
	}
	pv := v.prepare(opts, r.sameViews)
	pv.Revision, pv.Epoch = pos.Revision, pos.Epoch
	return pv, nil
}

// Resolve returns the winning summary for name in q. It resolves from the
// current view even when that view is incomplete. It returns an error
// wrapping catalog.ErrNotFound when no provider offers name.
func (r *Registry) Resolve(ctx context.Context, name string, q catalog.Query) (catalog.Summary, error) {
	v, err := r.view(ctx, q)
	if err != nil {
		return catalog.Summary{}, fmt.Errorf("resolve skill %q: %w", name, err)
	}
	return resolveIn(v, name)
}

// resolveIn is Resolve from the view v.
func resolveIn(v *view, name string) (catalog.Summary, error) {
	i, ok := v.find(name)
	if !ok {
		return catalog.Summary{}, fmt.Errorf("resolve skill %q: %w", name, catalog.ErrNotFound)
	}
	s := v.skills[i]
	if s.ResourceBase != nil {
		rb := *s.ResourceBase
		s.ResourceBase = &rb
	}
	return s, nil
}

// Load re-resolves the winner for name in q and asks its provider for the
// current definition and body. It returns an error wrapping
// catalog.ErrNotFound when no provider offers name any more, and otherwise
// the provider's failure as `read skill "<name>": <cause>`.
func (r *Registry) Load(ctx context.Context, name string, q catalog.Query) (catalog.Skill, error) {
	v, err := r.view(ctx, q)
	return r.loadFrom(ctx, v, err, name, q)
}

// loadFrom is Load from a view of q the registry has just confirmed current
// in this operation (or the error of getting it).
func (r *Registry) loadFrom(ctx context.Context, v *view, err error, name string, q catalog.Query) (catalog.Skill, error) {
	for attempt := 0; ; attempt++ {
		if err != nil {
			return catalog.Skill{}, fmt.Errorf("read skill %q: %w", name, err)
		}
		sk, lerr := r.load(ctx, v, name, q)
		if attempt == 0 && errors.Is(lerr, catalog.ErrNotFound) {
			// The view may predate a change not announced yet (a
			// deleted override): resolve once more from a fresh one.
			// (Its error is the loop's: a failed collection, ctx ended,
			// is returned, not loaded from.)
			v, err = r.collect(ctx, q)
			continue
		}
		return sk, lerr
	}
}

func (r *Registry) load(ctx context.Context, v *view, name string, q catalog.Query) (catalog.Skill, error) {
	i, ok := v.find(name)
	if !ok {
		return catalog.Skill{}, fmt.Errorf("read skill %q: %w", name, catalog.ErrNotFound)
	}
	pi := v.owner[i]
	p := r.ps[pi]
	if ctx.Err() == nil {
		if s, ok := r.loadQuick(p, name, q); ok {
			return r.loaded(pi, name, s)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	c := r.start(wctx, pi, func(ctx context.Context, c *call) {
		c.skill, c.err = p.Load(ctx, name, q)
	})
	if err := r.wait(wctx, pi, c); err != nil {
		return catalog.Skill{}, fmt.Errorf("read skill %q: %w", name, err)
	}
	if c.err != nil {
		return catalog.Skill{}, fmt.Errorf("read skill %q: %w", name, c.err)
	}
	return r.loaded(pi, name, c.skill)
}

// loadQuick asks p for name from memory, when p can answer that way. v
// was confirmed current by asking every provider's Changes(q) (view,
// collect) in this operation, so a provider that Changes brings up to date
// need not be brought up to date again.
func (r *Registry) loadQuick(p Provider, name string, q catalog.Query) (catalog.Skill, bool) {
	if _, notifier := p.(Notifier); notifier {
		if ql, ok := p.(QuickLoaderAfterChanges); ok {
			return ql.LoadQuickAfterChanges(name, q)
		}
	}
	if ql, ok := p.(QuickLoader); ok {
		return ql.LoadQuick(name, q)
	}
	return catalog.Skill{}, false
}

// Lookup returns the skills of q as one call of the skill tool looks them
// up (catalog.Execute, catalog.Invoke): Resolve, then Load of the name
// resolved. The two share one check that the registry's view of q is
// current, made by the first of them: what Load answers reflects every
// change completed before that check began, as when Resolve and Load are
// called on the registry one after the other, minus the second check. A
// Lookup serves one call; it is not safe for concurrent use.
func (r *Registry) Lookup(q catalog.Query) catalog.Lookup {
	return &lookup{r: r, q: q}
}

// lookup is Lookup's binding: the view its first method confirmed current.
type lookup struct {
	r *Registry
	q catalog.Query
	v *view
}

func (l *lookup) view(ctx context.Context) (*view, error) {
	if l.v != nil {
		if err := ctx.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		return l.v, nil
	}
	v, err := l.r.view(ctx, l.q)
	if err == nil && v.complete {
		l.v = v // an incomplete view is not kept: Load looks again, as Registry.Load does
	}
	return v, err
}

func (l *lookup) Resolve(ctx context.Context, name string) (catalog.Summary, error) {
	v, err := l.view(ctx)
	if err != nil {
		return catalog.Summary{}, fmt.Errorf("resolve skill %q: %w", name, err)
	}
	return resolveIn(v, name)
}

func (l *lookup) Load(ctx context.Context, name string) (catalog.Skill, error) {
	v, err := l.view(ctx)
	return l.r.loadFrom(ctx, v, err, name, l.q)
}

// loaded checks what provider pi loaded for name and names the provider.
func (r *Registry) loaded(pi int, name string, s catalog.Skill) (catalog.Skill, error) {
	if s.Name != name {
		return catalog.Skill{}, fmt.Errorf("read skill %q: provider %q returned skill %q", name, r.names[pi], s.Name)
	}
	if s.Provider == "" {
		s.Provider = r.names[pi]
	}
	return s, nil
}

// Close cancels running provider calls, waits for them (at most the close
// timeout) and closes the providers that implement io.Closer.
func (r *Registry) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	if r.cache != nil {
		r.cache.Purge()
	}
	r.mu.Unlock()
	r.cancel()

	var errs []error
	done := make(chan struct{})
	// This goroutine ends when the last provider call returns; it outlives
	// Close only when a provider ignores cancellation.
	go func() { r.wg.Wait(); close(done) }()
	t := time.NewTimer(r.closeTimeout)
	select {
	case <-done:
		t.Stop()
	case <-t.C:
		errs = append(errs, fmt.Errorf("close registry: %d provider calls still running after %s: %w", r.running.Load(), r.closeTimeout, ErrStuck))
	}
	for i, p := range r.ps {
		if c, ok := p.(io.Closer); ok {
			if err := c.Close(); err != nil {
				errs = append(errs, fmt.Errorf("close provider %q: %w", r.names[i], err))
			}
		}
	}
	return errors.Join(errs...)
}

// Revision is the highest revision the registry's Revisioned providers have
// applied (0 when none is Revisioned).
func (r *Registry) Revision() uint64 {
	var rev uint64
	for _, p := range r.ps {
		if rv, ok := p.(Revisioned); ok {
			rev = max(rev, rv.Revision())
		}
	}
	return rev
}

// Position is the position of the registry's Epoched provider (the skill
// store): its epoch and the revision applied; without one, the zero epoch
// and Revision.
func (r *Registry) Position() Position {
	for _, p := range r.ps {
		if e, ok := p.(Epoched); ok {
			return e.Position()
		}
	}
	return Position{Revision: r.Revision()}
}

// Store names the log of the registry's Epoched provider (the skill
// store's bucket), "" without one.
func (r *Registry) Store() string {
	for _, p := range r.ps {
		if e, ok := p.(Epoched); ok {
			return e.Store()
		}
	}
	return ""
}

// Refresh has the registry's Epoched provider check its log's identity now
// (see Epoched) and returns the epoch then current; "" without one.
func (r *Registry) Refresh(ctx context.Context) (string, error) {
	for i, p := range r.ps {
		if e, ok := p.(Epoched); ok {
			ep, err := e.Refresh(ctx)
			if err != nil {
				return ep, fmt.Errorf("refresh provider %q: %w", r.names[i], err)
			}
			return ep, nil
		}
	}
	return "", nil
}

// CatchUp waits until every Revisioned provider has applied at least rev,
// or ctx ends (its error is returned, wrapped with the provider's name).
// Snapshots taken after it returns nil reflect rev at least.
func (r *Registry) CatchUp(ctx context.Context, rev uint64) error {
	for i, p := range r.ps {
		rv, ok := p.(Revisioned)
		if !ok {
			continue
		}
		if err := rv.CatchUp(ctx, rev); err != nil {
			return fmt.Errorf("catch up provider %q to revision %d: %w", r.names[i], rev, err)
		}
	}
	return nil
}

// SnapshotVersions returns q's snapshot, as Snapshot does, and for each of
// its skills, from the same view, what the winner's provider can tell of
// its version from memory (see Versioner; the zero Version where it
// cannot). A holder of the skills' files compares the versions with the
// ones it read them under, and reads again only the skills that changed.
func (r *Registry) SnapshotVersions(ctx context.Context, q catalog.Query) (catalog.Snapshot, []Version, error) {
	v, pos, err := r.viewAt(ctx, q)
	if err != nil {
		return catalog.Snapshot{}, nil, err
	}
	snap := catalog.Snapshot{Skills: append([]catalog.Summary(nil), v.skills...), Complete: v.complete, Revision: pos.Revision, Epoch: pos.Epoch,
		Diagnostics: v.diags}
	vs := make([]Version, len(v.skills))
	for i, s := range v.skills {
		if vr, ok := r.ps[v.owner[i]].(Versioner); ok {
			vs[i] = vr.Version(s.Name, q)
		}
	}
	return snap, vs, nil
}

// Releases returns the releases in progress of every Releaser provider
// for q (see Releaser), in provider order.
func (r *Registry) Releases(q catalog.Query) []catalog.Release {
	var out []catalog.Release
	for _, p := range r.ps {
		if rl, ok := p.(Releaser); ok {
			out = append(out, rl.Releases(q)...)
		}
	}
	return out
}
