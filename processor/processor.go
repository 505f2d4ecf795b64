package processor

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/history"
)

// Processor consumes session triggers and appends and returns their answers.
// One Processor is one instance of the consumer group; run as many as you
// like against one stream.
type Processor struct {
	idKey       []byte    // the key of output Msg-Ids (outputkey.go); nil: none
	legacyUntil time.Time // until when the stream may hold older output Msg-Ids (outputkey.go)
	replicated  bool      // the stream has replicas (outputkey.go's probe)
	nc          *nats.Conn
	js          jetstream.JetStream
	skills      Skills
	search      Searcher // the search index; nil without Config.Catalog.SkillSearch
	cfg         Config
	log         *slog.Logger
	m           *metrics
	rd          *reader
	hooks       hooks
	now         func() time.Time
	ready       chan struct{}
	onReady     func()                 // WithOnReady
	probe       atomic.Pointer[string] // the reply prefix of the self-check's requests while it runs (tooldef.go)
	stopping    atomic.Bool            // set once Run's ctx is done: acknowledgements are then confirmed
	version     string                 // of the binary, for the micro service
	statsPeriod time.Duration          // consumerStatsPeriod; shorter in tests

	beats      *heartbeats      // progress heartbeats of the triggers in flight
	recognised *recognitions    // conclusions of recognise, by stream sequence
	bodies     *catalogBodies   // catalogs' shared parts, encoded once (prestep.go)
	ranker     Ranker           // the tenant's use, for Rank use (rank.go); nil: none
	rankings   *sessionRankings // sessions' kept rankings (rank.go)
	// recordedOptions: the options that shape model text, as every catalog
	// record carries them (RecordedOptions).
	recordedOptions *events.CatalogOptions
	heads           *heads                      // sessions' newest large catalogs, read by their heads (head.go)
	chains          *chains                     // sessions' current lists made of change lists, and lists by digest (chain.go)
	headMin         int                         // catalogs of this many bytes get a head; 0: none (catalogHeadMin)
	kinds           map[events.Kind]kindHandler // the kinds consumed (trigger.go)
	inflight        *budget                     // Config.InflightBytes
	rate            *triggerRate                // Config.MaxTriggerRate
	spent           *outputBudget               // Config.CatalogResends, CatalogBytes, InvocationBytes (outbudget.go)
	limit           messageLimit                // the largest output; the stream's part is known once provisioned
	streamLimits    StreamLimits                // the stream's, once provisioned (provision.go)
	prepared        jetstream.Consumer          // the consumer, once Prepare succeeded
	cwds            cwdRoots                    // Config.CwdRoots

	divergences   *divergences  // view divergences found and not resolved (view.go)
	recheckPeriod time.Duration // divergenceRecheck; shorter in tests
}

// New checks cfg (after WithDefaults) and builds a Processor. Nothing
// touches the server before Run.
func New(nc *nats.Conn, skills Skills, cfg Config, opts ...Option) (*Processor, error) {
	if nc == nil {
		return nil, fmt.Errorf("%w: no NATS connection", ErrInvalidConfig)
	}
	if skills == nil {
		return nil, fmt.Errorf("%w: no skill registry", ErrInvalidConfig)
	}
	cfg = cfg.WithDefaults()
	if cfg.Instance == "" {
		cfg.Instance = DefaultInstance()
	}
	own := strings.TrimSuffix(nc.Opts.InboxPrefix, ".")
	if cfg.InboxPrefix == "" {
		cfg.InboxPrefix = own
	} else if normalPrefix(cfg.InboxPrefix) != own {
		return nil, fmt.Errorf("%w: inbox prefix %q, but the connection's is %q: connect with nats.CustomInboxPrefix", ErrInvalidConfig, cfg.InboxPrefix, own)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if cfg.Catalog.SkillSearch && o.search == nil {
		return nil, fmt.Errorf("%w: skill search is on but no search index was given (WithSearcher)", ErrInvalidConfig)
	}
	if o.logger == nil {
		o.logger = slog.Default()
	}
	m, err := newMetrics(o.registerer)
	if err != nil {
		return nil, err
	}
	m.skills.limit = cfg.SkillLabelLimit
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("jetstream context: %w", err)
	}
	p := &Processor{
		nc:          nc,
		js:          js,
		skills:      skills,
		search:      o.search,
		ranker:      o.ranker,
		rankings:    newSessionRankings(),
		cfg:         cfg,
		log:         o.logger,
		m:           m,
		rd:          newReader(nc, cfg.Stream),
		hooks:       o.hooks,
		now:         time.Now,
		ready:       make(chan struct{}),
		onReady:     o.onReady,
		version:     o.version,
		statsPeriod: consumerStatsPeriod,

		beats:           newHeartbeats(cfg.AckWait / 3),
		recognised:      newRecognitions(recognitionMemoSize),
		bodies:          newCatalogBodies(),
		recordedOptions: RecordedOptions(cfg),
		heads:           newHeads(),
		chains:          newChains(),
		headMin:         catalogHeadMin,
		inflight:        newBudget(cfg.InflightBytes),
		rate:            newTriggerRate(cfg.MaxTriggerRate),
		spent:           newOutputBudget(cfg),
		limit:           newMessageLimit(nc.MaxPayload(), 0),
		cwds:            newCwdRoots(cfg.CwdRoots),

		recheckPeriod: divergenceRecheck,
	}
	p.kinds = kindHandlers(p)
	p.divergences = newDivergences(p)
	return p, nil
}

// Config returns the processor's defaulted configuration.
func (p *Processor) Config() Config { return p.cfg }

// Ready is closed once Run serves: its consumer pulls and every endpoint
// of its micro service answers (see Run).
func (p *Processor) Ready() <-chan struct{} { return p.ready }

// Prepare does what Run does first: it provisions (or checks) stream and
// consumer, and checks the size limits against the largest message the
// server and the stream take. A caller that wants a bad configuration
// refused before it announces that it serves calls Prepare, then Run, which
// does not do it again. An error names what is wrong, with the numbers.
func (p *Processor) Prepare(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, 4*p.cfg.RequestTimeout)
	cons, err := p.provision(pctx)
	if err == nil {
		err = p.loadOutputKey(pctx)
	}
	cancel()
	if err != nil {
		return err
	}
	if err := checkLimits(p.cfg.Catalog, p.limit); err != nil {
		return err
	}
	p.prepared = cons
	return nil
}

// Run prepares (see Prepare) unless that was done, starts pulling
// triggers, serves the tool definition, and handles triggers until ctx is
// done. It then stops pulling, finishes the triggers already received and
// returns nil. Errors are returned only for a failed start; a start
// interrupted by ctx returns nil. Run may be called once.
//
// Ready is closed once the processor serves: its skills were listed and
// the catalog without a project prepared (warm, before the first pull),
// its consumer's first pull request has reached the server, and the micro
// service, registered only then, has answered a request of the
// processor's own on each endpoint, sent through the server. A worker told
// at that moment that the processor serves finds a responder on every
// endpoint.
func (p *Processor) Run(ctx context.Context) error {
	if p.prepared == nil {
		if err := p.Prepare(ctx); err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
	cons := p.prepared
	defer p.rd.close()
	// The skills are listed before the first pull: triggers that come
	// meanwhile stay with the members that are ready (or in the stream),
	// instead of waiting here for the listing.
	p.warm(ctx)
	if ctx.Err() != nil {
		return nil
	}

	// In-flight triggers finish even when ctx ends: they run on a context
	// that is never cancelled, bounded by their own deadlines.
	work := context.WithoutCancel(ctx)
	beatsDone := make(chan struct{})
	go p.beats.run(beatsDone, p.now)
	defer func() {
		close(beatsDone) // after every trigger finished (wg.Wait below)
		<-p.beats.closed
	}()
	// A fixed pool of workers, each holding a slot while it handles one
	// trigger: a worker's goroutine lives as long as the processor, so the
	// stack a trigger grew is there for the next one.
	var wg sync.WaitGroup
	slots := make(chan struct{}, p.cfg.Workers)
	jobs := make(chan jetstream.Msg)
	for range p.cfg.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for msg := range jobs {
				p.handle(work, msg)
				<-slots
			}
		}()
	}
	// The pull loop has a context of its own, so that a failed start stops
	// it as a stop does.
	pctx, stopPulling := context.WithCancel(ctx)
	defer stopPulling()
	pulling, pulled := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(pulled)
		defer close(jobs)
		p.pull(pctx, cons, slots, func(msg jetstream.Msg) { jobs <- msg }, pulling)
	}()
	// drain ends the pull loop's last request and waits for every trigger
	// received.
	drain := func() {
		p.stopping.Store(true)
		stopPulling()
		<-pulled
		wg.Wait()
	}
	svc, err := p.start(pctx, pulling, pulled)
	if err != nil {
		drain()
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	defer svc.Stop()
	sctx, stopStats := context.WithCancel(context.WithoutCancel(ctx))
	statsDone := make(chan struct{})
	go func() {
		defer close(statsDone)
		p.watchConsumer(sctx, cons)
	}()
	recheckDone := make(chan struct{})
	go func() {
		defer close(recheckDone)
		p.recheckDivergences(sctx, p.recheckPeriod)
	}()
	defer func() {
		stopStats()
		<-statsDone
		<-recheckDone
		p.divergences.clear()
	}()
	close(p.ready)
	if p.onReady != nil {
		p.onReady()
	}
	p.log.Info("processor started", "stream", p.cfg.Stream, "consumer", p.cfg.Consumer,
		"prefix", p.cfg.Prefix, "session_layout", p.cfg.Layout.String(), "workers", p.cfg.Workers, "owner", p.cfg.ToolOwner, "instance", p.cfg.Instance)
	if p.cfg.Catalog.MaxLength == 0 || p.cfg.Catalog.MaxSkillBytes == 0 {
		p.log.Warn("a size limit is off: outputs over the message limit are answered with a too_large error",
			"catalog_max_length", p.cfg.Catalog.MaxLength, "max_skill_bytes", p.cfg.Catalog.MaxSkillBytes, "message_limit", p.limit.max)
	}
	<-ctx.Done()
	// The pull loop issues no new pull request, hands back whatever the
	// open one still delivers, and returns when it has ended (at most
	// pullExpiry later): nothing is left in transit.
	drain()
	p.log.Info("processor stopped")
	return nil
}

// warm lists the skills and prepares the catalog of a session without a
// working directory before the processor pulls its first trigger, so that
// no session waits on a starting member for a scan of every skill folder
// and the preparation of every entry (tens of milliseconds at a thousand
// skills, hundreds at ten thousand): triggers sent meanwhile go to the
// members that are ready, or wait in the stream. Sessions in project
// folders then share the scan. It waits warmMax (or RequestTimeout) at
// most, even for a provider that ignores its context, and survives a
// provider's panic: the first pre-step then does the work, and answers
// for it.
func (p *Processor) warm(ctx context.Context) {
	wctx, cancel := context.WithTimeout(ctx, min(p.cfg.RequestTimeout, warmMax))
	defer cancel()
	done := make(chan struct{})
	start := p.now()
	go func() {
		defer close(done)
		defer func() {
			if r := recover(); r != nil {
				p.log.Error("prepare the catalog before serving: a provider panicked", "panic", fmt.Sprint(r))
			}
		}()
		v, err := history.Prepare(wctx, p.skills, catalog.Query{}, p.offered(nil))
		if err != nil {
			p.log.Debug("prepare the catalog before serving", "err", err)
			return
		}
		p.log.Debug("catalog prepared before serving", "skills", len(v.Entries), "took", p.now().Sub(start))
	}()
	select {
	case <-done:
	case <-wctx.Done():
		p.log.Debug("prepare the catalog before serving: not done in time; serving meanwhile", "waited", p.now().Sub(start))
	}
}

// warmMax bounds how long a start waits for the skills to be listed.
const warmMax = 2 * time.Second
