package providers

import (
	"context"
	"errors"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skillstream/skillstream/catalog"
)

// Caching: a view per query, kept while every provider's change channel
// taken before collecting it is still open and still current; concurrent
// misses for one query share one collection.

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
	tokens []<-chan struct{}
	view   *view
}

// view is one collected answer for a working directory.
type view struct {
	skills   []catalog.Summary // winners, by name
	owner    []int             // provider index of each winner
	complete bool
	pos      Position // the providers' position, read before listing
	shadowed []Shadowed
	rejected []Rejected
	errs     []ProviderError
	diags    []Diagnostic // the providers' diagnostics, for the worker (diagnose)
	revoked  []string     // skills withheld as revoked, sorted (revokedNames)

	mu       sync.Mutex
	prepared map[catalog.Options]*preparedView // see Prepared
	derived  map[any]*derivedValue             // see Derive
	sumState                                   // see contentSum
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

// prepare returns the view's snapshot prepared under opts, building it at
// the first call, or taking it from shared when a view of the same skills
// was prepared under opts before (shared may be nil).
func (v *view) prepare(opts catalog.Options, shared *sharedViews) catalog.View {
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
		prepare := func() catalog.View {
			return catalog.Prepare(catalog.Snapshot{Skills: v.skills, Complete: v.complete, Revision: v.pos.Revision, Epoch: v.pos.Epoch,
				Diagnostics: v.diags, Revoked: v.revoked}, opts)
		}
		if shared == nil || !v.complete {
			pv.v = prepare()
			return
		}
		pv.v = shared.get(v.contentSum(), opts, prepare)
		pv.v.Diagnostics = v.diags // the view's own, as its position (Prepared)
		pv.v.Revoked = v.revoked
		// and so are its origins: a view of the same text may come from
		// other revisions of the store's skills (a release's canary).
		pv.v.Origins = catalog.OriginsOf(v.skills)
	})
	return pv.v
}

// viewAt is view with the position the answer reflects: for a cached view
// still current, the revision read before the check (a Revisioned provider
// announces a change before it counts its revision as applied) when it is
// of the view's epoch; for a collected one, the position read before
// listing. (A provider whose log was replaced announces a change before
// it publishes the new epoch, so a cached view still current is of the
// epoch read before the check, or of the one just before it.)
func (r *Registry) viewAt(ctx context.Context, q catalog.Query) (*view, Position, error) {
	pos := r.Position()
	if err := ctx.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return nil, Position{}, err
	}
	if v := r.cached(q, catalog.ArrivalOf(ctx)); v != nil {
		if pos.Epoch == v.pos.Epoch && pos.Revision > v.pos.Revision {
			return v, pos, nil
		}
		return v, v.pos, nil
	}
	v, err := r.shared(ctx, q)
	if err != nil {
		return nil, Position{}, err
	}
	return v, v.pos, nil
}

// view returns the cached view for q when every provider confirms it is
// still current, and collects a fresh one otherwise.
func (r *Registry) view(ctx context.Context, q catalog.Query) (*view, error) {
	if err := ctx.Err(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return nil, err
	}
	if v := r.cached(q, catalog.ArrivalOf(ctx)); v != nil {
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
	if f != nil && r.current(q, f.tokens, catalog.ArrivalOf(ctx)) {
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
	tokens, cacheable := r.tokens(q, catalog.ArrivalOf(ctx))
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

func (r *Registry) cached(q catalog.Query, since time.Time) *view {
	if r.cache == nil {
		return nil
	}
	r.mu.Lock()
	e, _ := r.cache.Get(q) // marks q recently used
	r.mu.Unlock()
	if e == nil {
		return nil
	}
	if !r.current(q, e.tokens, since) {
		r.mu.Lock()
		if cur, ok := r.cache.Peek(q); ok && cur == e {
			r.cache.Remove(q)
		}
		r.mu.Unlock()
		return nil
	}
	return e.view
}

// tokens captures each provider's change channel before a collection, as
// of since (see ChangesSincer; zero: as of the call). cacheable is false
// when some provider cannot announce changes.
func (r *Registry) tokens(q catalog.Query, since time.Time) (tokens []<-chan struct{}, cacheable bool) {
	tokens = make([]<-chan struct{}, len(r.ps))
	cacheable = true
	for i, p := range r.ps {
		n, ok := p.(Notifier)
		if !ok {
			cacheable = false
			continue
		}
		ch := changesOf(n, q, since)
		tokens[i] = ch
		if ch != nil && Closed(ch) {
			cacheable = false
		}
	}
	return tokens, cacheable
}

// current reports whether a cached entry's tokens are all still open and
// still the providers' current channels, as of since (see tokens).
func (r *Registry) current(q catalog.Query, tokens []<-chan struct{}, since time.Time) bool {
	for i, p := range r.ps {
		n, ok := p.(Notifier)
		if !ok {
			return false
		}
		tok := tokens[i]
		if tok != nil && Closed(tok) {
			return false
		}
		if changesOf(n, q, since) != tok {
			return false
		}
	}
	return true
}

// collect asks every provider for its candidates and merges them. When a
// provider announces a change during collection, or hands out another
// change channel, it tries once more; a second announced change makes the
// view incomplete, a second new channel only keeps it out of the cache.
func (r *Registry) collect(ctx context.Context, q catalog.Query) (*view, error) {
	for attempt := 0; ; attempt++ {
		pos := r.Position()
		tokens, cacheable := r.tokens(q, catalog.ArrivalOf(ctx))
		open := make([]bool, len(tokens))
		for i, t := range tokens {
			open[i] = t != nil && !Closed(t)
		}
		results, err := r.listAll(ctx, q)
		if err != nil {
			return nil, err
		}
		v := r.merge(results)
		v.pos = pos
		v.diags = r.diagnose(ctx, q)
		v.revoked = r.revokedNames(q, v.skills)
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
		if Closed(tokens[i]) {
			return true, false
		}
		if cur != tokens[i] {
			replaced = true
		}
	}
	return false, replaced
}

func (r *Registry) store(q catalog.Query, tokens []<-chan struct{}, v *view) {
	if r.cache == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.cache.Add(q, &cacheEntry{tokens: tokens, view: v}) // evicts the least recently used past the bound
}

func (v *view) find(name string) (int, bool) {
	i := sort.Search(len(v.skills), func(i int) bool { return v.skills[i].Name >= name })
	return i, i < len(v.skills) && v.skills[i].Name == name
}

// revokedNames is what the providers withhold from q's view as revoked
// (Revoker), less the names the view offers all the same (another
// provider's skill, or a revision not revoked): sorted, at most
// MaxRevoked.
func (r *Registry) revokedNames(q catalog.Query, skills []catalog.Summary) []string {
	var out []string
	for _, p := range r.ps {
		if rv, ok := p.(Revoker); ok {
			out = append(out, rv.Revoked(q)...)
		}
	}
	if len(out) == 0 {
		return nil
	}
	slices.Sort(out)
	out = slices.Compact(out)
	offered := make(map[string]bool, len(skills))
	for _, s := range skills {
		offered[s.Name] = true
	}
	out = slices.DeleteFunc(out, func(name string) bool { return offered[name] })
	if len(out) > MaxRevoked {
		out = out[:MaxRevoked]
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
