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

// skillCall handles a tool.call.skill trigger: run the skill tool, append
// the tool.result, answer with it.
func (p *Processor) skillCall(ctx context.Context, t *trigger) error {
	sc, err := events.DecodeSkillCall(t.enc, t.msg.Data())
	t.ref = usableID(sc.Call)
	if err != nil {
		return p.reject(t, decodeReason(err), fmt.Errorf("decode skill call: %w", err))
	}
	if sc.Session != t.sid {
		return p.reject(t, reasonSessionMismatch, fmt.Errorf("%w: payload session %q, subject session %q", errSessionMismatch, sc.Session, t.sid))
	}
	if sc.Cwd, err = p.cwds.check(sc.Cwd); err != nil {
		return p.reject(t, reasonCwd, err)
	}
	if p.expired(sc.DeadlineMs) {
		return p.answerExpired(t)
	}
	res, err := p.runSkillCall(ctx, t, sc)
	if err != nil {
		return err
	}
	if res == nil {
		return p.answerExpired(t)
	}
	outcome := "ok"
	if res.IsError && res.Error != nil {
		outcome = res.Error.Code
	}
	p.m.triggers.WithLabelValues(kindLabel(t.kind), outcome).Inc()
	return p.reply(t, res)
}

// answerExpired answers a call past its deadline; nothing is appended.
func (p *Processor) answerExpired(t *trigger) error {
	p.m.triggers.WithLabelValues(kindLabel(t.kind), events.OutcomeExpired).Inc()
	return p.reply(t, p.toolError(t, events.CodeExpired, expiredText))
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
				p.m.duplicates.WithLabelValues(kindLabel(t.kind)).Inc()
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
			p.m.duplicates.WithLabelValues(kindLabel(t.kind)).Inc()
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
