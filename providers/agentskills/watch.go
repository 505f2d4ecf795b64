package agentskills

import (
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"time"
)

// Watches: the file watches each skills folder takes (the folders
// above it, itself, its skill folders and linked files), the event loop
// that turns events into stale folders, and the debounced notification
// that closes the affected projects' change channels.

type watchKind struct {
	kind int
	next string // for kindAncestor: the child leading to the root
}

const (
	kindRoot     = iota + 1 // the skills folder itself
	kindDir                 // a skill directory: only SKILL.md matters
	kindFile                // a linked skill file
	kindAncestor            // a folder above the root: only its child leading to the root matters
)

type watchEntry struct {
	owners map[*root]watchKind
	chains int // remembered project roots watching this folder (rootmemo.go)
}

// rootHooks watches what a scan of one root visits.
type rootHooks struct {
	p    *Provider
	r    *root
	want map[string]watchKind
	ok   bool // every needed watch is in place
	// whole: every folder from the file system root down to the root is
	// watched, with no link on the way, so that nothing can make the
	// root's path name another folder without an event.
	whole bool
	limit int  // watches allowed for skill folders and linked files
	n     int  // of those, taken
	over  bool // the root needs more than limit: poll it
}

func (h *rootHooks) add(path string, k watchKind) error {
	err := h.p.acquire(h.r, path, k)
	if err == nil {
		h.want[path] = k
	}
	return err
}

// watchRoot watches every existing folder from the file system root down
// to the root's parent, each for its child on the way (that child being
// created, removed or renamed moves or removes the root), then the root
// itself. Top down, so a folder found missing is reported by its parent's
// watch when it appears. With link set (a symbolic link on the way that
// is not followed) it stops at the link's parent. A folder above that
// cannot be watched (no read permission, say) only costs noticing its
// child being renamed, unless it is the one that has to report the root
// (or the link) appearing or changing: then the root counts as unwatched.
func (h *rootHooks) watchRoot(link string) {
	parentWatched, every := true, true
	for _, a := range ancestors(h.r.path) {
		err := h.add(a.dir, watchKind{kind: kindAncestor, next: a.next})
		switch {
		case err == nil:
			parentWatched = true
		case missing(err):
			if !parentWatched {
				h.ok = false
			}
			return // its watched parent reports it appearing
		default:
			parentWatched, every = false, false
		}
		if a.next == link {
			if !parentWatched {
				h.ok = false
			}
			return
		}
	}
	err := h.add(h.r.path, watchKind{kind: kindRoot})
	if err != nil && (!missing(err) || !parentWatched) {
		h.ok = false
	}
	h.whole = every && err == nil
}

// ancestor is a folder above a root and its child on the way to the root.
type ancestor struct{ dir, next string }

// ancestors lists the folders above path, from the file system root down.
func ancestors(path string) []ancestor {
	var out []ancestor
	for next := path; ; {
		d := filepath.Dir(next)
		if d == next {
			break
		}
		out = append(out, ancestor{dir: d, next: next})
		next = d
	}
	slices.Reverse(out)
	return out
}

func (h *rootHooks) watchDir(path string) {
	if h.take() {
		if err := h.add(path, watchKind{kind: kindDir}); err != nil && !missing(err) {
			h.ok = false
		}
	}
}

func (h *rootHooks) watchFile(path string) {
	if h.take() {
		if err := h.add(path, watchKind{kind: kindFile}); err != nil && !missing(err) {
			h.ok = false
		}
	}
}

// take reports whether one more skill folder or linked file may be
// watched; past the limit the root is polled instead.
func (h *rootHooks) take() bool {
	if h.over {
		return false
	}
	if h.n >= h.limit {
		h.over = true
		return false
	}
	h.n++
	return true
}

func missing(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, errNotDir)
}

// acquire watches path on behalf of r. It (re-)adds the watch even
// when one exists, which also restores a watch the kernel dropped when the
// path was deleted.
func (p *Provider) acquire(r *root, path string, k watchKind) error {
	p.watchMu.Lock()
	defer p.watchMu.Unlock()
	p.mu.Lock()
	if p.closed || r.dropped {
		p.mu.Unlock()
		return ErrClosed
	}
	e := p.watchEntry(path)
	_, had := e.owners[r]
	e.owners[r] = k
	p.mu.Unlock()
	if err := p.addWatch(path); err != nil {
		if !had {
			p.release(r, path)
		}
		return err
	}
	return nil
}

// keepWatches releases r's watches that its last scan no longer needs.
func (p *Provider) keepWatches(r *root, want map[string]watchKind) {
	p.watchMu.Lock()
	defer p.watchMu.Unlock()
	p.mu.Lock()
	dropped := r.dropped
	p.mu.Unlock()
	for path := range r.want {
		if _, ok := want[path]; !ok || dropped {
			p.release(r, path)
		}
	}
	if dropped {
		for path := range want {
			p.release(r, path)
		}
		want = nil
	}
	r.want = want
}

// releaseAll releases r's watches of paths (those keepWatches did not
// know of, taken by the scan that just ended).
func (p *Provider) releaseAll(r *root, paths []string) {
	if len(paths) == 0 {
		return
	}
	p.watchMu.Lock()
	defer p.watchMu.Unlock()
	for _, path := range paths {
		p.release(r, path)
	}
}

// release drops r's interest in path and the watch when nobody else needs
// it. p.watchMu must be held.
func (p *Provider) release(r *root, path string) {
	p.unwatch(path, func(e *watchEntry) { delete(e.owners, r) })
}

// watchEntry returns the entry of path, creating it. p.mu must be held.
func (p *Provider) watchEntry(path string) *watchEntry {
	e := p.watches[path]
	if e == nil {
		e = &watchEntry{owners: make(map[*root]watchKind)}
		p.watches[path] = e
	}
	return e
}

// unwatch applies let (which drops one interest) to path's entry, and
// removes the entry and its watch when no folder and no remembered
// project root needs it any more. p.watchMu must be held.
func (p *Provider) unwatch(path string, let func(*watchEntry)) {
	p.mu.Lock()
	e := p.watches[path]
	last := false
	if e != nil {
		let(e)
		if len(e.owners) == 0 && e.chains <= 0 {
			delete(p.watches, path)
			last = true
		}
	}
	closed := p.closed
	p.mu.Unlock()
	if last && !closed {
		_ = p.w.Remove(path) // the kernel may have dropped it already
	}
}

// watchSink receives what the listing watcher reads (listwatch_*.go).
type watchSink interface {
	// event marks what a change at path affects; it reports whether
	// remembered project roots were forgotten.
	event(path string) (stale bool)
	// overflow distrusts every cached answer: events may have been lost.
	overflow() (stale bool)
	// releaseForgotten releases the watches of forgotten project roots.
	releaseForgotten()
}

func (p *Provider) event(path string) bool { return p.dispatch(path) }

func (p *Provider) overflow() bool {
	p.touchAll()
	return true
}

func (p *Provider) releaseForgotten() { p.releaseStale() }

// sync makes every change the kernel reported so far visible before a
// caller decides: it dispatches the queued events (listWatch.drain), then
// sends the notification a burst of events is waiting for at once rather
// than after the debounce. An unchanged, watched tree costs one read of
// an empty queue. Without inotify the queue cannot be drained; what was
// delivered is still announced at once.
func (p *Provider) sync() { p.syncSince(time.Time{}) }

// syncSince is sync for a request that arrived at since (zero: now): the
// queue need not be read again when a read began after since.
func (p *Provider) syncSince(since time.Time) {
	if p.w == nil {
		return
	}
	if p.w.drain(since) {
		p.releaseStale()
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.pending) > 0 {
		p.syncs.Add(1)
		p.flushLocked()
	}
}

// dispatch marks what an event changes; it reports whether remembered
// project roots were forgotten (their watches are then to be released).
func (p *Provider) dispatch(path string) (stale bool) {
	name := filepath.Clean(path)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.chainEvent(name)
	stale = len(p.stale) > 0
	if e := p.watches[name]; e != nil {
		for r := range e.owners {
			p.touch(r, name)
		}
	}
	dir := filepath.Dir(name)
	if dir == name {
		return stale
	}
	e := p.watches[dir]
	if e == nil {
		return stale
	}
	for r, k := range e.owners {
		switch k.kind {
		case kindRoot:
			p.touch(r, name)
		case kindDir:
			if filepath.Base(name) == SkillFile {
				p.touch(r, name)
			}
		case kindAncestor:
			if name == k.next {
				p.touch(r, name)
			}
		}
	}
	return stale
}

const maxTouched = 4096

// touch marks r as changed at path and schedules a notification. p.mu must
// be held.
func (p *Provider) touch(r *root, path string) {
	if r.dropped || p.closed {
		return
	}
	r.gen.Add(1)
	if !r.touchedAll {
		if r.touched == nil {
			r.touched = make(map[string]struct{})
		}
		r.touched[path] = struct{}{}
		if len(r.touched) > maxTouched {
			r.touched, r.touchedAll = nil, true
		}
	}
	p.pending[r] = struct{}{}
	if p.timer == nil {
		p.timer = time.AfterFunc(p.debounce, p.flush)
	}
}

func (p *Provider) touchAll() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range p.cwdRoots.Values() {
		p.stale = append(p.stale, p.forget(e, true))
	}
	for _, r := range p.shared {
		r.touchedAll = true
		p.touch(r, r.path)
	}
	for _, proj := range p.projects.Values() {
		for _, r := range proj.roots {
			r.touchedAll = true
			p.touch(r, r.path)
		}
	}
}

// flush sends one change notification for a burst of events: it closes the
// channels of the projects whose folders changed (all of them when a custom
// or user folder changed).
func (p *Provider) flush() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.flushLocked()
}

// flushLocked is flush with p.mu held; it stops a scheduled flush.
func (p *Provider) flushLocked() {
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	if p.closed || len(p.pending) == 0 {
		return
	}
	all := false
	projs := make(map[*project]struct{})
	for r := range p.pending {
		if r.proj == nil {
			all = true
		} else {
			projs[r.proj] = struct{}{}
		}
	}
	clear(p.pending)
	if all {
		for _, proj := range p.projects.Values() {
			projs[proj] = struct{}{}
		}
	}
	for proj := range projs {
		if !proj.evicted {
			close(proj.ch)
			proj.ch = make(chan struct{})
		}
	}
	p.invalidations.Add(1)
}
