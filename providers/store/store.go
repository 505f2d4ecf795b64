package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
)

// Defaults of Config.
const (
	DefaultName       = "store"
	LibraryName       = "library" // the provider name of a store opened with Library
	DefaultHistory    = 16
	MaxHistory        = 64 // the key-value store's own limit
	DefaultCacheBytes = 32 << 20
)

// Errors of the store. Match them with errors.Is.
var (
	// ErrUnavailable reports that the store's index cannot be followed
	// right now (NATS disconnected, the watch not (re)established): the
	// skills listed may be out of date.
	ErrUnavailable = errors.New("skill store unavailable")
	// ErrChanged reports a publish that lost a race: the skill changed
	// since it was read.
	ErrChanged = errors.New("changed since read")
	// ErrClosed reports a call on a closed provider.
	ErrClosed = errors.New("skill store provider closed")
)

// Config configures the store: where it lives and its bounds. The zero
// value is usable.
type Config struct {
	// Name is the provider name in summaries; default "store" ("library"
	// with Library).
	Name string
	// Library opens the store as a tenant's shared library: its global
	// scope only, ranked below the tenant's own store (source "library",
	// providers.RankLibrary); project scopes are not offered.
	Library bool
	// Bucket is the key-value bucket of the index, Objects the object
	// store of the skills' files; both default to "SKILLS"
	// (skillstore.DefaultBucket, skillstore.DefaultObjects).
	Bucket, Objects string
	// Replicas of both when they are created; default 1.
	Replicas int
	// History is how many revisions of each skill the index keeps when it
	// is created (1 to 64); default 16.
	History int
	// MaxFiles and MaxBytes bound one skill's files (count, total bytes);
	// defaults skillstore.DefaultMaxFiles and DefaultMaxBytes.
	MaxFiles int
	MaxBytes int64
	// CacheBytes bounds the loaded bodies kept by digest; default 32 MiB.
	CacheBytes int64
	// Logger receives skipped index entries and watch failures; nil is
	// silent.
	Logger *slog.Logger
	// OnWarning, when not nil, is called for every store warning, logged
	// or not (warnings about one key are logged at most once a minute),
	// with its kind: "malformed_entry", "bad_object" or "watch". Serve
	// counts them in a metric.
	OnWarning func(kind string)
	// LazyVerify lists the records of a fresh load at once and checks
	// their objects afterwards, in the background (at most loadParallel at
	// a time): a member starts answering in the time it takes to read the
	// index, not every object (10,000 skills: seconds). A record whose
	// object then fails the check is dropped as a removal would drop it,
	// and the change announced; until then it is listed, and loading it
	// fails as loading a damaged object always does. Changes that land
	// after the load are checked before they are applied, as without it.
	LazyVerify bool
	// WatchGate, when not nil, holds back the index watch: each change
	// that lands after Open is applied only once a value is received from
	// the gate (or it is closed). Tests use it to keep one member behind.
	WatchGate <-chan struct{}
}

func (c Config) withDefaults() Config {
	if c.Name == "" && c.Library {
		c.Name = LibraryName
	}
	if c.Name == "" {
		c.Name = DefaultName
	}
	if c.Bucket == "" {
		c.Bucket = skillstore.DefaultBucket
	}
	if c.Objects == "" {
		c.Objects = skillstore.DefaultObjects
	}
	if c.Replicas <= 0 {
		c.Replicas = 1
	}
	if c.History <= 0 {
		c.History = DefaultHistory
	}
	if c.CacheBytes <= 0 {
		c.CacheBytes = DefaultCacheBytes
	}
	return c
}

// Validate checks the configuration.
func (c Config) Validate() error {
	if c.History < 0 || c.History > MaxHistory {
		return fmt.Errorf("skill store history %d: must be between 1 and %d", c.History, MaxHistory)
	}
	if c.Replicas < 0 || c.Replicas > 5 {
		return fmt.Errorf("skill store replicas %d: must be between 1 and 5", c.Replicas)
	}
	return nil
}

// limits bound the skill folders read for publishing.
func (c Config) limits() agentskills.Limits {
	return agentskills.Limits{MaxFiles: c.MaxFiles, MaxBytes: c.MaxBytes}
}

// objectLimits bound the objects read from the store.
func (c Config) objectLimits() skillstore.Limits {
	return skillstore.Limits{MaxFiles: c.MaxFiles, MaxBytes: c.MaxBytes}
}

// buckets validates cfg, applies its defaults and opens the index and the
// object store, creating them with the configured replicas and history
// when missing. It returns cfg with its defaults.
func buckets(ctx context.Context, js jetstream.JetStream, cfg Config) (Config, jetstream.KeyValue, jetstream.ObjectStore, error) {
	if err := cfg.Validate(); err != nil {
		return cfg, nil, nil, err
	}
	cfg = cfg.withDefaults()
	kv, err := js.KeyValue(ctx, cfg.Bucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket: cfg.Bucket, Description: "skillstream skill index",
			History: uint8(cfg.History), Replicas: cfg.Replicas, MaxValueSize: maxRecordBytes,
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = js.KeyValue(ctx, cfg.Bucket)
		}
	}
	if err != nil {
		return cfg, nil, nil, fmt.Errorf("skill index bucket %s: %w", cfg.Bucket, err)
	}
	obs, err := js.ObjectStore(ctx, cfg.Objects)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		obs, err = js.CreateObjectStore(ctx, jetstream.ObjectStoreConfig{
			Bucket: cfg.Objects, Description: "skillstream skill files, by digest", Replicas: cfg.Replicas,
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			obs, err = js.ObjectStore(ctx, cfg.Objects)
		}
	}
	if err != nil {
		return cfg, nil, nil, fmt.Errorf("skill object store %s: %w", cfg.Objects, err)
	}
	return cfg, kv, obs, nil
}

// entry is one live index entry.
type entry struct {
	rec      Record
	revision uint64
}

// Provider serves the skills published in the store. Its index lives in
// memory, kept current by a watch on the bucket: snapshots never read an
// object, and a publish reaches the next snapshot the moment the watch
// delivers it. Bodies are fetched by digest and cached (they never change
// under a digest). Safe for concurrent use; Close stops the watch.
type Provider struct {
	cfg  Config
	js   jetstream.JetStream
	nc   *nats.Conn
	kv   jetstream.KeyValue
	obs  jetstream.ObjectStore
	log  *slog.Logger
	lim  skillstore.Limits
	body *bodyCache

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	pos     atomic.Pointer[providers.Position] // epoch and revision applied, read together
	fetches atomic.Uint64                      // objects read, for tests and benchmarks
	recheck chan struct{}                      // asks the watch to check the buckets' identity now

	mu        sync.Mutex
	healthy   bool
	wasBroken bool                                  // the watch broke once: log when it is back
	why       error                                 // why not healthy
	scopes    map[string]map[string]entry           // project id ("" global) -> name -> entry
	chans     *simplelru.LRU[string, chan struct{}] // project id -> change channel
	advanced  chan struct{}                         // closed when revision advances or health changes
	reload    bool                                  // the next load starts the revision over

	vmu      sync.Mutex                         // guards the three below
	verified *simplelru.LRU[string, error]      // name and digest -> nil (listed) or why not
	warned   *simplelru.LRU[string, *warnState] // kind and key -> rate limit of its warnings
	warnings map[string]uint64                  // kind -> warnings so far
}

var closedChan = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// maxVerified bounds the records whose object check is remembered, and
// maxWarned the keys whose warnings are rate limited.
const (
	maxVerified = 16384
	maxWarned   = 4096
)

// maxChans bounds the change channels kept (one per project asked about);
// past it the least recently asked about is forgotten.
const maxChans = 4096

// Open opens (creating when missing) the store's buckets, starts following
// the index and waits until the index is loaded or ctx ends.
func Open(ctx context.Context, js jetstream.JetStream, cfg Config) (*Provider, error) {
	cfg, kv, obs, err := buckets(ctx, js, cfg)
	if err != nil {
		return nil, err
	}
	p := &Provider{
		cfg: cfg, js: js, nc: js.Conn(), kv: kv, obs: obs, log: cfg.Logger, lim: cfg.objectLimits(),
		body:     newBodyCache(cfg.CacheBytes),
		done:     make(chan struct{}),
		why:      fmt.Errorf("%w: index not loaded yet", ErrUnavailable),
		scopes:   make(map[string]map[string]entry),
		advanced: make(chan struct{}),
		warnings: make(map[string]uint64),
		recheck:  make(chan struct{}, 1),
	}
	p.pos.Store(&providers.Position{})
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	// Guarded by p.mu with the scopes, so the LRU without a lock of its
	// own fits. An evicted channel is left open: see Changes.
	p.chans, _ = simplelru.NewLRU[string, chan struct{}](maxChans, nil)
	p.verified, _ = simplelru.NewLRU[string, error](maxVerified, nil)
	p.warned, _ = simplelru.NewLRU[string, *warnState](maxWarned, nil)
	p.ctx, p.cancel = context.WithCancel(context.Background())
	go p.run()
	for {
		p.mu.Lock()
		ok, ch := p.healthy, p.advanced
		p.mu.Unlock()
		if ok {
			return p, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			p.Close()
			return nil, fmt.Errorf("load skill index %s: %w", cfg.Bucket, ctx.Err())
		}
	}
}

// Name implements providers.Provider.
func (p *Provider) Name() string { return p.cfg.Name }

// Fetches is how many objects the provider has read so far.
func (p *Provider) Fetches() uint64 { return p.fetches.Load() }

// Revision implements providers.Revisioned: the index bucket's stream
// sequence of the newest change the watch has applied.
func (p *Provider) Revision() uint64 { return p.pos.Load().Revision }

// Position implements providers.Epoched: the epoch of the buckets the
// index was loaded from (see Epoch) and the revision applied.
func (p *Provider) Position() providers.Position { return *p.pos.Load() }

// Store implements providers.Epoched: the index bucket's name, and the
// object store's after a slash when it is named otherwise.
func (p *Provider) Store() string {
	if p.cfg.Objects == p.cfg.Bucket {
		return p.cfg.Bucket
	}
	return p.cfg.Bucket + "/" + p.cfg.Objects
}

// CatchUp implements providers.Revisioned: it waits until the watch has
// applied rev of the current epoch, or ctx ends. A revision the index
// bucket never reached (one of buckets since recreated) is an error
// wrapping providers.ErrUnknownRevision.
func (p *Provider) CatchUp(ctx context.Context, rev uint64) error {
	checked := false
	for {
		p.mu.Lock()
		ch := p.advanced
		p.mu.Unlock()
		if p.Revision() >= rev {
			return nil
		}
		if !checked {
			checked = true
			if id, err := p.identity(ctx); err == nil && id.last < rev {
				return fmt.Errorf("skill index %s at revision %d, bucket at %d: revision %d: %w",
					p.cfg.Bucket, p.Revision(), id.last, rev, providers.ErrUnknownRevision)
			}
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("skill index at revision %d: %w", p.Revision(), ctx.Err())
		case <-p.done:
			return ErrClosed
		}
	}
}

// Refresh implements providers.Epoched: it checks the buckets' identity
// now; when they were recreated, it has the watch load the new index and
// waits (within ctx) until it is loaded. It returns the epoch then
// applied.
func (p *Provider) Refresh(ctx context.Context) (string, error) {
	id, err := p.identity(ctx)
	if err != nil {
		return p.Position().Epoch, err
	}
	if id.epoch == p.Position().Epoch {
		return id.epoch, nil
	}
	select {
	case p.recheck <- struct{}{}:
	default:
	}
	for {
		p.mu.Lock()
		ch := p.advanced
		p.mu.Unlock()
		if cur := p.Position().Epoch; cur == id.epoch {
			return cur, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return p.Position().Epoch, fmt.Errorf("load recreated skill index %s: %w", p.cfg.Bucket, ctx.Err())
		case <-p.done:
			return p.Position().Epoch, ErrClosed
		}
	}
}

// Changes implements providers.Notifier. The channel of a query closes
// when a skill of the global scope or of the query's project changes, and
// when the store becomes unavailable; while it is unavailable, the channel
// is already closed. Past maxChans projects the least recently asked about
// is forgotten, which is no change: its channel stays open and the next
// Changes for it hands out another one (see providers.Notifier).
func (p *Provider) Changes(q catalog.Query) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.healthy {
		return closedChan
	}
	ch, ok := p.chans.Get(q.Project)
	if !ok {
		ch = make(chan struct{})
		p.chans.Add(q.Project, ch) // may forget the least recently used, left open
	}
	return ch
}

// closeAll closes every change channel. p.mu must be held.
func (p *Provider) closeAll() {
	for _, ch := range p.chans.Values() {
		close(ch)
	}
	p.chans.Purge()
}

// closeScope closes the channels a change of scope project affects. p.mu
// must be held.
func (p *Provider) closeScope(project string) {
	if project == "" {
		p.closeAll()
		return
	}
	if ch, ok := p.chans.Peek(project); ok {
		close(ch)
		p.chans.Remove(project)
	}
}

// List implements providers.Provider: the project scope's skills of
// q.Project (rank RankStoreProject), then the global scope's (rank
// RankStoreGlobal), each by name. While the store is unavailable it
// returns what it last knew with an error wrapping ErrUnavailable.
func (p *Provider) List(ctx context.Context, q catalog.Query) ([]providers.Candidate, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	var out []providers.Candidate
	if p.cfg.Library {
		out = p.candidates(out, p.scopes[""], catalog.SourceLibrary, providers.RankLibrary, q)
	} else {
		if q.Project != "" {
			out = p.candidates(out, p.scopes[q.Project], catalog.SourceStoreProject, providers.RankStoreProject, q)
		}
		out = p.candidates(out, p.scopes[""], catalog.SourceStoreGlobal, providers.RankStoreGlobal, q)
	}
	healthy, why := p.healthy, p.why
	p.mu.Unlock()
	if !healthy {
		return out, why
	}
	return out, nil
}

func (p *Provider) candidates(out []providers.Candidate, skills map[string]entry, source string, rank int, q catalog.Query) []providers.Candidate {
	start := len(out)
	for _, e := range skills {
		out = append(out, providers.Candidate{Summary: p.summary(e, source, q), Rank: rank})
	}
	part := out[start:]
	sort.Slice(part, func(i, j int) bool { return part[i].Name < part[j].Name })
	return out
}

func (p *Provider) summary(e entry, source string, q catalog.Query) catalog.Summary {
	s := catalog.Summary{
		Name: e.rec.Name, Description: e.rec.Description, WhenToUse: e.rec.WhenToUse,
		Invocation: e.rec.Invocation, Source: source, Provider: p.cfg.Name,
	}
	if q.ResourceDir != "" {
		s.ResourceBase = &catalog.ResourceBase{Kind: catalog.ResourceDirectory, Path: skillstore.ResourcePath(q.ResourceDir, e.rec.Name, e.rec.Digest)}
	}
	return s
}

// find returns the provider's own winner for name in q: the project
// scope's, else the global scope's.
func (p *Provider) find(name string, q catalog.Query) (entry, string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cfg.Library {
		e, ok := p.scopes[""][name]
		return e, catalog.SourceLibrary, ok
	}
	if q.Project != "" {
		if e, ok := p.scopes[q.Project][name]; ok {
			return e, catalog.SourceStoreProject, true
		}
	}
	e, ok := p.scopes[""][name]
	return e, catalog.SourceStoreGlobal, ok
}

// Load implements providers.Provider: the winning entry's body, from the
// cache or its object (verified against its digest).
func (p *Provider) Load(ctx context.Context, name string, q catalog.Query) (catalog.Skill, error) {
	if !catalog.ValidName(name) {
		return catalog.Skill{}, fmt.Errorf("skill %q: %w", name, catalog.ErrNotFound)
	}
	if err := ctx.Err(); err != nil {
		return catalog.Skill{}, err
	}
	e, source, ok := p.find(name, q)
	if !ok {
		return catalog.Skill{}, fmt.Errorf("skill %q: %w", name, catalog.ErrNotFound)
	}
	sk, err := p.loadBody(ctx, e.rec)
	if err != nil {
		return catalog.Skill{}, err
	}
	sum := p.summary(e, source, q)
	sum.Description, sum.WhenToUse, sum.Invocation = sk.Description, sk.WhenToUse, sk.Invocation
	return catalog.Skill{Summary: sum, Content: sk.Content, Digest: e.rec.Digest, Revision: e.revision}, nil
}

// loadBody returns the parsed SKILL.md of rec's object, from the cache
// when it was loaded before.
func (p *Provider) loadBody(ctx context.Context, rec Record) (catalog.Skill, error) {
	if sk, ok := p.body.get(rec.Digest); ok {
		return sk, nil
	}
	sk, err := p.readBody(ctx, rec)
	if err != nil {
		return catalog.Skill{}, err
	}
	p.body.put(rec.Digest, sk)
	return sk, nil
}

// readBody reads rec's object and parses its SKILL.md, checking that it
// defines the skill rec names.
func (p *Provider) readBody(ctx context.Context, rec Record) (catalog.Skill, error) {
	files, err := skillstore.Fetch(ctx, p.obs, rec.Digest, p.lim)
	p.fetches.Add(1)
	if err != nil {
		return catalog.Skill{}, fmt.Errorf("skill %q: %w", rec.Name, err)
	}
	sk, err := parseSkill(files)
	if err != nil {
		return catalog.Skill{}, fmt.Errorf("skill %q (%s): %w", rec.Name, skillstore.Short(rec.Digest), err)
	}
	if sk.Name != rec.Name {
		return catalog.Skill{}, fmt.Errorf("skill %q: its files (%s) define skill %q: %w", rec.Name, skillstore.Short(rec.Digest), sk.Name, ErrWrongSkill)
	}
	return sk, nil
}

// parseSkill parses the SKILL.md of unpacked files.
func parseSkill(files []skillstore.File) (catalog.Skill, error) {
	for _, f := range files {
		if f.Path == agentskills.SkillFile {
			if len(f.Data) > agentskills.MaxFileSize {
				return catalog.Skill{}, fmt.Errorf("%w: SKILL.md is larger than %d bytes", skillstore.ErrBadArchive, agentskills.MaxFileSize)
			}
			return agentskills.ParseFile(agentskills.SkillFile, f.Data)
		}
	}
	return catalog.Skill{}, fmt.Errorf("%w: no SKILL.md", skillstore.ErrBadArchive)
}

// Close stops following the index. Channels handed out by Changes are
// closed. It is idempotent.
func (p *Provider) Close() error {
	p.cancel()
	<-p.done
	p.mu.Lock()
	p.healthy = false
	p.why = fmt.Errorf("%w (%w)", ErrClosed, providers.ErrStopping)
	p.closeAll()
	p.mu.Unlock()
	return nil
}

// run follows the index until Close: a watch per connection, started
// again (with a fresh load of the index) whenever it broke.
func (p *Provider) run() {
	defer close(p.done)
	status := p.nc.StatusChanged(nats.DISCONNECTED, nats.RECONNECTING, nats.CLOSED)
	defer p.nc.RemoveStatusListener(status)
	backoff := 50 * time.Millisecond
	for {
		err := p.follow(status)
		if p.ctx.Err() != nil {
			return
		}
		var re *errReload
		if errors.As(err, &re) {
			// Keep answering from the old index until the new one is
			// loaded (swap logs it); no backoff.
			p.mu.Lock()
			p.reload = true
			p.mu.Unlock()
			p.warn(warnWatch, "reload", "skill store buckets changed; loading the index again", "err", err)
			continue
		}
		p.broken(err)
		t := time.NewTimer(backoff)
		select {
		case <-p.ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
		backoff = min(backoff*2, 2*time.Second)
		if p.nc.IsConnected() {
			backoff = 50 * time.Millisecond
		}
	}
}

// broken marks the index as not followed: every cached answer is
// dropped, and List reports why until a new watch has loaded the index.
func (p *Provider) broken(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.healthy {
		p.wasBroken = true
		if p.nc.IsClosed() {
			// The connection was closed on purpose (the process is
			// stopping): nothing to warn about.
			p.log.Info("skill store no longer followed: NATS connection closed", "bucket", p.cfg.Bucket)
		} else {
			p.warn(warnWatch, "watch", "skill store watch broken; snapshots are incomplete until it is back", "err", err)
		}
	}
	p.healthy = false
	p.why = fmt.Errorf("%w: %v", ErrUnavailable, err)
	if p.nc.IsClosed() {
		p.why = fmt.Errorf("%w: %w: NATS connection closed", ErrUnavailable, providers.ErrStopping)
	}
	p.closeAll()
	close(p.advanced)
	p.advanced = make(chan struct{})
}

// follow runs one watch of the index: it loads every current entry into a
// fresh index, swaps it in once loaded, then applies each change as it
// lands. It returns when the watch or the connection breaks, or when the
// buckets are not the ones it loaded (errReload).
func (p *Provider) follow(status <-chan nats.Status) error {
	if !p.nc.IsConnected() {
		return errors.New("NATS not connected")
	}
	ctx, cancel := context.WithCancel(p.ctx)
	defer cancel()
	// The identity is taken before the watch starts: buckets recreated in
	// between are found at the first check and loaded again.
	id, err := p.identity(ctx)
	if err != nil {
		return err
	}
	p.mu.Lock()
	reload := p.reload
	p.mu.Unlock()
	if id.epoch != p.Position().Epoch || reload {
		// Other buckets (or the same restored): what was checked of the
		// old objects says nothing of the new ones.
		p.vmu.Lock()
		p.verified.Purge()
		p.vmu.Unlock()
	}
	w, err := p.kv.WatchAll(ctx)
	if err != nil {
		return fmt.Errorf("watch skill index %s: %w", p.cfg.Bucket, err)
	}
	defer w.Stop()
	var pending []jetstream.KeyValueEntry
	loaded := false
	var rev uint64
	// Every stallProbe the buckets' identity is checked: buckets deleted
	// and created again (another epoch) or restored from a backup (the
	// bucket's last sequence below what was applied) are loaded again from
	// scratch. The same check notices a stalled watch: one whose consumer
	// lived on a node that went away stalls until the client library
	// notices missed heartbeats (some 10 s); behind the bucket at two checks
	// in a row without a change applied in between means stalled, and a
	// new watch is started.
	probe := time.NewTicker(stallProbe)
	defer probe.Stop()
	var target, at uint64
	check := func() error {
		cur, err := p.identity(ctx)
		switch {
		case errors.Is(err, jetstream.ErrStreamNotFound):
			return fmt.Errorf("skill store bucket deleted: %w", err)
		case err != nil:
			return nil // cannot tell now; the next check may
		case cur.epoch != id.epoch:
			return &errReload{why: "recreated", old: id.epoch, new: cur.epoch}
		case loaded && cur.last < p.Revision():
			return &errReload{why: "rewound (restored from a backup?)", old: id.epoch, new: cur.epoch, last: cur.last}
		}
		if !loaded || p.cfg.WatchGate != nil {
			return nil
		}
		// Stalled: behind the bucket at the last check and not one change
		// applied since. A watch that applies slowly (each new record's
		// object is read) still moves.
		if target != 0 && p.Revision() < target && p.Revision() == at {
			return fmt.Errorf("index watch stalled at revision %d, bucket at %d", p.Revision(), target)
		}
		target, at = 0, p.Revision()
		if cur.last > at {
			target = cur.last
		}
		return nil
	}
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case st := <-status:
			return fmt.Errorf("NATS %s", st)
		case <-probe.C:
			if err := check(); err != nil {
				return err
			}
		case <-p.recheck:
			if err := check(); err != nil {
				return err
			}
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("index watch ended")
			}
			if e == nil { // every current entry delivered
				p.swap(p.load(ctx, pending), rev, id.epoch)
				pending, loaded = nil, true
				if p.cfg.LazyVerify {
					go p.verifyLoaded(ctx)
				}
				continue
			}
			if !loaded {
				rev = max(rev, e.Revision())
				pending = append(pending, e)
				continue
			}
			if p.cfg.WatchGate != nil {
				select {
				case <-p.cfg.WatchGate:
				case <-ctx.Done():
					return ctx.Err()
				case st := <-status:
					return fmt.Errorf("NATS %s", st)
				}
			}
			p.apply(ctx, e)
		}
	}
}

// errReload reports buckets that are not the ones the index was loaded
// from: the index is loaded again from scratch, and its revisions start
// over under the new epoch.
type errReload struct {
	why      string
	old, new string // epochs
	last     uint64 // the bucket's last sequence, when rewound
}

func (e *errReload) Error() string {
	return fmt.Sprintf("skill store buckets %s (epoch %s, was %s)", e.why, e.new, e.old)
}

// stallProbe is how often a loaded watch checks the buckets' identity and
// whether it is behind the bucket.
const stallProbe = time.Second

// bucketID is the identity of the store's buckets as the server reports
// it.
type bucketID struct {
	epoch string
	last  uint64 // the index bucket's last stream sequence
}

// identity asks the server for the buckets' identity: the creation times
// of the index's and the object store's streams, which change whenever a
// bucket is deleted and created again, make the epoch (see epochOf).
func (p *Provider) identity(ctx context.Context) (bucketID, error) {
	ctx, cancel := context.WithTimeout(ctx, stallProbe)
	defer cancel()
	return identityOf(ctx, p.js, p.cfg)
}

// identityOf asks the server for the identity of cfg's buckets.
func identityOf(ctx context.Context, js jetstream.JetStream, cfg Config) (bucketID, error) {
	idx, err := js.Stream(ctx, "KV_"+cfg.Bucket)
	if err != nil {
		return bucketID{}, fmt.Errorf("skill index bucket %s: %w", cfg.Bucket, err)
	}
	obj, err := js.Stream(ctx, "OBJ_"+cfg.Objects)
	if err != nil {
		return bucketID{}, fmt.Errorf("skill object store %s: %w", cfg.Objects, err)
	}
	ii, oi := idx.CachedInfo(), obj.CachedInfo()
	return bucketID{epoch: epochOf(cfg.Bucket, cfg.Objects, ii.Created, oi.Created), last: ii.State.LastSeq}, nil
}

// epochOf names one incarnation of the store's buckets: 16 hex digits of
// the SHA-256 of their names and creation times. Every member reading the
// same buckets computes the same epoch; buckets created again (or others)
// have another.
func epochOf(bucket, objects string, idx, obj time.Time) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%d\x00%d", bucket, objects, idx.UnixNano(), obj.UnixNano())
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// change is one index entry, decoded and checked (its object read when
// not checked before) outside the provider's lock.
type change struct {
	key      string
	project  string
	name     string
	revision uint64
	bad      bool  // the key is not a skill's: ignored
	remove   bool  // a removal, or a record not to list (its object is not its skill's)
	keep     bool  // a malformed value: the last good revision stays
	err      error // why bad, remove (of a record) or keep
	rec      Record
	foreign  foreignCount // of a malformed value: the key's history
}

// foreignCount is what a key's history holds after a value the store did
// not write (a malformed value) arrived: how many such values follow the
// newest good revision, and how many revisions the history keeps.
type foreignCount struct {
	read    bool   // the history was read
	foreign int    // values after the newest good revision that are not records
	good    uint64 // the newest good revision still kept; 0: none is
	depth   int    // revisions the history holds now
}

// countForeign reads key's history after a malformed value arrived, so
// that the warning says how close the good revision is to being pushed
// out of it: a value the store did not write never displaces one that it
// did without an operator being told.
func (p *Provider) countForeign(ctx context.Context, key, name string) foreignCount {
	hctx, cancel := context.WithTimeout(ctx, stallProbe)
	defer cancel()
	hist, err := p.kv.History(hctx, key)
	if err != nil {
		return foreignCount{}
	}
	fc := foreignCount{read: true, depth: len(hist)}
	for i := len(hist) - 1; i >= 0; i-- {
		h := hist[i]
		if h.Operation() != jetstream.KeyValuePut {
			break
		}
		if _, err := decodeRecord(name, h.Value()); err == nil {
			fc.good = h.Revision()
			break
		}
		fc.foreign++
	}
	return fc
}

// check decodes e and, for a record, checks its object (see verify).
func (p *Provider) check(ctx context.Context, e jetstream.KeyValueEntry) change {
	return p.checkAs(ctx, e, true)
}

// checkAs is check, reading the record's object only when verify is set.
func (p *Provider) checkAs(ctx context.Context, e jetstream.KeyValueEntry, verify bool) change {
	c := change{key: e.Key(), revision: e.Revision()}
	sc, name, err := parseKey(e.Key())
	if err != nil {
		c.bad, c.err = true, err
		return c
	}
	c.project, c.name = sc.ProjectID(), name
	if e.Operation() != jetstream.KeyValuePut {
		c.remove = true
		return c
	}
	rec, err := decodeRecord(name, e.Value())
	if err != nil {
		c.keep, c.err = true, err
		c.foreign = p.countForeign(ctx, e.Key(), name)
		return c
	}
	if verify {
		if err := p.verify(ctx, rec); err != nil {
			c.remove, c.err = true, err
			return c
		}
	}
	c.rec = rec
	return c
}

// indexKey is the index key of skill name in project ("" for global).
func indexKey(project, name string) string {
	sc := skillstore.Global
	if project != "" {
		if p, err := skillstore.Project(project); err == nil {
			sc = p
		}
	}
	return sc.Key(name)
}

// verifyLoaded checks the objects of the records a lazy load listed
// (Config.LazyVerify), at most loadParallel at a time, and drops each
// record whose object fails, unless a newer revision replaced it
// meanwhile. It stops with ctx (the watch that loaded them).
func (p *Provider) verifyLoaded(ctx context.Context) {
	type listed struct {
		project, name string
		e             entry
	}
	p.mu.Lock()
	var all []listed
	for project, skills := range p.scopes {
		for name, e := range skills {
			all = append(all, listed{project, name, e})
		}
	}
	p.mu.Unlock()
	var g errgroup.Group
	g.SetLimit(loadParallel)
	for _, l := range all {
		if ctx.Err() != nil {
			break
		}
		g.Go(func() error {
			err := p.verify(ctx, l.e.rec)
			if err == nil || ctx.Err() != nil {
				return nil
			}
			p.mu.Lock()
			cur, ok := p.scopes[l.project][l.name]
			dropped := ok && cur.revision == l.e.revision
			if dropped {
				delete(p.scopes[l.project], l.name)
				p.closeScope(l.project)
				close(p.advanced)
				p.advanced = make(chan struct{})
			}
			p.mu.Unlock()
			if dropped {
				key := indexKey(l.project, l.name)
				p.warn(warnObject, key, "skill index entry no longer listed: its object is not the skill it names",
					"key", key, "revision", l.e.revision, "digest", l.e.rec.Digest, "err", err)
			}
			return nil
		})
	}
	g.Wait()
}

// ErrWrongSkill reports an object whose files define another skill than
// the record naming it.
var ErrWrongSkill = errors.New("object holds another skill")

// verify checks, once per name and digest, that rec's object exists, is
// intact (its files hash to the digest) and defines the skill rec names:
// a record failing that is not listed. A read that fails for another
// reason (NATS unreachable, a timeout) is not held against the record,
// nor remembered; Load reports it.
func (p *Provider) verify(ctx context.Context, rec Record) error {
	k := rec.Name + "\x00" + rec.Digest
	p.vmu.Lock()
	err, ok := p.verified.Get(k)
	p.vmu.Unlock()
	if ok {
		return err
	}
	vctx, cancel := context.WithTimeout(ctx, verifyTimeout)
	defer cancel()
	_, err = p.readBody(vctx, rec)
	var pe *agentskills.ParseError
	definite := err == nil || errors.Is(err, skillstore.ErrObjectMissing) || errors.Is(err, skillstore.ErrBadArchive) ||
		errors.Is(err, ErrWrongSkill) || errors.As(err, &pe)
	if !definite {
		return nil
	}
	p.vmu.Lock()
	p.verified.Add(k, err)
	p.vmu.Unlock()
	return err
}

// verifyTimeout bounds the check of one record's object: the watch waits
// for it.
const verifyTimeout = 5 * time.Second

// lastGood returns the newest valid revision of key before rev that the
// index still holds (its history), when no removal came after it.
func (p *Provider) lastGood(ctx context.Context, key, name string, rev uint64) (entry, bool) {
	hctx, cancel := context.WithTimeout(ctx, stallProbe)
	defer cancel()
	hist, err := p.kv.History(hctx, key)
	if err != nil {
		return entry{}, false
	}
	for i := len(hist) - 1; i >= 0; i-- {
		h := hist[i]
		if h.Revision() >= rev {
			continue
		}
		if h.Operation() != jetstream.KeyValuePut {
			return entry{}, false
		}
		rec, err := decodeRecord(name, h.Value())
		if err != nil {
			continue
		}
		if p.verify(ctx, rec) != nil {
			return entry{}, false
		}
		return entry{rec: rec, revision: h.Revision()}, true
	}
	return entry{}, false
}

// applyTo applies one checked change to an index and returns the warning
// to log about it, if any (nil when none).
func (p *Provider) applyTo(idx map[string]map[string]entry, c change) func() {
	if c.bad {
		return func() {
			p.warn(warnMalformed, c.key, "skill index entry skipped", "key", c.key, "revision", c.revision, "err", c.err)
		}
	}
	skills := idx[c.project]
	switch {
	case c.keep:
		if f := c.foreign; f.read {
			e, listed := skills[c.name]
			return func() {
				msg := "skill index entry not written by skillstream (malformed): its last good revision stays listed, " +
					"and is pushed out of the index's history once it holds no other revision; push the skill again to restore it, " +
					"and find who writes to the index"
				if f.good == 0 {
					msg = "skill index entry skipped: not written by skillstream (malformed), and the index's history holds no good revision of it " +
						"(never pushed, or pushed out by such values): no member that loads the index lists the skill; push it again, and find who writes to the index"
				}
				args := []any{"key", c.key, "revision", c.revision, "foreign_revisions", f.foreign, "history", f.depth,
					"good_revision", f.good, "err", c.err}
				if listed {
					args = append(args, "kept_revision", e.revision)
				}
				p.warnAt(slog.LevelError, warnMalformed, c.key, msg, args...)
			}
		}
		if e, ok := skills[c.name]; ok {
			return func() {
				p.warn(warnMalformed, c.key, "skill index entry malformed; its last good revision stays listed",
					"key", c.key, "revision", c.revision, "kept_revision", e.revision, "err", c.err)
			}
		}
		return func() {
			p.warn(warnMalformed, c.key, "skill index entry skipped: malformed, and no earlier valid revision",
				"key", c.key, "revision", c.revision, "err", c.err)
		}
	case c.remove:
		delete(skills, c.name)
		if c.err != nil {
			return func() {
				p.warn(warnObject, c.key, "skill index entry not listed: its object is not the skill it names",
					"key", c.key, "revision", c.revision, "digest", c.rec.Digest, "err", c.err)
			}
		}
		return nil
	}
	if skills == nil {
		skills = make(map[string]entry)
		idx[c.project] = skills
	}
	skills[c.name] = entry{rec: c.rec, revision: c.revision}
	return nil
}

// load checks the entries of a fresh watch (at most loadParallel objects
// read at once) and builds an index of them; a malformed value falls back
// to the key's last good revision in the index's history.
func (p *Provider) load(ctx context.Context, es []jetstream.KeyValueEntry) map[string]map[string]entry {
	cs := make([]change, len(es))
	var g errgroup.Group
	g.SetLimit(loadParallel)
	for i, e := range es {
		g.Go(func() error {
			c := p.checkAs(ctx, e, !p.cfg.LazyVerify)
			if c.keep {
				// Entries of a fresh watch come one per key: the last good
				// revision is in the history.
				if prev, ok := p.lastGood(ctx, c.key, c.name, c.revision); ok {
					cs[i] = change{key: c.key, project: c.project, name: c.name, revision: prev.revision, rec: prev.rec}
					p.warn(warnMalformed, c.key, "skill index entry malformed; its last good revision stays listed",
						"key", c.key, "revision", c.revision, "kept_revision", prev.revision, "err", c.err)
					return nil
				}
			}
			cs[i] = c
			return nil
		})
	}
	g.Wait()
	idx := make(map[string]map[string]entry)
	for _, c := range cs {
		if f := p.applyTo(idx, c); f != nil {
			f()
		}
	}
	return idx
}

// loadParallel bounds the objects a load reads at once.
const loadParallel = 32

// Kinds of store warnings (the counter's label, see Config.OnWarning).
const (
	warnMalformed = "malformed_entry" // an index key or value that is not a skill's
	warnObject    = "bad_object"      // a record whose object is missing, damaged or another skill's
	warnWatch     = "watch"           // the index watch broke or the buckets changed
)

// warnEvery is how often one key's warnings are logged at most; the
// warnings in between are counted and their number logged with the next.
const warnEvery = time.Minute

// warnState is the rate limit of one key's warnings.
type warnState struct {
	last       time.Time
	suppressed int
}

// warn logs a warning about key at most once per warnEvery (with the
// number suppressed since the last one), and counts every one.
func (p *Provider) warn(kind, key, msg string, args ...any) {
	p.warnAt(slog.LevelWarn, kind, key, msg, args...)
}

// warnAt is warn at another level.
func (p *Provider) warnAt(level slog.Level, kind, key, msg string, args ...any) {
	if p.cfg.OnWarning != nil {
		p.cfg.OnWarning(kind)
	}
	p.vmu.Lock()
	p.warnings[kind]++
	st, ok := p.warned.Get(kind + "\x00" + key)
	now := time.Now()
	if ok && now.Sub(st.last) < warnEvery {
		st.suppressed++
		p.vmu.Unlock()
		return
	}
	suppressed := 0
	if ok {
		suppressed = st.suppressed
	}
	p.warned.Add(kind+"\x00"+key, &warnState{last: now})
	p.vmu.Unlock()
	args = append([]any{"bucket", p.cfg.Bucket}, args...)
	if suppressed > 0 {
		args = append(args, "suppressed", suppressed)
	}
	p.log.Log(context.Background(), level, msg, args...)
}

// Warnings counts the warnings the provider had, by kind (also those
// not logged because of the rate limit).
func (p *Provider) Warnings() map[string]uint64 {
	p.vmu.Lock()
	defer p.vmu.Unlock()
	out := make(map[string]uint64, len(p.warnings))
	for k, n := range p.warnings {
		out[k] = n
	}
	return out
}

// swap installs a freshly loaded index of the buckets of epoch. Within
// one epoch the revision only goes up; a load after the buckets were
// recreated or rewound (p.reload) starts the revision over.
func (p *Provider) swap(idx map[string]map[string]entry, rev uint64, epoch string) {
	p.mu.Lock()
	p.scopes = idx
	p.closeAll()
	cur := p.Position()
	next := providers.Position{Epoch: epoch, Revision: rev}
	if cur.Epoch == epoch && !p.reload {
		next.Revision = max(rev, cur.Revision)
	}
	switch {
	case cur.Epoch != "" && (cur.Epoch != epoch || p.reload):
		p.warn(warnWatch, "epoch "+epoch, "skill store buckets recreated or replaced: index loaded again from scratch; sessions whose catalog came from the old buckets get one replacement",
			"epoch", epoch, "old_epoch", cur.Epoch, "revision", rev, "old_revision", cur.Revision)
	case p.wasBroken:
		p.log.Info("skill store watch restored", "bucket", p.cfg.Bucket, "revision", next.Revision)
	}
	p.reload = false
	p.healthy, p.why = true, nil
	// Channels are closed before the position is published: whoever
	// reads the position and then finds its channel open knows its answer
	// reflects that position.
	p.pos.Store(&next)
	close(p.advanced)
	p.advanced = make(chan struct{})
	p.mu.Unlock()
}

// apply checks one change and applies it to the live index.
func (p *Provider) apply(ctx context.Context, e jetstream.KeyValueEntry) {
	c := p.check(ctx, e)
	p.mu.Lock()
	warn := p.applyTo(p.scopes, c)
	if !c.bad {
		p.closeScope(c.project)
	}
	if cur := p.Position(); e.Revision() > cur.Revision {
		p.pos.Store(&providers.Position{Epoch: cur.Epoch, Revision: e.Revision()})
	}
	close(p.advanced)
	p.advanced = make(chan struct{})
	p.mu.Unlock()
	if warn != nil {
		warn()
	}
}
