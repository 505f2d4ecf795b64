package agentskills

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/skillstream/skillstream/providers"
)

// One skills folder: its cached answer (candidates, parses, diagnostics)
// and the scan that renews it, reusing the parses of unchanged files and
// taking the watches the scan visits.

// root is one skills folder.
type root struct {
	path   string
	base   string // links at or below it (down to path) are refused under NoFollowSymlinks
	rank   int
	source string
	proj   *project // nil for custom and user folders
	// confined: a project's folder under Config.ConfineProjects, read
	// without following links
	confined bool
	gen      atomic.Uint64

	scanMu sync.Mutex
	last   *rootScan // guarded by scanMu

	// guarded by Provider.mu
	touched    map[string]struct{}
	touchedAll bool
	unwatched  bool
	dropped    bool
	polled     bool // more watches needed than allowed: skill files checked every PollInterval

	want map[string]watchKind // guarded by Provider.watchMu
}

// scanIDs numbers the scans that vouch for their paths (rootScan.vouch).
var scanIDs atomic.Uint64

// rootScan is the cached answer of one root.
type rootScan struct {
	gen   uint64
	fresh bool // reusable while gen is unchanged
	// vouch, when not 0, identifies this scan among all scans: it is
	// fresh, and every folder above the root is watched with no link on
	// the way (rootHooks.whole), so that while it stays fresh a path of
	// the root that named a folder names that folder (see loadCache.warm).
	vouch  uint64
	named  map[string]int // the index in skills of the first of each name
	cands  []providers.Candidate
	skills []found
	diags  []providers.Diagnostic
	err    error
	files  map[string]fileState
	needed int // watches its skill folders and linked files need
}

// noFollowIn reports whether links are refused in r: everywhere under
// NoFollowSymlinks, in confined project folders always.
func (p *Provider) noFollowIn(r *root) bool { return p.noFollow || r.confined }

// scan returns r's current answer: the cached one when no event touched r
// since, else a new scan that reuses the parses of unchanged files.
func (p *Provider) scan(ctx context.Context, r *root) *rootScan {
	r.scanMu.Lock()
	defer r.scanMu.Unlock()
	g := r.gen.Load()
	if r.last != nil && r.last.fresh && r.last.gen == g {
		return r.last
	}
	p.mu.Lock()
	touched, all := r.touched, r.touchedAll
	r.touched, r.touchedAll = nil, false
	p.mu.Unlock()

	var prev map[string]fileState
	if r.last != nil && !all {
		prev = r.last.files
	}
	s := &scanner{noFollow: p.noFollowIn(r), base: r.base, prev: prev, touched: touched, count: &p.count, parsed: p.loads.putBody}
	var h *rootHooks
	if p.w != nil {
		h = &rootHooks{p: p, r: r, want: make(map[string]watchKind), ok: true, limit: p.maxWatches}
		h.watchRoot(s.linkAbove(r.path))
		s.hooks = h
	}
	l := s.scan(ctx, r.path)
	watched, polled, whole := false, false, false
	if h != nil {
		var shed []string
		if h.over { // the skill folders are checked by polling instead
			for path, k := range h.want {
				if k.kind == kindDir || k.kind == kindFile {
					delete(h.want, path)
					shed = append(shed, path)
				}
			}
		}
		p.keepWatches(r, h.want)
		p.releaseAll(r, shed)
		watched, polled, whole = h.ok, h.over, h.ok && h.whole
	}
	p.mu.Lock()
	r.unwatched = !watched
	was := r.polled
	r.polled = polled && !r.dropped
	if r.polled {
		p.polledRoots[r] = struct{}{}
	} else {
		delete(p.polledRoots, r)
	}
	p.mu.Unlock()
	if p.log != nil && polled != was {
		if polled {
			p.log.Warn("skills folder needs more file watches than allowed: its skill files are checked periodically instead",
				"folder", r.path, "watches_needed", l.needed, "max_watches", p.maxWatches, "every", p.pollEvery)
		} else {
			p.log.Info("skills folder is watched again", "folder", r.path)
		}
	}

	rs := &rootScan{
		gen:    g,
		fresh:  watched && l.err == nil, // errors are retried, never cached
		skills: l.skills,
		diags:  l.diags,
		err:    l.err,
		files:  l.files,
		needed: l.needed,
	}
	if whole && rs.fresh {
		rs.vouch = scanIDs.Add(1)
	}
	rs.named = make(map[string]int, len(l.skills))
	rs.cands = make([]providers.Candidate, len(l.skills))
	for i, f := range l.skills {
		if _, dup := rs.named[f.sum.Name]; !dup {
			rs.named[f.sum.Name] = i
		}
		sum := f.sum
		sum.Source, sum.Provider = r.source, p.name
		rs.cands[i] = providers.Candidate{Summary: sum, Rank: r.rank}
	}
	p.logDropped(r, l)
	if ctx.Err() == nil {
		r.last = rs
	}
	return rs
}
