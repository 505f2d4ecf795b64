package agentskills

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers"
)

// Defaults of Config.
const (
	DefaultName        = "agentskills"
	DefaultUserDir     = "~/.agents/skills"
	DefaultMaxProjects = 64
	DefaultDebounce    = 20 * time.Millisecond
	// DefaultMaxWatchesPerFolder bounds the file watches one skills folder
	// takes for its skill folders and linked files.
	DefaultMaxWatchesPerFolder = 4096
	DefaultPollInterval        = 5 * time.Second
)

// DefaultProjectDirs returns the project subfolders used when
// Config.ProjectDirs is nil.
func DefaultProjectDirs() []string { return []string{".agents/skills"} }

// ErrClosed reports a call on a closed provider.
var ErrClosed = errors.New("agentskills provider closed")

// Config configures a Provider. The zero value is usable: project folder
// .agents/skills, user folder ~/.agents/skills, symbolic links followed,
// watching on.
type Config struct {
	// Name is the provider name reported in summaries; default "agentskills".
	Name string
	// ProjectDirs are the skills folders inside a project root, relative
	// to it, in rank order. Nil means DefaultProjectDirs; pass for instance
	// {".agents/skills", ".dsh/skills", ".claude/skills"} to add more.
	ProjectDirs []string
	// CustomDirs are further skills folders (source "custom"), in rank
	// order, ranked after the project folders. A leading "~/" is the home
	// directory; relative paths are made absolute at New.
	CustomDirs []string
	// UserDir is the user skills folder (source "user"); empty means
	// ~/.agents/skills. NoUserDir disables it.
	UserDir   string
	NoUserDir bool
	// NoFollowSymlinks skips symbolic links inside skills folders (with a
	// diagnostic) instead of following them.
	NoFollowSymlinks bool
	// NoWatch disables fsnotify: every List then validates the cached
	// parses by stat (mtime, ctime, size, inode).
	NoWatch bool
	// MaxProjects bounds how many project roots are watched at once; the
	// least recently used one is dropped. Default DefaultMaxProjects.
	MaxProjects int
	// Debounce is how long a burst of file events is gathered into one
	// change notification. Default DefaultDebounce.
	Debounce time.Duration
	// MaxWatchesPerFolder bounds the file watches one skills folder takes
	// for its skill folders and linked files (the kernel's watches are a
	// shared, limited resource). A folder that needs more is still watched
	// itself, so skills added, removed or renamed in it are seen at once,
	// but edits inside its skill folders are found by checking them every
	// PollInterval. Default DefaultMaxWatchesPerFolder.
	MaxWatchesPerFolder int
	// PollInterval is how often a folder over MaxWatchesPerFolder is
	// checked. Default DefaultPollInterval.
	PollInterval time.Duration
	// Logger, when set, receives a warning for every skill file dropped
	// (once per change of the file) and for folders that fall back to
	// polling.
	Logger *slog.Logger
}

// Stats counts the provider's file system work, for tests and benchmarks.
type Stats struct {
	Reads         uint64 // skill files read
	Parses        uint64 // skill files parsed
	Scans         uint64 // skills folders listed
	Invalidations uint64 // change notifications sent (after coalescing)
	RootWalks     uint64 // walks up a working directory looking for .git
	Watches       int    // paths watched now
	Projects      int    // project roots tracked now
}

// Provider serves skills from Agent Skills folders. It is safe for
// concurrent use; Close releases its watches.
type Provider struct {
	name        string
	noFollow    bool
	projectDirs []string
	shared      []*root
	maxProjects int
	debounce    time.Duration
	maxWatches  int
	pollEvery   time.Duration
	log         *slog.Logger

	w        *fsnotify.Watcher // nil: no watching, validate by stat
	addWatch func(path string) error
	watchErr error
	loopDone chan struct{}
	pollStop chan struct{}
	pollDone chan struct{}

	count         counters
	loads         *loadCache // parsed bodies and digests (loadcache.go)
	invalidations atomic.Uint64
	rootWalks     atomic.Uint64

	// watchMu serialises changes to the watch set (fsnotify calls included)
	// so they are never made while holding mu, which the event loop needs.
	watchMu sync.Mutex

	mu       sync.Mutex
	closed   bool
	watches  map[string]*watchEntry
	projects map[string]*list.Element // of *project
	lru      *list.List
	pending  map[*root]struct{}
	timer    *time.Timer
	// polledRoots are the roots over the watch limit (see Config.MaxWatchesPerFolder).
	polledRoots map[*root]struct{}
	// dropLogged are the dropped files already logged (see logDropped).
	dropLogged map[dropKey]struct{}

	// Remembered project roots (rootmemo.go).
	cwdRoots  map[string]*cwdRoot
	cwdLRU    *list.List                       // of *cwdRoot, most recently used first
	chainDirs map[string]map[*cwdRoot]struct{} // folder -> answers whose way it is on
	stale     []*cwdRoot                       // forgotten by events, watches not yet released
}

// project is a project root and its skills folders.
type project struct {
	key     string // project root; "" for "no working directory"
	roots   []*root
	ch      chan struct{} // closed on change, then replaced
	evicted bool
	cwds    map[*cwdRoot]struct{} // remembered working directories with this root
}

// root is one skills folder.
type root struct {
	path   string
	base   string // links at or below it (down to path) are refused under NoFollowSymlinks
	rank   int
	source string
	proj   *project // nil for custom and user folders
	gen    atomic.Uint64

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

// rootScan is the cached answer of one root.
type rootScan struct {
	gen    uint64
	fresh  bool // reusable while gen is unchanged
	cands  []providers.Candidate
	skills []found
	diags  []providers.Diagnostic
	err    error
	files  map[string]fileState
	needed int // watches its skill folders and linked files need
}

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

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// New returns a provider for cfg. Watching starts lazily, per folder, at
// the first List; if fsnotify cannot start, the provider validates by stat
// instead (see WatchError).
func New(cfg Config) (*Provider, error) {
	p := &Provider{
		name:        cfg.Name,
		noFollow:    cfg.NoFollowSymlinks,
		maxProjects: cfg.MaxProjects,
		debounce:    cfg.Debounce,
		maxWatches:  cfg.MaxWatchesPerFolder,
		pollEvery:   cfg.PollInterval,
		log:         cfg.Logger,
		polledRoots: make(map[*root]struct{}),
		dropLogged:  make(map[dropKey]struct{}),
		watches:     make(map[string]*watchEntry),
		projects:    make(map[string]*list.Element),
		lru:         list.New(),
		pending:     make(map[*root]struct{}),
		cwdRoots:    make(map[string]*cwdRoot),
		cwdLRU:      list.New(),
		chainDirs:   make(map[string]map[*cwdRoot]struct{}),
		loads:       newLoadCache(),
	}
	if p.name == "" {
		p.name = DefaultName
	}
	if p.maxProjects <= 0 {
		p.maxProjects = DefaultMaxProjects
	}
	if p.debounce <= 0 {
		p.debounce = DefaultDebounce
	}
	if p.maxWatches <= 0 {
		p.maxWatches = DefaultMaxWatchesPerFolder
	}
	if p.pollEvery <= 0 {
		p.pollEvery = DefaultPollInterval
	}
	dirs := cfg.ProjectDirs
	if dirs == nil {
		dirs = DefaultProjectDirs()
	}
	for _, d := range dirs {
		c := filepath.Clean(d)
		if d == "" || filepath.IsAbs(c) || c == "." || c == ".." || strings.HasPrefix(c, ".."+string(filepath.Separator)) {
			return nil, fmt.Errorf("agentskills: project folder %q must be a relative path inside the project", d)
		}
		p.projectDirs = append(p.projectDirs, c)
	}
	for i, d := range cfg.CustomDirs {
		abs, err := absDir(d)
		if err != nil {
			return nil, fmt.Errorf("agentskills: custom folder %q: %w", d, err)
		}
		p.shared = append(p.shared, &root{path: abs, base: filepath.Dir(abs), rank: providers.RankCustom + i, source: catalog.SourceCustom})
	}
	if !cfg.NoUserDir {
		d := cfg.UserDir
		if d == "" {
			d = DefaultUserDir
		}
		abs, err := absDir(d)
		if err != nil && cfg.UserDir != "" {
			return nil, fmt.Errorf("agentskills: user folder %q: %w", d, err)
		}
		if err == nil { // no home directory: no default user folder
			p.shared = append(p.shared, &root{path: abs, base: filepath.Dir(abs), rank: providers.RankUser, source: catalog.SourceUser})
		}
	}
	if !cfg.NoWatch {
		w, err := fsnotify.NewWatcher()
		if err != nil {
			p.watchErr = fmt.Errorf("start file watcher: %w", err)
		} else {
			p.w = w
			p.addWatch = w.Add
			p.loopDone = make(chan struct{})
			p.pollStop = make(chan struct{})
			p.pollDone = make(chan struct{})
			go p.loop()
			go p.pollLoop()
		}
	}
	return p, nil
}

func absDir(d string) (string, error) {
	if d == "~" || strings.HasPrefix(d, "~/") {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", err
		}
		d = filepath.Join(home, strings.TrimPrefix(d, "~"))
	}
	if d == "" {
		return "", errors.New("empty path")
	}
	return filepath.Abs(d)
}

// Name returns the provider name.
func (p *Provider) Name() string { return p.name }

// WatchError tells why the provider is not watching (nil when it is, or
// when watching was disabled by configuration).
func (p *Provider) WatchError() error { return p.watchErr }

// Stats returns the work counters.
func (p *Provider) Stats() Stats {
	p.mu.Lock()
	watches, projects := len(p.watches), len(p.projects)
	p.mu.Unlock()
	return Stats{
		Reads:         p.count.reads.Load(),
		Parses:        p.count.parses.Load(),
		Scans:         p.count.scans.Load(),
		Invalidations: p.invalidations.Load(),
		RootWalks:     p.rootWalks.Load(),
		Watches:       watches,
		Projects:      projects,
	}
}

// ProjectRoot returns the project root for cwd: the nearest ancestor of cwd
// (cwd included) holding a .git entry, else cwd itself. An empty cwd has no
// project root (""); a relative cwd is an error.
//
// The provider remembers the answer per working directory while it
// watches, and forgets it when a .git appears or vanishes on the way (see
// rootmemo.go).
func ProjectRoot(cwd string) (string, error) {
	root, _, err := findRoot(cwd)
	return root, err
}

// roots returns the skills folders for cwd in rank order.
func (p *Provider) roots(cwd string) ([]*root, *project, error) {
	key, err := p.projectRoot(cwd)
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
	if el, ok := p.projects[key]; ok {
		p.lru.MoveToFront(el)
		return el.Value.(*project), nil
	}
	proj := &project{key: key, ch: make(chan struct{})}
	if key != "" {
		for i, d := range p.projectDirs {
			proj.roots = append(proj.roots, &root{
				path:   filepath.Join(key, d),
				base:   key,
				rank:   providers.RankProject + i,
				source: catalog.SourceProject,
				proj:   proj,
			})
		}
	}
	p.projects[key] = p.lru.PushFront(proj)
	var evicted []*project
	for p.lru.Len() > p.maxProjects {
		el := p.lru.Back()
		old := el.Value.(*project)
		p.lru.Remove(el)
		delete(p.projects, old.key)
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

// Changes implements providers.Notifier: the returned channel is closed
// when a skills folder of cwd's project, a custom folder or the user folder
// changes. When the provider cannot watch those folders it returns a
// closed channel, so callers do not cache. When it stops watching cwd's
// project (more than Config.MaxProjects are in use) the channel it handed
// out stays open and the next call returns another one: nothing changed,
// but nothing watches the answers given under the old channel any more.
func (p *Provider) Changes(q catalog.Query) <-chan struct{} {
	cwd := q.Cwd
	if p.w == nil {
		return closedChan
	}
	key, err := p.projectRoot(cwd)
	if err != nil {
		return closedChan
	}
	p.mu.Lock()
	if p.closed || p.w == nil {
		p.mu.Unlock()
		return closedChan
	}
	proj, evicted := p.project(key)
	ch := proj.ch
	for _, r := range proj.roots {
		if r.unwatched {
			ch = closedChan
		}
	}
	for _, r := range p.shared {
		if r.unwatched {
			ch = closedChan
		}
	}
	p.mu.Unlock()
	p.drop(evicted)
	return ch
}

// List implements providers.Provider. Candidates come folder by folder in
// rank order, and within a folder in file name order. Folders that failed
// are named in the error; the others' candidates are still returned.
func (p *Provider) List(ctx context.Context, q catalog.Query) ([]providers.Candidate, error) {
	cwd := q.Cwd
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	roots, _, err := p.roots(cwd)
	if err != nil {
		return nil, err
	}
	var cands []providers.Candidate
	var errs []error
	for _, r := range roots {
		s := p.scan(ctx, r)
		cands = append(cands, s.cands...)
		if s.err != nil {
			errs = append(errs, fmt.Errorf("skills folder %s: %w", r.path, s.err))
		}
	}
	return cands, errors.Join(errs...)
}

// Load implements providers.Provider. It re-reads the winning file, so body
// edits are seen at once.
func (p *Provider) Load(ctx context.Context, name string, q catalog.Query) (catalog.Skill, error) {
	cwd := q.Cwd
	if !catalog.ValidName(name) {
		return catalog.Skill{}, fmt.Errorf("skill %q: %w", name, catalog.ErrNotFound)
	}
	if err := ctx.Err(); err != nil {
		return catalog.Skill{}, err
	}
	roots, _, err := p.roots(cwd)
	if err != nil {
		return catalog.Skill{}, err
	}
	for _, r := range roots {
		s := p.scan(ctx, r)
		for _, f := range s.skills {
			if f.sum.Name != name {
				continue
			}
			sk, err := p.load(r, f)
			if errors.Is(err, catalog.ErrNotFound) {
				// Deleted or renamed before the watcher said so: the
				// next candidate of that name is the winner now.
				continue
			}
			return sk, err
		}
	}
	return catalog.Skill{}, fmt.Errorf("skill %q: %w", name, catalog.ErrNotFound)
}

func (p *Provider) load(r *root, f found) (catalog.Skill, error) {
	if id, ok := statFile(f.path, p.noFollow); ok {
		if sk, ok := p.loads.body(f.path, id); ok && sk.Name == f.sum.Name {
			return p.finish(r, f, sk), nil
		}
	}
	data, id, reason, err := readFile(f.path, p.noFollow, &p.count)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return catalog.Skill{}, fmt.Errorf("skill %q: %w", f.sum.Name, catalog.ErrNotFound)
		}
		return catalog.Skill{}, err
	}
	if reason != "" {
		return catalog.Skill{}, fmt.Errorf("skill file is no longer valid: %s", reason)
	}
	p.count.parses.Add(1)
	sk, err := ParseFile(f.path, data)
	if err != nil {
		var pe *ParseError
		if errors.As(err, &pe) {
			return catalog.Skill{}, fmt.Errorf("skill file is no longer valid: %s", pe.Reason)
		}
		return catalog.Skill{}, err
	}
	if sk.Name != f.sum.Name {
		return catalog.Skill{}, fmt.Errorf("skill %q was renamed to %q: %w", f.sum.Name, sk.Name, catalog.ErrNotFound)
	}
	p.loads.putBody(f.path, id, sk)
	return p.finish(r, f, sk), nil
}

// finish completes a parsed skill with where it came from and its digest.
func (p *Provider) finish(r *root, f found, sk catalog.Skill) catalog.Skill {
	sk.Source, sk.Provider = r.source, p.name
	rb := *f.sum.ResourceBase
	sk.ResourceBase = &rb
	sk.Digest = p.loads.digest(f.path, filepath.Dir(f.path) == r.path)
	return sk
}

// Diagnostics implements providers.Diagnoser: every file skipped in cwd's
// folders, with its path and reason.
func (p *Provider) Diagnostics(ctx context.Context, q catalog.Query) ([]providers.Diagnostic, error) {
	cwd := q.Cwd
	roots, _, err := p.roots(cwd)
	if err != nil {
		return nil, err
	}
	var out []providers.Diagnostic
	var errs []error
	for _, r := range roots {
		s := p.scan(ctx, r)
		for _, d := range s.diags {
			d.Provider = p.name
			out = append(out, d)
		}
		if s.err != nil {
			errs = append(errs, fmt.Errorf("skills folder %s: %w", r.path, s.err))
		}
	}
	return out, errors.Join(errs...)
}

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
	s := &scanner{noFollow: p.noFollow, base: r.base, prev: prev, touched: touched, count: &p.count}
	var h *rootHooks
	if p.w != nil {
		h = &rootHooks{p: p, r: r, want: make(map[string]watchKind), ok: true, limit: p.maxWatches}
		h.watchRoot(s.linkAbove(r.path))
		s.hooks = h
	}
	l := s.scan(ctx, r.path)
	watched, polled := false, false
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
		watched, polled = h.ok, h.over
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
	rs.cands = make([]providers.Candidate, len(l.skills))
	for i, f := range l.skills {
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

// rootHooks watches what a scan of one root visits.
type rootHooks struct {
	p     *Provider
	r     *root
	want  map[string]watchKind
	ok    bool // every needed watch is in place
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
	parentWatched := true
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
			parentWatched = false
		}
		if a.next == link {
			if !parentWatched {
				h.ok = false
			}
			return
		}
	}
	if err := h.add(h.r.path, watchKind{kind: kindRoot}); err != nil && (!missing(err) || !parentWatched) {
		h.ok = false
	}
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

// acquire watches path on behalf of r. It (re-)adds the fsnotify watch even
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
	e := p.watches[path]
	if e == nil {
		e = &watchEntry{owners: make(map[*root]watchKind)}
		p.watches[path] = e
	}
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
	p.mu.Lock()
	e := p.watches[path]
	last := false
	if e != nil {
		delete(e.owners, r)
		if len(e.owners) == 0 && e.chains == 0 {
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

// loop turns fsnotify events into root invalidations. It ends when the
// watcher is closed.
func (p *Provider) loop() {
	defer close(p.loopDone)
	for {
		select {
		case ev, ok := <-p.w.Events:
			if !ok {
				return
			}
			if p.dispatch(ev) {
				p.releaseStale()
			}
		case _, ok := <-p.w.Errors:
			if !ok {
				return
			}
			// Events may have been lost (queue overflow): distrust every
			// cached answer.
			p.touchAll()
			p.releaseStale()
		}
	}
}

// dispatch marks what an event changes; it reports whether remembered
// project roots were forgotten (their watches are then to be released).
func (p *Provider) dispatch(ev fsnotify.Event) (stale bool) {
	name := filepath.Clean(ev.Name)
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
	for _, e := range p.cwdRoots {
		p.stale = append(p.stale, p.forget(e, true))
	}
	for _, r := range p.shared {
		r.touchedAll = true
		p.touch(r, r.path)
	}
	for _, el := range p.projects {
		for _, r := range el.Value.(*project).roots {
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
	p.timer = nil
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
		for _, el := range p.projects {
			projs[el.Value.(*project)] = struct{}{}
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

// Close stops watching. Channels handed out by Changes are closed, so
// callers drop what they cached.
func (p *Provider) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	for _, el := range p.projects {
		proj := el.Value.(*project)
		if !proj.evicted {
			proj.evicted = true
			close(proj.ch)
		}
	}
	p.mu.Unlock()
	if p.w == nil {
		return nil
	}
	close(p.pollStop)
	<-p.pollDone
	err := p.w.Close()
	<-p.loopDone
	if err != nil {
		return fmt.Errorf("close file watcher: %w", err)
	}
	return nil
}
