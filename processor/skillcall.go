package processor

import (
	"context"
	"fmt"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/history"
)

// expiredText is what the model reads for a call handled after its
// deadline; searchExpiredText for a search.
const (
	expiredText       = "skill call expired before it could be handled"
	searchExpiredText = "skill search expired before it could be handled"
)

// skillCallKind handles tool.call.skill triggers: run the skill tool,
// append the tool.result, answer with it.
type skillCallKind struct{ p *Processor }

func (skillCallKind) label() string { return "skill-call" }

func (k skillCallKind) answer(ctx context.Context, t *trigger) (any, string, error) {
	p := k.p
	sc, err := events.DecodeSkillCallIn(p.cfg.Layout, t.enc, t.msg.Data())
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
	res, data, err := p.runSkillCall(ctx, t, sc)
	if err != nil {
		return nil, "", err
	}
	outcome := "ok"
	if res.IsError && res.Error != nil {
		outcome = res.Error.Code
	}
	if data != nil {
		return preEncoded{v: res, msgpack: data}, outcome, nil
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
	return p.badRequest(ctx, t, what+rej.err.Error(), skillCallReads, func(r events.ToolResult) { p.m.skills.result("", false, r) })
}

// badRequest answers a tool call (skill or search) that was rejected with
// a bad_request error result saying msg, appended to the session too when
// the call id and session are readable, so that the model's tool call has
// a result; done counts it once appended. reads are the kinds the call's
// plan reads.
func (p *Processor) badRequest(ctx context.Context, t *trigger, msg string, reads []events.Kind, done func(events.ToolResult)) (any, error) {
	res := p.toolError(t, events.CodeBadRequest, msg)
	if t.ref == "" || !events.ValidSessionIn(p.cfg.Layout, t.sid) {
		return res, nil
	}
	out, err := appendAnswer(p, ctx, ctx, t, events.KindToolResult, 0, &toolCallPlan{p: p, t: t, kinds: reads, made: &res, done: done})
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

// toolError is an error ToolResult answering t.
func (p *Processor) toolError(t *trigger, code, msg string) events.ToolResult {
	return events.ToolResult{
		V: events.Version, Session: t.sid, Call: t.ref, TriggerSeq: t.seq,
		IsError: true, Text: "Error: " + msg,
		Error: &events.ErrorInfo{Code: code, Message: msg},
	}
}

// runSkillCall runs the call once and appends its result (runToolCall).
func (p *Processor) runSkillCall(ctx context.Context, t *trigger, sc events.SkillCall) (res events.ToolResult, data []byte, err error) {
	var resolved bool // the name resolved to a skill of the session's view
	plan := &toolCallPlan{p: p, t: t, kinds: skillCallReads, deadlineMs: sc.DeadlineMs, tool: "skill tool", late: expiredText,
		exec: func(ctx context.Context) events.ToolResult {
			l := &resolving{Lookup: history.Lookup(p.skills, p.cohort(t.sid, history.CallQuery(sc)))}
			r := catalog.Execute(ctx, l, sc.Args.Name, p.cfg.Catalog)
			resolved = l.resolved
			if r.Err != nil && r.Err.Code == catalog.CodeProvider {
				p.m.providerErrs.Inc()
			}
			res := toolResult(t, r)
			if res.Error != nil && l.resolved {
				// The revision the error is of: a release's errors are
				// counted per revision.
				res.Error.Rev, res.Error.Channel = l.origin.Rev, l.origin.Channel
			}
			return res
		},
		done: func(r events.ToolResult) {
			if p.m.skills.result(sc.Args.Name, resolved, r) {
				p.log.Warn("more skills loaded than the per-skill metrics have labels for: the rest are counted as _other (skill_labels_overflow_total); raise --metrics-skill-limit",
					"limit", p.cfg.SkillLabelLimit)
			}
		},
	}
	return p.runToolCall(ctx, t, plan, sc.MinStoreEpoch, sc.MinStoreRevision)
}

// runToolCall runs a tool call's plan once and appends its result
// (appendAnswer), within the call's deadline (plan.deadlineMs) and after
// the store revision it names (fresh.go). It answers from the log when the result already
// exists, and with an expired error result, appending nothing, when the
// deadline passes first. When the answer is the result this call
// appended, data is the msgpack encoding appended; otherwise nil.
func (p *Processor) runToolCall(ctx context.Context, t *trigger, plan *toolCallPlan, epoch string, rev uint64) (events.ToolResult, []byte, error) {
	deadlineMs := plan.deadlineMs
	if p.expired(deadlineMs) {
		return plan.expired(), nil, nil
	}
	dctx, cancel := withDeadline(ctx, deadlineMs)
	defer cancel()
	plan.behind = p.awaitStore(dctx, t.handler.label(), epoch, rev)
	res, err := appendAnswer(p, ctx, dctx, t, events.KindToolResult, deadlineMs, plan)
	return res, plan.data, err
}

// toolCallPlan is a tool call's part in appendAnswer, a skill call's or a
// skill search's. Its answer already in the log is the newest tool.result
// when that answers this trigger or call; what it builds is the tool's
// result, made once whatever the number of attempts (or given: the
// bad_request result of a rejection).
type toolCallPlan struct {
	p     *Processor
	t     *trigger
	kinds []events.Kind // what it reads: the call's kind and tool results
	// deadlineMs is the call's deadline (unix ms; 0: none).
	deadlineMs int64
	// exec runs the call once, when made is nil; tool names the tool in
	// an unavailable answer, late is the message of an expired one; done
	// is told of the result appended.
	exec func(ctx context.Context) events.ToolResult
	tool string
	late string
	done func(events.ToolResult)
	made *events.ToolResult // the result, once made
	data []byte             // made's msgpack encoding, once appended
	// behind: the store revision the call asks for was not reached
	// (fresh.go); it is answered unavailable, nothing appended.
	behind error
}

// skillCallReads are the kinds a skill call needs: its own, and the
// results that may already answer it.
var skillCallReads = []events.Kind{events.KindSkillCall, events.KindToolResult}

func (s *toolCallPlan) reads() []events.Kind { return s.kinds }

func (s *toolCallPlan) existing(_ context.Context, v view) (events.ToolResult, bool, error) {
	if prev := v.of(s.p.cfg.Prefix, s.t.sid, events.KindToolResult); prev != nil {
		if r, ok := s.p.resultFor(s.t, *prev); ok {
			return r, true, nil
		}
	}
	return events.ToolResult{}, false, nil
}

func (s *toolCallPlan) build(ctx context.Context) (built[events.ToolResult], error) {
	if s.behind != nil && s.made == nil {
		return built[events.ToolResult]{answer: s.p.toolError(s.t, codeUnavailable, s.tool+" unavailable: "+s.behind.Error())}, nil
	}
	if s.made == nil {
		p := s.p
		start := p.now()
		r := s.exec(ctx)
		p.m.observe(stageDecide, p.now().Sub(start))
		if p.expired(s.deadlineMs) {
			return built[events.ToolResult]{}, errPastDeadline
		}
		res := p.fitResult(s.t, r)
		s.made = &res
	}
	return built[events.ToolResult]{output: *s.made, answer: *s.made}, nil
}

func (s *toolCallPlan) appended(a appended) {
	s.data = a.data
	if s.made != nil && s.done != nil {
		s.done(*s.made)
	}
}

func (s *toolCallPlan) original(r record, enc events.Encoding) (events.ToolResult, error) {
	orig, err := events.DecodeToolResultIn(s.p.cfg.Layout, enc, r.Data)
	if err != nil {
		return events.ToolResult{}, fmt.Errorf("decode tool result %d: %w: %w", r.Seq, errForeignDuplicate, err)
	}
	if orig.Session != s.t.sid || orig.Call != s.t.ref {
		return events.ToolResult{}, fmt.Errorf("%w: tool result %d is of session %q, call %q", errForeignDuplicate,
			r.Seq, truncate(orig.Session, 200), truncate(orig.Call, 200))
	}
	orig.TriggerSeq = s.t.seq
	return orig, nil
}

func (s *toolCallPlan) expired() events.ToolResult {
	return s.p.toolError(s.t, events.CodeExpired, s.late)
}

// resultFor reads a stored tool.result back as the answer to t when it
// answers the same trigger or the same call, as its payload says (its
// Msg-Id, a keyed hash, tells nothing).
func (p *Processor) resultFor(t *trigger, s record) (events.ToolResult, bool) {
	enc, err := encodingOfStored(s)
	if err != nil {
		return events.ToolResult{}, false
	}
	r, err := events.DecodeToolResultIn(p.cfg.Layout, enc, s.Data)
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
			Digest: r.Value.Digest, Revision: r.Value.Revision, Rev: r.Value.Origin.Rev, Channel: r.Value.Origin.Channel}
		if sg := r.Value.Signature; sg != nil {
			v.Signature = &events.SkillSignature{Key: sg.Key, Alg: sg.Alg, Sig: sg.Sig, Scope: sg.Scope, Summary: sg.Summary}
		}
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

// resolving is a skill call's lookup, noting whether the name resolved
// to a skill: only such names get a metric label of their own.
type resolving struct {
	catalog.Lookup
	resolved bool
	origin   catalog.Origin // the resolved skill's (store skills only)
}

func (l *resolving) Resolve(ctx context.Context, name string) (catalog.Summary, error) {
	sum, err := l.Lookup.Resolve(ctx, name)
	if err == nil {
		l.resolved, l.origin = true, sum.Origin
	}
	return sum, err
}
