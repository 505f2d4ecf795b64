package processor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

// The append loop, appendAnswer, is the same for every trigger kind: read
// the session, answer from the log when the answer is already there, build
// the output, and append it with optimistic concurrency, reading and
// building again when the session moved on meanwhile. What differs between
// kinds is an outputPlan.

// outputPlan is one trigger's part in appendAnswer: how to find its answer
// already in the session, how to build its output, and how to answer with
// the original of a duplicate. The loop calls its methods one after the
// other on the trigger's worker, so a plan may keep what one method found
// for the next.
type outputPlan[A any] interface {
	// reads names the kinds whose newest events existing and build need,
	// the trigger's own kind included.
	reads() []events.Kind
	// existing returns the answer already in the session's log for this
	// trigger (a redelivery, or a worker's retry of the same step or call)
	// and found true, or found false. found with an error: the answer is
	// there but could not be read. It reads v for build too.
	existing(ctx context.Context, v view) (answer A, found bool, err error)
	// build decides, on the view existing was given last, what to append.
	build(ctx context.Context) (built[A], error)
	// appended is told that the output build made last was appended at a.
	appended(a appended)
	// original is the answer made of the output a duplicate append names,
	// read back from the stream.
	original(s record, enc events.Encoding) (A, error)
	// expired is the answer once the trigger's deadline passed before
	// anything was appended.
	expired() A
}

// headReader is a plan that can read its session through the head of a
// remembered catalog (pre-steps, head.go): headRead returns the view and
// true, or false when the session must be read in full.
type headReader interface {
	headRead(ctx context.Context) (view, bool)
}

// built is what an outputPlan built on one view of the session.
type built[A any] struct {
	output any  // the output to append; nil when nothing is to be appended
	answer A    // the answer: once output is appended, or without one
	again  bool // nothing decided: read the session again (not a conflict)
}

// errPastDeadline reports that the trigger's deadline passed before its
// output was appended: appendAnswer answers with the plan's expired answer.
var errPastDeadline = errors.New("trigger deadline passed")

// deadlineOr is errPastDeadline when deadlineMs (unix ms, 0: none) has
// passed, the failure err then being the deadline's doing; else err.
func (p *Processor) deadlineOr(deadlineMs int64, err error) error {
	if p.expired(deadlineMs) {
		return errPastDeadline
	}
	return err
}

// expiredOr answers with plan's expired answer when err is errPastDeadline;
// other errors pass through.
func expiredOr[A any](plan outputPlan[A], err error) (A, error) {
	if errors.Is(err, errPastDeadline) {
		return plan.expired(), nil
	}
	var zero A
	return zero, err
}

// expired reports whether a deadline (unix ms, 0 = none) has passed.
func (p *Processor) expired(deadlineMs int64) bool {
	return deadlineMs > 0 && p.now().UnixMilli() >= deadlineMs
}

// withDeadline bounds ctx by a trigger's deadline. Without one it is ctx
// itself: a context derived only to be cancelled would make every request
// context below it register with it, for nothing.
func withDeadline(ctx context.Context, deadlineMs int64) (context.Context, context.CancelFunc) {
	if deadlineMs <= 0 {
		return ctx, func() {}
	}
	return context.WithDeadline(ctx, time.UnixMilli(deadlineMs))
}

// appendAnswer appends the output of kind k answering trigger t, as plan
// builds it, and returns the answer; idempotently: an answer already in the
// session (existing), or the original of a duplicate append, is returned
// instead and nothing more is appended.
//
// Each attempt reads the session (one multi-last read of the kinds the plan
// reads, readSession; every kind after a conflict), asks
// plan whether the answer is there, has it build the output (or answer
// without one), and appends that expecting the session's last sequence as
// read. When the session moved on meanwhile (errConflict) it goes round
// again, at most Config.AppendRetries times. When the stream reports the
// output's Msg-Id as a duplicate, an earlier attempt at the same step or
// call appended first: its output, read back, is the answer.
//
// Reads stop at the trigger's deadline (dctx); the deadline is checked again
// before every append, and an append, once started, runs to its result
// under ctx so that the answer tells the truth.
func appendAnswer[A any](p *Processor, ctx, dctx context.Context, t *trigger, k events.Kind, deadlineMs int64, plan outputPlan[A]) (A, error) {
	var zero A
	oid := outputID(t.sid, t.ref, k)
	id := p.msgID(oid)
	kinds := plan.reads()
	hr, heads := any(plan).(headReader)
	subject := events.Subject(p.cfg.Prefix, t.sid, k)
	// original reads back the record at seq that a duplicate append (or
	// the older form of the Msg-Id) names: the answer when it is this
	// output, in this session; else an error wrapping errForeignDuplicate.
	original := func(seq uint64) (A, error) {
		s, enc, err := p.readOutput(ctx, seq)
		if err != nil {
			return zero, err
		}
		orig, err := plan.original(s, enc)
		if err == nil && s.Subject != subject {
			err = fmt.Errorf("%w: on %s", errForeignDuplicate, truncate(s.Subject, 200))
		}
		return orig, err
	}
	probed := false
	for attempt := 1; ; attempt++ {
		var v view
		read := false
		if heads && kinds != nil {
			v, read = hr.headRead(dctx)
		}
		if !read {
			var err error
			if v, err = p.readSession(dctx, t.sid, t.seq, kinds); err != nil {
				return expiredOr(plan, p.deadlineOr(deadlineMs, err))
			}
		}
		answer, found, err := plan.existing(dctx, v)
		if found {
			// Redelivery or worker retry: the answer is already in the log.
			p.m.duplicates.WithLabelValues(t.handler.label()).Inc()
		}
		if err != nil {
			return expiredOr(plan, err)
		}
		if found {
			return answer, nil
		}
		b, err := plan.build(dctx)
		if err != nil {
			return expiredOr(plan, err)
		}
		if b.again {
			continue
		}
		if b.output == nil {
			return b.answer, nil
		}
		if p.expired(deadlineMs) {
			return plan.expired(), nil
		}
		if !probed {
			// Answered before an upgrade, under the older Msg-Id form?
			probed = true
			seq, err := p.legacyDuplicate(ctx, subject, oid)
			if err != nil {
				return zero, err
			}
			if seq > 0 {
				orig, err := original(seq)
				if err == nil {
					p.m.duplicates.WithLabelValues(t.handler.label()).Inc()
					return orig, nil
				}
				if !errors.Is(err, errForeignDuplicate) {
					return zero, err
				}
				// Not this output: append it under its own id.
			}
		}
		a, err := p.appendOutput(ctx, t, k, id, b.output, v.last, attempt)
		if errors.Is(err, errConflict) && attempt < p.cfg.AppendRetries {
			// The session moved on, maybe with kinds not read: read them all.
			kinds = nil
			continue
		}
		if err != nil {
			return zero, err
		}
		if a.duplicate {
			// An earlier attempt at this step or call appended first, or
			// someone else took the Msg-Id: the record must be this
			// output, in this session, or it is not the answer.
			orig, err := original(a.seq)
			if errors.Is(err, errForeignDuplicate) && attempt < p.cfg.AppendRetries {
				id = p.foreignDuplicate(t, k, id, a.seq, err)
				kinds = nil
				continue
			}
			if err != nil {
				return zero, err
			}
			p.m.duplicates.WithLabelValues(t.handler.label()).Inc()
			return orig, nil
		}
		plan.appended(a)
		return b.answer, nil
	}
}

// errForeignDuplicate reports a duplicate append whose Msg-Id names a
// record that is not the output it was meant for: another subject, session,
// step or call, or producer.
var errForeignDuplicate = errors.New("output Msg-Id taken by another record")

// foreignDuplicate logs and counts a Msg-Id taken by a record at seq that
// is not the output, and returns the id to append under instead: derived
// from the taker's sequence, so every member that meets the same record
// chooses the same id and the output stays exactly-once.
func (p *Processor) foreignDuplicate(t *trigger, k events.Kind, id string, seq uint64, err error) string {
	p.m.idsTaken.Inc()
	p.log.Error("an output's Msg-Id was taken by a record that is not the output: appending it under another id",
		"session", truncate(t.sid, 200), "kind", string(k), "taken_by_seq", seq, "err", err)
	return id + "~" + strconv.FormatUint(seq, 10)
}

// outputID is the id of the output answering step or call ref of
// session sid: the same for every retry of that step or call. Its Msg-Id
// (msgID, a keyed hash of it) is made of it, so the stream's duplicate
// window refuses a second output. A ref unfit for a header is replaced by
// its hash (as older versions put the id itself in the Msg-Id).
func outputID(sid, ref string, k events.Kind) string {
	if !headerSafe(ref) {
		sum := sha256.Sum256([]byte(ref))
		ref = "sha256-" + hex.EncodeToString(sum[:16])
	}
	return sid + ":" + ref + ":" + string(k)
}

func headerSafe(s string) bool {
	if s == "" || len(s) > 256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// appended is a successful append: the sequence of the output and whether
// the stream already held it (same Msg-Id within the duplicate window).
type appended struct {
	seq       uint64
	duplicate bool
	data      []byte // the bytes appended (msgpack)
	head      uint64 // the sequence of the catalog's head; 0 without one
}

// selfEncoding is an output that encodes itself in msgpack, as
// events.Encode would (a catalog from its shared part, catalogOutput).
type selfEncoding interface {
	encodeMsgpack(dst []byte) ([]byte, error)
}

// headed is an output that gets a head when it is large (a catalog,
// head.go).
type headed interface {
	head() events.CatalogHead
}

// usageSummary is the Usage-Summary header of output v, "" for none: a
// catalog's (shared by every record of its body) and a loaded skill's.
// Errors and searches are read from their payload.
func usageSummary(v any) string {
	switch o := v.(type) {
	case catalogOutput:
		return o.body.UsageHeader()
	case events.ToolResult:
		if o.IsError || o.Search != nil || o.Value == nil {
			return ""
		}
		u := events.UsageSummary{Kind: events.UsageLoad, Skill: o.Value.Name, Digest: o.Value.Digest, Revision: o.Value.Revision, Rev: o.Value.Rev}
		if o.Value.Channel != catalog.ChannelStable {
			u.Channel = o.Value.Channel // the header leaves stable out
		}
		return u.Header()
	}
	return ""
}

// appendOutput appends an output of kind k to session sid, answering the
// trigger t, provided the session's newest event is still expectLast.
// It returns errConflict when the session moved on.
func (p *Processor) appendOutput(ctx context.Context, t *trigger, k events.Kind, id string, v any, expectLast uint64, attempt int) (appended, error) {
	var data []byte
	var err error
	if o, ok := v.(selfEncoding); ok {
		data, err = t.borrow(o.encodeMsgpack)
	} else {
		data, err = t.borrow(func(dst []byte) ([]byte, error) { return events.AppendEncode(dst, events.Msgpack, v) })
	}
	if errors.Is(err, events.ErrTooLarge) {
		return appended{}, fmt.Errorf("encode %s: %w: %w", k, errTooLarge, err)
	}
	if err != nil {
		return appended{}, fmt.Errorf("encode %s: %w", k, err)
	}
	m := &nats.Msg{
		Subject: events.Subject(p.cfg.Prefix, t.sid, k),
		Header: nats.Header{
			events.HeaderContentType:                []string{events.ContentTypeMsgpack},
			events.HeaderCausationSeq:               []string{strconv.FormatUint(t.seq, 10)},
			events.HeaderMsgID:                      []string{id},
			events.HeaderExpectedLastSubjSeq:        []string{strconv.FormatUint(expectLast, 10)},
			events.HeaderExpectedLastSubjSeqSubject: []string{events.SessionWildcard(p.cfg.Prefix, t.sid)},
		},
		Data: data,
	}
	if u := usageSummary(v); u != "" {
		m.Header[events.HeaderUsageSummary] = []string{u}
	}
	h, withHead := v.(headed)
	withHead = withHead && p.headMin > 0 && len(data) >= p.headMin
	if withHead {
		// The largest value the header can take, for fits.
		m.Header[events.HeaderCatalogHead] = []string{strconv.FormatUint(^uint64(0), 10)}
	}
	if err := p.fits(m.Header, data); err != nil {
		return appended{}, fmt.Errorf("append %s to %s: %w", k, t.sid, err)
	}
	if p.hooks.beforeAppend != nil {
		if err := p.hooks.beforeAppend(t.sid, attempt); err != nil {
			return appended{}, fmt.Errorf("append %s to %s: %w", k, t.sid, err)
		}
	}
	var head uint64
	if withHead {
		if head, err = p.appendHead(ctx, t, h.head(), expectLast); err != nil {
			return appended{}, err
		}
		// Nothing of the session may come between head and catalog.
		m.Header[events.HeaderCatalogHead] = []string{strconv.FormatUint(head, 10)}
		m.Header[events.HeaderExpectedLastSubjSeq] = []string{strconv.FormatUint(head, 10)}
	}
	ack, err := p.publish(ctx, m, k, t.sid)
	if err != nil {
		return appended{}, err
	}
	if p.hooks.afterAppend != nil {
		if err := p.hooks.afterAppend(t.sid, ack.Sequence); err != nil {
			return appended{}, err
		}
	}
	return appended{seq: ack.Sequence, duplicate: ack.Duplicate, data: data, head: head}, nil
}

// appendHead appends the head of a large catalog of t's session, provided
// the session's newest event is still expectLast (else errConflict), and
// returns its sequence. It has no Msg-Id: the catalog's makes the pair
// exactly-once; a head whose catalog was not appended is ignored.
func (p *Processor) appendHead(ctx context.Context, t *trigger, h events.CatalogHead, expectLast uint64) (uint64, error) {
	data, err := events.Encode(events.Msgpack, h)
	if err != nil {
		return 0, fmt.Errorf("encode %s: %w", events.KindCatalogHead, err)
	}
	ack, err := p.publish(ctx, &nats.Msg{
		Subject: events.Subject(p.cfg.Prefix, t.sid, events.KindCatalogHead),
		Header: nats.Header{
			events.HeaderContentType:                []string{events.ContentTypeMsgpack},
			events.HeaderCausationSeq:               []string{strconv.FormatUint(t.seq, 10)},
			events.HeaderExpectedLastSubjSeq:        []string{strconv.FormatUint(expectLast, 10)},
			events.HeaderExpectedLastSubjSeqSubject: []string{events.SessionWildcard(p.cfg.Prefix, t.sid)},
		},
		Data: data,
	}, events.KindCatalogHead, t.sid)
	if err != nil {
		return 0, err
	}
	return ack.Sequence, nil
}

// publish appends m (an event of kind k to session sid) and waits for its
// acknowledgement, within Config.RequestTimeout. A refused expected last
// sequence is errConflict.
func (p *Processor) publish(ctx context.Context, m *nats.Msg, k events.Kind, sid string) (*jetstream.PubAck, error) {
	start := p.now()
	actx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
	ack, err := p.js.PublishMsg(actx, m)
	cancel()
	p.m.observe(stageAppend, p.now().Sub(start))
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || apiErr.ErrorCode == errCodeWrongLastSequenceConstant) {
		p.m.conflicts.Inc()
		return nil, fmt.Errorf("append %s to %s: %w", k, sid, errConflict)
	}
	if err != nil {
		return nil, fmt.Errorf("append %s to %s: %w", k, sid, err)
	}
	return ack, nil
}

// errCodeWrongLastSequenceConstant is the JetStream API error code of a
// conflicting append refused while another append to the same subject is
// in flight (clustered streams).
const errCodeWrongLastSequenceConstant jetstream.ErrorCode = 10164

// readOutput reads back the output at seq (the original of a duplicate).
// An output the stream no longer holds because its limits removed it
// (evicted) is errEvicted.
func (p *Processor) readOutput(ctx context.Context, seq uint64) (record, events.Encoding, error) {
	rctx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
	defer cancel()
	s, err := p.rd.bySeq(rctx, seq)
	if errors.Is(err, errNoMessage) {
		if first, ok := p.evictedBelow(rctx, seq); ok {
			err = fmt.Errorf("%w (the stream now begins at sequence %d): %w", errEvicted, first, err)
		}
	}
	if err != nil {
		return record{}, 0, fmt.Errorf("read output %d: %w", seq, err)
	}
	enc, err := encodingOfStored(s)
	if err != nil {
		return record{}, 0, fmt.Errorf("read output %d: %w", seq, err)
	}
	return s, enc, nil
}

// errEvicted reports an output found by its Msg-Id (a duplicate append)
// that the stream's limits removed since: it cannot be read back to answer
// with, and appending it again would give the trigger a second output, so
// the trigger is answered that its output is gone (the kind's failed
// answer: for a pre-step, incomplete with code unavailable) and not
// retried. Once the duplicate window has passed, a new trigger for the
// same step or call is decided afresh.
var errEvicted = errors.New("the output was removed from the session log by the stream's limits")

// evictedBelow reports whether the message at seq lies below the stream's
// first sequence, with that sequence: removed by the stream's limits (or a
// purge), never to come back. A message merely missing from a replica
// that has not caught up (direct reads may be answered by any) is not.
func (p *Processor) evictedBelow(ctx context.Context, seq uint64) (uint64, bool) {
	s, err := p.js.Stream(ctx, p.cfg.Stream)
	if err != nil {
		return 0, false
	}
	first := s.CachedInfo().State.FirstSeq
	return first, first > seq
}
