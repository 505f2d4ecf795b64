package agentskills

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers"
)

// Defaults of Config.
const (
	DefaultName        = "agentskills"
	DefaultUserDir     = "~/.agents/skills"
	DefaultMaxProjects = 256
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
	// ConfineProjects, when set, are the folders working directories are
	// confined to (serve's --cwd-root), and a project's skills are then
	// confined to them too: the walk from a working directory up to its
	// project root stops at the confining folder holding it (a .git above
	// it does not make a project), and a project's skills folders are read
	// without following symbolic links, whatever NoFollowSymlinks says
	// (a link to a skill, a linked SKILL.md, a skills folder that is or
	// lies below a link of the project is skipped with a diagnostic). So
	// every file served from a project lies below a confining folder.
	// Custom and user folders are the operator's and keep
	// NoFollowSymlinks.
	ConfineProjects []string
	// NoWatch disables file watching: every List then validates the cached
	// parses by stat (mtime, ctime, size, inode), and every Load of a
	// folder skill walks the folder for its digest.
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
	// PollInterval. It bounds, too, the watches Load takes, all folders
	// together, to keep the digests of the skill folders it loaded (see
	// the package documentation); a skill folder that does not fit is
	// walked on each Load. Default DefaultMaxWatchesPerFolder.
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
	Syncs         uint64 // of those, sent early because a caller was about to decide (see sync)
	QueueReads    uint64 // reads of the listings' change queue (see ChangesSince)
	RootWalks     uint64 // walks up a working directory looking for .git
	DigestWalks   uint64 // skill folders walked by Load for their digest
	Watches       int    // paths watched now
	DigestWatches int    // files and folders watched for the digests kept
	Projects      int    // project roots tracked now
}

// Provider serves skills from Agent Skills folders. It is safe for
// concurrent use; Close releases its watches.
type Provider struct {
	name        string
	noFollow    bool
	ceilings    []string // Config.ConfineProjects, cleaned
	projectDirs []string
	shared      []*root
	maxProjects int
	debounce    time.Duration
	maxWatches  int
	pollEvery   time.Duration
	log         *slog.Logger

	w        *listWatch // nil: no watching, validate by stat
	addWatch func(path string) error
	watchErr error
	pollStop chan struct{}
	pollDone chan struct{}

	count         counters
	loads         *loadCache // parsed bodies and digests (loadcache.go)
	invalidations atomic.Uint64
	syncs         atomic.Uint64
	rootWalks     atomic.Uint64

	// watchMu serialises changes to the watch set (fsnotify calls included)
	// so they are never made while holding mu, which the event loop needs.
	watchMu sync.Mutex

	mu       sync.Mutex
	closed   bool
	watches  map[string]*watchEntry
	projects *simplelru.LRU[string, *project] // tracked projects by root (projects.go)
	pending  map[*root]struct{}
	timer    *time.Timer
	// polledRoots are the roots over the watch limit (see Config.MaxWatchesPerFolder).
	polledRoots map[*root]struct{}
	// dropLogged are the dropped files already logged (see logDropped).
	dropLogged map[dropKey]struct{}

	// Remembered project roots (rootmemo.go).
	cwdRoots  *simplelru.LRU[string, *cwdRoot] // by working directory
	chainDirs map[string]map[*cwdRoot]struct{} // folder -> answers whose way it is on
	stale     []*cwdRoot                       // forgotten by events, watches not yet released
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// New returns a provider for cfg. Watching starts lazily, per folder, at
// the first List; if fsnotify cannot start, the provider validates by stat
// instead (see WatchError).
func New(cfg Config) (*Provider, error) {
	p := &Provider{
		name:        cfg.Name,
		noFollow:    cfg.NoFollowSymlinks,
		ceilings:    cleanAll(cfg.ConfineProjects),
		maxProjects: cfg.MaxProjects,
		debounce:    cfg.Debounce,
		maxWatches:  cfg.MaxWatchesPerFolder,
		pollEvery:   cfg.PollInterval,
		log:         cfg.Logger,
		polledRoots: make(map[*root]struct{}),
		dropLogged:  make(map[dropKey]struct{}),
		watches:     make(map[string]*watchEntry),
		pending:     make(map[*root]struct{}),
		chainDirs:   make(map[string]map[*cwdRoot]struct{}),
	}
	if p.name == "" {
		p.name = DefaultName
	}
	if p.maxProjects <= 0 {
		p.maxProjects = DefaultMaxProjects
	}
	// Both LRUs are guarded by p.mu with the watch bookkeeping an
	// eviction changes, so the variant without a lock of its own fits.
	// Evictions are made explicitly before adding (see project and
	// rememberRoot), never by the LRU itself.
	p.projects, _ = simplelru.NewLRU[string, *project](p.maxProjects, nil)
	p.cwdRoots, _ = simplelru.NewLRU[string, *cwdRoot](cwdsPerProject*p.maxProjects, nil)
	if p.debounce <= 0 {
		p.debounce = DefaultDebounce
	}
	if p.maxWatches <= 0 {
		p.maxWatches = DefaultMaxWatchesPerFolder
	}
	if p.pollEvery <= 0 {
		p.pollEvery = DefaultPollInterval
	}
	p.loads = newLoadCache(!cfg.NoWatch, p.maxWatches)
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
		w, err := newListWatch(p)
		if err != nil {
			p.watchErr = fmt.Errorf("start file watcher: %w", err)
		} else {
			p.w = w
			p.addWatch = w.Add
			p.pollStop = make(chan struct{})
			p.pollDone = make(chan struct{})
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
	watches, projects := len(p.watches), p.projects.Len()
	p.mu.Unlock()
	digestWalks, digestWatches := p.loads.stats()
	var queueReads uint64
	if p.w != nil {
		queueReads = p.w.queueReads()
	}
	return Stats{
		QueueReads:    queueReads,
		Reads:         p.count.reads.Load(),
		Parses:        p.count.parses.Load(),
		Scans:         p.count.scans.Load(),
		Invalidations: p.invalidations.Load(),
		Syncs:         p.syncs.Load(),
		RootWalks:     p.rootWalks.Load(),
		DigestWalks:   digestWalks,
		Watches:       watches,
		DigestWatches: digestWatches,
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
	root, _, err := findRoot(context.Background(), cwd, nil)
	return root, err
}

// Changes implements providers.Notifier: the returned channel is closed
// when a skills folder of cwd's project, a custom folder or the user folder
// changes. When the provider cannot watch those folders it returns a
// closed channel, so callers do not cache. When it stops watching cwd's
// project (more than Config.MaxProjects are in use) the channel it handed
// out stays open and the next call returns another one: nothing changed,
// but nothing watches the answers given under the old channel any more.
func (p *Provider) Changes(q catalog.Query) <-chan struct{} {
	return p.ChangesSince(q, time.Time{})
}

// ChangesSince implements providers.ChangesSincer: Changes for a request
// that arrived at since, which reflects every change completed before since
// and reads the change queue only when no read of it began after since.
func (p *Provider) ChangesSince(q catalog.Query, since time.Time) <-chan struct{} {
	cwd := q.Cwd
	if p.w == nil {
		return closedChan
	}
	p.syncSince(since)
	key, err := p.projectRoot(context.Background(), cwd)
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
	p.sync()
	roots, _, err := p.roots(ctx, cwd)
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

// Load implements providers.Provider. It re-reads the winning file when
// its identity changed, so body edits are seen at once, and the skill's
// digest reflects every change made to its files before the call (see
// the package documentation for how it is kept).
func (p *Provider) Load(ctx context.Context, name string, q catalog.Query) (catalog.Skill, error) {
	cwd := q.Cwd
	if !catalog.ValidName(name) {
		return catalog.Skill{}, fmt.Errorf("skill %q: %w", name, catalog.ErrNotFound)
	}
	if err := ctx.Err(); err != nil {
		return catalog.Skill{}, err
	}
	p.sync()
	roots, _, err := p.roots(ctx, cwd)
	if err != nil {
		return catalog.Skill{}, err
	}
	for _, r := range roots {
		s := p.scan(ctx, r)
		for _, f := range s.skills {
			if f.sum.Name != name {
				continue
			}
			sk, err := p.load(r, f, s.vouch)
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

// LoadQuick implements providers.QuickLoader: Load answered from memory
// alone, when everything it needs is kept and current: the project of
// q.Cwd remembered, a fresh scan of every root (no event since), and the
// winning folder skill's body and digest kept under a watch that reported
// nothing (loadCache.warm, which reads the watch's queue and, only for a
// linked folder or a root not watched all the way up, stats the folder).
// Anything missing gives ok false, and the registry runs Load.
func (p *Provider) LoadQuick(name string, q catalog.Query) (catalog.Skill, bool) {
	if p.w == nil || !catalog.ValidName(name) {
		return catalog.Skill{}, false
	}
	p.sync()
	return p.loadQuick(name, q)
}

// LoadQuickAfterChanges implements providers.QuickLoaderAfterChanges:
// LoadQuick for a caller that called Changes(q) earlier in the same
// operation. Changes read the listings' change queue; this does not read it
// again (one system call less per skill call). The skill folder's own
// watch is still read (loadCache.warm).
func (p *Provider) LoadQuickAfterChanges(name string, q catalog.Query) (catalog.Skill, bool) {
	if p.w == nil || !catalog.ValidName(name) {
		return catalog.Skill{}, false
	}
	return p.loadQuick(name, q)
}

// loadQuick is LoadQuick once the listings are up to date.
func (p *Provider) loadQuick(name string, q catalog.Query) (catalog.Skill, bool) {
	if cwd := q.Cwd; cwd != "" {
		p.mu.Lock()
		_, known := p.cwdRoots.Get(cwd)
		p.mu.Unlock()
		if !known {
			return catalog.Skill{}, false
		}
	}
	roots, _, err := p.roots(context.Background(), q.Cwd)
	if err != nil {
		return catalog.Skill{}, false
	}
	for _, r := range roots {
		r.scanMu.Lock()
		s := r.last
		fresh := s != nil && s.fresh && s.gen == r.gen.Load()
		r.scanMu.Unlock()
		if !fresh {
			return catalog.Skill{}, false
		}
		i, ok := s.named[name]
		if !ok {
			continue
		}
		f := s.skills[i]
		if f.dir == r.path {
			return catalog.Skill{}, false // flat file: Load stats it
		}
		sk, digest, ok := p.loads.warm(f.path, f.dir, s.vouch)
		if !ok || sk.Name != name {
			return catalog.Skill{}, false
		}
		return p.complete(r, f, sk, digest), true
	}
	return catalog.Skill{}, false
}

// load loads the skill f of r; vouch is the scan's (rootScan.vouch), whose
// listing events were read in this operation.
func (p *Provider) load(r *root, f found, vouch uint64) (catalog.Skill, error) {
	flat := f.dir == r.path
	if !flat {
		if sk, digest, ok := p.loads.warm(f.path, f.dir, vouch); ok && sk.Name == f.sum.Name {
			return p.complete(r, f, sk, digest), nil
		}
	}
	if id, ok := statFile(f.path, p.noFollowIn(r)); ok {
		if sk, ok := p.loads.body(f.path, id); ok && sk.Name == f.sum.Name {
			return p.finish(r, f, id, sk), nil
		}
	}
	data, id, reason, err := readFile(f.path, p.noFollowIn(r), &p.count)
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
	return p.finish(r, f, id, sk), nil
}

// finish completes a parsed skill with where it came from and its digest;
// id is the identity of its file as just read or stat'ed.
func (p *Provider) finish(r *root, f found, id identity, sk catalog.Skill) catalog.Skill {
	return p.complete(r, f, sk, p.loads.digest(f.path, id, filepath.Dir(f.path) == r.path))
}

// complete completes a parsed skill with where it came from and digest.
func (p *Provider) complete(r *root, f found, sk catalog.Skill, digest string) catalog.Skill {
	sk.Source, sk.Provider = r.source, p.name
	rb := *f.sum.ResourceBase
	sk.ResourceBase = &rb
	sk.Digest = digest
	return sk
}

// Diagnostics implements providers.Diagnoser: every file skipped in cwd's
// folders, with its path and reason.
func (p *Provider) Diagnostics(ctx context.Context, q catalog.Query) ([]providers.Diagnostic, error) {
	cwd := q.Cwd
	p.sync()
	roots, _, err := p.roots(ctx, cwd)
	if err != nil {
		return nil, err
	}
	var out []providers.Diagnostic
	var errs []error
	for _, r := range roots {
		s := p.scan(ctx, r)
		for _, d := range s.diags {
			d.Provider, d.Source = p.name, r.source
			out = append(out, d)
		}
		if s.err != nil {
			errs = append(errs, fmt.Errorf("skills folder %s: %w", r.path, s.err))
		}
	}
	return out, errors.Join(errs...)
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
	for _, proj := range p.projects.Values() {
		if !proj.evicted {
			proj.evicted = true
			close(proj.ch)
		}
	}
	p.mu.Unlock()
	p.loads.close()
	if p.w == nil {
		return nil
	}
	close(p.pollStop)
	<-p.pollDone
	if err := p.w.Close(); err != nil {
		return fmt.Errorf("close file watcher: %w", err)
	}
	return nil
}
