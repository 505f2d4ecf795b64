package providers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skillstream/skillstream/catalog"
)

// ErrNoFiles reports a skill whose provider cannot hand out its files.
var ErrNoFiles = errors.New("provider does not serve skill files")

// File is one regular file of a skill: its path relative to the skill's
// folder ("/"-separated, SKILL.md for the instructions) and its bytes.
type File struct {
	Path string
	Data []byte
}

// Filer is implemented by providers that can hand out the files of a skill
// they offer: what a skill folder holds, SKILL.md included, as the skill's
// digest covers them.
type Filer interface {
	// Files returns the files of the provider's own winner called name for
	// q, in byte order of Path, at most lim files of at most maxBytes in
	// total (an error beyond). It returns an error
	// wrapping catalog.ErrNotFound when the provider no longer offers name.
	// A name is only ever looked up, never turned into a path.
	Files(ctx context.Context, name string, q catalog.Query, maxFiles int, maxBytes int64) ([]File, error)
}

// Files re-resolves the winner for name in q, as Load does, and asks its
// provider for the skill's files (see Filer). It returns an error wrapping
// catalog.ErrNotFound when no provider offers name, and one wrapping
// ErrNoFiles when the winner's provider cannot hand out files.
func (r *Registry) Files(ctx context.Context, name string, q catalog.Query, maxFiles int, maxBytes int64) ([]File, error) {
	v, err := r.view(ctx, q)
	if err != nil {
		return nil, fmt.Errorf("read files of skill %q: %w", name, err)
	}
	i, ok := v.find(name)
	if !ok {
		return nil, fmt.Errorf("read files of skill %q: %w", name, catalog.ErrNotFound)
	}
	pi := v.owner[i]
	f, ok := r.ps[pi].(Filer)
	if !ok {
		return nil, fmt.Errorf("read files of skill %q: %w (%s)", name, ErrNoFiles, r.names[pi])
	}
	wctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	var files []File
	c := r.start(wctx, pi, func(ctx context.Context, c *call) {
		files, c.err = f.Files(ctx, name, q, maxFiles, maxBytes)
	})
	if err := r.wait(wctx, pi, c); err != nil {
		return nil, fmt.Errorf("read files of skill %q: %w", name, err)
	}
	if c.err != nil {
		return nil, fmt.Errorf("read files of skill %q: %w", name, c.err)
	}
	return files, nil
}

// Changes returns, for q, the change channels of the providers that
// announce changes (see Notifier), and whether every provider does: a
// holder of an answer for q waits for any of them to close, and asks again
// from time to time when complete is false. A provider whose skills never
// change hands out no channel.
func (r *Registry) Changes(q catalog.Query) (chans []<-chan struct{}, complete bool) {
	toks, complete := r.tokens(q, time.Time{})
	for _, t := range toks {
		if t != nil {
			chans = append(chans, t)
		}
	}
	return chans, complete
}
