package agentskills

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Project roots of working directories are remembered while the provider
// watches (see projectRoot). ProjectRoot walks from the working directory
// up to the nearest folder holding .git, one Lstat per level, and Changes
// runs for every snapshot the registry serves: for a busy service that is
// a system call or more per pre-step for an answer that almost never
// changes.
//
// The answer changes only when, on the way from the working directory up
// to the root it found (up to "/" when there was none), a .git entry
// appears or vanishes, or a folder of that way is removed, renamed or
// replaced. So each remembered answer watches every folder of its way,
// and the event loop forgets it at the first event naming a .git entry in
// one of those folders or naming one of the folders themselves. A
// one-stat revalidation of the found root's .git would not do: it misses
// a repository created between the working directory and the root (git
// init in a subfolder, a nested checkout).
//
// An answer is remembered only when every existing folder of its way could
// be watched and a second walk, made once the watches are in place, agrees
// with the first; events from the moment the folders are registered
// cancel it, so a change racing with the walk is never lost. Like every
// other change the provider sees, a .git appearing is noticed once the
// watcher delivers its event (within milliseconds), not synchronously.
// Answers are bounded (cwdsPerProject per tracked project) and are
// forgotten with their project when it is evicted.

// cwdsPerProject bounds remembered working directories: this many times
// the tracked projects.
const cwdsPerProject = 4

// cwdRoot is the remembered project root of one working directory.
type cwdRoot struct {
	cwd   string
	root  string
	chain []string // the folders from cwd up to root, or to "/" when no .git was found

	// guarded by Provider.mu
	proj       *project // set once remembered
	valid      bool     // no event on the chain since it was registered
	remembered bool     // in Provider.cwdRoots (then cwdRoots[cwd] == this)

	watched []string // folders watched for it; guarded by Provider.watchMu
}

// findRoot is ProjectRoot that also returns the top of the walk: the root
// when a .git was found, the file system root otherwise. The walk is
// linear in the path's length apart from the system calls: each parent is
// a prefix of the cleaned cwd (no cleaning per level), and it stops when
// ctx ends. (A trigger's cwd is bounded before it gets here: at most 4095
// bytes and 256 components, so at most 256 Lstats.)
//
// With ceilings (Config.ConfineProjects, cleaned), the walk ends at the
// ceiling it reaches: a .git above it does not make a project, and cwd is
// then its own root.
func findRoot(ctx context.Context, cwd string, ceilings []string) (root, top string, err error) {
	if cwd == "" {
		return "", "", nil
	}
	if !filepath.IsAbs(cwd) {
		return "", "", fmt.Errorf("working directory %q is not an absolute path", clipPath(cwd))
	}
	cwd = filepath.Clean(cwd)
	for d := cwd; ; {
		if err := ctx.Err(); err != nil {
			return "", "", err
		}
		if _, err := os.Lstat(childOf(d, ".git")); err == nil {
			return d, d, nil
		}
		parent := parentOf(d)
		if parent == d || slices.Contains(ceilings, d) {
			return cwd, d, nil
		}
		d = parent
	}
}

// cleanAll returns the absolute paths of dirs, cleaned, and also with
// their symbolic links resolved where that differs (a cwd may be written
// either way).
func cleanAll(dirs []string) []string {
	out := make([]string, 0, len(dirs))
	for _, d := range dirs {
		a, err := filepath.Abs(d)
		if err != nil {
			continue
		}
		out = append(out, a)
		if real, err := filepath.EvalSymlinks(a); err == nil && real != a {
			out = append(out, real)
		}
	}
	return out
}

// parentOf is filepath.Dir of a clean absolute path, as a prefix of it
// (filepath.Dir cleans its result again, which made a walk up a long path
// quadratic).
func parentOf(d string) string {
	i := strings.LastIndexByte(d, filepath.Separator)
	if i <= 0 {
		return string(filepath.Separator)
	}
	return d[:i]
}

// childOf is filepath.Join(d, name) for a clean absolute d.
func childOf(d, name string) string {
	if d == string(filepath.Separator) {
		return d + name
	}
	return d + string(filepath.Separator) + name
}

// clipPath shortens a path for an error or a log line: at most 300 bytes
// of it, followed by its length.
func clipPath(s string) string {
	const n = 300
	if len(s) <= n {
		return s
	}
	return s[:n] + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

// chainOf lists cwd (clean, absolute) and its ancestors up to and
// including top. The entries are prefixes of cwd: no copies.
func chainOf(cwd, top string) []string {
	var chain []string
	for d := cwd; ; d = parentOf(d) {
		chain = append(chain, d)
		if d == top || parentOf(d) == d {
			return chain
		}
	}
}

// projectRoot is ProjectRoot(cwd), remembered per working directory while
// the provider watches.
func (p *Provider) projectRoot(ctx context.Context, cwd string) (string, error) {
	if cwd == "" || !filepath.IsAbs(cwd) || p.w == nil {
		p.rootWalks.Add(1)
		root, _, err := findRoot(ctx, cwd, p.ceilings)
		return root, err
	}
	p.mu.Lock()
	if e, ok := p.cwdRoots.Get(cwd); ok { // marks it recently used
		root := e.root
		p.mu.Unlock()
		return root, nil
	}
	p.mu.Unlock()
	return p.rememberRoot(ctx, cwd)
}

// rememberRoot walks for cwd's root and remembers the answer when it can
// watch the way (see the comment at the top of this file).
func (p *Provider) rememberRoot(ctx context.Context, cwd string) (string, error) {
	p.rootWalks.Add(1)
	root, top, err := findRoot(ctx, cwd, p.ceilings)
	if err != nil {
		return "", err
	}
	e := &cwdRoot{cwd: cwd, root: root, chain: chainOf(filepath.Clean(cwd), top), valid: true}
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return root, nil
	}
	for _, d := range e.chain {
		set := p.chainDirs[d]
		if set == nil {
			set = make(map[*cwdRoot]struct{})
			p.chainDirs[d] = set
		}
		set[e] = struct{}{}
	}
	p.mu.Unlock()

	ok := p.watchChain(ctx, e)
	if ok {
		p.rootWalks.Add(1)
		again, _, err := findRoot(ctx, cwd, p.ceilings)
		ok = err == nil && again == root
		if err == nil {
			root = again // the newer answer, remembered or not
		}
	}

	var evicted []*project
	var forgotten []*cwdRoot
	p.mu.Lock()
	if ok && e.valid && !p.closed {
		proj, ev := p.project(root)
		evicted = ev
		if old, ok := p.cwdRoots.Peek(cwd); ok { // remembered meanwhile by another call
			forgotten = append(forgotten, p.forget(old, true))
		}
		e.proj = proj
		if proj.cwds == nil {
			proj.cwds = make(map[*cwdRoot]struct{})
		}
		proj.cwds[e] = struct{}{}
		for p.cwdRoots.Len() >= cwdsPerProject*p.maxProjects {
			_, oldest, _ := p.cwdRoots.GetOldest()
			forgotten = append(forgotten, p.forget(oldest, true))
		}
		p.cwdRoots.Add(cwd, e)
		e.remembered = true
	} else {
		forgotten = append(forgotten, p.forget(e, true))
	}
	p.mu.Unlock()
	p.drop(evicted)
	p.unwatchChains(forgotten)
	return root, nil
}

// watchChain watches the folders of e's way, from the top down; false
// when one cannot be watched (then nothing is remembered and the walks go
// on, as they do when ctx ends first). A folder that does not exist (a working directory of another
// machine, say) is not watched: its parent, watched before it was tried,
// reports it being created, which names a folder of the way.
func (p *Provider) watchChain(ctx context.Context, e *cwdRoot) bool {
	p.watchMu.Lock()
	defer p.watchMu.Unlock()
	for i := len(e.chain) - 1; i >= 0; i-- {
		d := e.chain[i]
		if ctx.Err() != nil {
			return false
		}
		p.mu.Lock()
		if p.closed || !e.valid {
			p.mu.Unlock()
			return false
		}
		p.watchEntry(d).chains++
		p.mu.Unlock()
		e.watched = append(e.watched, d)
		if err := p.addWatch(d); err != nil {
			if i == len(e.chain)-1 || !missing(err) {
				return false
			}
			e.watched = e.watched[:len(e.watched)-1]
			p.releaseChain(d)
		}
	}
	return true
}

// unwatchChains releases the watches of forgotten answers.
func (p *Provider) unwatchChains(es []*cwdRoot) {
	if len(es) == 0 {
		return
	}
	p.watchMu.Lock()
	defer p.watchMu.Unlock()
	for _, e := range es {
		for _, d := range e.watched {
			p.releaseChain(d)
		}
		e.watched = nil
	}
}

// releaseChain drops one remembered answer's interest in the folder d.
// p.watchMu must be held.
func (p *Provider) releaseChain(d string) {
	p.unwatch(d, func(e *watchEntry) { e.chains-- })
}

// forget drops e from the remembered answers and the chain index and
// returns it, for unwatchChains. p.mu must be held. fromProject is false
// when e's project is being evicted (which drops its set as a whole).
func (p *Provider) forget(e *cwdRoot, fromProject bool) *cwdRoot {
	e.valid = false
	if e.remembered {
		e.remembered = false
		if cur, ok := p.cwdRoots.Peek(e.cwd); ok && cur == e {
			p.cwdRoots.Remove(e.cwd)
		}
	}
	for _, d := range e.chain {
		if set := p.chainDirs[d]; set != nil {
			delete(set, e)
			if len(set) == 0 {
				delete(p.chainDirs, d)
			}
		}
	}
	if fromProject && e.proj != nil {
		delete(e.proj.cwds, e)
	}
	return e
}

// chainEvent forgets the answers an event at name invalidates: a .git
// entry created, removed or renamed in a folder of their way, or a folder
// of their way itself removed, renamed or created. p.mu must be held; the
// forgotten answers' watches are released by the event loop afterwards.
func (p *Provider) chainEvent(name string) {
	if len(p.chainDirs) == 0 {
		return
	}
	if filepath.Base(name) == ".git" {
		for e := range p.chainDirs[filepath.Dir(name)] {
			p.stale = append(p.stale, p.forget(e, true))
		}
	}
	for e := range p.chainDirs[name] {
		p.stale = append(p.stale, p.forget(e, true))
	}
}

// releaseStale releases the watches of answers forgotten by events.
func (p *Provider) releaseStale() {
	p.mu.Lock()
	stale := p.stale
	p.stale = nil
	p.mu.Unlock()
	p.unwatchChains(stale)
}
