package processor

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
)

// ErrNotProvisioned reports, with provisioning off, a stream or consumer
// that is missing or lacks a setting the processor depends on.
var ErrNotProvisioned = errors.New("not provisioned")

// limits are a stream's MaxAge, MaxBytes and MaxMsgSize as the server
// takes them: 0 (age) or -1 (sizes) for none.
type limits struct {
	age     time.Duration
	bytes   int64
	msgSize int32
}

// limitsOf reads the limits of a stream's config; the server reports a
// size without limit as -1, and may take 0 for the same.
func limitsOf(sc jetstream.StreamConfig) limits {
	l := limits{age: sc.MaxAge, bytes: sc.MaxBytes, msgSize: sc.MaxMsgSize}
	if l.bytes <= 0 {
		l.bytes = -1
	}
	if l.msgSize <= 0 {
		l.msgSize = -1
	}
	return l
}

// streamLimits are the limits of a stream the processor creates: each
// configured one, else its default.
func (c Config) streamLimits() limits {
	l := limits{age: DefaultMaxAge, bytes: DefaultMaxBytes, msgSize: DefaultMaxMsgSize}
	switch {
	case c.MaxAge == NoLimit:
		l.age = 0
	case c.MaxAge != 0:
		l.age = c.MaxAge
	}
	switch {
	case c.MaxBytes == NoLimit:
		l.bytes = -1
	case c.MaxBytes != 0:
		l.bytes = c.MaxBytes
	}
	switch {
	case c.MaxMsgSize == NoLimit:
		l.msgSize = -1
	case c.MaxMsgSize != 0:
		l.msgSize = c.MaxMsgSize
	}
	return l
}

// configuredLimits returns l with the limits c configures (rather than
// defaults) in its place, and whether that changes l.
func (c Config) configuredLimits(l limits) (limits, bool) {
	w, out := c.streamLimits(), l
	if c.MaxAge != 0 {
		out.age = w.age
	}
	if c.MaxBytes != 0 {
		out.bytes = w.bytes
	}
	if c.MaxMsgSize != 0 {
		out.msgSize = w.msgSize
	}
	return out, out != l
}

// streamConfig is the stream the processor creates when it is missing.
func (c Config) streamConfig() jetstream.StreamConfig {
	l := c.streamLimits()
	return jetstream.StreamConfig{
		Name:        c.Stream,
		Description: "skillstream session logs",
		Subjects:    []string{c.Prefix + ".>"},
		Retention:   jetstream.LimitsPolicy,
		Discard:     jetstream.DiscardOld,
		Storage:     jetstream.FileStorage,
		AllowDirect: true,
		Duplicates:  c.DuplicateWindow,
		MaxAge:      l.age,
		MaxBytes:    l.bytes,
		MaxMsgSize:  l.msgSize,
		Replicas:    c.Replicas,
	}
}

// StreamLimits are the session stream's limits, as Prepare found or set
// them, and how they came to be.
type StreamLimits struct {
	MaxAge     time.Duration // 0: none
	MaxBytes   int64         // -1: none
	MaxMsgSize int32         // -1: none
	// Provisioned says how they came to be: LimitsCreated, LimitsApplied,
	// LimitsKept or LimitsInfraManaged.
	Provisioned string
}

// How a stream's limits came to be (StreamLimits.Provisioned).
const (
	LimitsCreated      = "created"       // the processor created the stream with them
	LimitsApplied      = "applied"       // configured limits replaced an existing stream's
	LimitsKept         = "kept"          // an existing stream's, left as they were
	LimitsInfraManaged = "infra-managed" // provisioning is off: the stream's, as found
)

// StreamLimits returns the session stream's limits once Prepare (or Run)
// has provisioned or checked it; serve names them when it starts.
func (p *Processor) StreamLimits() StreamLimits { return p.streamLimits }

// noteLimits records the stream's limits and warns when nothing bounds it.
func (p *Processor) noteLimits(sc jetstream.StreamConfig, how string) {
	l := limitsOf(sc)
	p.streamLimits = StreamLimits{MaxAge: l.age, MaxBytes: l.bytes, MaxMsgSize: l.msgSize, Provisioned: how}
	if l.bytes < 0 && l.age == 0 {
		p.log.Warn("the session stream has no byte or age limit: workers can grow it until the server's storage is full; configure a max bytes or max age to bound it",
			"stream", sc.Name, "limits", how)
	}
}

// errStorageResources is the server's error code for a stream whose max
// bytes it cannot reserve.
const errStorageResources jetstream.ErrorCode = 10047

// storageHint explains an error creating or updating the stream when the
// server cannot reserve its max bytes.
func storageHint(err error, bytes int64) error {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && apiErr.ErrorCode == errStorageResources {
		return fmt.Errorf("%w (the server reserves the stream's max bytes, %d, in its JetStream storage: configure a smaller max bytes)", err, bytes)
	}
	return err
}

// consumerConfig is the durable pull consumer every instance shares.
func (c Config) consumerConfig() jetstream.ConsumerConfig {
	return jetstream.ConsumerConfig{
		Durable:        c.Consumer,
		Description:    "skillstream processors: pre-steps and skill tool calls",
		DeliverPolicy:  jetstream.DeliverAllPolicy,
		AckPolicy:      jetstream.AckExplicitPolicy,
		AckWait:        c.AckWait,
		MaxDeliver:     c.MaxDeliver,
		BackOff:        c.backOff(),
		FilterSubjects: events.TriggerFiltersIn(c.Layout, c.Prefix),
		Replicas:       0, // inherit the stream's
	}
}

// backOff is the consumer's redelivery schedule after an ack deadline passes
// (a processor that died mid-work): AckWait, doubling, at most 16×AckWait,
// never more entries than deliveries. Every entry is >= AckWait, so progress
// heartbeats every AckWait/3 keep slow work alive at any delivery.
func (c Config) backOff() []time.Duration {
	n := min(c.MaxDeliver, 5)
	bo := make([]time.Duration, n)
	for i := range bo {
		bo[i] = c.AckWait << i
	}
	return bo
}

// provision makes sure stream and consumer exist with the settings the
// protocol needs. An existing stream keeps its other settings (extra
// subjects, limits): only missing requirements are added, the limits
// configured (not defaulted) are applied, and replicas are raised, never
// lowered.
func (p *Processor) provision(ctx context.Context) (jetstream.Consumer, error) {
	if p.cfg.NoProvision {
		return p.checkProvisioned(ctx)
	}
	want := p.cfg.streamConfig()
	st, err := p.js.Stream(ctx, p.cfg.Stream)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		created, err := p.js.CreateStream(ctx, want)
		switch {
		case errors.Is(err, jetstream.ErrStreamNameAlreadyInUse):
			// Another member created it meanwhile: ours to merge with, as
			// any existing stream.
			if st, err = p.js.Stream(ctx, p.cfg.Stream); err != nil {
				return nil, fmt.Errorf("look up stream %s: %w", p.cfg.Stream, err)
			}
			if err := p.updateStream(ctx, st.CachedInfo().Config, want); err != nil {
				return nil, err
			}
		case err != nil:
			return nil, fmt.Errorf("create stream %s: %w", p.cfg.Stream, storageHint(err, want.MaxBytes))
		default:
			sc := created.CachedInfo().Config
			p.limit = newMessageLimit(p.nc.MaxPayload(), sc.MaxMsgSize)
			p.noteLimits(sc, LimitsCreated)
		}
	case err != nil:
		return nil, fmt.Errorf("look up stream %s: %w", p.cfg.Stream, err)
	default:
		if err := p.updateStream(ctx, st.CachedInfo().Config, want); err != nil {
			return nil, err
		}
	}
	p.warnLayoutSwitch(ctx)
	cons, err := p.js.CreateOrUpdateConsumer(ctx, p.cfg.Stream, p.cfg.consumerConfig())
	if err != nil {
		return nil, fmt.Errorf("create consumer %s on stream %s: %w", p.cfg.Consumer, p.cfg.Stream, err)
	}
	return cons, nil
}

// updateStream merges what the processor needs into an existing stream
// (mergeStream) and updates it if anything changed.
func (p *Processor) updateStream(ctx context.Context, have, want jetstream.StreamConfig) error {
	upd, changed := mergeStream(have, want, p.cfg)
	how := LimitsKept
	if limitsOf(upd) != limitsOf(have) {
		how = LimitsApplied
	}
	if changed {
		updated, err := p.js.UpdateStream(ctx, upd)
		if err != nil {
			return fmt.Errorf("update stream %s: %w", p.cfg.Stream, storageHint(err, upd.MaxBytes))
		}
		upd = updated.CachedInfo().Config
	}
	p.limit = newMessageLimit(p.nc.MaxPayload(), upd.MaxMsgSize)
	p.noteLimits(upd, how)
	return nil
}

// mergeStream adds what the processor needs to an existing stream config,
// and the limits c configures (rather than defaults). A limit shrunk on a
// stream holding more discards its oldest messages at once; so only an
// operator's setting does it, never an upgrade of the processor.
func mergeStream(have, want jetstream.StreamConfig, c Config) (jetstream.StreamConfig, bool) {
	upd, changed := have, false
	if !slices.Contains(have.Subjects, want.Subjects[0]) {
		upd.Subjects = append(slices.Clone(have.Subjects), want.Subjects[0])
		changed = true
	}
	if !have.AllowDirect {
		upd.AllowDirect, changed = true, true
	}
	if have.Duplicates < want.Duplicates {
		upd.Duplicates, changed = want.Duplicates, true
	}
	// A configured limit is applied; a default leaves the stream's alone.
	if l, differ := c.configuredLimits(limitsOf(have)); differ {
		upd.MaxAge, upd.MaxBytes, upd.MaxMsgSize, changed = l.age, l.bytes, l.msgSize, true
	}
	// Scale up to the configured replicas, never down: a processor started
	// with the default must not shrink a stream an operator replicated.
	if want.Replicas > have.Replicas {
		upd.Replicas, changed = want.Replicas, true
	}
	return upd, changed
}

// checkProvisioned verifies an infrastructure-managed stream and consumer.
func (p *Processor) checkProvisioned(ctx context.Context) (jetstream.Consumer, error) {
	c := p.cfg
	st, err := p.js.Stream(ctx, c.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("%w: stream %s does not exist (provisioning is off: create it with subjects %q, file storage, allow direct, duplicate window >= %v)",
			ErrNotProvisioned, c.Stream, c.Prefix+".>", MinDuplicateWindow)
	}
	if err != nil {
		return nil, fmt.Errorf("look up stream %s: %w", c.Stream, err)
	}
	sc := st.CachedInfo().Config
	p.limit = newMessageLimit(p.nc.MaxPayload(), sc.MaxMsgSize)
	p.noteLimits(sc, LimitsInfraManaged)
	if l, differ := c.configuredLimits(limitsOf(sc)); differ {
		p.log.Warn("stream limits configured but not applied: provisioning is off, the stream's are the infrastructure's",
			"stream", sc.Name, "max_age", l.age, "max_bytes", l.bytes, "max_msg_size", l.msgSize)
	}
	var missing []string
	if !slices.ContainsFunc(sc.Subjects, func(s string) bool { return s == c.Prefix+".>" || s == ">" }) {
		missing = append(missing, fmt.Sprintf("subject %q", c.Prefix+".>"))
	}
	if !sc.AllowDirect {
		missing = append(missing, "allow direct")
	}
	if sc.Duplicates < MinDuplicateWindow {
		missing = append(missing, fmt.Sprintf("duplicate window >= %v (is %v)", MinDuplicateWindow, sc.Duplicates))
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: stream %s lacks %s", ErrNotProvisioned, c.Stream, strings.Join(missing, ", "))
	}
	cons, err := p.js.Consumer(ctx, c.Stream, c.Consumer)
	if errors.Is(err, jetstream.ErrConsumerNotFound) {
		return nil, fmt.Errorf("%w: durable consumer %s on stream %s does not exist (provisioning is off: create a pull consumer filtered to %s with explicit acks)",
			ErrNotProvisioned, c.Consumer, c.Stream, strings.Join(events.TriggerFiltersIn(c.Layout, c.Prefix), ", "))
	}
	if err != nil {
		return nil, fmt.Errorf("look up consumer %s on stream %s: %w", c.Consumer, c.Stream, err)
	}
	cc := cons.CachedInfo().Config
	missing = missing[:0]
	filters := cc.FilterSubjects
	if cc.FilterSubject != "" {
		filters = append(filters, cc.FilterSubject)
	}
	for _, f := range events.TriggerFiltersIn(c.Layout, c.Prefix) {
		if f == events.TriggerFilterIn(c.Layout, c.Prefix, events.KindSkillSearch) && !c.Catalog.SkillSearch {
			// Searches are answered only by processors that serve them: a
			// consumer set up before them may leave them out.
			continue
		}
		if !slices.Contains(filters, f) {
			missing = append(missing, fmt.Sprintf("filter subject %q", f))
		}
	}
	if cc.AckPolicy != jetstream.AckExplicitPolicy {
		missing = append(missing, "explicit ack policy")
	}
	if cc.DeliverSubject != "" {
		missing = append(missing, "pull mode (it is a push consumer)")
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%w: consumer %s on stream %s lacks %s", ErrNotProvisioned, c.Consumer, c.Stream, strings.Join(missing, ", "))
	}
	return cons, nil
}

// warnLayoutSwitch warns when the shared consumer is filtered for the
// other session layout: provisioning re-filters it to this member's, and
// members still running the other layout would be handed triggers they
// cannot read.
func (p *Processor) warnLayoutSwitch(ctx context.Context) {
	cons, err := p.js.Consumer(ctx, p.cfg.Stream, p.cfg.Consumer)
	if err != nil {
		return // none yet, or unreadable: provisioning says what is wrong
	}
	other := events.LayoutOwner
	if p.cfg.Layout == events.LayoutOwner {
		other = events.LayoutFlat
	}
	if slices.Contains(cons.CachedInfo().Config.FilterSubjects, events.TriggerFilterIn(other, p.cfg.Prefix, events.KindPreStep)) {
		p.log.Warn("the consumer was filtered for the other session layout: it is re-filtered to this member's; every member of the group must use the same layout",
			"consumer", p.cfg.Consumer, "was", other.String(), "now", p.cfg.Layout.String())
	}
}
