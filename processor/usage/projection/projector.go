package projection

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/usage"
)

// bodyKeys bounds the catalog bodies whose names a projector remembers.
const bodyKeys = 512

// Defaults of Options.
const (
	DefaultBucket     = "USAGE"
	DefaultConsumer   = "skillstream-usage"
	DefaultBatch      = 1000
	DefaultFlushWait  = time.Second
	DefaultWriteEvery = 2 * time.Second
	DefaultLeaseTTL   = 15 * time.Second
)

// The bucket's keys besides the hours.
const (
	posKey   = "pos"
	leaseKey = "lease"
)

// positionVersion is the version of the position's format.
const positionVersion = 1

// ErrStale ends a projector's term: the projection was rebuilt or taken
// over meanwhile (its position is of another generation or was written
// by someone else).
var ErrStale = errors.New("usage projection changed under this projector")

// errCaughtUp ends a term that read the whole stream (it started far
// behind) once it has caught up: the next term reads outputs only.
var errCaughtUp = errors.New("usage projection: caught up")

// errGap ends a term: a delivery of the consumer went to someone else, or
// was lost, so the next one may not follow the last applied in order.
var errGap = errors.New("usage projection: a delivery is missing (another reader of the consumer, or a lost message)")

// Options configure a Projector, Rebuild and Read.
type Options struct {
	// Stream, Prefix and Layout say where the sessions are.
	Stream, Prefix string
	Layout         events.Layout
	// Bucket is the key-value bucket of the projection (DefaultBucket).
	Bucket string
	// Consumer is the durable consumer feeding it (DefaultConsumer).
	Consumer string
	// Instance names this projector in the lease (default: host name and
	// a random suffix).
	Instance string
	// Replicas of the bucket when a projector creates it (default: the
	// stream's).
	Replicas int
	// NoProvision: use the bucket only if it exists; never create it.
	NoProvision bool
	// Batch is how many records one fetch takes at most (DefaultBatch);
	// FlushWait (DefaultFlushWait) how long a fetch waits for them while
	// the projector catches up, and how long a live projector waits
	// after a fetch that took everything there was: it reads the records
	// appended meanwhile in one burst, and lags the stream by up to
	// FlushWait more.
	Batch     int
	FlushWait time.Duration
	// WriteEvery is how often a projector writes while records keep
	// coming (DefaultWriteEvery): the projection lags the stream by about
	// that much under load.
	WriteEvery time.Duration
	// LeaseTTL is how long a lease holder that stopped renewing keeps the
	// lease (DefaultLeaseTTL): another member takes over after it.
	LeaseTTL time.Duration
	// Logger and Registerer, when set, get the projector's logs and
	// metrics.
	Logger     *slog.Logger
	Registerer prometheus.Registerer
}

var nameRE = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// withDefaults fills what is unset and checks the rest.
func (o Options) withDefaults() (Options, error) {
	if o.Prefix == "" {
		o.Prefix = events.DefaultPrefix
	}
	if err := events.ValidatePrefix(o.Prefix); err != nil {
		return o, err
	}
	if o.Stream == "" {
		return o, errors.New("usage projection: no stream named")
	}
	if !o.Layout.Valid() {
		return o, fmt.Errorf("usage projection: unknown session layout %v", o.Layout)
	}
	if o.Bucket == "" {
		o.Bucket = DefaultBucket
	}
	if !nameRE.MatchString(o.Bucket) {
		return o, fmt.Errorf("usage projection: bucket name %q: want letters, digits, _ and - only", o.Bucket)
	}
	if o.Consumer == "" {
		o.Consumer = DefaultConsumer
	}
	if !nameRE.MatchString(o.Consumer) {
		return o, fmt.Errorf("usage projection: consumer name %q: want letters, digits, _ and - only", o.Consumer)
	}
	if o.Instance == "" {
		host, _ := os.Hostname()
		o.Instance = fmt.Sprintf("%s-%06x", host, rand.Uint32()&0xffffff)
	}
	if o.Batch <= 0 {
		o.Batch = DefaultBatch
	}
	if o.FlushWait <= 0 {
		o.FlushWait = DefaultFlushWait
	}
	if o.WriteEvery <= 0 {
		o.WriteEvery = DefaultWriteEvery
	}
	if o.LeaseTTL <= 0 {
		o.LeaseTTL = DefaultLeaseTTL
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}

// filters are the output subjects of layout l under prefix.
func filters(l events.Layout, prefix string) []string {
	return []string{
		events.TriggerFilterIn(l, prefix, events.KindCatalog),
		events.TriggerFilterIn(l, prefix, events.KindToolResult),
		events.TriggerFilterIn(l, prefix, usage.KindInvocation),
	}
}

// outputKinds are the kinds the projection counts.
var outputKinds = []string{string(events.KindCatalog), string(events.KindToolResult), string(usage.KindInvocation)}

// isOutput reports whether subject is one of the output subjects of
// layout l (filters): the prefix, one session token per token of a
// session id (any token, valid or not), and an output kind.
func isOutput(l events.Layout, prefix, subject string) bool {
	rest, ok := strings.CutPrefix(subject, prefix+".")
	if !ok {
		return false
	}
	for range l.SessionTokens() {
		_, after, ok := strings.Cut(rest, ".")
		if !ok {
			return false
		}
		rest = after
	}
	return slices.Contains(outputKinds, rest)
}

// Position is the projection's position, under the key "pos": which
// stream it projects, and up to which sequence.
type Position struct {
	V int `json:"v"`
	// Gen tells the projection's generations apart: a rebuild starts a
	// new one, and hour buckets of another generation are not counted.
	Gen    uint64        `json:"gen"`
	Stream string        `json:"stream"`
	Prefix string        `json:"prefix"`
	Layout events.Layout `json:"layout"`
	// Seq is the stream sequence up to which every output record is
	// applied; Time is that record's time.
	Seq  uint64    `json:"seq"`
	Time time.Time `json:"time,omitzero"`
	// From is where the projection starts counting (usage --rebuild
	// --since); zero for the stream's start.
	From time.Time `json:"from,omitzero"`
	// First is the time of the first record applied.
	First time.Time `json:"first,omitzero"`
	// Applied and Unreadable count the records applied in this
	// generation, and those of them that were unreadable.
	Applied    uint64 `json:"applied"`
	Unreadable uint64 `json:"unreadable"`
}

// Projector keeps the usage projection of one stream: while it holds the
// bucket's lease it reads the output records through its durable
// consumer and applies them to the hour buckets.
type Projector struct {
	js   jetstream.JetStream
	opts Options
	log  *slog.Logger
	m    *metrics

	// afterHours, when set (tests), runs after a batch's hours are
	// written and before the position and the ack; an error ends the term
	// as a crash there would.
	afterHours func() error
	// outputs reads the output records read by sequence, each catalog
	// body decoded once; bodies keeps the names each catalog body lists,
	// by its key.
	outputs *usage.OutputReader
	bodies  *lru.Cache[string, []string]
}

// New returns a projector of the stream opts name; Run runs it.
func New(js jetstream.JetStream, opts Options) (*Projector, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(o.Registerer)
	if err != nil {
		return nil, err
	}
	bodies, _ := lru.New[string, []string](bodyKeys)
	return &Projector{js: js, opts: o, log: o.Logger, m: m, outputs: usage.NewOutputReader(), bodies: bodies}, nil
}

// Run keeps the projection until ctx ends, then returns nil. One
// projector of those sharing a bucket is active at a time (it holds the
// lease); the others wait to take over. Failures (the server away, the
// bucket refused) are logged, once while they repeat, and retried, never
// returned.
func (p *Projector) Run(ctx context.Context) error {
	backoff := time.Second
	var said string // the last failure logged: the same one again is not
	var saidAt time.Time
	for {
		err := p.runOnce(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err == nil || errors.Is(err, ErrStale) || errors.Is(err, errGap) {
			// Expected: another writer, or a delivery lost to an expired
			// fetch; a new term starts from the position.
			if err != nil {
				p.log.Info("usage projection: starting again from the position", "bucket", p.opts.Bucket, "reason", err.Error())
			}
			backoff, said = time.Second, ""
		} else if msg := err.Error(); msg != said || time.Since(saidAt) > 10*time.Minute {
			p.log.Warn("usage projection: "+msg, "bucket", p.opts.Bucket, "retry_in", backoff.String())
			said, saidAt = msg, time.Now()
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, time.Minute)
	}
}

// runOnce waits for the lease and projects while it holds it.
func (p *Projector) runOnce(ctx context.Context) error {
	kv, err := p.bucket(ctx, !p.opts.NoProvision)
	if err != nil {
		return err
	}
	l, err := acquire(ctx, kv, p.opts.Instance, p.opts.LeaseTTL)
	if err != nil {
		return p.hint(err)
	}
	tctx, cancel := context.WithCancelCause(ctx)
	kept := make(chan struct{})
	go func() { defer close(kept); l.keep(tctx, cancel) }()
	p.m.active.Set(1)
	for {
		// A term that started far behind reads the whole stream and ends
		// once caught up (errCaughtUp); the next reads outputs only.
		_, err = p.term(tctx, kv, termOptions{})
		if !errors.Is(err, errCaughtUp) {
			break
		}
	}
	p.m.active.Set(0)
	cancel(nil)
	<-kept
	l.release()
	if cause := context.Cause(tctx); cause != nil && ctx.Err() == nil {
		if errors.Is(cause, errLeaseLost) {
			p.log.Info("usage projection: lease lost, standing by", "bucket", p.opts.Bucket, "reason", cause.Error())
			return nil
		}
	}
	return err
}

// bucket opens the projection's bucket, creating it when create is set.
func (p *Projector) bucket(ctx context.Context, create bool) (jetstream.KeyValue, error) {
	kv, err := p.js.KeyValue(ctx, p.opts.Bucket)
	if err == nil || !errors.Is(err, jetstream.ErrBucketNotFound) {
		if err != nil {
			return nil, fmt.Errorf("open bucket %s: %w", p.opts.Bucket, err)
		}
		return kv, nil
	}
	if !create {
		return nil, fmt.Errorf("bucket %s does not exist, and provisioning is off: create it, let serve provision it, or serve with --no-usage-projection", p.opts.Bucket)
	}
	replicas := p.opts.Replicas
	if replicas <= 0 {
		st, err := p.js.Stream(ctx, p.opts.Stream)
		if err != nil {
			return nil, fmt.Errorf("stream %s: %w", p.opts.Stream, err)
		}
		replicas = max(1, st.CachedInfo().Config.Replicas)
	}
	kv, err = p.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      p.opts.Bucket,
		Description: "skillstream usage projection of stream " + p.opts.Stream + ": hour buckets h.<YYYYMMDDHH>, position pos, lease lease",
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
	})
	if errors.Is(err, jetstream.ErrBucketExists) {
		kv, err = p.js.KeyValue(ctx, p.opts.Bucket)
	}
	if err != nil {
		return nil, p.hint(fmt.Errorf("create bucket %s: %w", p.opts.Bucket, err))
	}
	return kv, nil
}

// hint adds to an error what the connection was told of a permissions
// violation on the bucket's subjects: a deployment that does not let
// the processor write the bucket times out without saying why.
func (p *Projector) hint(err error) error {
	nc := p.js.Conn()
	if nc == nil {
		return err
	}
	if last := nc.LastError(); last != nil && strings.Contains(strings.ToLower(last.Error()), "permissions violation") && strings.Contains(last.Error(), "$KV."+p.opts.Bucket) {
		return fmt.Errorf("%w (the server refused: %v; grant publish on $KV.%s.>, or serve with --no-usage-projection)", err, last, p.opts.Bucket)
	}
	return err
}

// termOptions change a term for Rebuild.
type termOptions struct {
	// caughtUp ends the term once every record is applied.
	caughtUp bool
	// progress is called after each batch with the records read (the
	// triggers among them too) and those left in the stream.
	progress func(read uint64, remaining uint64)
}

// termResult sums a term.
type termResult struct {
	Applied, Skipped, Unreadable uint64
	FirstSeq, LastSeq            uint64
	// Passed counts the records read that are no outputs (triggers).
	Passed uint64
	// Conflicts counts hour writes refused because another writer wrote
	// the hour since it was read.
	Conflicts int
}

// term is one stretch of projecting under the lease: the position read,
// the consumer created after it, batches applied in stream order.
type term struct {
	p      *Projector
	kv     jetstream.KeyValue
	st     jetstream.Stream
	pos    Position
	posRev uint64
	// nextDelivery is the consumer sequence of the next delivery: a
	// delivery with another went to someone else, or was lost.
	nextDelivery uint64
	// applied is the highest stream sequence handled in this term.
	applied uint64
	hours   map[int64]*cached
	res     termResult
	acc     taken
	// unreadable logging: at most once a minute.
	lastWarn time.Time
	unwarned int
	// summaries are the Usage-Summary headers parsed in this term, by
	// value: many records carry the same one (every load of one skill
	// revision, every record of one catalog body). Emptied when it holds
	// maxSummaries.
	summaries map[string]parsedSummary
}

// parsedSummary is a Usage-Summary header as parsed: ok false when it
// did not parse.
type parsedSummary struct {
	sum events.UsageSummary
	ok  bool
}

// maxSummaries bounds the headers a term remembers parsed.
const maxSummaries = 4096

// summary parses a Usage-Summary header value, once per distinct value.
func (t *term) summary(v string) (events.UsageSummary, bool) {
	if ps, ok := t.summaries[v]; ok {
		return ps.sum, ps.ok
	}
	sum, err := events.ParseUsageSummary(v)
	if t.summaries == nil || len(t.summaries) >= maxSummaries {
		t.summaries = make(map[string]parsedSummary)
	}
	t.summaries[v] = parsedSummary{sum: sum, ok: err == nil}
	return sum, err == nil
}

// cached is an hour bucket as last read or written, with its revision
// (0: not in the bucket).
type cached struct {
	h   *Hour
	rev uint64
}

// maxCachedHours bounds the hours a term keeps between batches.
const maxCachedHours = 4

func (p *Projector) term(ctx context.Context, kv jetstream.KeyValue, o termOptions) (termResult, error) {
	st, err := p.js.Stream(ctx, p.opts.Stream)
	if err != nil {
		return termResult{}, fmt.Errorf("stream %s: %w", p.opts.Stream, err)
	}
	pos, rev, err := p.position(ctx, kv)
	if err != nil {
		return termResult{}, err
	}
	t := &term{p: p, kv: kv, st: st, pos: pos, posRev: rev, nextDelivery: 1, applied: pos.Seq, hours: map[int64]*cached{}}
	// Behind by the records after the position; a position by time only
	// (a rebuild --since) is asked of a consumer reading every record.
	live := pos.Seq > 0 && st.CachedInfo().State.LastSeq <= pos.Seq+liveLag
	cons, err := p.consumer(ctx, st, pos, live)
	if err != nil {
		return termResult{}, p.hint(err)
	}
	if !live && cons.CachedInfo().NumPending <= liveLag {
		live = true
		if cons, err = p.consumer(ctx, st, pos, live); err != nil {
			return termResult{}, p.hint(err)
		}
	}
	p.log.Info("usage projection: active", "bucket", p.opts.Bucket, "consumer", p.opts.Consumer, "instance", p.opts.Instance,
		"from_seq", pos.Seq+1, "reads", map[bool]string{true: "outputs", false: "every record until caught up"}[live])
	for {
		if err := ctx.Err(); err != nil {
			return t.res, err
		}
		// Live, a fetch takes at once what has come since the one before
		// (no wait), and one that left nothing behind waits FlushWait
		// before the next (below): the records come in bursts, hundreds
		// to a read of the connection, not one delivery and its wake-ups
		// for each record as it is appended. Catching up, a fetch waits
		// up to FlushWait for its batch.
		poll := live && !o.caughtUp
		var batch jetstream.MessageBatch
		cancel := func() {}
		if poll {
			batch, err = cons.FetchNoWait(p.opts.Batch)
		} else {
			var fctx context.Context
			fctx, cancel = context.WithTimeout(ctx, p.opts.FlushWait)
			batch, err = cons.Fetch(p.opts.Batch, jetstream.FetchContext(fctx))
		}
		if err != nil {
			cancel()
			return t.res, fmt.Errorf("fetch: %w", err)
		}
		var msgs []jetstream.Msg
		for m := range batch.Messages() {
			msgs = append(msgs, m)
		}
		cancel()
		// A fetch that expired on the client's side before the server's
		// word is no error: a message it missed shows as a gap next time.
		if err := batch.Error(); err != nil && !errors.Is(err, context.DeadlineExceeded) {
			if ctx.Err() != nil {
				return t.res, ctx.Err()
			}
			return t.res, fmt.Errorf("fetch: %w", err)
		}
		var pending uint64
		if len(msgs) > 0 {
			if pending, err = t.take(ctx, msgs); err != nil {
				return t.res, p.hint(err)
			}
		} else if o.caughtUp && t.acc.deliveries == 0 {
			info, err := cons.Info(ctx)
			if err != nil {
				return t.res, fmt.Errorf("consumer %s: %w", p.opts.Consumer, err)
			}
			pending = info.NumPending + uint64(info.NumAckPending)
		}
		// Hours are written at most once per WriteEvery while records keep
		// coming (an hour holding a thousand skills takes milliseconds to
		// encode), at once when a fetch waited FlushWait for nothing (or,
		// rebuilding, when the stream has nothing more), and before the
		// deliveries not acknowledged reach the consumer's bound.
		if t.acc.deliveries > 0 && (len(msgs) == 0 || (o.caughtUp && pending == 0) || t.acc.deliveries >= flushDeliveries(p.opts.Batch) ||
			time.Since(t.acc.since) >= p.opts.WriteEvery) {
			if err := t.flush(ctx); err != nil {
				return t.res, p.hint(err)
			}
		}
		if o.progress != nil && len(msgs) > 0 {
			o.progress(t.res.Applied+t.res.Skipped+t.res.Passed+uint64(t.acc.records), pending)
		}
		if o.caughtUp && pending == 0 && t.acc.deliveries == 0 {
			return t.res, nil
		}
		// Caught up, or near enough that the outputs are found quickly:
		// everything taken is written, the next term reads outputs only.
		if !live && !o.caughtUp && pending <= liveLag && t.acc.deliveries == 0 {
			return t.res, errCaughtUp
		}
		if poll && len(msgs) < p.opts.Batch {
			select {
			case <-ctx.Done():
				return t.res, ctx.Err()
			case <-time.After(p.opts.FlushWait):
			}
		}
	}
}

// flushDeliveries is how many deliveries a term takes before it writes
// what they hold, whatever the time: half the consumer's bound on
// deliveries not acknowledged (maxAckPending).
func flushDeliveries(batch int) int { return maxAckPending(batch) / 2 }

// maxAckPending is the consumer's bound on deliveries not acknowledged:
// high enough that, at thousands of records a second, WriteEvery rather
// than this bound says when a term writes (each write encodes and puts
// whole hours: milliseconds for an hour of a thousand skills).
func maxAckPending(batch int) int { return 32 * batch }

// position reads the projection's position, starting a generation when
// there is none. A position of another stream, prefix or layout is an
// error: the bucket belongs to another projection.
func (p *Projector) position(ctx context.Context, kv jetstream.KeyValue) (Position, uint64, error) {
	for range 3 {
		e, err := kv.Get(ctx, posKey)
		if errors.Is(err, jetstream.ErrKeyNotFound) {
			pos := p.newPosition(time.Time{})
			b, _ := json.Marshal(pos)
			rev, err := kv.Create(ctx, posKey, b)
			if err == nil {
				return pos, rev, nil
			}
			if !conflict(err) {
				return Position{}, 0, p.hint(fmt.Errorf("write position: %w", err))
			}
			continue // someone else started it: read theirs
		}
		if err != nil {
			return Position{}, 0, fmt.Errorf("read position: %w", err)
		}
		pos, err := decodePosition(e.Value())
		if err != nil {
			return Position{}, 0, fmt.Errorf("bucket %s: %w; usage --rebuild starts it again", p.opts.Bucket, err)
		}
		if err := p.matches(pos); err != nil {
			return Position{}, 0, err
		}
		return pos, e.Revision(), nil
	}
	return Position{}, 0, fmt.Errorf("bucket %s: position keeps changing", p.opts.Bucket)
}

// matches reports a position of another stream as an error.
func (p *Projector) matches(pos Position) error {
	if pos.Stream != p.opts.Stream || pos.Prefix != p.opts.Prefix || pos.Layout != p.opts.Layout {
		return fmt.Errorf("bucket %s projects stream %s, prefix %s, %s layout, not stream %s, prefix %s, %s layout: give each its own bucket (--usage-bucket), or rebuild it",
			p.opts.Bucket, pos.Stream, pos.Prefix, pos.Layout, p.opts.Stream, p.opts.Prefix, p.opts.Layout)
	}
	return nil
}

func (p *Projector) newPosition(from time.Time) Position {
	return Position{V: positionVersion, Gen: rand.Uint64() | 1, Stream: p.opts.Stream, Prefix: p.opts.Prefix, Layout: p.opts.Layout, From: from}
}

func decodePosition(b []byte) (Position, error) {
	var pos Position
	if err := json.Unmarshal(b, &pos); err != nil {
		return pos, fmt.Errorf("position unreadable: %w", err)
	}
	if pos.V != positionVersion || pos.Gen == 0 {
		return pos, fmt.Errorf("position of format version %d (generation %d), want %d", pos.V, pos.Gen, positionVersion)
	}
	return pos, nil
}

// liveLag is how far behind the stream a term may start and still read
// outputs only (a consumer filtered on the output subjects); further
// behind, it reads every record until it has caught up.
//
// Why two ways: live, a consumer of the outputs spares the server and
// the projector every trigger's delivery (about half the records), and
// the server finds the next output by looking at the few records after
// the last. Far behind, the server finds each next output of several
// filters by intersecting them with the subjects of a whole message
// block (thousands of sessions' subjects) at every delivery, which is
// slower than delivering every record and passing triggers over.
var liveLag uint64 = 10_000 // a variable for the tests

// consumer creates the durable consumer afresh, starting after the
// position: whatever an earlier holder left unacknowledged is delivered
// again, in order, instead of after newer records. A live consumer reads
// the output subjects; another reads every record (see liveLag).
func (p *Projector) consumer(ctx context.Context, st jetstream.Stream, pos Position, live bool) (jetstream.Consumer, error) {
	if err := st.DeleteConsumer(ctx, p.opts.Consumer); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, fmt.Errorf("delete consumer %s: %w", p.opts.Consumer, err)
	}
	cfg := jetstream.ConsumerConfig{
		Durable:     p.opts.Consumer,
		Description: "skillstream usage projection into bucket " + p.opts.Bucket,
		// All of the prefix, or the output subjects (see liveLag); the
		// triggers are passed over in either case (isOutput).
		FilterSubject: events.StreamSubjects(p.opts.Prefix),
		// Headers only: what the projection counts of a processor's output
		// is in its Usage-Summary header; the payload of any other output
		// is read by sequence (read).
		HeadersOnly:   true,
		AckPolicy:     jetstream.AckAllPolicy,
		AckWait:       2 * time.Minute,
		MaxAckPending: maxAckPending(p.opts.Batch),
		MaxDeliver:    -1,
		// Left behind by a projector that stopped for good.
		InactiveThreshold: time.Hour,
	}
	if live {
		cfg.FilterSubject, cfg.FilterSubjects = "", filters(p.opts.Layout, p.opts.Prefix)
	}
	switch {
	case pos.Seq > 0:
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, pos.Seq+1
	case !pos.From.IsZero():
		t := pos.From
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &t
	default:
		cfg.DeliverPolicy = jetstream.DeliverAllPolicy
	}
	c, err := st.CreateConsumer(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("create consumer %s: %w", p.opts.Consumer, err)
	}
	return c, nil
}

// record is one output record of a batch.
type record struct {
	seq uint64
	at  time.Time
	out usage.Output
}

// taken is what a term has read and not yet written: its records by
// hour, in stream order, and the last delivery, whose acknowledgement
// acknowledges all of them.
type taken struct {
	byHour     map[int64][]record
	records    int // output records among them
	deliveries int // deliveries not acknowledged
	lastSeq    uint64
	lastTime   time.Time
	last       jetstream.Msg
	since      time.Time // when the first of them was taken
	// spare are record slices of hours written, emptied, kept for the
	// next hours taken: thousands of records a write, not grown again.
	spare [][]record
}

// maxSpare bounds the record slices a term keeps for reuse.
const maxSpare = 4

// reset forgets what was taken (written now), keeping its record slices
// for reuse.
func (a *taken) reset() {
	spare := a.spare
	for _, recs := range a.byHour {
		if len(spare) < maxSpare {
			clear(recs) // drops what the records point to
			spare = append(spare, recs[:0])
		}
	}
	*a = taken{spare: spare}
}

// take reads one fetch's deliveries into the term's records (t.acc),
// checking that they follow each other, and returns how many records the
// consumer still holds. Nothing is written: flush does.
func (t *term) take(ctx context.Context, msgs []jetstream.Msg) (pending uint64, err error) {
	p := t.p
	a := &t.acc
	if a.byHour == nil {
		a.byHour = map[int64][]record{}
	}
	if a.deliveries == 0 {
		a.since = time.Now()
	}
	for _, m := range msgs {
		md, err := m.Metadata()
		if err != nil {
			return 0, fmt.Errorf("delivery metadata: %w", err)
		}
		if md.Sequence.Consumer != t.nextDelivery {
			return 0, fmt.Errorf("%w: consumer sequence %d, want %d", errGap, md.Sequence.Consumer, t.nextDelivery)
		}
		t.nextDelivery++
		pending = md.NumPending
		a.deliveries++
		a.last = m
		if md.Sequence.Stream <= max(t.applied, a.lastSeq) {
			t.res.Skipped++ // delivered again: applied or taken already
			p.m.skipped.Inc()
			continue
		}
		if !isOutput(p.opts.Layout, p.opts.Prefix, m.Subject()) {
			t.res.Passed++
			p.m.passed.Inc()
			continue
		}
		out := t.read(ctx, m.Subject(), md.Sequence.Stream, m.Headers())
		if out.Kind == usage.OutputUnreadable {
			t.unreadable(m.Subject(), md.Sequence.Stream)
		}
		at := md.Timestamp.UTC()
		h := at.Truncate(time.Hour).Unix()
		recs, ok := a.byHour[h]
		if !ok && len(a.spare) > 0 {
			recs, a.spare = a.spare[len(a.spare)-1], a.spare[:len(a.spare)-1]
		}
		a.byHour[h] = append(recs, record{seq: md.Sequence.Stream, at: at, out: out})
		a.records++
		a.lastSeq, a.lastTime = md.Sequence.Stream, at
	}
	return pending, nil
}

// read returns what output record seq (delivered without its payload)
// counts for: its Usage-Summary header when it has one, the names a
// catalog listed remembered by its body's key; else, and for a catalog
// body not seen yet, its payload read by sequence (one Direct Get).
func (t *term) read(ctx context.Context, subject string, seq uint64, h nats.Header) usage.Output {
	p := t.p
	sid, _, err := events.ParseSubjectIn(p.opts.Layout, p.opts.Prefix, subject)
	if err != nil {
		return usage.Output{}
	}
	sum, ok := t.summary(h.Get(events.HeaderUsageSummary))
	if ok {
		switch sum.Kind {
		case events.UsageLoad:
			p.m.fromHeader.Inc()
			return usage.Output{Kind: usage.OutputLoad, Session: sid, Skill: sum.Skill, Digest: sum.Digest, Revision: sum.Revision,
				Rev: sum.Rev, Channel: usage.ReleaseChannel(sum.Rev, sum.Channel)}
		case events.UsageCatalog:
			if listed, ok := p.bodies.Get(sum.Body); ok {
				p.m.fromHeader.Inc()
				return usage.Output{Kind: usage.OutputCatalog, Session: sid, Update: sum.Update, TextBytes: sum.TextBytes, Listed: listed, ListedKey: sum.Body}
			}
		}
	}
	p.m.fromPayload.Inc()
	rec, err := t.st.GetMsg(ctx, seq)
	if err != nil {
		// Gone (removed by hand, or past the stream's limits) or
		// unreachable: counted as what the subject says, unreadable.
		return usage.Output{Session: sid}
	}
	out := p.outputs.Read(ctx, t.st.GetMsg, p.opts.Layout, p.opts.Prefix, rec.Subject, rec.Header.Get(events.HeaderContentType), rec.Data)
	if out.Kind == usage.OutputCatalog && sum.Kind == events.UsageCatalog {
		// Remember the names under the body's key, once the key is shown
		// to be the key of this record's body.
		if parts, ok := events.SplitCatalog(rec.Data); ok && events.CatalogBodyKey(parts.Body) == sum.Body {
			p.bodies.Add(sum.Body, out.Listed)
		}
	}
	return out
}

// flush writes what the term has taken: each hour's records to its
// bucket, each bucket written once with the revision read, then the
// position, then the acknowledgement of the last delivery.
func (t *term) flush(ctx context.Context) error {
	p := t.p
	a := &t.acc
	hours := make([]int64, 0, len(a.byHour))
	for h := range a.byHour {
		hours = append(hours, h)
	}
	slices.Sort(hours)
	for _, h := range hours {
		if err := t.writeHour(ctx, h, a.byHour[h]); err != nil {
			return err
		}
	}
	if p.afterHours != nil {
		if err := p.afterHours(); err != nil {
			return err
		}
	}
	if a.lastSeq > 0 {
		if err := t.advance(ctx, a.lastSeq, a.lastTime, a.byHour); err != nil {
			return err
		}
	}
	if err := a.last.Ack(); err != nil { // acknowledges every delivery before it
		return fmt.Errorf("ack: %w", err)
	}
	a.reset()
	return nil
}

// writeHour applies records (of one hour, in stream order) to the hour's
// bucket: those above the bucket's sequence only, so that a record is
// counted once however often it is delivered and whoever wrote before.
// A write refused because the bucket changed since it was read (another
// projector) reads it again and applies what is still missing.
func (t *term) writeHour(ctx context.Context, hour int64, recs []record) error {
	key := HourKey(time.Unix(hour, 0))
	for range 8 {
		c, err := t.load(ctx, hour)
		if err != nil {
			return err
		}
		applied, unreadable := 0, 0
		for _, r := range recs {
			if r.seq <= c.h.Seq {
				continue
			}
			c.h.Apply(r.out, r.seq, r.at)
			applied++
			if r.out.Kind == usage.OutputUnreadable {
				unreadable++
			}
		}
		skipped := len(recs) - applied
		if applied > 0 {
			b, err := c.h.Encode()
			if err != nil {
				delete(t.hours, hour)
				return fmt.Errorf("encode %s: %w", key, err)
			}
			rev, err := cas(ctx, t.kv, key, b, c.rev)
			if err != nil {
				delete(t.hours, hour) // its state is not the bucket's
				if conflict(err) {
					t.res.Conflicts++
					continue
				}
				return fmt.Errorf("write %s: %w", key, err)
			}
			c.rev = rev
		}
		m := t.p.m.records
		t.res.Applied += uint64(applied)
		t.res.Skipped += uint64(skipped)
		t.res.Unreadable += uint64(unreadable)
		m.WithLabelValues("applied").Add(float64(applied - unreadable))
		m.WithLabelValues("unreadable").Add(float64(unreadable))
		m.WithLabelValues("skipped").Add(float64(skipped))
		if t.res.FirstSeq == 0 {
			t.res.FirstSeq = recs[0].seq
		}
		return nil
	}
	return fmt.Errorf("write %s: the bucket changed under every attempt", key)
}

// load returns the hour's bucket: the one this term wrote last, or the
// bucket's. A value that cannot be read is replaced, marked damaged, and
// logged; a value of another generation is replaced only while the
// position is still this term's generation (else the term is stale).
func (t *term) load(ctx context.Context, hour int64) (*cached, error) {
	if c, ok := t.hours[hour]; ok {
		return c, nil
	}
	key := HourKey(time.Unix(hour, 0))
	c := &cached{}
	e, err := t.kv.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		c.h = newHour(t.pos.Gen, time.Unix(hour, 0))
	case err != nil:
		return nil, fmt.Errorf("read %s: %w", key, err)
	default:
		c.rev = e.Revision()
		h, err := DecodeHour(e.Value())
		if err == nil && h.Hour != hour {
			err = fmt.Errorf("it holds the hour %s", time.Unix(h.Hour, 0).UTC().Format(time.RFC3339))
		}
		switch {
		case err != nil:
			t.p.log.Error("usage projection: an hour bucket cannot be read; replaced by one marked damaged (its earlier counts are lost: usage --rebuild counts them again)",
				"bucket", t.p.opts.Bucket, "key", key, "err", err)
			c.h = newHour(t.pos.Gen, time.Unix(hour, 0))
			c.h.Damaged = true
		case h.Gen != t.pos.Gen:
			if err := t.current(ctx); err != nil {
				return nil, err
			}
			c.h = newHour(t.pos.Gen, time.Unix(hour, 0)) // left by a projector of an older generation
		default:
			c.h = h
		}
	}
	if len(t.hours) >= maxCachedHours {
		oldest := int64(0)
		for h := range t.hours {
			if oldest == 0 || h < oldest {
				oldest = h
			}
		}
		delete(t.hours, oldest)
	}
	t.hours[hour] = c
	return c, nil
}

// current checks that the bucket's position is still this term's.
func (t *term) current(ctx context.Context) error {
	e, err := t.kv.Get(ctx, posKey)
	if err != nil {
		return fmt.Errorf("%w: position: %w", ErrStale, err)
	}
	if e.Revision() != t.posRev {
		return fmt.Errorf("%w: the position was written by someone else", ErrStale)
	}
	return nil
}

// advance writes the position after a batch.
func (t *term) advance(ctx context.Context, seq uint64, at time.Time, byHour map[int64][]record) error {
	pos := t.pos
	pos.Seq, pos.Time = seq, at
	for _, recs := range byHour {
		for _, r := range recs {
			if pos.First.IsZero() || r.at.Before(pos.First) {
				pos.First = r.at
			}
			pos.Applied++
			if r.out.Kind == usage.OutputUnreadable {
				pos.Unreadable++
			}
		}
	}
	b, _ := json.Marshal(pos)
	rev, err := t.kv.Update(ctx, posKey, b, t.posRev)
	if err != nil {
		if conflict(err) || errors.Is(err, jetstream.ErrKeyNotFound) {
			return fmt.Errorf("%w: the position was written by someone else", ErrStale)
		}
		return fmt.Errorf("write position: %w", err)
	}
	t.pos, t.posRev, t.applied = pos, rev, seq
	t.res.LastSeq = seq
	t.p.m.seq.Set(float64(seq))
	return nil
}

// unreadable logs a record that is not what its subject says: the first
// at once, then at most once a minute with the count since.
func (t *term) unreadable(subject string, seq uint64) {
	t.unwarned++
	if time.Since(t.lastWarn) < time.Minute {
		return
	}
	t.p.log.Warn("usage projection: a record on an output subject is not what its subject says (written by something else); counted as unreadable",
		"subject", subject, "seq", seq, "count", t.unwarned)
	t.lastWarn, t.unwarned = time.Now(), 0
}

// cas writes key if its revision is still rev (0: absent).
func cas(ctx context.Context, kv jetstream.KeyValue, key string, b []byte, rev uint64) (uint64, error) {
	if rev == 0 {
		return kv.Create(ctx, key, b)
	}
	return kv.Update(ctx, key, b, rev)
}

// conflict reports a write refused because the key changed.
func conflict(err error) bool {
	return errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch)
}

// metrics are the projector's.
type metrics struct {
	records *prometheus.CounterVec
	seq     prometheus.Gauge
	active  prometheus.Gauge
	// summaries counts output records by how they were read.
	summaries *prometheus.CounterVec
	// The series counted at every record, resolved once.
	skipped, passed, fromHeader, fromPayload prometheus.Counter
}

var metricsMu sync.Mutex

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		records: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "skillstream", Name: "usage_projection_records_total",
			Help: "Output records the usage projection read, by result: applied, unreadable (applied, counted as unreadable), skipped (delivered again, applied already), passed (a trigger, read while catching up)."},
			[]string{"result"}),
		seq: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "skillstream", Name: "usage_projection_applied_seq",
			Help: "The stream sequence up to which the usage projection applied every output record (this member, while it holds the lease)."}),
		active: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: "skillstream", Name: "usage_projection_active",
			Help: "1 while this member holds the usage projection's lease and applies records."}),
		summaries: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "skillstream", Name: "usage_projection_reads_total",
			Help: "Output records the usage projection counted, by how: header (from its Usage-Summary header, delivered without its payload), payload (its payload read by sequence)."},
			[]string{"from"}),
	}
	defer func() { // every series exists from the start, at 0
		for _, r := range []string{"applied", "unreadable", "skipped", "passed"} {
			m.records.WithLabelValues(r)
		}
		for _, f := range []string{"header", "payload"} {
			m.summaries.WithLabelValues(f)
		}
		// Resolved after registration, which may hand back the vectors
		// another projector registered.
		m.skipped, m.passed = m.records.WithLabelValues("skipped"), m.records.WithLabelValues("passed")
		m.fromHeader, m.fromPayload = m.summaries.WithLabelValues("header"), m.summaries.WithLabelValues("payload")
	}()
	if reg == nil {
		return m, nil
	}
	metricsMu.Lock()
	defer metricsMu.Unlock()
	if err := register(reg, &m.records); err != nil {
		return nil, err
	}
	if err := register(reg, &m.seq); err != nil {
		return nil, err
	}
	if err := register(reg, &m.active); err != nil {
		return nil, err
	}
	if err := register(reg, &m.summaries); err != nil {
		return nil, err
	}
	return m, nil
}

// register registers *c, or takes the collector registered before it
// (several projectors of one process share them).
func register[C prometheus.Collector](reg prometheus.Registerer, c *C) error {
	err := reg.Register(*c)
	if are, ok := err.(prometheus.AlreadyRegisteredError); ok {
		existing, ok := are.ExistingCollector.(C)
		if !ok {
			return fmt.Errorf("usage projection metrics: %w", err)
		}
		*c = existing
		return nil
	}
	if err != nil {
		return fmt.Errorf("usage projection metrics: %w", err)
	}
	return nil
}
