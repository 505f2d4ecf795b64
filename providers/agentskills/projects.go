package agentskills

import (
	"context"
	"path/filepath"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers"
)

// Project memory: the project roots the provider tracks, each with its
// skills folders and its change channel, bounded by Config.MaxProjects
// (least recently used dropped with its watches; dropping is not a
// change). The working directories' remembered roots are in rootmemo.go.

// project is a project root and its skills folders.
type project struct {
	key     string // project root; "" for "no working directory"
	roots   []*root
	ch      chan struct{} // closed on change, then replaced
	evicted bool
	cwds    map[*cwdRoot]struct{} // remembered working directories with this root
}

// roots returns the skills folders for cwd in rank order.
func (p *Provider) roots(ctx context.Context, cwd string) ([]*root, *project, error) {
	key, err := p.projectRoot(ctx, cwd)
	if err != nil {
		return nil, nil, err
	}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil, nil, ErrClosed
	}
	proj, evicted := p.project(key)
	roots := make([]*root, 0, len(proj.roots)+len(p.shared))
	roots = append(roots, proj.roots...)
	roots = append(roots, p.shared...)
	p.mu.Unlock()
	p.drop(evicted)
	return roots, proj, nil
}

// project returns the tracked project for key, creating it and evicting the
// least recently used one when over the bound. p.mu must be held.
func (p *Provider) project(key string) (*project, []*project) {
	if proj, ok := p.projects.Get(key); ok { // marks it recently used
		return proj, nil
	}
	proj := &project{key: key, ch: make(chan struct{})}
	if key != "" {
		for i, d := range p.projectDirs {
			proj.roots = append(proj.roots, &root{
				path:     filepath.Join(key, d),
				base:     key,
				rank:     providers.RankProject + i,
				source:   catalog.SourceProject,
				proj:     proj,
				confined: len(p.ceilings) > 0,
			})
		}
	}
	var evicted []*project
	for p.projects.Len() >= p.maxProjects {
		_, old, _ := p.projects.RemoveOldest()
		old.evicted = true
		for e := range old.cwds {
			p.forget(e, false) // drop releases their watches
		}
		pending := false
		for _, r := range old.roots {
			if _, ok := p.pending[r]; ok {
				pending = true
			}
			r.dropped = true
			delete(p.pending, r)
			delete(p.polledRoots, r)
		}
		// Forgetting a project is not a change: its channel stays open
		// (the next Changes for it hands out another one, which tells
		// the registry not to cache). Only a change seen but not yet
		// announced closes it, as the announcement would have.
		if pending {
			close(old.ch)
		}
		evicted = append(evicted, old)
	}
	p.projects.Add(key, proj)
	return proj, evicted
}

// drop releases the watches of evicted projects.
func (p *Provider) drop(evicted []*project) {
	if len(evicted) == 0 {
		return
	}
	var cwds []*cwdRoot
	p.watchMu.Lock()
	for _, proj := range evicted {
		for _, r := range proj.roots {
			for path := range r.want {
				p.release(r, path)
			}
			r.want = nil
		}
		for e := range proj.cwds {
			cwds = append(cwds, e)
		}
	}
	p.watchMu.Unlock()
	p.unwatchChains(cwds)
}
