package providers

import (
	"context"
	"io"
	"time"

	"github.com/skillstream/skillstream/catalog"
)

// Secondary wraps a provider whose log is not the registry's own: a
// tenant's shared library beside the tenant's store. It offers the
// provider's skills, change notices, quick loads, files, diagnostics and
// releases in progress as they are (a library skill's canary reaches a
// session's cohort like a store skill's), but not its revisions: a registry's Revision, Position and
// CatchUp (what a worker's minStoreRevision and store token refer to)
// follow the tenant's store alone, never a mix of two logs. Close closes
// the provider.
func Secondary(p Provider) Provider { return secondary{p} }

type secondary struct{ p Provider }

func (s secondary) Name() string { return s.p.Name() }

func (s secondary) List(ctx context.Context, q catalog.Query) ([]Candidate, error) {
	return s.p.List(ctx, q)
}

func (s secondary) Load(ctx context.Context, name string, q catalog.Query) (catalog.Skill, error) {
	return s.p.Load(ctx, name, q)
}

// Changes forwards to the provider; one that cannot tell gets a closed
// channel ("do not cache").
func (s secondary) Changes(q catalog.Query) <-chan struct{} {
	if n, ok := s.p.(Notifier); ok {
		return n.Changes(q)
	}
	c := make(chan struct{})
	close(c)
	return c
}

func (s secondary) ChangesSince(q catalog.Query, since time.Time) <-chan struct{} {
	if n, ok := s.p.(ChangesSincer); ok {
		return n.ChangesSince(q, since)
	}
	return s.Changes(q)
}

func (s secondary) LoadQuick(name string, q catalog.Query) (catalog.Skill, bool) {
	if l, ok := s.p.(QuickLoader); ok {
		return l.LoadQuick(name, q)
	}
	return catalog.Skill{}, false
}

func (s secondary) Files(ctx context.Context, name string, q catalog.Query, maxFiles int, maxBytes int64) ([]File, error) {
	if f, ok := s.p.(Filer); ok {
		return f.Files(ctx, name, q, maxFiles, maxBytes)
	}
	return nil, ErrNoFiles
}

func (s secondary) Diagnostics(ctx context.Context, q catalog.Query) ([]Diagnostic, error) {
	if d, ok := s.p.(Diagnoser); ok {
		return d.Diagnostics(ctx, q)
	}
	return nil, nil
}

// Releases forwards to the provider; one without releases has none.
func (s secondary) Releases(q catalog.Query) []catalog.Release {
	if r, ok := s.p.(Releaser); ok {
		return r.Releases(q)
	}
	return nil
}

func (s secondary) Close() error {
	if c, ok := s.p.(io.Closer); ok {
		return c.Close()
	}
	return nil
}
