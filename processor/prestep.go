package processor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/history"
)

// preStepKind handles agent.pre-step triggers: decide whether the
// session's catalog must change, append it if so, answer with the Decision.
type preStepKind struct{ p *Processor }

func (preStepKind) label() string { return "pre-step" }

func (k preStepKind) answer(ctx context.Context, t *trigger) (any, string, error) {
	p := k.p
	ps, err := events.DecodePreStep(t.enc, t.msg.Data())
	if err != nil {
		t.ref = usableID(ps.Step)
		return nil, "", p.reject(ctx, t, decodeReason(err), fmt.Errorf("decode pre-step: %w", err))
	}
	t.ref = ps.Step
	if ps.Session != t.sid {
		return nil, "", p.reject(ctx, t, reasonSessionMismatch, fmt.Errorf("%w: payload session %q, subject session %q", errSessionMismatch, ps.Session, t.sid))
	}
	if ps.Cwd, err = p.cwds.check(ps.Cwd); err != nil {
		return nil, "", p.reject(ctx, t, reasonCwd, err)
	}
	d, err := p.decidePreStep(ctx, t, ps)
	if err != nil {
		return nil, "", err
	}
	return d, d.Outcome, nil
}

// rejected: a "rejected" Decision; nothing is appended.
func (k preStepKind) rejected(_ context.Context, t *trigger, rej *rejection) (any, error) {
	d := k.p.decision(t, events.OutcomeRejected, nil)
	d.Error = &events.ErrorInfo{Code: events.CodeBadRequest, Message: rej.err.Error()}
	return d, nil
}

func (preStepKind) rejectOutcome() string { return events.OutcomeRejected }

// failed: outcome "incomplete" (the model keeps what it was shown), code
// "unavailable".
func (k preStepKind) failed(t *trigger, cause error) any {
	d := k.p.decision(t, events.OutcomeIncomplete, nil)
	d.Error = &events.ErrorInfo{Code: codeUnavailable, Message: cause.Error()}
	return d
}

// tooLarge: outcome "incomplete", code "too_large", saying which limit to
// lower.
func (k preStepKind) tooLarge(t *trigger, cause error) any {
	d := k.p.decision(t, events.OutcomeIncomplete, nil)
	d.Error = &events.ErrorInfo{Code: events.CodeTooLarge,
		Message: "the catalog is too large for one message (" + cause.Error() + "): lower the catalog size limit"}
	return d
}

// decision builds a reply to t.
func (p *Processor) decision(t *trigger, outcome string, cat *events.Catalog) events.Decision {
	return events.Decision{V: events.Version, Session: t.sid, Step: t.ref, TriggerSeq: t.seq, Outcome: outcome, Catalog: cat}
}

// expired reports whether a deadline (unix ms, 0 = none) has passed.
func (p *Processor) expired(deadlineMs int64) bool {
	return deadlineMs > 0 && p.now().UnixMilli() >= deadlineMs
}

// withDeadline bounds ctx by a trigger's deadline.
func withDeadline(ctx context.Context, deadlineMs int64) (context.Context, context.CancelFunc) {
	if deadlineMs <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithDeadline(ctx, time.UnixMilli(deadlineMs))
}

// decidePreStep reads, decides and appends until the append holds against
// the session it read (optimistic concurrency) or nothing needs appending.
func (p *Processor) decidePreStep(ctx context.Context, t *trigger, ps events.PreStep) (events.Decision, error) {
	if p.expired(ps.DeadlineMs) {
		return p.decision(t, events.OutcomeExpired, nil), nil
	}
	// Reads and the snapshot stop at the trigger's deadline; an append,
	// once started, runs to its result so that the answer tells the truth.
	dctx, cancel := withDeadline(ctx, ps.DeadlineMs)
	defer cancel()
	visible := history.Visible(ps.Tools, p.cfg.ToolOwner)
	q := history.PreStepQuery(ps)
	var prepared *catalog.View // the skills, taken once; nil when the tool is not visible
	if visible {
		cv, err := history.Prepare(dctx, p.skills, q, p.cfg.Catalog)
		if err != nil {
			return p.expiredOr(t, ps.DeadlineMs, fmt.Errorf("snapshot skills for %q: %w", ps.Cwd, err))
		}
		prepared = &cv
	}
	// The memory this pre-step will hold is about its catalog's size: wait
	// for room (Config.InflightBytes).
	release, err := p.inflight.acquire(dctx, preStepBytes(prepared))
	if err != nil {
		return p.expiredOr(t, ps.DeadlineMs, fmt.Errorf("wait for in-flight memory: %w", err))
	}
	defer release()
	id := outputID(t.sid, ps.Step, events.KindCatalog)
	caughtUp := false  // this pre-step waited for the store once (view.go)
	var checked uint64 // the catalog the view rule last allowed to replace
	for attempt := 1; ; attempt++ {
		v, err := p.readSession(dctx, t.sid, t.seq)
		if err != nil {
			return p.expiredOr(t, ps.DeadlineMs, err)
		}
		start := p.now()
		hist, err := p.catalogHistory(dctx, t.sid, v)
		if err != nil {
			return p.expiredOr(t, ps.DeadlineMs, fmt.Errorf("read catalog history of %s: %w", t.sid, err))
		}
		if hist.Answers(t.seq, ps.Step) {
			// Redelivery or worker retry: the answer is already in the log.
			p.m.duplicates.WithLabelValues(t.handler.label()).Inc()
			cat, err := hist.Newest.Decode()
			if err != nil {
				return events.Decision{}, fmt.Errorf("decode catalog %d: %w", hist.Newest.Seq, err)
			}
			return p.decision(t, events.OutcomeAppended, &cat), nil
		}
		d := history.Decide(prepared, hist)
		p.m.latency.WithLabelValues(stageDecide).Observe(p.now().Sub(start).Seconds())
		reason := emptyReason(ps.Tools, p.cfg.ToolOwner, visible, d)
		if d.Outcome != catalog.OutcomeAppended {
			dec := p.decision(t, string(d.Outcome), nil)
			dec.Reason = reason
			return dec, nil
		}
		if ref := replacedCatalog(prepared, hist, d); ref != nil && ref.Seq != checked {
			// A replacement of a catalog with another digest: the one
			// place where members' views may disagree (view.go).
			switch p.checkView(dctx, t.sid, q, prepared, ref, &caughtUp) {
			case viewAgain:
				cv, err := history.Prepare(dctx, p.skills, q, p.cfg.Catalog)
				if err != nil {
					return p.expiredOr(t, ps.DeadlineMs, fmt.Errorf("snapshot skills for %q: %w", ps.Cwd, err))
				}
				prepared = &cv
				continue
			case viewBehind:
				dec := p.decision(t, events.OutcomeBehind, nil)
				dec.Reason = events.ReasonStoreRevisionAhead
				return dec, nil
			case viewDiverged:
				dec := p.decision(t, events.OutcomeDiverged, nil)
				dec.Reason = events.ReasonMemberSeesOtherSkills
				return dec, nil
			}
			checked = ref.Seq
		}
		if p.expired(ps.DeadlineMs) {
			return p.decision(t, events.OutcomeExpired, nil), nil
		}
		var rev uint64
		if prepared != nil {
			rev = prepared.Revision
		}
		cat := events.Catalog{
			V:       events.Version,
			Session: t.sid,
			Step:    ps.Step,
			ID:      id,
			Role:    "user",
			Text:    d.Text,
			Source: events.CatalogSource{
				Kind:     events.SourceKindCatalog,
				Producer: p.cfg.ToolOwner,
				Update:   string(d.Update),
				Entries:  wireEntries(d.Entries),
				Digest:   d.Digest,
				Omitted:  d.Omitted,
				View:     &events.View{Revision: rev, Instance: p.cfg.Instance},
			},
		}
		a, err := p.appendOutput(ctx, t, events.KindCatalog, id, cat, v.last, attempt)
		if errors.Is(err, errConflict) && attempt < p.cfg.AppendRetries {
			continue
		}
		if err != nil {
			return events.Decision{}, err
		}
		if a.duplicate {
			// An earlier attempt at this step appended first.
			p.m.duplicates.WithLabelValues(t.handler.label()).Inc()
			s, enc, err := p.readOutput(ctx, a.seq)
			if err != nil {
				return events.Decision{}, err
			}
			orig, err := events.DecodeCatalog(enc, s.Data)
			if err != nil {
				return events.Decision{}, fmt.Errorf("decode catalog %d: %w", a.seq, err)
			}
			return p.decision(t, events.OutcomeAppended, &orig), nil
		}
		if digest, ok := history.RecogniseDecoded(t.sid, p.cfg.ToolOwner, cat); ok {
			p.recognised.remember(a.seq, events.Subject(p.cfg.Prefix, t.sid, events.KindCatalog), a.data,
				recognition{ok: true, digest: digest, step: cat.Step})
		}
		dec := p.decision(t, events.OutcomeAppended, &cat)
		dec.Reason = reason
		return dec, nil
	}
}

// emptyCatalogDigest is the digest of a catalog without entries.
var emptyCatalogDigest = catalog.Digest(nil)

// emptyReason says which rule left a decided view empty: the skill tool
// missing from the tool view, a same-named tool of another owner first in
// it, or no skills. It is "" when the view has entries or was not decided
// (incomplete).
func emptyReason(tools []events.Tool, owner string, visible bool, d catalog.Decision) string {
	if d.Outcome == catalog.OutcomeIncomplete {
		return ""
	}
	if !visible {
		for _, t := range tools {
			if t.Name == catalog.ToolName {
				return events.ReasonSkillToolOfOtherOwner
			}
		}
		return events.ReasonNoSkillTool
	}
	if d.Digest == emptyCatalogDigest {
		return events.ReasonNoSkills
	}
	return ""
}

// expiredOr turns a failure caused by the trigger's own deadline into the
// expired outcome; other errors pass through.
func (p *Processor) expiredOr(t *trigger, deadlineMs int64, err error) (events.Decision, error) {
	if p.expired(deadlineMs) {
		return p.decision(t, events.OutcomeExpired, nil), nil
	}
	return events.Decision{}, err
}

func wireEntries(es []catalog.Entry) []events.Entry {
	out := make([]events.Entry, len(es))
	for i, e := range es {
		out[i] = events.Entry{Name: e.Name, Description: e.Description}
	}
	return out
}
