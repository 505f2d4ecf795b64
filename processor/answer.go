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
	data, err := events.Encode(t.enc, v)
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

// codeUnavailable is the error code of an answer the processor gives when it
// could not do its work (dead letter, panic): nothing was appended.
const codeUnavailable = "unavailable"

// reject counts and logs a malformed trigger once and answers it where
// possible: a rejected Decision for a pre-step, a bad_request ToolResult for
// a skill call — appended to the session too when the call id is readable.
// It returns the rejection (fate: term), or a transient error when that
// bad_request result could not be appended (fate: retry).
func (p *Processor) reject(t *trigger, reason string, err error) error {
	rej := &rejection{reason: reason, err: err}
	what := "malformed skill call: "
	if reason == reasonCwd {
		what = "skill call refused: "
	}
	if t.kind == events.KindSkillCall && t.ref != "" && events.ValidSession(t.sid) {
		res := p.toolError(t, events.CodeBadRequest, what+err.Error())
		var out *events.ToolResult
		aerr := p.appendResult(context.Background(), context.Background(), t, 0, &out, func() (events.ToolResult, error) { return res, nil })
		if aerr != nil {
			return fmt.Errorf("append bad_request result for %s: %w", t.ref, aerr)
		}
		p.countReject(t, rej)
		return errors.Join(rej, p.reply(t, out))
	}
	p.countReject(t, rej)
	switch t.kind {
	case events.KindPreStep:
		d := p.decision(t, events.OutcomeRejected, nil)
		d.Error = &events.ErrorInfo{Code: events.CodeBadRequest, Message: err.Error()}
		return errors.Join(rej, p.reply(t, d))
	case events.KindSkillCall:
		return errors.Join(rej, p.reply(t, p.toolError(t, events.CodeBadRequest, what+err.Error())))
	}
	return rej
}

func (p *Processor) countReject(t *trigger, rej *rejection) {
	p.m.rejects.WithLabelValues(rej.reason).Inc()
	outcome := events.OutcomeRejected
	if t.kind == events.KindSkillCall {
		outcome = events.CodeBadRequest
	}
	p.m.triggers.WithLabelValues(kindLabel(t.kind), outcome).Inc()
	p.log.Warn("trigger rejected", "subject", t.msg.Subject(), "seq", t.seq, "reason", rej.reason, "err", rej.err)
}

// answerFailure tells a waiting worker that its trigger was given up (dead
// letter or panic): nothing was appended, and the worker may retry.
func (p *Processor) answerFailure(t *trigger, cause error) {
	var err error
	switch t.kind {
	case events.KindPreStep:
		d := p.decision(t, events.OutcomeIncomplete, nil)
		d.Error = &events.ErrorInfo{Code: codeUnavailable, Message: cause.Error()}
		err = p.reply(t, d)
	case events.KindSkillCall:
		err = p.reply(t, p.toolError(t, codeUnavailable, "skill tool unavailable: "+cause.Error()))
	}
	if err != nil {
		p.log.Warn("answer failed trigger", "subject", t.msg.Subject(), "seq", t.seq, "err", err)
	}
}

// answerTooLarge answers a trigger whose output could not fit in one
// message: nothing was appended, and asking again would give the same
// output, so the error says what to change.
func (p *Processor) answerTooLarge(t *trigger, cause error) {
	var err error
	switch t.kind {
	case events.KindPreStep:
		d := p.decision(t, events.OutcomeIncomplete, nil)
		d.Error = &events.ErrorInfo{Code: events.CodeTooLarge,
			Message: "the catalog is too large for one message (" + cause.Error() + "): lower the catalog size limit"}
		err = p.reply(t, d)
	case events.KindSkillCall:
		err = p.reply(t, p.toolError(t, events.CodeTooLarge, "the skill tool result is too large for one message ("+cause.Error()+")"))
	}
	if err != nil {
		p.log.Warn("answer trigger with too large an output", "subject", t.msg.Subject(), "seq", t.seq, "err", err)
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
