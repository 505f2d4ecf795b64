package supervise

import (
	"context"
	"errors"
	"sync"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers"
)

// Registry is what a front door (the MCP one) reads of a unit's skills.
type Registry interface {
	Snapshot(ctx context.Context, q catalog.Query) (catalog.Snapshot, error)
	Resolve(ctx context.Context, name string, q catalog.Query) (catalog.Summary, error)
	Load(ctx context.Context, name string, q catalog.Query) (catalog.Skill, error)
	Files(ctx context.Context, name string, q catalog.Query, maxFiles int, maxBytes int64) ([]providers.File, error)
	Changes(q catalog.Query) (chans []<-chan struct{}, complete bool)
}

// Searcher is a unit's search index as a front door takes it.
type Searcher interface {
	Searcher(q catalog.Query) catalog.Searcher
}

// ErrNotServing is what a front door's reads of a unit that has not
// started yet return.
var ErrNotServing = errors.New("this tenant is not served yet (its processor is starting or being retried)")

// Late is a unit's registry and search index for a front door that starts
// before the unit does: every read fails with ErrNotServing until Set
// hands it the unit's, and its Changes then announce a change.
type Late struct {
	mu      sync.Mutex
	reg     Registry
	search  Searcher
	arrived chan struct{}
}

// NewLate returns a Late without a registry yet.
func NewLate() *Late { return &Late{arrived: make(chan struct{})} }

// Set hands l the unit's registry and index (search nil without one); the
// first call announces a change, later ones replace them.
func (l *Late) Set(reg Registry, search Searcher) {
	l.mu.Lock()
	defer l.mu.Unlock()
	first := l.reg == nil
	l.reg, l.search = reg, search
	if first {
		close(l.arrived)
	}
}

func (l *Late) get() (Registry, Searcher) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reg, l.search
}

// Snapshot is the unit's, or ErrNotServing.
func (l *Late) Snapshot(ctx context.Context, q catalog.Query) (catalog.Snapshot, error) {
	if r, _ := l.get(); r != nil {
		return r.Snapshot(ctx, q)
	}
	return catalog.Snapshot{}, ErrNotServing
}

// Resolve is the unit's, or ErrNotServing.
func (l *Late) Resolve(ctx context.Context, name string, q catalog.Query) (catalog.Summary, error) {
	if r, _ := l.get(); r != nil {
		return r.Resolve(ctx, name, q)
	}
	return catalog.Summary{}, ErrNotServing
}

// Load is the unit's, or ErrNotServing.
func (l *Late) Load(ctx context.Context, name string, q catalog.Query) (catalog.Skill, error) {
	if r, _ := l.get(); r != nil {
		return r.Load(ctx, name, q)
	}
	return catalog.Skill{}, ErrNotServing
}

// Files is the unit's, or ErrNotServing.
func (l *Late) Files(ctx context.Context, name string, q catalog.Query, maxFiles int, maxBytes int64) ([]providers.File, error) {
	if r, _ := l.get(); r != nil {
		return r.Files(ctx, name, q, maxFiles, maxBytes)
	}
	return nil, ErrNotServing
}

// Changes is the unit's; until it has one, a channel closed when it
// arrives (not complete, so that a reader looks again soon).
func (l *Late) Changes(q catalog.Query) ([]<-chan struct{}, bool) {
	if r, _ := l.get(); r != nil {
		return r.Changes(q)
	}
	return []<-chan struct{}{l.arrived}, false
}

// Searcher is the unit's index bound to q; until it has one, a searcher
// failing with ErrNotServing.
func (l *Late) Searcher(q catalog.Query) catalog.Searcher {
	if _, s := l.get(); s != nil {
		return s.Searcher(q)
	}
	return notServing{}
}

type notServing struct{}

func (notServing) Search(context.Context, string, int, int) (catalog.Matches, error) {
	return catalog.Matches{}, ErrNotServing
}

// Releases is the unit's releases in progress for q (providers.Releaser),
// none until it has a registry or when its registry releases nothing.
func (l *Late) Releases(q catalog.Query) []catalog.Release {
	if r, _ := l.get(); r != nil {
		if rl, ok := r.(providers.Releaser); ok {
			return rl.Releases(q)
		}
	}
	return nil
}
