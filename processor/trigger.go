package processor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

// trigger is one delivery being handled.
type trigger struct {
	msg       jetstream.Msg
	seq       uint64
	delivered uint64
	last      bool // this is the last delivery MaxDeliver allows
	sid       string
	handler   kindHandler // of the subject's kind; ignoredKind until it is read
	enc       events.Encoding
	inbox     string
	ref       string // step or call id, once read
	start     time.Time
	lent      []*[]byte // encoding buffers borrowed (scratch.go)
}

// kindHandler is what sets one trigger kind apart; everything else about a
// trigger (envelope, fate, acknowledgement, the append loop of append.go)
// is shared. Processor.kinds holds one per kind it consumes; a kind it does
// not consume gets ignoredKind.
type kindHandler interface {
	// label is the kind's label in metrics.
	label() string
	// answer handles a delivery whose envelope is sound: it decodes the
	// payload, does the kind's work (appending its output) and returns the
	// reply and the outcome counted for it. A rejected payload is answered
	// there (reject) and returned as the error.
	answer(ctx context.Context, t *trigger) (reply any, outcome string, err error)
	// rejected is the reply to a malformed trigger (nil: none), appending
	// whatever the kind appends for one; an error is transient (retried).
	rejected(ctx context.Context, t *trigger, rej *rejection) (reply any, err error)
	// rejectOutcome is the outcome counted for a rejected trigger.
	rejectOutcome() string
	// failed is the reply to a trigger given up (dead letter, panic), nil
	// for none; nothing was appended.
	failed(t *trigger, cause error) (reply any)
	// tooLarge is the reply to a trigger whose output does not fit in one
	// message, nil for none; nothing was appended.
	tooLarge(t *trigger, cause error) (reply any)
}

// kindHandlers are the handlers of the kinds a processor consumes.
func kindHandlers(p *Processor) map[events.Kind]kindHandler {
	return map[events.Kind]kindHandler{
		events.KindPreStep:     preStepKind{p},
		events.KindSkillCall:   skillCallKind{p},
		events.KindSkillSearch: skillSearchKind{p},
	}
}

// handlerOf returns the handler of kind k, and whether k is a kind this
// processor consumes (else ignoredKind).
func (p *Processor) handlerOf(k events.Kind) (kindHandler, bool) {
	if h, ok := p.kinds[k]; ok {
		return h, true
	}
	return ignoredKind{}, false
}

// ignoredKind stands for a kind the processor does not consume (or one it
// has not read yet): a consumer filtered wider than ours delivers it, and
// nothing about it is answered.
type ignoredKind struct{}

func (ignoredKind) label() string { return "other" }
func (ignoredKind) answer(context.Context, *trigger) (any, string, error) {
	return nil, "", nil
}
func (ignoredKind) rejected(context.Context, *trigger, *rejection) (any, error) { return nil, nil }
func (ignoredKind) rejectOutcome() string                                       { return events.OutcomeRejected }
func (ignoredKind) failed(*trigger, error) any                                  { return nil }
func (ignoredKind) tooLarge(*trigger, error) any                                { return nil }

// handle runs one delivery to its fate: it never panics and always acks,
// naks or terms the message, except when a test hook simulates a crash.
func (p *Processor) handle(ctx context.Context, msg jetstream.Msg) {
	if p.hooks.take != nil && !p.hooks.take(msg) {
		_ = msg.Nak()
		return
	}
	t := &trigger{msg: msg, start: p.now(), handler: ignoredKind{}}
	defer t.giveBack()
	// What the trigger is answered from reflects every skill change made
	// before it arrived (read-your-writes); providers may share the checks
	// among triggers that arrived before a check began.
	ctx = catalog.WithArrival(ctx, time.Now())
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
		p.m.tooLarge.WithLabelValues(t.handler.label()).Inc()
		p.log.Error("output too large for one message; answered with an error, not retried", "subject", msg.Subject(),
			"seq", t.seq, "err", err)
		p.answerTooLarge(t, err)
	case errors.Is(err, errEvicted):
		p.m.evicted.WithLabelValues(t.handler.label()).Inc()
		p.log.Warn("trigger's output was removed by the stream's limits; answered, not retried", "subject", msg.Subject(),
			"seq", t.seq, "err", err)
		p.answerFailure(t, err)
	case errors.Is(err, errPanic):
		p.m.panics.Inc()
		p.log.Error("panic handling trigger", "subject", msg.Subject(), "seq", t.seq, "err", err)
		p.answerFailure(t, err)
	case f == fateTerm:
		p.m.deadLetters.WithLabelValues(t.handler.label()).Inc()
		p.log.Error("trigger dead-lettered after its last delivery", "subject", msg.Subject(),
			"seq", t.seq, "deliveries", t.delivered, "err", err)
		p.answerFailure(t, err)
	case f == fateRetry:
		p.m.transient.WithLabelValues(t.handler.label()).Inc()
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
	p.m.observe(stageTotal, p.now().Sub(t.start))
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

// process reads the delivery's envelope and hands it to its kind's handler,
// then counts and sends the reply the handler returns.
func (p *Processor) process(ctx context.Context, t *trigger) error {
	meta, err := t.msg.Metadata()
	if err != nil {
		return p.reject(ctx, t, reasonEnvelope, fmt.Errorf("read delivery metadata: %w", err))
	}
	t.seq = meta.Sequence.Stream
	t.delivered = meta.NumDelivered
	t.last = p.cfg.MaxDeliver > 0 && meta.NumDelivered >= uint64(p.cfg.MaxDeliver)
	sid, kind, err := events.ParseSubjectIn(p.cfg.Layout, p.cfg.Prefix, t.msg.Subject())
	var known bool
	t.sid = sid
	t.handler, known = p.handlerOf(kind)
	if t.delivered > 1 {
		p.m.redeliveries.WithLabelValues(t.handler.label()).Inc()
	}
	if err != nil {
		// Keep what can be read, to address the rejection.
		s, k := roughSubject(p.cfg.Layout, p.cfg.Prefix, t.msg.Subject())
		t.sid = s
		t.handler, _ = p.handlerOf(k)
	}
	h := t.msg.Headers()
	t.enc, _ = events.EncodingOf(h.Get(events.HeaderContentType))
	inbox := h.Get(events.HeaderReplyInbox)
	if inbox != "" {
		if err := p.cfg.checkTriggerInbox(inbox, t.sid); err != nil {
			// Answered nowhere: the subject is not one to answer on.
			return p.reject(ctx, t, reasonInbox, fmt.Errorf("header %s: %w", events.HeaderReplyInbox, err))
		}
	}
	t.inbox = inbox
	if err != nil {
		return p.reject(ctx, t, reasonSubject, fmt.Errorf("subject %q: %w", t.msg.Subject(), err))
	}
	if !known {
		// A consumer filtered wider than ours: not our business.
		return nil
	}
	if _, err := events.EncodingOf(h.Get(events.HeaderContentType)); err != nil {
		return p.reject(ctx, t, reasonEncoding, fmt.Errorf("header %s: %w", events.HeaderContentType, err))
	}
	// Decoding and checking cost in proportion to the bytes: a trigger
	// larger than any honest one is refused on its length alone, and its
	// step or call id is not read.
	if n := len(t.msg.Data()); n > p.cfg.MaxTriggerBytes {
		return p.reject(ctx, t, reasonTooLarge, fmt.Errorf("%w: trigger payload of %d bytes, over the processor's limit of %d",
			events.ErrTooLarge, n, p.cfg.MaxTriggerBytes))
	}
	stop := p.keepAlive(t.msg)
	defer stop()
	reply, outcome, err := t.handler.answer(ctx, t)
	if err != nil {
		return err
	}
	p.m.triggers.WithLabelValues(t.handler.label(), outcome).Inc()
	return p.reply(t, reply)
}

// roughSubject splits a subject that does not parse in layout l as well as
// it can, to address the rejection: the session tokens of the layout after
// the prefix (joined by their dots), and the rest as the kind.
func roughSubject(l events.Layout, prefix, subject string) (string, events.Kind) {
	rest, _ := strings.CutPrefix(subject, prefix+".")
	var sid []string
	for range l.SessionTokens() {
		tok, after, _ := strings.Cut(rest, ".")
		sid, rest = append(sid, tok), after
	}
	return strings.Join(sid, "."), events.Kind(rest)
}
