package providers

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

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
)

// Defaults of the registry options.
const (
	DefaultCacheSize       = 256
	DefaultProviderTimeout = 10 * time.Second
	DefaultCloseTimeout    = 5 * time.Second
	DefaultMaxStuck        = 4
)

// ProviderError is a provider failure kept for operators.
type ProviderError struct {
	Provider string
	Err      error
}

func (e *ProviderError) Error() string { return fmt.Sprintf("provider %q: %v", e.Provider, e.Err) }
func (e *ProviderError) Unwrap() error { return e.Err }

// Shadowed records a candidate that lost its name to another one.
type Shadowed struct {
	Candidate Candidate // the losing candidate (Provider, Source, ResourceBase tell where from)
	By        Candidate // the winner
}

// Rejected records a candidate the registry refused.
type Rejected struct {
	Candidate Candidate
	Err       error // wraps ErrInvalidCandidate and names the provider
}

// Report is what the registry knows about one working directory, for
// operators: winners, shadowed and rejected candidates, provider errors and
// provider diagnostics.
type Report struct {
	Query       catalog.Query
	Snapshot    catalog.Snapshot
	Shadowed    []Shadowed
	Rejected    []Rejected
	Errors      []ProviderError
	Diagnostics []Diagnostic
	// Err is set when ctx was cancelled before the report was complete.
	Err error
}

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

// WithLogger makes the registry log shadowed and rejected candidates and
// provider errors, each distinct one once.
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
	wg      sync.WaitGroup
	running atomic.Int64

	mu      sync.Mutex
	closed  bool
	cache   map[catalog.Query]*list.Element // of *cacheEntry
	lru     *list.List
	stuck   []int
	logged  map[string]struct{}
	flights map[catalog.Query]*flight // collections in progress, by q
}

// flight is a collection in progress that callers for the same q share
// (see shared).
type flight struct {
	tokens []<-chan struct{} // the providers' change channels when it began
	done   chan struct{}     // closed once v and err are set
	v      *view
	err    error
	joined atomic.Int32 // callers waiting on it besides the one collecting
}

type cacheEntry struct {
	q      catalog.Query
	tokens []<-chan struct{}
	view   *view
}

// view is one collected answer for a working directory.
type view struct {
	skills   []catalog.Summary // winners, by name
	owner    []int             // provider index of each winner
	complete bool
	revision uint64 // the providers' revision, read before listing
	shadowed []Shadowed
	rejected []Rejected
	errs     []ProviderError

	mu       sync.Mutex
	prepared map[catalog.Options]*preparedView // see Prepared
}

// preparedView is a view's snapshot prepared under one catalog.Options,
// built once however many callers ask at the same time.
type preparedView struct {
	once sync.Once
	v    catalog.View
}

// maxPrepared bounds the option sets a view keeps prepared views for; a
// processor uses one.
const maxPrepared = 8

// NewRegistry composes ps in order. The registry takes ownership of the
// providers: Close closes those that implement io.Closer.
func NewRegistry(ps []Provider, opts ...RegistryOption) *Registry {
	r := &Registry{
		ps:           append([]Provider(nil), ps...),
		timeout:      DefaultProviderTimeout,
		closeTimeout: DefaultCloseTimeout,
		maxStuck:     DefaultMaxStuck,
		cacheSize:    DefaultCacheSize,
		cache:        make(map[catalog.Query]*list.Element),
		lru:          list.New(),
		stuck:        make([]int, len(ps)),
		logged:       make(map[string]struct{}),
		flights:      make(map[catalog.Query]*flight),
	}
	for _, p := range r.ps {
		r.names = append(r.names, p.Name())
	}
	for _, o := range opts {
		o(r)
	}
	r.base, r.cancel = context.WithCancel(context.Background())
	return r
}

// Snapshot returns the skills available in q, sorted by name in byte
// order. The snapshot is incomplete when a provider failed, did not answer
// before ctx's deadline (or the provider timeout), or the skill set changed
// twice during collection; the other providers' skills are still there. The
// only error is ctx's cancellation. The slice is the caller's; the
// ResourceBase values it points to are shared and must not be modified.
func (r *Registry) Snapshot(ctx context.Context, q catalog.Query) (catalog.Snapshot, error) {
	v, rev, err := r.viewAt(ctx, q)
	if err != nil {
		return catalog.Snapshot{}, err
	}
	return catalog.Snapshot{Skills: append([]catalog.Summary(nil), v.skills...), Complete: v.complete, Revision: rev}, nil
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
	v, rev, err := r.viewAt(ctx, q)
	if err != nil {
		return catalog.View{}, err
	}
	pv := v.prepare(opts)
	pv.Revision = rev
	return pv, nil
}

// prepare returns the view's snapshot prepared under opts, building it at
// the first call.
func (v *view) prepare(opts catalog.Options) catalog.View {
	v.mu.Lock()
	pv, ok := v.prepared[opts]
	if !ok {
		if v.prepared == nil || len(v.prepared) >= maxPrepared {
			v.prepared = make(map[catalog.Options]*preparedView)
		}
		pv = &preparedView{}
		v.prepared[opts] = pv
	}
	v.mu.Unlock()
	pv.once.Do(func() {
		pv.v = catalog.Prepare(catalog.Snapshot{Skills: v.skills, Complete: v.complete, Revision: v.revision}, opts)
	})
	return pv.v
}

// Resolve returns the winning summary for name in q. It resolves from the
// current view even when that view is incomplete. It returns an error
// wrapping catalog.ErrNotFound when no provider offers name.
func (r *Registry) Resolve(ctx context.Context, name string, q catalog.Query) (catalog.Summary, error) {
	v, err := r.view(ctx, q)
	if err != nil {
		return catalog.Summary{}, fmt.Errorf("resolve skill %q: %w", name, err)
	}
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
	for attempt := 0; ; attempt++ {
		if err != nil {
			return catalog.Skill{}, fmt.Errorf("read skill %q: %w", name, err)
		}
		sk, err := r.load(ctx, v, name, q)
		if attempt == 0 && errors.Is(err, catalog.ErrNotFound) {
			// The view may predate a change not announced yet (a
			// deleted override): resolve once more from a fresh one.
			v, err = r.collect(ctx, q)
			continue
		}
		return sk, err
	}
}

func (r *Registry) load(ctx context.Context, v *view, name string, q catalog.Query) (catalog.Skill, error) {
	i, ok := v.find(name)
	if !ok {
		return catalog.Skill{}, fmt.Errorf("read skill %q: %w", name, catalog.ErrNotFound)
	}
	pi := v.owner[i]
	p := r.ps[pi]
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
	s := c.skill
	if s.Name != name {
		return catalog.Skill{}, fmt.Errorf("read skill %q: provider %q returned skill %q", name, r.names[pi], s.Name)
	}
	if s.Provider == "" {
		s.Provider = r.names[pi]
	}
	return s, nil
}

// Inspect collects a fresh view of q (bypassing the cache) with
// everything operators need: winners, shadowed and rejected candidates,
// provider errors and provider diagnostics.
func (r *Registry) Inspect(ctx context.Context, q catalog.Query) Report {
	rep := Report{Query: q}
	v, err := r.collect(ctx, q)
	if err != nil {
		rep.Err = err
		return rep
	}
	rep.Snapshot = catalog.Snapshot{Skills: v.skills, Complete: v.complete, Revision: v.revision}
	rep.Shadowed, rep.Rejected, rep.Errors = v.shadowed, v.rejected, v.errs
	for i, p := range r.ps {
		d, ok := p.(Diagnoser)
		if !ok {
			continue
		}
		wctx, cancel := context.WithTimeout(ctx, r.timeout)
		c := r.start(wctx, i, func(ctx context.Context, c *call) {
			c.diags, c.err = d.Diagnostics(ctx, q)
		})
		err := r.wait(wctx, i, c)
		cancel()
		if err != nil {
			if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				rep.Err = ctx.Err()
				return rep
			}
			rep.Errors = append(rep.Errors, ProviderError{Provider: r.names[i], Err: err})
			continue
		}
		if c.err != nil {
			rep.Errors = append(rep.Errors, ProviderError{Provider: r.names[i], Err: fmt.Errorf("diagnostics: %w", c.err)})
		}
		for _, dg := range c.diags {
			if dg.Provider == "" {
				dg.Provider = r.names[i]
			}
			rep.Diagnostics = append(rep.Diagnostics, dg)
		}
	}
	return rep
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
	r.cache = make(map[catalog.Query]*list.Element)
	r.lru.Init()
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

// viewAt is view with the revision the answer reflects: for a cached view
// still current, the revision read before the check (a Revisioned provider
// announces a change before it counts its revision as applied); for a
// collected one, the revision read before listing.
func (r *Registry) viewAt(ctx context.Context, q catalog.Query) (*view, uint64, error) {
	rev := r.Revision()
	if err := ctx.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return nil, 0, err
	}
	if v := r.cached(q); v != nil {
		return v, max(rev, v.revision), nil
	}
	v, err := r.shared(ctx, q)
	if err != nil {
		return nil, 0, err
	}
	return v, v.revision, nil
}

// view returns the cached view for q when every provider confirms it is
// still current, and collects a fresh one otherwise.
func (r *Registry) view(ctx context.Context, q catalog.Query) (*view, error) {
	if err := ctx.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return nil, err
	}
	if v := r.cached(q); v != nil {
		return v, nil
	}
	return r.shared(ctx, q)
}

// shared collects a view of q, or joins the collection already under way
// for q when no provider announced a change since it began: many callers
// missing the cache at once (a processor's workers, after a change or at
// start) then cost one collection, not one each. A joiner whose shared
// collection failed or came back incomplete (the collecting caller's
// deadline, say) collects for itself; one whose own ctx is cancelled while
// waiting returns its error.
func (r *Registry) shared(ctx context.Context, q catalog.Query) (*view, error) {
	r.mu.Lock()
	f := r.flights[q]
	r.mu.Unlock()
	if f != nil && r.current(q, f.tokens) {
		f.joined.Add(1)
		select {
		case <-f.done:
			if f.err == nil && f.v.complete {
				return f.v, nil
			}
		case <-ctx.Done():
			if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return nil, ctx.Err()
			}
			// Past the deadline: collect, which reports what answered in
			// time as an incomplete view.
		}
		return r.collect(ctx, q)
	}
	tokens, cacheable := r.tokens(q)
	if !cacheable {
		return r.collect(ctx, q) // nobody could join: current() fails
	}
	f = &flight{tokens: tokens, done: make(chan struct{})}
	r.mu.Lock()
	r.flights[q] = f
	r.mu.Unlock()
	f.v, f.err = r.collect(ctx, q)
	r.mu.Lock()
	if r.flights[q] == f {
		delete(r.flights, q)
	}
	r.mu.Unlock()
	close(f.done)
	return f.v, f.err
}

func (r *Registry) cached(q catalog.Query) *view {
	if r.cacheSize == 0 {
		return nil
	}
	r.mu.Lock()
	el, ok := r.cache[q]
	var e *cacheEntry
	if ok {
		e = el.Value.(*cacheEntry)
		r.lru.MoveToFront(el)
	}
	r.mu.Unlock()
	if e == nil {
		return nil
	}
	if !r.current(q, e.tokens) {
		r.mu.Lock()
		if el, ok := r.cache[q]; ok && el.Value.(*cacheEntry) == e {
			r.lru.Remove(el)
			delete(r.cache, q)
		}
		r.mu.Unlock()
		return nil
	}
	return e.view
}

// tokens captures each provider's change channel before a collection.
// cacheable is false when some provider cannot announce changes.
func (r *Registry) tokens(q catalog.Query) (tokens []<-chan struct{}, cacheable bool) {
	tokens = make([]<-chan struct{}, len(r.ps))
	cacheable = true
	for i, p := range r.ps {
		n, ok := p.(Notifier)
		if !ok {
			cacheable = false
			continue
		}
		ch := n.Changes(q)
		tokens[i] = ch
		if ch != nil && isClosed(ch) {
			cacheable = false
		}
	}
	return tokens, cacheable
}

// current reports whether a cached entry's tokens are all still open and
// still the providers' current channels.
func (r *Registry) current(q catalog.Query, tokens []<-chan struct{}) bool {
	for i, p := range r.ps {
		n, ok := p.(Notifier)
		if !ok {
			return false
		}
		tok := tokens[i]
		if tok != nil && isClosed(tok) {
			return false
		}
		if n.Changes(q) != tok {
			return false
		}
	}
	return true
}

func isClosed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// collect asks every provider for its candidates and merges them. When a
// provider announces a change during collection, or hands out another
// change channel, it tries once more; a second announced change makes the
// view incomplete, a second new channel only keeps it out of the cache.
func (r *Registry) collect(ctx context.Context, q catalog.Query) (*view, error) {
	for attempt := 0; ; attempt++ {
		rev := r.Revision()
		tokens, cacheable := r.tokens(q)
		open := make([]bool, len(tokens))
		for i, t := range tokens {
			open[i] = t != nil && !isClosed(t)
		}
		results, err := r.listAll(ctx, q)
		if err != nil {
			return nil, err
		}
		v := r.merge(results)
		v.revision = rev
		changed, replaced := r.since(q, tokens, open)
		if changed || replaced {
			if attempt == 0 {
				continue
			}
			if changed {
				v.complete = false
				v.errs = append(v.errs, ProviderError{Err: ErrChanging})
			}
		}
		r.logView(q, v)
		if v.complete && cacheable && !changed && !replaced {
			r.store(q, tokens, v)
		}
		return v, nil
	}
}

// since tells what became of the open change channels taken before a
// collection: changed when one was closed (a provider announced a
// change), replaced when a provider now hands out another channel while
// the old one is still open. The latter is no change: the provider
// stopped watching cwd (it bounds what it watches) or found cwd's sources
// elsewhere, so the answer stands but may not be cached.
func (r *Registry) since(q catalog.Query, tokens []<-chan struct{}, open []bool) (changed, replaced bool) {
	for i, p := range r.ps {
		if !open[i] {
			continue
		}
		cur := p.(Notifier).Changes(q)
		// Closed is checked after taking cur: a channel closed and
		// replaced meanwhile then counts as the change it is.
		if isClosed(tokens[i]) {
			return true, false
		}
		if cur != tokens[i] {
			replaced = true
		}
	}
	return false, replaced
}

func (r *Registry) store(q catalog.Query, tokens []<-chan struct{}, v *view) {
	if r.cacheSize == 0 {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	e := &cacheEntry{q: q, tokens: tokens, view: v}
	if el, ok := r.cache[q]; ok {
		el.Value = e
		r.lru.MoveToFront(el)
		return
	}
	r.cache[q] = r.lru.PushFront(e)
	for r.lru.Len() > r.cacheSize {
		old := r.lru.Back()
		r.lru.Remove(old)
		delete(r.cache, old.Value.(*cacheEntry).q)
	}
}

type listResult struct {
	cands []Candidate
	err   error
}

// listAll runs every provider's List concurrently and waits for all of them,
// for the provider timeout, or for ctx. A cancelled ctx returns its error;
// a deadline marks the providers that did not answer as failed.
func (r *Registry) listAll(ctx context.Context, q catalog.Query) ([]listResult, error) {
	wctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	calls := make([]*call, len(r.ps))
	for i, p := range r.ps {
		calls[i] = r.start(wctx, i, func(ctx context.Context, c *call) {
			c.cands, c.err = p.List(ctx, q)
		})
	}
	results := make([]listResult, len(r.ps))
	for i, c := range calls {
		if err := r.wait(wctx, i, c); err != nil {
			if cerr := ctx.Err(); cerr != nil && !errors.Is(cerr, context.DeadlineExceeded) {
				for j := i + 1; j < len(calls); j++ {
					r.abandon(j, calls[j])
				}
				return nil, cerr
			}
			results[i].err = err
			continue
		}
		results[i] = listResult{cands: c.cands, err: c.err}
	}
	return results, nil
}

// call is one provider call running in its own goroutine.
type call struct {
	state atomic.Int32 // callRunning, callDone or callAbandoned
	done  chan struct{}
	cands []Candidate
	skill catalog.Skill
	diags []Diagnostic
	err   error
}

const (
	callRunning int32 = iota
	callDone
	callAbandoned
)

// start runs fn in a goroutine the registry owns. The goroutine ends when fn
// returns; fn's context is cancelled when ctx is done, after the provider
// timeout, or when the registry is closed, so a provider that honours its
// context ends promptly. A provider that ignores it keeps its goroutine
// until it returns; at most maxStuck such calls per provider exist, after
// which the provider is not called again until one returns.
func (r *Registry) start(ctx context.Context, i int, fn func(context.Context, *call)) *call {
	c := &call{done: make(chan struct{})}
	r.mu.Lock()
	switch {
	case r.closed:
		r.mu.Unlock()
		c.err = ErrClosed
		c.state.Store(callDone)
		close(c.done)
		return c
	case r.stuck[i] >= r.maxStuck:
		n := r.stuck[i]
		r.mu.Unlock()
		c.err = fmt.Errorf("%w (%d still running)", ErrStuck, n)
		c.state.Store(callDone)
		close(c.done)
		return c
	}
	r.wg.Add(1)
	r.mu.Unlock()
	r.running.Add(1)
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	stop := context.AfterFunc(r.base, cancel)
	go func() {
		defer r.wg.Done()
		defer r.running.Add(-1)
		defer stop()
		defer cancel()
		func() {
			defer func() {
				if p := recover(); p != nil {
					c.err = fmt.Errorf("provider panicked: %v", p)
				}
			}()
			fn(cctx, c)
		}()
		if !c.state.CompareAndSwap(callRunning, callDone) {
			r.mu.Lock()
			r.stuck[i]--
			r.mu.Unlock()
		}
		close(c.done)
	}()
	return c
}

// wait waits for c, for ctx, whichever comes first. It returns nil when c's
// results are available.
func (r *Registry) wait(ctx context.Context, i int, c *call) error {
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		if !r.abandon(i, c) {
			<-c.done // finished meanwhile; its goroutine is about to close done
			return nil
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("%w: %w", ErrNoAnswer, ctx.Err())
		}
		return ctx.Err()
	}
}

// abandon marks c as given up; it reports false when c already finished.
func (r *Registry) abandon(i int, c *call) bool {
	if !c.state.CompareAndSwap(callRunning, callAbandoned) {
		return false
	}
	r.mu.Lock()
	r.stuck[i]++
	r.mu.Unlock()
	return true
}

type ranked struct {
	c    Candidate
	p, k int
}

// merge applies the ranking rules to the providers' answers.
func (r *Registry) merge(results []listResult) *view {
	v := &view{complete: true}
	var all []ranked
	for i, res := range results {
		if res.err != nil {
			// Whatever the provider could still list stays available
			// (for loading); the snapshot is incomplete.
			v.complete = false
			v.errs = append(v.errs, ProviderError{Provider: r.names[i], Err: res.err})
		}
		for k, c := range res.cands {
			if c.Provider == "" {
				c.Provider = r.names[i]
			}
			if err := checkCandidate(r.names[i], c); err != nil {
				v.rejected = append(v.rejected, Rejected{Candidate: c, Err: err})
				continue
			}
			all = append(all, ranked{c: c, p: i, k: k})
		}
	}
	// all is in (provider, local) order already; a stable sort by rank
	// gives the full order.
	sort.SliceStable(all, func(a, b int) bool { return all[a].c.Rank < all[b].c.Rank })
	winners := make(map[string]int, len(all))
	var win []ranked
	for _, rc := range all {
		if w, ok := winners[rc.c.Name]; ok {
			v.shadowed = append(v.shadowed, Shadowed{Candidate: rc.c, By: win[w].c})
			continue
		}
		winners[rc.c.Name] = len(win)
		win = append(win, rc)
	}
	sort.Slice(win, func(a, b int) bool { return win[a].c.Name < win[b].c.Name })
	v.skills = make([]catalog.Summary, len(win))
	v.owner = make([]int, len(win))
	for i, w := range win {
		v.skills[i] = w.c.Summary
		v.owner[i] = w.p
	}
	return v
}

func checkCandidate(provider string, c Candidate) error {
	if !catalog.ValidName(c.Name) {
		return fmt.Errorf("%w from provider %q: name %q is outside the skill name grammar", ErrInvalidCandidate, provider, c.Name)
	}
	if strings.TrimSpace(c.Description) == "" {
		return fmt.Errorf("%w from provider %q: skill %q has an empty description", ErrInvalidCandidate, provider, c.Name)
	}
	return nil
}

func (v *view) find(name string) (int, bool) {
	i := sort.Search(len(v.skills), func(i int) bool { return v.skills[i].Name >= name })
	return i, i < len(v.skills) && v.skills[i].Name == name
}

const maxLogged = 4096

// logView logs each distinct shadowing, rejection and provider error once.
func (r *Registry) logView(q catalog.Query, v *view) {
	if r.log == nil {
		return
	}
	for _, s := range v.shadowed {
		key := fmt.Sprintf("shadow\x00%s\x00%s\x00%s\x00%v", s.Candidate.Name, where(s.Candidate), where(s.By), q)
		if r.once(key) {
			r.log.Info("skill shadowed", append(queryAttrs(q), "skill", s.Candidate.Name,
				"shadowed", where(s.Candidate), "by", where(s.By))...)
		}
	}
	for _, rj := range v.rejected {
		if r.once("reject\x00" + rj.Err.Error()) {
			r.log.Warn("skill candidate rejected", append(queryAttrs(q), "err", rj.Err)...)
		}
	}
	for _, pe := range v.errs {
		if r.once(fmt.Sprintf("error\x00%s\x00%v\x00%s", pe.Provider, q, pe.Err)) {
			r.log.Warn("skill snapshot incomplete", append(queryAttrs(q), "provider", pe.Provider, "err", pe.Err)...)
		}
	}
}

// queryAttrs are the log attributes naming a query: its cwd, and its store
// project when it has one.
func queryAttrs(q catalog.Query) []any {
	attrs := []any{"cwd", q.Cwd}
	if q.Project != "" {
		attrs = append(attrs, "project", q.Project)
	}
	return attrs
}

func (r *Registry) once(key string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.logged[key]; ok {
		return false
	}
	if len(r.logged) >= maxLogged {
		clear(r.logged)
	}
	r.logged[key] = struct{}{}
	return true
}

// where describes a candidate's origin for logs.
func where(c Candidate) string {
	s := c.Provider + "/" + c.Source
	if rb := c.ResourceBase; rb != nil {
		switch rb.Kind {
		case catalog.ResourceDirectory:
			s += " " + rb.Path
		case catalog.ResourceURL:
			s += " " + rb.URL
		}
	}
	return s
}
