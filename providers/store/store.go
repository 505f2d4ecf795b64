package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"
	"golang.org/x/time/rate"

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
	// DefaultMaxSkills bounds the skills of one store (every scope): a
	// fleet's store holds hundreds, and the store and search are built
	// and measured for 10,000.
	DefaultMaxSkills = 10000
	// DefaultMaxSummaryBytes bounds the bytes of the names, descriptions
	// and whenToUse texts a store's view holds: 10,000 skills of 1.6 KB,
	// or 2,000 with both texts at their longest.
	DefaultMaxSummaryBytes = 16 << 20
	// DefaultVerifyBytes is how many bytes of objects a store reads per
	// second, at most, to check them (twice that at once).
	DefaultVerifyBytes = 32 << 20
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
	// MaxSkills and MaxSummaryBytes bound the store's view: the skills
	// of every scope, and the bytes of their names, descriptions and
	// whenToUse texts; defaults DefaultMaxSkills and
	// DefaultMaxSummaryBytes. A store over either lists nothing until it
	// is back within them (see Bounds).
	MaxSkills       int
	MaxSummaryBytes int64
	// VerifyBytes is how many bytes of objects the store reads per second
	// to check records (each read also costs verifyReadCost), with a
	// burst of twice that (at least the largest object); default
	// DefaultVerifyBytes. Records wait for their turn, in order.
	VerifyBytes int64
	// Logger receives skipped index entries and watch failures; nil is
	// silent.
	Logger *slog.Logger
	// OnWarning, when not nil, is called for every store warning, logged
	// or not (warnings about one key are logged at most once a minute),
	// with its kind: "malformed_entry", "bad_object", "over_bounds" or
	// "watch". Serve counts them in a metric.
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
	// warnEvery is the period of the warnings' rate limits (warnEvery by
	// default); tests shorten it.
	warnEvery time.Duration
	// Pins shows each named skill at the revision it names instead of
	// its current one, whatever the index later holds: its summary,
	// body and files are that revision's, ranked where the scope's skills
	// rank; a revision that is a removal shows the skill as absent. Open
	// reads each from the index's kept history and checks its object,
	// failing for a skill, revision or scope it cannot find. For judging
	// a revision on recorded sessions (eval); nil pins nothing.
	Pins []Pin
	// TenantPins, with Library, is the index of the tenant this library
	// provider serves: its keys "pin.library.<name>" (LibraryPinKey) pin
	// library skills for every session of that tenant. Each pinned
	// revision is read from the library's kept history and checked as
	// any record; a pin beats the library's releases and newest revision
	// (channel pin). Open waits until the tenant's pins are read, and the
	// provider follows them (a change is announced as any change is).
	TenantPins jetstream.KeyValue
	// Tenant, for a library (Library), is the tenant's own store, whose
	// trust policy decides which keys are trusted for the library's
	// skills (TrustPolicy.Library) and what is required of them (the
	// stricter of the tenant's and the library's requirements). Nil: the
	// library's own policy alone.
	Tenant *Provider
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
	if c.MaxSkills <= 0 {
		c.MaxSkills = DefaultMaxSkills
	}
	if c.MaxSummaryBytes <= 0 {
		c.MaxSummaryBytes = DefaultMaxSummaryBytes
	}
	if c.VerifyBytes <= 0 {
		c.VerifyBytes = DefaultVerifyBytes
	}
	if c.warnEvery <= 0 {
		c.warnEvery = warnEvery
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

// entry is one live index entry. While the store is over its bounds
// its record holds no text (see strip); size is the summary's bytes.
type entry struct {
	rec      Record
	revision uint64
	size     int64
}

// usage is what a store's view holds: its skills (every scope) and the
// bytes of their summaries (Record.summaryBytes).
type usage struct {
	skills int
	bytes  int64
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
	wasBroken bool                         // the watch broke once: log when it is back
	why       error                        // why not healthy
	scopes    map[string]map[string]entry  // project id ("" global) -> name -> entry
	pins      map[string]map[string]pinned // project id -> name -> shown in place of scopes' (Config.Pins)
	ctl       *controls                    // the index's releases and pins
	tpins     map[string]pinState          // library only: the tenant's pins of library skills (Config.TenantPins)
	// releases keeps what Releases answered per project (its key: q.Project,
	// "" for the global scope alone) until the index changes: shared by the
	// callers, who must not modify it.
	releases map[string][]catalog.Release
	tpDone   chan struct{}                         // closed when the tenant pins' watch has ended (Config.TenantPins)
	chans    *simplelru.LRU[string, chan struct{}] // project id -> change channel
	advanced chan struct{}                         // closed when revision advances or health changes
	reload   bool                                  // the next load starts the revision over
	use      usage                                 // what scopes holds
	over     error                                 // why the view is dropped (over its bounds); nil within them
	refill   bool                                  // back within bounds: the next load fills the texts again
	overAt   atomic.Bool                           // over != nil, read without p.mu

	vmu      sync.Mutex                          // guards the fields below
	verified *simplelru.LRU[string, digestCheck] // digest -> what its object holds
	flights  map[string]*verifyFlight            // digest -> the read in progress
	warned   *simplelru.LRU[string, *warnState]  // kind and key -> rate limit of its warnings
	warnings map[string]uint64                   // kind -> warnings so far
	window   warnWindow                          // the store's rate limit of warnings
	reads    *rate.Limiter                       // bytes of objects read to check records

	policy    atomic.Pointer[TrustPolicy] // the store's trust policy
	retrust   chan struct{}               // asks the watch to load again under a changed policy
	tmu       sync.Mutex                  // guards followers
	followers []*Provider                 // libraries following this store's policy
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
		ctl:      newControls(),
		advanced: make(chan struct{}),
		warnings: make(map[string]uint64),
		recheck:  make(chan struct{}, 1),
		retrust:  make(chan struct{}, 1),
	}
	p.pos.Store(&providers.Position{})
	pol := defaultPolicy()
	p.policy.Store(&pol)
	if cfg.Library && cfg.Tenant != nil {
		cfg.Tenant.addFollower(p)
	}
	if p.log == nil {
		p.log = slog.New(slog.DiscardHandler)
	}
	// Guarded by p.mu with the scopes, so the LRU without a lock of its
	// own fits. An evicted channel is left open: see Changes.
	p.chans, _ = simplelru.NewLRU[string, chan struct{}](maxChans, nil)
	p.verified, _ = simplelru.NewLRU[string, digestCheck](maxVerified, nil)
	p.flights = make(map[string]*verifyFlight)
	// The burst lets the largest object through at once, and an honest
	// store's first load (tens of megabytes) without waiting.
	burst := max(2*cfg.VerifyBytes, p.lim.WithDefaults().MaxObjectSize()+verifyReadCost)
	p.reads = rate.NewLimiter(rate.Limit(cfg.VerifyBytes), int(burst))
	p.warned, _ = simplelru.NewLRU[string, *warnState](maxWarned, nil)
	p.ctx, p.cancel = context.WithCancel(context.Background())
	go p.run()
	if cfg.Library && cfg.TenantPins != nil {
		if err := p.startTenantPins(ctx); err != nil {
			p.Close()
			return nil, err
		}
	}
	for {
		p.mu.Lock()
		ok, ch := p.healthy, p.advanced
		p.mu.Unlock()
		if ok {
			if len(cfg.Pins) == 0 {
				return p, nil
			}
			pins, err := p.resolvePins(ctx, cfg.Pins)
			if err != nil {
				p.Close()
				return nil, err
			}
			p.mu.Lock()
			p.pins = pins
			p.closeAll()
			p.mu.Unlock()
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
	if p.over != nil {
		// Dropped: the other sources are listed without the store's
		// skills (Bounds, Diagnostics and the log say why).
		healthy, why := p.healthy, p.why
		p.mu.Unlock()
		if !healthy {
			return nil, why
		}
		return nil, nil
	}
	if p.cfg.Library {
		out = p.candidates(out, "", catalog.SourceLibrary, providers.RankLibrary, q)
	} else {
		if q.Project != "" {
			out = p.candidates(out, q.Project, catalog.SourceStoreProject, providers.RankStoreProject, q)
		}
		out = p.candidates(out, "", catalog.SourceStoreGlobal, providers.RankStoreGlobal, q)
	}
	healthy, why := p.healthy, p.why
	p.mu.Unlock()
	if !healthy {
		return out, why
	}
	return out, nil
}

// candidates appends the skills of the scope of project (""
// global) as q's session gets them (see choose). p.mu must be held.
func (p *Provider) candidates(out []providers.Candidate, project, source string, rank int, q catalog.Query) []providers.Candidate {
	start := len(out)
	if p.plain(project, q) {
		for _, e := range p.scopes[project] {
			out = append(out, providers.Candidate{Summary: p.summary(e, source, ChannelStable, q), Rank: rank})
		}
	} else {
		for name := range p.scopes[project] {
			if e, channel, ok := p.choose(project, name, q); ok {
				out = append(out, providers.Candidate{Summary: p.summary(e, source, channel, q), Rank: rank})
			}
		}
		for name := range p.pinnedOnly(project, q) {
			if e, channel, ok := p.choose(project, name, q); ok {
				out = append(out, providers.Candidate{Summary: p.summary(e, source, channel, q), Rank: rank})
			}
		}
	}
	part := out[start:]
	slices.SortFunc(part, func(a, b providers.Candidate) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (p *Provider) summary(e entry, source, channel string, q catalog.Query) catalog.Summary {
	s := catalog.Summary{
		Name: e.rec.Name, Description: e.rec.Description, WhenToUse: e.rec.WhenToUse,
		Invocation: e.rec.Invocation, Source: source, Provider: p.cfg.Name,
		Origin: catalog.Origin{Rev: e.rec.Rev, Digest: e.rec.Digest, Channel: channel},
	}
	if q.ResourceDir != "" {
		s.ResourceBase = &catalog.ResourceBase{Kind: catalog.ResourceDirectory, Path: skillstore.ResourcePath(q.ResourceDir, e.rec.Name, e.rec.Digest)}
	}
	return s
}

// find returns the provider's own winner for name in q: the project
// scope's, else the global scope's, each as q's session gets it (see
// choose), and the channel that chose it.
func (p *Provider) find(name string, q catalog.Query) (e entry, source, channel string, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.over != nil {
		return entry{}, "", "", false
	}
	if p.cfg.Library {
		e, channel, ok = p.choose("", name, q)
		return e, catalog.SourceLibrary, channel, ok
	}
	if q.Project != "" {
		if e, channel, ok = p.choose(q.Project, name, q); ok {
			return e, catalog.SourceStoreProject, channel, true
		}
	}
	e, channel, ok = p.choose("", name, q)
	return e, catalog.SourceStoreGlobal, channel, ok
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
	e, source, channel, ok := p.find(name, q)
	if !ok {
		return catalog.Skill{}, fmt.Errorf("skill %q: %w", name, catalog.ErrNotFound)
	}
	sk, err := p.loadBody(ctx, e.rec)
	if err != nil {
		return catalog.Skill{}, err
	}
	sum := p.summary(e, source, channel, q)
	sum.Description, sum.WhenToUse, sum.Invocation = sk.Description, sk.WhenToUse, sk.Invocation
	out := catalog.Skill{Summary: sum, Content: sk.Content, Digest: e.rec.Digest, Revision: e.revision}
	if s := e.rec.Signature; s != nil {
		scope := skillstore.Global
		if source == catalog.SourceStoreProject {
			scope, _ = skillstore.Project(q.Project)
		}
		out.Signature = &catalog.Signature{Key: s.Key, Alg: s.Alg, Sig: s.Sig, Scope: scope.String(), Summary: SummaryDigest(e.rec)}
	}
	return out, nil
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
	if p.tpDone != nil {
		<-p.tpDone
	}
	if t := p.cfg.Tenant; t != nil && p.cfg.Library {
		t.removeFollower(p)
	}
	p.vmu.Lock()
	if t := p.window.timer; t != nil {
		t.Stop()
		p.window.timer = nil
	}
	p.vmu.Unlock()
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
		if errors.Is(err, errRefill) || errors.Is(err, errRetrust) {
			continue // the old view answers until the new one is loaded
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
		if !p.pause(backoff) {
			return
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
	pending := new(pendingLoad)
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
	var enforced trustView // the policy the loaded index was judged under
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
		p.mu.Lock()
		refill := p.refill
		p.mu.Unlock()
		if loaded && refill {
			return errRefill
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
		case <-p.retrust:
			if loaded && !p.view().equal(enforced) {
				return errRetrust
			}
		case e, ok := <-w.Updates():
			if !ok {
				return errors.New("index watch ended")
			}
			if e == nil { // every current entry delivered
				p.loadPolicy(ctx, pending)
				enforced = p.view()
				idx, ctls, use := p.load(ctx, pending)
				p.swap(idx, ctls, use, rev, id.epoch, pending.stripped)
				pending, loaded = nil, true
				if p.cfg.LazyVerify {
					go p.verifyLoaded(ctx)
				}
				continue
			}
			if !loaded {
				rev = max(rev, e.Revision())
				pending.add(p, e)
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
			if e.Key() == TrustKey {
				t, err := policyOf(e)
				if err != nil {
					p.warnAt(slog.LevelError, warnMalformed, e.Key(), "skill store trust policy not written by skillstream (malformed): the policy in force stays; "+
						"write it again with skills trust", "key", e.Key(), "revision", e.Revision(), "err", err)
				} else if p.setPolicy(t); !p.view().equal(enforced) {
					return errRetrust
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

// errRefill ends a watch so that a store back within its bounds is loaded
// again: while over them it kept no text.
var errRefill = errors.New("skill store back within its bounds: loading it again")

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
	size     int64        // rec's summary bytes
	foreign  foreignCount // of a malformed value: the key's history
	ctl      *ctlChange   // of a release or pin key
	// Of a record the trust policy does not trust: why (trust), the
	// requirement it was judged under, and the store revision of the
	// newest trusted one offered in its place (kept; 0 none).
	trust   error
	require string
	kept    uint64
	untrRev uint64 // the untrusted revision
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
func (p *Provider) check(ctx context.Context, e jetstream.KeyValueEntry, verify bool) change {
	return p.checkDecoded(ctx, decode(e), verify)
}

// decoded is an index entry decoded, its value let go: what a load keeps
// of each entry until the index is loaded.
type decoded struct {
	key      string
	revision uint64
	put      bool
	rec      Record     // of a put whose key and value are valid
	size     int64      // rec's summary bytes (kept when its text is let go)
	err      error      // why the key or the value of a put is not a valid record's
	ctl      *ctlChange // of a release or pin key, decoded
}

// decode decodes e.
func decode(e jetstream.KeyValueEntry) decoded {
	d := decoded{key: e.Key(), revision: e.Revision(), put: e.Operation() == jetstream.KeyValuePut}
	if c := decodeControl(d.key, d.put, e); c != nil {
		d.ctl = c
		return d
	}
	if !d.put {
		return d
	}
	_, name, err := parseKey(d.key)
	if err != nil {
		d.err = err // checkDecoded reports the key
		return d
	}
	d.rec, d.err = decodeRecord(name, e.Value())
	if d.err != nil {
		d.rec = Record{}
	}
	d.size = d.rec.summaryBytes()
	return d
}

// checkDecoded checks a decoded entry: its key, and for a record, its
// object when verify is set.
func (p *Provider) checkDecoded(ctx context.Context, d decoded, verify bool) change {
	c := change{key: d.key, revision: d.revision}
	if d.ctl != nil {
		return p.checkControl(ctx, c, d.ctl)
	}
	sc, name, err := parseKey(d.key)
	if err != nil {
		c.bad, c.err = true, err
		return c
	}
	c.project, c.name = sc.ProjectID(), name
	if !d.put {
		c.remove = true
		return c
	}
	if d.err != nil {
		c.keep, c.err = true, d.err
		c.foreign = p.countForeign(ctx, d.key, name)
		return c
	}
	v := p.view()
	if terr := untrusted(v, sc, name, d.rec); terr != nil {
		c.trust, c.require, c.untrRev = terr, v.require, d.revision
		if v.enforced(terr) {
			// Not offered: the newest trusted revision the history keeps
			// stays, or none.
			prev, ok := p.lastGood(ctx, d.key, name, d.revision)
			if !ok {
				c.remove = true
				return c
			}
			c.kept, c.revision, c.rec, c.size = prev.revision, prev.revision, prev.rec, prev.rec.summaryBytes()
			return c
		}
	}
	if verify {
		if err := p.verify(ctx, d.rec); err != nil {
			c.remove, c.err = true, err
			return c
		}
	}
	c.rec, c.size = d.rec, d.size
	return c
}

// pendingLoad is what a fresh watch has delivered before the index is
// loaded: each entry decoded, and the summary bytes of the newest record
// of each key. Past the store's bounds it lets go of the records' texts
// (their sizes kept), so what a load holds is bounded as a loaded index
// is.
type pendingLoad struct {
	entries  []decoded
	sizes    map[string]int64 // key -> summary bytes of its newest valid record
	bytes    int64
	stripped bool // texts were let go
}

// add decodes e and keeps it.
func (pl *pendingLoad) add(p *Provider, e jetstream.KeyValueEntry) {
	d := decode(e)
	if pl.sizes == nil {
		pl.sizes = make(map[string]int64)
	}
	if old, ok := pl.sizes[d.key]; ok {
		pl.bytes -= old
		delete(pl.sizes, d.key)
	}
	if d.put && d.err == nil && d.ctl == nil {
		pl.sizes[d.key] = d.size
		pl.bytes += d.size
	}
	pl.entries = append(pl.entries, d)
	if !pl.stripped && p.overBounds(usage{skills: len(pl.sizes), bytes: pl.bytes}) != nil {
		pl.stripped = true
		for i := range pl.entries {
			pl.entries[i].rec.Description, pl.entries[i].rec.WhenToUse = "", ""
		}
	}
	if pl.stripped {
		last := &pl.entries[len(pl.entries)-1]
		last.rec.Description, last.rec.WhenToUse = "", ""
	}
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
	if p.over != nil {
		// Nothing listed: the load that lists the store again checks them.
		p.mu.Unlock()
		return
	}
	var all []listed
	for project, skills := range p.scopes {
		for name, e := range skills {
			all = append(all, listed{project, name, e})
		}
	}
	p.mu.Unlock()
	var g errgroup.Group
	g.SetLimit(backgroundParallel)
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

// digestCheck is what the check of one object found: the skill its files
// define, or why they are no skill (missing, damaged, not parsed).
type digestCheck struct {
	name string
	err  error
}

// verifyFlight is a read of an object in progress, which the records
// naming the same digest wait for rather than read it again.
type verifyFlight struct {
	done chan struct{}
	res  digestCheck
	ok   bool // the outcome is definite
}

// verifyReadCost is what a read costs the store's rate of object reads
// (Config.VerifyBytes) beside its bytes: many small objects are bounded
// as well as a few large ones.
const verifyReadCost = 64 << 10

// verify checks that rec's object exists, is intact (its files hash to
// the digest) and defines the skill rec names: a record failing that is
// not listed. Each object is read once per digest, whichever records name
// it (the skill it defines is remembered, and compared with each record's
// name), and reads take their turn in the store's rate of bytes read
// (Config.VerifyBytes): a flood of records waits, it is not dropped. A
// read that fails for another reason (NATS unreachable, a timeout) is not
// held against the record, nor remembered; Load reports it.
func (p *Provider) verify(ctx context.Context, rec Record) error {
	res, ok := p.checkDigest(ctx, rec.Digest)
	switch {
	case !ok:
		return nil
	case res.err != nil:
		return fmt.Errorf("skill %q: %w", rec.Name, res.err)
	case res.name != rec.Name:
		return fmt.Errorf("skill %q: its files (%s) define skill %q: %w", rec.Name, skillstore.Short(rec.Digest), res.name, ErrWrongSkill)
	}
	return nil
}

// checkDigest returns what the object of digest holds, reading it when no
// check of it is remembered or in progress; ok is false when the read
// failed for a reason that says nothing of the object.
func (p *Provider) checkDigest(ctx context.Context, digest string) (digestCheck, bool) {
	p.vmu.Lock()
	if res, ok := p.verified.Get(digest); ok {
		p.vmu.Unlock()
		return res, true
	}
	if f, ok := p.flights[digest]; ok {
		p.vmu.Unlock()
		select {
		case <-f.done:
			return f.res, f.ok
		case <-ctx.Done():
			return digestCheck{}, false
		}
	}
	f := &verifyFlight{done: make(chan struct{})}
	p.flights[digest] = f
	p.vmu.Unlock()
	f.res, f.ok = p.readDigest(ctx, digest)
	p.vmu.Lock()
	delete(p.flights, digest)
	if f.ok {
		p.verified.Add(digest, f.res)
	}
	p.vmu.Unlock()
	close(f.done)
	return f.res, f.ok
}

// readDigest reads and parses the object of digest, after its turn in
// the store's rate of reads.
func (p *Provider) readDigest(ctx context.Context, digest string) (digestCheck, bool) {
	// The turn is taken before the read's own deadline starts: waiting
	// is no failure of the object.
	if err := p.reads.WaitN(ctx, verifyReadCost); err != nil {
		return digestCheck{}, false
	}
	vctx, cancel := context.WithTimeout(ctx, verifyTimeout)
	defer cancel()
	files, err := skillstore.Fetch(vctx, p.obs, digest, p.lim)
	p.fetches.Add(1)
	var sk catalog.Skill
	if err == nil {
		var n int64
		for _, f := range files {
			n += int64(len(f.Data))
		}
		// The bytes are paid for after the read (their number is known
		// then): the next read waits for them.
		p.reads.WaitN(ctx, int(min(n, int64(p.reads.Burst()))))
		sk, err = parseSkill(files)
		if err != nil {
			err = fmt.Errorf("(%s): %w", skillstore.Short(digest), err)
		}
	}
	var pe *agentskills.ParseError
	definite := err == nil || errors.Is(err, skillstore.ErrObjectMissing) || errors.Is(err, skillstore.ErrBadArchive) || errors.As(err, &pe)
	if !definite {
		return digestCheck{}, false
	}
	return digestCheck{name: sk.Name, err: err}, true
}

// verifyTimeout bounds the check of one record's object: the watch waits
// for it.
const verifyTimeout = 5 * time.Second

// lastGood returns the newest valid revision of key before rev that the
// index still holds (its history), when no removal came after it; under a
// policy that requires signed revisions, the newest trusted one.
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
		sc, _, _ := parseKey(key)
		if v := p.view(); v.enforced(untrusted(v, sc, name, rec)) {
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
func (p *Provider) applyTo(idx map[string]map[string]entry, ctls *controls, use *usage, c change) func() {
	if c.ctl == nil && !c.bad && !c.keep {
		if c.trust == nil {
			delete(ctls.untrusted, c.key)
		} else {
			ctls.untrusted[c.key] = untrustedNote{revision: c.untrRev, require: c.require, kept: c.kept, err: c.trust, revoked: errors.Is(c.trust, ErrRevoked)}
			f := p.applyRecord(idx, ctls, use, c)
			return func() {
				p.warnTrust(c)
				if f != nil {
					f()
				}
			}
		}
	}
	return p.applyRecord(idx, ctls, use, c)
}

// applyRecord applies one checked change that is not a trust policy's
// finding to idx.
func (p *Provider) applyRecord(idx map[string]map[string]entry, ctls *controls, use *usage, c change) func() {
	if c.bad {
		return func() {
			p.warn(warnMalformed, c.key, "skill index entry skipped", "key", c.key, "revision", c.revision, "err", c.err)
		}
	}
	if c.ctl != nil {
		return p.applyControl(ctls, c)
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
				if errors.Is(c.err, ErrRecordBounds) {
					// Possibly pushed by an older skillstream, which did
					// not bound whenToUse.
					msg = "skill index entry over the bounds of a record (a description or whenToUse longer than a push publishes): " +
						"its last good revision, if the index's history holds one, stays listed; shorten the skill's text and push it again"
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
		if e, ok := skills[c.name]; ok {
			use.skills--
			use.bytes -= e.size
			delete(skills, c.name)
		}
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
	if e, ok := skills[c.name]; ok {
		use.skills--
		use.bytes -= e.size
	}
	e := entry{rec: c.rec, revision: c.revision, size: c.size}
	use.skills++
	use.bytes += e.size
	skills[c.name] = e
	return nil
}

// strip drops the texts of every entry of idx: a store over its bounds
// keeps of each skill what tells it apart (key, revision, digest, size)
// and no text, which a load fills in again once it is back within them.
func strip(idx map[string]map[string]entry) {
	for _, skills := range idx {
		for name, e := range skills {
			e.rec.Description, e.rec.WhenToUse = "", ""
			skills[name] = e
		}
	}
}

// ErrOverBounds reports a store whose view is over its bounds
// (Config.MaxSkills, Config.MaxSummaryBytes): it lists no skill until it
// is back within them.
var ErrOverBounds = errors.New("skill store over its bounds")

// overBounds says why use is over the store's bounds; nil when within.
func (p *Provider) overBounds(use usage) error {
	switch {
	case use.skills > p.cfg.MaxSkills:
		return fmt.Errorf("%w: %d skills, over %d", ErrOverBounds, use.skills, p.cfg.MaxSkills)
	case use.bytes > p.cfg.MaxSummaryBytes:
		return fmt.Errorf("%w: %d bytes of names, descriptions and whenToUse, over %d", ErrOverBounds, use.bytes, p.cfg.MaxSummaryBytes)
	}
	return nil
}

// bound applies the store's bounds to what scopes holds now, and returns
// what to report of a change of state (nil when none). p.mu must be held.
// Past a bound, the view is dropped and its texts let go (strip); back
// within, the store is loaded again (refill) and listed once loaded:
// until then it stays dropped.
func (p *Provider) bound() func() {
	why := p.overBounds(p.use)
	switch {
	case why != nil && p.over == nil:
		p.over = why
		p.overAt.Store(true)
		strip(p.scopes)
		p.closeAll()
		use := p.use
		return func() {
			p.warnAt(slog.LevelError, warnBounds, "bounds", "skill store over its bounds: its skills are not listed (the other sources are) until it is back within them; "+
				"find who publishes to it, and remove skills",
				"skills", use.skills, "summary_bytes", use.bytes, "max_skills", p.cfg.MaxSkills, "max_summary_bytes", p.cfg.MaxSummaryBytes, "err", why)
		}
	case why != nil:
		p.over = why
		p.refill = false
	case p.over != nil && !p.refill:
		p.refill = true
		select {
		case p.recheck <- struct{}{}:
		default:
		}
		use := p.use
		return func() {
			p.log.Info("skill store back within its bounds; loading it again", "bucket", p.cfg.Bucket, "skills", use.skills, "summary_bytes", use.bytes)
		}
	}
	return nil
}

// Bounds is what the store's view holds and, when it is over its
// bounds (its skills not listed), why (wrapping ErrOverBounds).
type Bounds struct {
	Skills          int
	SummaryBytes    int64
	MaxSkills       int
	MaxSummaryBytes int64
	Over            error
}

// Bounds reports what the store's view holds against its bounds.
func (p *Provider) Bounds() Bounds {
	p.mu.Lock()
	defer p.mu.Unlock()
	return Bounds{Skills: p.use.skills, SummaryBytes: p.use.bytes, MaxSkills: p.cfg.MaxSkills, MaxSummaryBytes: p.cfg.MaxSummaryBytes, Over: p.over}
}

// Diagnostics implements providers.Diagnoser: while the store is over
// its bounds, one diagnostic says so (for operators: it names the store's
// bucket, not a project's file, so no session is told).
func (p *Provider) Diagnostics(ctx context.Context, q catalog.Query) ([]providers.Diagnostic, error) {
	p.mu.Lock()
	over := p.over
	p.mu.Unlock()
	src := catalog.SourceStoreGlobal
	if p.cfg.Library {
		src = catalog.SourceLibrary
	}
	var out []providers.Diagnostic
	if over != nil {
		out = append(out, providers.Diagnostic{Source: src, Path: p.Store(), Reason: over.Error() + "; its skills are not listed"})
	}
	return append(out, p.trustDiagnostics(src)...), nil
}

// load checks the entries of a fresh watch (at most loadParallel objects
// read at once) and builds an index of them and of its releases and pins;
// a malformed value falls back to the key's last good revision in the
// index's history. The records are decoded first, and their objects
// checked only when the index is within the store's bounds: a store over
// them lists nothing.
func (p *Provider) load(ctx context.Context, pl *pendingLoad) (map[string]map[string]entry, *controls, usage) {
	cs := make([]change, len(pl.entries))
	var g errgroup.Group
	g.SetLimit(loadParallel)
	for i, d := range pl.entries {
		g.Go(func() error {
			c := p.checkDecoded(ctx, d, false)
			if c.keep && !pl.stripped && c.ctl == nil {
				// Entries of a fresh watch come one per key: the last good
				// revision is in the history.
				if prev, ok := p.lastGood(ctx, c.key, c.name, c.revision); ok {
					cs[i] = change{key: c.key, project: c.project, name: c.name, revision: prev.revision, rec: prev.rec, size: prev.rec.summaryBytes()}
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
	listed := func(c change) bool { return !c.bad && !c.keep && !c.remove && c.ctl == nil }
	var want usage
	for _, c := range cs {
		if listed(c) {
			want.skills++
			want.bytes += c.size
		}
	}
	if !p.cfg.LazyVerify && !pl.stripped && p.overBounds(want) == nil {
		for i := range cs {
			if !listed(cs[i]) {
				continue
			}
			g.Go(func() error {
				if err := p.verify(ctx, cs[i].rec); err != nil {
					cs[i].remove, cs[i].err = true, err
				}
				return nil
			})
		}
		g.Wait()
	}
	idx := make(map[string]map[string]entry)
	ctls := newControls()
	var use usage
	for _, c := range cs {
		if f := p.applyTo(idx, ctls, &use, c); f != nil {
			f()
		}
	}
	return idx, ctls, use
}

// loadParallel bounds the objects a load reads at once.
const loadParallel = 32

// backgroundParallel is how many objects the check after a lazy load
// reads at once: one, so that it takes at most one core from the member
// while its sessions are answered.
const backgroundParallel = 1

// Kinds of store warnings (the counter's label, see Config.OnWarning).
const (
	warnMalformed = "malformed_entry" // an index key or value that is not a skill's
	warnObject    = "bad_object"      // a record whose object is missing, damaged or another skill's
	warnWatch     = "watch"           // the index watch broke or the buckets changed
	warnBounds    = "over_bounds"     // the store's view went over its bounds
	warnUntrusted = "untrusted"       // a revision the trust policy does not trust
	warnRevoked   = "revoked"         // a revision whose digest or key the trust policy revokes
)

// warnEvery is how often one key's warnings are logged at most; the
// warnings in between are counted and their number logged with the next.
// Over every key, a store logs at most warnLines lines per warnEvery; the
// others are counted, and their number by kind logged once the minute is
// over.
const (
	warnEvery = time.Minute
	warnLines = 20
)

// warnState is the rate limit of one key's warnings.
type warnState struct {
	last       time.Time
	suppressed int
}

// warnWindow is the rate limit of a store's warnings: the lines logged in
// the current minute, and the warnings left out of it by kind.
type warnWindow struct {
	start   time.Time
	lines   int
	dropped map[string]int
	timer   *time.Timer // logs the summary of what was left out
}

// warn logs a warning about key at most once per warnEvery (with the
// number suppressed since the last one), and counts every one.
func (p *Provider) warn(kind, key, msg string, args ...any) {
	p.warnAt(slog.LevelWarn, kind, key, msg, args...)
}

// warnAt is warn at another level. Beside the limit per key, the store
// logs at most warnLines lines per warnEvery.
func (p *Provider) warnAt(level slog.Level, kind, key, msg string, args ...any) {
	if p.cfg.OnWarning != nil {
		p.cfg.OnWarning(kind)
	}
	p.vmu.Lock()
	p.warnings[kind]++
	st, ok := p.warned.Get(kind + "\x00" + key)
	now := time.Now()
	if ok && now.Sub(st.last) < p.cfg.warnEvery {
		st.suppressed++
		p.vmu.Unlock()
		return
	}
	w := &p.window
	if now.Sub(w.start) >= p.cfg.warnEvery {
		w.start, w.lines = now, 0
	}
	if w.lines >= warnLines {
		if w.dropped == nil {
			w.dropped = make(map[string]int)
		}
		if len(w.dropped) == 0 && p.ctx.Err() == nil {
			w.timer = time.AfterFunc(w.start.Add(p.cfg.warnEvery).Sub(now), p.warnSummary)
		}
		w.dropped[kind]++
		p.vmu.Unlock()
		return
	}
	w.lines++
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

// warnSummary logs how many warnings the store's limit left out of the
// last minute's lines, by kind.
func (p *Provider) warnSummary() {
	p.vmu.Lock()
	dropped := p.window.dropped
	p.window.dropped, p.window.timer = nil, nil
	p.vmu.Unlock()
	if len(dropped) == 0 {
		return
	}
	args := []any{"bucket", p.cfg.Bucket, "per_minute", warnLines}
	total := 0
	for _, kind := range []string{warnMalformed, warnObject, warnBounds, warnWatch, warnUntrusted, warnRevoked} {
		if n := dropped[kind]; n > 0 {
			args = append(args, kind, n)
			total += n
		}
	}
	p.log.Warn(fmt.Sprintf("%d skill store warnings not logged in the last minute (each is counted)", total), args...)
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
func (p *Provider) swap(idx map[string]map[string]entry, ctls *controls, use usage, rev uint64, epoch string, stripped bool) {
	p.mu.Lock()
	p.scopes, p.ctl, p.use = idx, ctls, use
	p.releases = nil
	wasOver := p.over != nil
	p.over, p.refill = nil, false
	p.overAt.Store(false)
	report := p.bound()
	if stripped && p.over == nil {
		// The load went past the bounds and let go of the texts, and
		// removals delivered later brought it back within them: it is
		// loaded again, and listed then.
		p.over = fmt.Errorf("%w while loading: loading again", ErrOverBounds)
		p.overAt.Store(true)
		p.refill = true
		select {
		case p.recheck <- struct{}{}:
		default:
		}
	}
	if wasOver && p.over == nil {
		report = func() {
			p.log.Info("skill store within its bounds again: its skills are listed", "bucket", p.cfg.Bucket, "skills", use.skills, "summary_bytes", use.bytes)
		}
	}
	if wasOver && p.over != nil {
		report = nil // still over: reported when it went over
	}
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
	if report != nil {
		report()
	}
}

// apply checks one change and applies it to the live index.
func (p *Provider) apply(ctx context.Context, e jetstream.KeyValueEntry) {
	// While the store is over its bounds no object is read: nothing is
	// listed, and the load that lists the store again checks them.
	c := p.check(ctx, e, !p.overAt.Load())
	p.mu.Lock()
	warn := p.applyTo(p.scopes, p.ctl, &p.use, c)
	p.releases = nil
	if p.over != nil && !c.bad && !c.keep && !c.remove && c.ctl == nil {
		skills := p.scopes[c.project]
		ent := skills[c.name]
		ent.rec.Description, ent.rec.WhenToUse = "", ""
		skills[c.name] = ent
	}
	report := p.bound()
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
	if report != nil {
		report()
	}
}

// pause waits d, or until the provider closes: it reports whether the
// provider is still open.
func (p *Provider) pause(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
