package processor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
)

// Processor consumes session triggers and appends and returns their answers.
// One Processor is one instance of the consumer group; run as many as you
// like against one stream.
type Processor struct {
	nc          *nats.Conn
	js          jetstream.JetStream
	skills      Skills
	cfg         Config
	log         *slog.Logger
	m           *metrics
	rd          *reader
	hooks       hooks
	now         func() time.Time
	ready       chan struct{}
	stopping    atomic.Bool   // set once Run's ctx is done: acknowledgements are then confirmed
	version     string        // of the binary, for the micro service
	statsPeriod time.Duration // consumerStatsPeriod; shorter in tests

	beats      *heartbeats   // progress heartbeats of the triggers in flight
	recognised *recognitions // conclusions of recognise, by stream sequence
	inflight   *budget       // Config.InflightBytes
	limit      messageLimit  // the largest output; the stream's part is known once provisioned
	cwds       cwdRoots      // Config.CwdRoots

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
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if o.logger == nil {
		o.logger = slog.Default()
	}
	m, err := newMetrics(o.registerer)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("jetstream context: %w", err)
	}
	p := &Processor{
		nc:          nc,
		js:          js,
		skills:      skills,
		cfg:         cfg,
		log:         o.logger,
		m:           m,
		rd:          newReader(nc, cfg.Stream),
		hooks:       o.hooks,
		now:         time.Now,
		ready:       make(chan struct{}),
		version:     o.version,
		statsPeriod: consumerStatsPeriod,

		beats:      newHeartbeats(cfg.AckWait / 3),
		recognised: newRecognitions(recognitionMemoSize),
		inflight:   newBudget(cfg.InflightBytes),
		limit:      newMessageLimit(nc.MaxPayload(), 0),
		cwds:       newCwdRoots(cfg.CwdRoots),

		recheckPeriod: divergenceRecheck,
	}
	p.divergences = newDivergences(p)
	return p, nil
}

// Config returns the processor's defaulted configuration.
func (p *Processor) Config() Config { return p.cfg }

// Ready is closed once Run consumes triggers.
func (p *Processor) Ready() <-chan struct{} { return p.ready }

// Run provisions (or checks) stream and consumer, serves the tool
// definition, and handles triggers until ctx is done. It then stops pulling,
// finishes the triggers already received and returns nil. Errors are
// returned only for a failed start; a start interrupted by ctx returns nil.
// Run may be called once.
func (p *Processor) Run(ctx context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, 4*p.cfg.RequestTimeout)
	cons, err := p.provision(pctx)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	if err := checkLimits(p.cfg.Catalog, p.limit); err != nil {
		return err
	}
	if p.cfg.Catalog.MaxLength == 0 || p.cfg.Catalog.MaxSkillBytes == 0 {
		p.log.Warn("a size limit is off: outputs over the message limit are answered with a too_large error",
			"catalog_max_length", p.cfg.Catalog.MaxLength, "max_skill_bytes", p.cfg.Catalog.MaxSkillBytes, "message_limit", p.limit.max)
	}
	svc, err := p.serveDefinition()
	if err != nil {
		return err
	}
	defer svc.Stop()
	defer p.rd.close()

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
	pulled := make(chan struct{})
	go func() {
		defer close(pulled)
		defer close(jobs)
		p.pull(ctx, cons, slots, func(msg jetstream.Msg) { jobs <- msg })
	}()
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
	p.log.Info("processor started", "stream", p.cfg.Stream, "consumer", p.cfg.Consumer,
		"prefix", p.cfg.Prefix, "workers", p.cfg.Workers, "owner", p.cfg.ToolOwner, "instance", p.cfg.Instance)
	<-ctx.Done()
	p.stopping.Store(true)
	// The pull loop issues no new pull request, hands back whatever the
	// open one still delivers, and returns when it has ended (at most
	// pullExpiry later): nothing is left in transit.
	<-pulled
	wg.Wait()
	p.log.Info("processor stopped")
	return nil
}

// pull is the consumer loop: one pull request at a time, for as many
// triggers as there are free workers, each started with start once it holds
// a slot. Unlike a subscription withdrawn at shutdown, whose pull request
// may still be delivering to it, pull keeps reading the open request until
// the server ends it: every trigger delivered to this instance is either
// started or handed back, none is left waiting for the ack wait.
func (p *Processor) pull(ctx context.Context, cons jetstream.Consumer, slots chan struct{}, start func(jetstream.Msg)) {
	for ctx.Err() == nil {
		// Wait for one free worker, then ask for as many triggers as are
		// free: each delivered trigger finds its slot at once.
		select {
		case slots <- struct{}{}:
		case <-ctx.Done():
			return
		}
		n := 1 + cap(slots) - len(slots)
		<-slots
		// No idle heartbeat: a fetch that gave up on missed heartbeats
		// would withdraw its inbox while the server may still deliver to
		// it. A lost pull request costs at most pullExpiry.
		batch, err := cons.Fetch(n, jetstream.FetchMaxWait(pullExpiry))
		if err != nil {
			p.log.Debug("pull", "err", err)
			if pause(ctx, pullRetry) != nil {
				return
			}
			continue
		}
		for msg := range batch.Messages() {
			if ctx.Err() != nil {
				p.handBack(msg)
				continue
			}
			select {
			case slots <- struct{}{}:
				start(msg)
			case <-ctx.Done():
				p.handBack(msg)
			}
		}
		if err := batch.Error(); err != nil && !errors.Is(err, nats.ErrTimeout) {
			p.log.Debug("pull", "err", err)
			if pause(ctx, pullRetry) != nil {
				return
			}
		}
	}
}

// settle sends an acknowledgement (ack, nak or term) for msg. While the
// processor runs it is one publication. Once it is stopping, settle waits
// until the server confirms it has applied the acknowledgement to the
// consumer: the server only queues a plain one, and one still queued when
// the server stops (an embedded server stopping with serve) is lost, its
// trigger then waiting a whole ack wait for redelivery.
func (p *Processor) settle(msg jetstream.Msg, ack []byte) error {
	reply := msg.Reply()
	if reply == "" {
		return jetstream.ErrMsgNoReply
	}
	if !p.stopping.Load() {
		return p.nc.Publish(reply, ack)
	}
	_, err := p.nc.Request(reply, ack, p.cfg.RequestTimeout)
	return err
}

// nakWithDelay is the body of a negative acknowledgement asking for
// redelivery after d.
func nakWithDelay(d time.Duration) []byte {
	return fmt.Appendf(nil, `-NAK {"delay": %d}`, d.Nanoseconds())
}

// handBack returns a trigger the processor received but will not start
// because it is stopping: negatively acknowledged after NakDelay (not at
// once, so that it does not come straight back to this instance's pull
// request, which is being withdrawn).
func (p *Processor) handBack(msg jetstream.Msg) {
	p.m.handedBack.Inc()
	if err := p.settle(msg, nakWithDelay(p.cfg.NakDelay)); err != nil {
		p.log.Warn("hand back trigger at shutdown", "subject", msg.Subject(), "err", err)
	}
}

// consumerStatsPeriod is how often the consumer's backlog gauges are read.
const consumerStatsPeriod = 5 * time.Second

// watchConsumer keeps the consumer_pending and consumer_ack_pending gauges
// up to date, reading the consumer's info at once and then every
// statsPeriod (consumerStatsPeriod), until ctx is done.
func (p *Processor) watchConsumer(ctx context.Context, cons jetstream.Consumer) {
	tick := time.NewTicker(p.statsPeriod)
	defer tick.Stop()
	for {
		rctx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
		info, err := cons.Info(rctx)
		cancel()
		switch {
		case err != nil && ctx.Err() == nil:
			p.log.Debug("read consumer info", "consumer", p.cfg.Consumer, "err", err)
		case err == nil:
			p.m.pending.Set(float64(info.NumPending))
			p.m.ackPending.Set(float64(info.NumAckPending))
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Pull request timing: a pull request lives at most pullExpiry, so a lost
// one (or one held by a consumer leader that went away) is replaced within
// a second, and shutdown waits at most that long for the last one to end;
// after a failed pull the next one waits pullRetry.
const (
	pullExpiry = time.Second
	pullRetry  = 250 * time.Millisecond
)

// trigger is one delivery being handled.
type trigger struct {
	msg       jetstream.Msg
	seq       uint64
	delivered uint64
	last      bool // this is the last delivery MaxDeliver allows
	sid       string
	kind      events.Kind
	enc       events.Encoding
	inbox     string
	ref       string // step or call id, once read
	start     time.Time
}

// kindLabel is the metrics label of a trigger kind.
func kindLabel(k events.Kind) string {
	switch k {
	case events.KindPreStep:
		return "pre-step"
	case events.KindSkillCall:
		return "skill-call"
	}
	return "other"
}

// handle runs one delivery to its fate: it never panics and always acks,
// naks or terms the message, except when a test hook simulates a crash.
func (p *Processor) handle(ctx context.Context, msg jetstream.Msg) {
	if p.hooks.take != nil && !p.hooks.take(msg) {
		_ = msg.Nak()
		return
	}
	t := &trigger{msg: msg, start: p.now()}
	p.m.inflight.Inc()
	defer p.m.inflight.Dec()
	defer func() {
		// Last line of defence: a panic while answering a failure.
		if r := recover(); r != nil {
			p.m.panics.Inc()
			p.log.Error("panic finishing trigger", "subject", msg.Subject(), "seq", t.seq, "panic", r)
			_ = msg.TermWithReason("panic")
		}
	}()
	err := p.safely(ctx, t)
	if errors.Is(err, errCrash) {
		return
	}
	f := fateOf(err, t.last)
	switch {
	case err == nil:
	case f == fateTerm && errors.Is(err, ErrRejected):
		// counted and answered where rejected
	case errors.Is(err, errTooLarge):
		p.m.tooLarge.WithLabelValues(kindLabel(t.kind)).Inc()
		p.log.Error("output too large for one message; answered with an error, not retried", "subject", msg.Subject(),
			"seq", t.seq, "err", err)
		p.answerTooLarge(t, err)
	case errors.Is(err, errPanic):
		p.m.panics.Inc()
		p.log.Error("panic handling trigger", "subject", msg.Subject(), "seq", t.seq, "err", err)
		p.answerFailure(t, err)
	case f == fateTerm:
		p.m.deadLetters.WithLabelValues(kindLabel(t.kind)).Inc()
		p.log.Error("trigger dead-lettered after its last delivery", "subject", msg.Subject(),
			"seq", t.seq, "deliveries", t.delivered, "err", err)
		p.answerFailure(t, err)
	case f == fateRetry:
		p.m.transient.WithLabelValues(kindLabel(t.kind)).Inc()
		p.log.Warn("trigger failed, will retry", "subject", msg.Subject(), "seq", t.seq,
			"delivery", t.delivered, "err", err)
	}
	var ackErr error
	switch f {
	case fateAck:
		ackErr = p.settle(msg, []byte("+ACK"))
	case fateTerm:
		ackErr = p.settle(msg, []byte("+TERM "+termReason(err)))
	case fateRetry:
		ackErr = p.settle(msg, nakWithDelay(p.nakDelay(t.delivered)))
	}
	if ackErr != nil {
		// The server redelivers after AckWait; the answer is idempotent.
		p.log.Warn("acknowledge trigger", "subject", msg.Subject(), "seq", t.seq, "fate", f, "err", ackErr)
	}
	p.m.latency.WithLabelValues(stageTotal).Observe(p.now().Sub(t.start).Seconds())
}

// safely runs process, turning a panic into errPanic.
func (p *Processor) safely(ctx context.Context, t *trigger) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", errPanic, r)
		}
	}()
	return p.process(ctx, t)
}

// nakDelay is the redelivery delay after the given delivery failed:
// NakDelay doubling per delivery, capped at AckWait.
func (p *Processor) nakDelay(delivered uint64) time.Duration {
	d := p.cfg.NakDelay
	for i := uint64(1); i < delivered && d < p.cfg.AckWait; i++ {
		d *= 2
	}
	return min(d, p.cfg.AckWait)
}

// process reads the delivery's envelope and dispatches it by kind.
func (p *Processor) process(ctx context.Context, t *trigger) error {
	meta, err := t.msg.Metadata()
	if err != nil {
		return p.reject(t, reasonEnvelope, fmt.Errorf("read delivery metadata: %w", err))
	}
	t.seq = meta.Sequence.Stream
	t.delivered = meta.NumDelivered
	t.last = p.cfg.MaxDeliver > 0 && meta.NumDelivered >= uint64(p.cfg.MaxDeliver)
	sid, kind, err := events.ParseSubject(p.cfg.Prefix, t.msg.Subject())
	t.sid, t.kind = sid, kind
	if err != nil {
		// Keep what can be read, to address the rejection.
		rest, _ := strings.CutPrefix(t.msg.Subject(), p.cfg.Prefix+".")
		s, k, _ := strings.Cut(rest, ".")
		t.sid, t.kind = s, events.Kind(k)
	}
	if t.delivered > 1 {
		p.m.redeliveries.WithLabelValues(kindLabel(kind)).Inc()
	}
	h := t.msg.Headers()
	t.enc, _ = events.EncodingOf(h.Get(events.HeaderContentType))
	inbox := h.Get(events.HeaderReplyInbox)
	if inbox != "" {
		if err := p.cfg.checkInbox(inbox); err != nil {
			// Answered nowhere: the subject is not one to answer on.
			return p.reject(t, reasonInbox, fmt.Errorf("header %s: %w", events.HeaderReplyInbox, err))
		}
	}
	t.inbox = inbox
	if err != nil {
		return p.reject(t, reasonSubject, fmt.Errorf("subject %q: %w", t.msg.Subject(), err))
	}
	if kind != events.KindPreStep && kind != events.KindSkillCall {
		// A consumer filtered wider than ours: not our business.
		return nil
	}
	if _, err := events.EncodingOf(h.Get(events.HeaderContentType)); err != nil {
		return p.reject(t, reasonEncoding, fmt.Errorf("header %s: %w", events.HeaderContentType, err))
	}
	stop := p.keepAlive(t.msg)
	defer stop()
	if kind == events.KindPreStep {
		return p.preStep(ctx, t)
	}
	return p.skillCall(ctx, t)
}

// keepAlive tells the server that the delivery is still being worked on,
// about every AckWait/3 from now, until the returned function is called; no
// heartbeat is sent once it returns. One loop (heartbeats) serves every
// trigger in flight: most finish long before their first heartbeat is due,
// so a goroutine and a ticker each would be wasted.
func (p *Processor) keepAlive(msg jetstream.Msg) (stop func()) {
	return p.beats.add(msg, p.now().Add(p.cfg.AckWait/3))
}

// heartbeats sends the progress heartbeats of the triggers in flight.
type heartbeats struct {
	period time.Duration // between two heartbeats of one trigger

	mu     sync.Mutex
	beat   map[*beating]struct{}
	closed chan struct{}
}

type beating struct {
	msg jetstream.Msg
	due time.Time
}

func newHeartbeats(period time.Duration) *heartbeats {
	return &heartbeats{period: period, beat: make(map[*beating]struct{}), closed: make(chan struct{})}
}

func (h *heartbeats) add(msg jetstream.Msg, due time.Time) func() {
	b := &beating{msg: msg, due: due}
	h.mu.Lock()
	h.beat[b] = struct{}{}
	h.mu.Unlock()
	return func() {
		h.mu.Lock()
		delete(h.beat, b)
		h.mu.Unlock()
	}
}

// run sends due heartbeats until stop is closed. It looks every period/2,
// so a heartbeat goes out at most AckWait/3 + AckWait/6 = AckWait/2 after
// the previous one (or the start), well within AckWait.
func (h *heartbeats) run(stop <-chan struct{}, now func() time.Time) {
	defer close(h.closed)
	tick := time.NewTicker(h.period / 2)
	defer tick.Stop()
	for {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		t := now()
		h.mu.Lock() // held while sending: no heartbeat once a trigger's stop returned
		for b := range h.beat {
			if !t.Before(b.due) {
				_ = b.msg.InProgress() // a lost heartbeat at worst means a redelivery
				b.due = t.Add(h.period)
			}
		}
		h.mu.Unlock()
	}
}
