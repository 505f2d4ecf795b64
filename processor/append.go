package processor

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
)

// outputID is the Nats-Msg-Id of the output answering step or call ref of
// session sid: the same for every retry of that step or call, so the
// stream's duplicate window refuses a second output. A ref unfit for a
// header is replaced by its hash.
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
}

// appendOutput appends an output of kind k to session sid, answering the
// trigger t, provided the session's newest event is still expectLast.
// It returns errConflict when the session moved on.
func (p *Processor) appendOutput(ctx context.Context, t *trigger, k events.Kind, id string, v any, expectLast uint64, attempt int) (appended, error) {
	data, err := events.Encode(events.Msgpack, v)
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
	if err := p.fits(m.Header, data); err != nil {
		return appended{}, fmt.Errorf("append %s to %s: %w", k, t.sid, err)
	}
	if p.hooks.beforeAppend != nil {
		if err := p.hooks.beforeAppend(t.sid, attempt); err != nil {
			return appended{}, fmt.Errorf("append %s to %s: %w", k, t.sid, err)
		}
	}
	start := p.now()
	actx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
	ack, err := p.js.PublishMsg(actx, m)
	cancel()
	p.m.latency.WithLabelValues(stageAppend).Observe(p.now().Sub(start).Seconds())
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || apiErr.ErrorCode == errCodeWrongLastSequenceConstant) {
		p.m.conflicts.Inc()
		return appended{}, fmt.Errorf("append %s to %s: %w", k, t.sid, errConflict)
	}
	if err != nil {
		return appended{}, fmt.Errorf("append %s to %s: %w", k, t.sid, err)
	}
	if p.hooks.afterAppend != nil {
		if err := p.hooks.afterAppend(t.sid, ack.Sequence); err != nil {
			return appended{}, err
		}
	}
	return appended{seq: ack.Sequence, duplicate: ack.Duplicate, data: data}, nil
}

// errCodeWrongLastSequenceConstant is the JetStream API error code of a
// conflicting append refused while another append to the same subject is
// in flight (clustered streams).
const errCodeWrongLastSequenceConstant jetstream.ErrorCode = 10164

// readOutput reads back the output at seq (the original of a duplicate).
func (p *Processor) readOutput(ctx context.Context, seq uint64) (record, events.Encoding, error) {
	rctx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
	defer cancel()
	s, err := p.rd.bySeq(rctx, seq)
	if err != nil {
		return record{}, 0, fmt.Errorf("read output %d: %w", seq, err)
	}
	enc, err := encodingOfStored(s)
	if err != nil {
		return record{}, 0, fmt.Errorf("read output %d: %w", seq, err)
	}
	return s, enc, nil
}
