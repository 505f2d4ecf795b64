package agentskills

import (
	"context"
	"slices"
	"time"

	"github.com/skillstream/skillstream/catalog"
)

// A skills folder holding more skill folders (and linked files) than
// Config.MaxWatchesPerFolder would take that many of the kernel's file
// watches, a limited resource shared by every program of the user. Past the
// limit the folder keeps its own watch and those of the folders above it,
// so skills added, removed or renamed in it and the folder itself moving
// are still seen at once, but its skill folders are not watched: every
// PollInterval the folder is listed again, reusing the parse of every file
// whose identity (inode, size, mtime, ctime) is unchanged, and when the
// answer differs from the cached one the folder is marked changed like an
// event would.

// pollLoop checks the polled folders every poll interval until Close.
func (p *Provider) pollLoop() {
	defer close(p.pollDone)
	t := time.NewTicker(p.pollEvery)
	defer t.Stop()
	for {
		select {
		case <-p.pollStop:
			return
		case <-t.C:
		}
		p.mu.Lock()
		roots := make([]*root, 0, len(p.polledRoots))
		for r := range p.polledRoots {
			roots = append(roots, r)
		}
		p.mu.Unlock()
		for _, r := range roots {
			select {
			case <-p.pollStop:
				return
			default:
			}
			p.probe(r)
		}
	}
}

// probe lists r again and marks it changed when the answer differs from
// its cached one.
func (p *Provider) probe(r *root) {
	r.scanMu.Lock()
	last := r.last
	stale := last == nil || !last.fresh || last.gen != r.gen.Load()
	r.scanMu.Unlock()
	if stale {
		return // the next List lists it again anyway
	}
	s := &scanner{noFollow: p.noFollowIn(r), base: r.base, prev: last.files, count: &p.count, parsed: p.loads.putBody}
	l := s.scan(context.Background(), r.path)
	if l.err == nil && sameListing(last, l) {
		return
	}
	p.mu.Lock()
	p.touch(r, r.path)
	p.mu.Unlock()
}

// sameListing reports whether a new listing found the same files, with the
// same identities, and the same diagnostics as a cached answer.
func sameListing(last *rootScan, l listing) bool {
	if len(last.files) != len(l.files) || !slices.Equal(last.diags, l.diags) {
		return false
	}
	for path, st := range l.files {
		if old, ok := last.files[path]; !ok || old.id != st.id {
			return false
		}
	}
	return true
}

// PolledFolder is a skills folder that needs more file watches than
// Config.MaxWatchesPerFolder allows.
type PolledFolder struct {
	Path   string
	Needed int           // watches its skill folders and linked files need
	Limit  int           // Config.MaxWatchesPerFolder
	Every  time.Duration // Config.PollInterval
}

// Polled returns the skills folders of q's working directory over the watch limit: a watching
// provider sees skills added and removed in them at once but edits inside
// their skill folders only at its next check. It is for an operator's
// report; it lists the folders as List does.
func (p *Provider) Polled(ctx context.Context, q catalog.Query) ([]PolledFolder, error) {
	roots, _, err := p.roots(ctx, q.Cwd)
	if err != nil {
		return nil, err
	}
	var out []PolledFolder
	for _, r := range roots {
		if s := p.scan(ctx, r); s.needed > p.maxWatches {
			out = append(out, PolledFolder{Path: r.path, Needed: s.needed, Limit: p.maxWatches, Every: p.pollEvery})
		}
	}
	return out, nil
}

// dropKey identifies a dropped file's diagnostic for one version of it.
type dropKey struct {
	path, reason string
	id           identity
}

const maxDropLogged = 4096

// logDropped logs each file a scan dropped, once per version of the file
// (a file edited and still invalid is logged again).
func (p *Provider) logDropped(r *root, l listing) {
	if p.log == nil || len(l.diags) == 0 {
		return
	}
	for _, d := range l.diags {
		k := dropKey{path: d.Path, reason: d.Reason, id: l.files[d.Path].id}
		p.mu.Lock()
		_, seen := p.dropLogged[k]
		if !seen {
			if len(p.dropLogged) >= maxDropLogged {
				clear(p.dropLogged)
			}
			p.dropLogged[k] = struct{}{}
		}
		p.mu.Unlock()
		if !seen {
			p.log.Warn("skill file dropped", "path", d.Path, "reason", d.Reason, "folder", r.path)
		}
	}
}
