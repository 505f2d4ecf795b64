package processor

import (
	"context"
	"errors"
	"fmt"
	"unicode"
	"unicode/utf8"

	"github.com/nats-io/nats.go"

	"github.com/skillstream/skillstream/events"
)

// reply sends v to the trigger's Reply-Inbox, if it has one, in the
// encoding the trigger was written in. Replies travel over core NATS: they
// can be lost, which is why every answer can be asked for again.
//
// A reply too large for one message (a JSON encoding can be several times
// the size of the msgpack output appended) is replaced by a smaller answer
// pointing at the session log (shrinkReply), never retried.
func (p *Processor) reply(t *trigger, v any) error {
	if t.inbox == "" {
		return nil
	}
	h := nats.Header{events.HeaderContentType: []string{t.enc.ContentType()}}
	var data []byte
	var err error
	if pe, ok := v.(preEncoded); ok {
		v = pe.v
		if t.enc == events.Msgpack {
			data = pe.msgpack
		}
	}
	if data == nil {
		data, err = t.borrow(func(dst []byte) ([]byte, error) { return events.AppendEncode(dst, t.enc, v) })
	}
	if err == nil {
		err = p.fits(h, data)
	}
	for err != nil && (errors.Is(err, events.ErrTooLarge) || errors.Is(err, errTooLarge)) {
		smaller, ok := shrinkReply(v, err)
		if !ok {
			break
		}
		v = smaller
		if data, err = events.Encode(t.enc, v); err == nil {
			err = p.fits(h, data)
		}
	}
	if err != nil {
		return fmt.Errorf("encode reply to %s: %w", t.inbox, err)
	}
	m := &nats.Msg{Subject: t.inbox, Header: h, Data: data}
	if err := p.nc.PublishMsg(m); err != nil {
		return fmt.Errorf("reply to %s: %w", t.inbox, err)
	}
	return nil
}

// preEncoded is an answer together with its msgpack encoding (the bytes
// just appended, when the answer is the output itself): a msgpack reply
// sends those bytes instead of encoding the answer again.
type preEncoded struct {
	v       any
	msgpack []byte
}

// codeUnavailable is the error code of an answer the processor gives when it
// could not do its work (dead letter, panic): nothing was appended.
const codeUnavailable = "unavailable"

// reject counts and logs a malformed trigger once and answers it where
// possible, with its kind's reply (kindHandler.rejected): a rejected
// Decision for a pre-step, a bad_request ToolResult for a skill call,
// appended to the session too when the call id is readable. It returns the
// rejection (fate: term), or a transient error when that bad_request result
// could not be appended (fate: retry).
//
// ctx is the trigger's own: an append of that bad_request result runs under
// it like any other append, each request bounded by Config.RequestTimeout.
func (p *Processor) reject(ctx context.Context, t *trigger, reason string, err error) error {
	rej := &rejection{reason: reason, err: err}
	reply, aerr := t.handler.rejected(ctx, t, rej)
	if aerr != nil {
		return aerr
	}
	p.countReject(t, rej)
	if reply == nil {
		return rej
	}
	return errors.Join(rej, p.reply(t, reply))
}

func (p *Processor) countReject(t *trigger, rej *rejection) {
	p.m.rejects.WithLabelValues(rej.reason).Inc()
	p.m.triggers.WithLabelValues(t.handler.label(), t.handler.rejectOutcome()).Inc()
	p.log.Warn("trigger rejected", "subject", t.msg.Subject(), "seq", t.seq, "reason", rej.reason, "err", rej.err)
}

// answerFailure tells a waiting worker that its trigger was given up (dead
// letter or panic): nothing was appended, and the worker may retry.
func (p *Processor) answerFailure(t *trigger, cause error) {
	if reply := t.handler.failed(t, cause); reply != nil {
		if err := p.reply(t, reply); err != nil {
			p.log.Warn("answer failed trigger", "subject", t.msg.Subject(), "seq", t.seq, "err", err)
		}
	}
}

// answerTooLarge answers a trigger whose output could not fit in one
// message: nothing was appended, and asking again would give the same
// output, so the error says what to change.
func (p *Processor) answerTooLarge(t *trigger, cause error) {
	if reply := t.handler.tooLarge(t, cause); reply != nil {
		if err := p.reply(t, reply); err != nil {
			p.log.Warn("answer trigger with too large an output", "subject", t.msg.Subject(), "seq", t.seq, "err", err)
		}
	}
}

// usableID returns a step or call id read from a rejected payload if it can
// address an answer (what the events validators accept), else "".
func usableID(id string) string {
	if len(id) > events.MaxIDLength || !utf8.ValidString(id) {
		return ""
	}
	for _, r := range id {
		if unicode.IsControl(r) {
			return ""
		}
	}
	return id
}
