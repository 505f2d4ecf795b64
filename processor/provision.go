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

// streamConfig is the stream the processor creates when it is missing.
func (c Config) streamConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:        c.Stream,
		Description: "skillstream session logs",
		Subjects:    []string{c.Prefix + ".>"},
		Retention:   jetstream.LimitsPolicy,
		Storage:     jetstream.FileStorage,
		AllowDirect: true,
		Duplicates:  c.DuplicateWindow,
		MaxAge:      c.MaxAge,
		Replicas:    c.Replicas,
	}
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
		FilterSubjects: events.TriggerFilters(c.Prefix),
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
// subjects, limits): only missing requirements are added, a configured
// MaxAge is applied, and replicas are raised, never lowered.
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
			if st, err = p.js.Stream(ctx, p.cfg.Stream); err != nil {
				return nil, fmt.Errorf("look up stream %s: %w", p.cfg.Stream, err)
			}
			p.limit = newMessageLimit(p.nc.MaxPayload(), st.CachedInfo().Config.MaxMsgSize)
		case err != nil:
			return nil, fmt.Errorf("create stream %s: %w", p.cfg.Stream, err)
		default:
			p.limit = newMessageLimit(p.nc.MaxPayload(), created.CachedInfo().Config.MaxMsgSize)
		}
	case err != nil:
		return nil, fmt.Errorf("look up stream %s: %w", p.cfg.Stream, err)
	default:
		have := st.CachedInfo().Config
		p.limit = newMessageLimit(p.nc.MaxPayload(), have.MaxMsgSize)
		upd, changed := mergeStream(have, want)
		if changed {
			if _, err := p.js.UpdateStream(ctx, upd); err != nil {
				return nil, fmt.Errorf("update stream %s: %w", p.cfg.Stream, err)
			}
		}
	}
	cons, err := p.js.CreateOrUpdateConsumer(ctx, p.cfg.Stream, p.cfg.consumerConfig())
	if err != nil {
		return nil, fmt.Errorf("create consumer %s on stream %s: %w", p.cfg.Consumer, p.cfg.Stream, err)
	}
	return cons, nil
}

// mergeStream adds what the processor needs to an existing stream config.
func mergeStream(have, want jetstream.StreamConfig) (jetstream.StreamConfig, bool) {
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
	// A configured MaxAge is applied; the default (none) leaves an
	// operator's limit alone.
	if want.MaxAge != 0 && have.MaxAge != want.MaxAge {
		upd.MaxAge, changed = want.MaxAge, true
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
			ErrNotProvisioned, c.Consumer, c.Stream, strings.Join(events.TriggerFilters(c.Prefix), " and "))
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
	for _, f := range events.TriggerFilters(c.Prefix) {
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
