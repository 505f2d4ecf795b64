package processor

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/history"
)

// expiredText is what the model reads for a call handled after its deadline.
const expiredText = "skill call expired before it could be handled"

// skillCallKind handles tool.call.skill triggers: run the skill tool,
// append the tool.result, answer with it.
type skillCallKind struct{ p *Processor }

func (skillCallKind) label() string { return "skill-call" }

func (k skillCallKind) answer(ctx context.Context, t *trigger) (any, string, error) {
	p := k.p
	sc, err := events.DecodeSkillCall(t.enc, t.msg.Data())
	t.ref = usableID(sc.Call)
	if err != nil {
		return nil, "", p.reject(ctx, t, decodeReason(err), fmt.Errorf("decode skill call: %w", err))
	}
	if sc.Session != t.sid {
		return nil, "", p.reject(ctx, t, reasonSessionMismatch, fmt.Errorf("%w: payload session %q, subject session %q", errSessionMismatch, sc.Session, t.sid))
	}
	if sc.Cwd, err = p.cwds.check(sc.Cwd); err != nil {
		return nil, "", p.reject(ctx, t, reasonCwd, err)
	}
	if p.expired(sc.DeadlineMs) {
		return p.expiredResult(t), events.OutcomeExpired, nil
	}
	res, err := p.runSkillCall(ctx, t, sc)
	if err != nil {
		return nil, "", err
	}
	if res == nil {
		return p.expiredResult(t), events.OutcomeExpired, nil
	}
	outcome := "ok"
	if res.IsError && res.Error != nil {
		outcome = res.Error.Code
	}
	return res, outcome, nil
}

// rejected: a bad_request error result, appended to the session too when
// the call id is readable, so that the model's tool call has a result.
func (k skillCallKind) rejected(ctx context.Context, t *trigger, rej *rejection) (any, error) {
	p := k.p
	what := "malformed skill call: "
	if rej.reason == reasonCwd {
		what = "skill call refused: "
	}
	res := p.toolError(t, events.CodeBadRequest, what+rej.err.Error())
	if t.ref == "" || !events.ValidSession(t.sid) {
		return res, nil
	}
	var out *events.ToolResult
	err := p.appendResult(ctx, ctx, t, 0, &out, func() (events.ToolResult, error) { return res, nil })
	if err != nil {
		return nil, fmt.Errorf("append bad_request result for %s: %w", t.ref, err)
	}
	return out, nil
}

func (skillCallKind) rejectOutcome() string { return events.CodeBadRequest }

// failed: an "unavailable" error result, not appended.
func (k skillCallKind) failed(t *trigger, cause error) any {
	return k.p.toolError(t, codeUnavailable, "skill tool unavailable: "+cause.Error())
}

// tooLarge: a "too_large" error result, not appended.
func (k skillCallKind) tooLarge(t *trigger, cause error) any {
	return k.p.toolError(t, events.CodeTooLarge, "the skill tool result is too large for one message ("+cause.Error()+")")
}

// expiredResult answers a call past its deadline; nothing is appended.
func (p *Processor) expiredResult(t *trigger) events.ToolResult {
	return p.toolError(t, events.CodeExpired, expiredText)
}

// toolError is an error ToolResult answering t.
func (p *Processor) toolError(t *trigger, code, msg string) events.ToolResult {
	return events.ToolResult{
		V: events.Version, Session: t.sid, Call: t.ref, TriggerSeq: t.seq,
		IsError: true, Text: "Error: " + msg,
		Error: &events.ErrorInfo{Code: code, Message: msg},
	}
}

// runSkillCall executes the call once and appends its result, re-reading on
// conflicts; it answers from the log when the result already exists. A nil
// result means the deadline passed before anything was appended.
func (p *Processor) runSkillCall(ctx context.Context, t *trigger, sc events.SkillCall) (*events.ToolResult, error) {
	dctx, cancel := withDeadline(ctx, sc.DeadlineMs)
	defer cancel()
	var res *events.ToolResult
	make := func() (events.ToolResult, error) {
		start := p.now()
		r := catalog.Execute(dctx, history.Lookup(p.skills, history.CallQuery(sc)), sc.Args.Name, p.cfg.Catalog)
		p.m.latency.WithLabelValues(stageDecide).Observe(p.now().Sub(start).Seconds())
		if p.expired(sc.DeadlineMs) {
			return events.ToolResult{}, context.DeadlineExceeded
		}
		if r.Err != nil && r.Err.Code == catalog.CodeProvider {
			p.m.providerErrs.Inc()
		}
		return p.fitResult(t, toolResult(t, r)), nil
	}
	return res, p.appendResult(ctx, dctx, t, sc.DeadlineMs, &res, make)
}

// appendResult appends the result *res (made by mk on first need) for call
// t.ref, idempotently: an existing result for the same trigger or call is
// read back into *res instead. It leaves *res nil when the deadline passed
// first.
func (p *Processor) appendResult(ctx, dctx context.Context, t *trigger, deadlineMs int64, res **events.ToolResult, mk func() (events.ToolResult, error)) error {
	id := outputID(t.sid, t.ref, events.KindToolResult)
	var made *events.ToolResult
	for attempt := 1; ; attempt++ {
		v, err := p.readSession(dctx, t.sid, t.seq)
		if err != nil {
			if p.expired(deadlineMs) {
				return nil
			}
			return err
		}
		if prev := v.of(p.cfg.Prefix, t.sid, events.KindToolResult); prev != nil {
			if r, ok := p.resultFor(t, *prev); ok {
				p.m.duplicates.WithLabelValues(t.handler.label()).Inc()
				*res = &r
				return nil
			}
		}
		if made == nil {
			r, err := mk()
			if errors.Is(err, context.DeadlineExceeded) {
				return nil
			}
			if err != nil {
				return err
			}
			made = &r
		}
		if p.expired(deadlineMs) {
			return nil
		}
		a, err := p.appendOutput(ctx, t, events.KindToolResult, id, *made, v.last, attempt)
		if errors.Is(err, errConflict) && attempt < p.cfg.AppendRetries {
			continue
		}
		if err != nil {
			return err
		}
		if a.duplicate {
			p.m.duplicates.WithLabelValues(t.handler.label()).Inc()
			s, enc, err := p.readOutput(ctx, a.seq)
			if err != nil {
				return err
			}
			orig, err := events.DecodeToolResult(enc, s.Data)
			if err != nil {
				return fmt.Errorf("decode tool result %d: %w", a.seq, err)
			}
			orig.TriggerSeq = t.seq
			*res = &orig
			return nil
		}
		*res = made
		return nil
	}
}

// resultFor reads a stored tool.result back as the answer to t when it
// answers the same trigger or the same call.
func (p *Processor) resultFor(t *trigger, s record) (events.ToolResult, bool) {
	if id := s.Header.Get(events.HeaderMsgID); id != "" && !history.CausedBy(s, t.seq) &&
		id != outputID(t.sid, t.ref, events.KindToolResult) &&
		strings.HasPrefix(id, t.sid+":") && strings.HasSuffix(id, ":"+string(events.KindToolResult)) {
		// A result this processor appended for another call (its Msg-Id
		// names the call): not the answer, and not worth decoding.
		return events.ToolResult{}, false
	}
	enc, err := encodingOfStored(s)
	if err != nil {
		return events.ToolResult{}, false
	}
	r, err := events.DecodeToolResult(enc, s.Data)
	if err != nil || r.Session != t.sid {
		return events.ToolResult{}, false
	}
	if !history.CausedBy(s, t.seq) && r.Call != t.ref {
		return events.ToolResult{}, false
	}
	r.TriggerSeq = t.seq
	return r, true
}

// toolResult turns a catalog.Result into the wire ToolResult answering t.
func toolResult(t *trigger, r catalog.Result) events.ToolResult {
	out := events.ToolResult{
		V: events.Version, Session: t.sid, Call: t.ref, TriggerSeq: t.seq,
		IsError: r.Err != nil || r.Value == nil, Text: r.Text(),
	}
	switch {
	case r.Err != nil:
		out.Error = &events.ErrorInfo{Code: string(r.Err.Code), Message: r.Err.Message}
	case r.Value != nil:
		v := &events.SkillValue{Name: r.Value.Name, Provider: r.Value.Provider, Content: r.Value.Content,
			Digest: r.Value.Digest, Revision: r.Value.Revision}
		if tr := r.Value.Truncated; tr != nil {
			v.Truncated = &events.Truncated{Kept: int64(tr.Kept), Total: int64(tr.Total)}
		}
		if rb := r.Value.ResourceBase; rb != nil {
			v.ResourceBase = &events.ResourceBase{Kind: string(rb.Kind), Path: rb.Path, URL: rb.URL, Description: rb.Description}
		}
		out.Value = v
	default:
		out.Error = &events.ErrorInfo{Code: events.CodeProvider, Message: "skill provider failed"}
	}
	return out
}
