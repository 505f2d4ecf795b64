package processor

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/history"
)

// User invocation: a pre-step's userText may invoke skills by /<name>
// (catalog.Gestures). With Config.Catalog.UserInvocation on, once the
// step's catalog is decided (and appended, if it changed), each name is
// resolved as the skill tool resolves it (catalog.Invoke) and every
// invoked skill is appended as one skill.invocation event, in gesture
// order. Names that invoke nothing are listed in the Decision as ignored.
//
// Exactly once: each invocation has a Msg-Id derived from the session, the
// step and the name, so the stream refuses a second copy within its
// duplicate window; and before appending, the invocations of this step
// already at the end of the session's invocation subject are read back
// (history.Session.Invocations), whatever the window. A retry or a
// redelivery — also of a step interrupted between its catalog and its
// invocations — appends only what is missing, in order, and answers with
// every invocation of the step.

// MaxGestures is the most distinct /<name> gestures one pre-step's
// userText may hold; a pre-step with more is rejected, nothing appended.
const MaxGestures = 32

// reasonUserText is the reject reason of a userText with too many
// gestures.
const reasonUserText = "user_text"

// gestures returns the names a pre-step's userText invokes (none when user
// invocation is off), or an error when there are more than MaxGestures.
func (p *Processor) gestures(ps events.PreStep) ([]string, error) {
	if !p.cfg.Catalog.UserInvocation || len(ps.UserText) == 0 {
		return nil, nil
	}
	names := catalog.Gestures(ps.UserText)
	if len(names) > MaxGestures {
		return nil, fmt.Errorf("%w: field \"userText\": %d distinct /name gestures, limit %d", events.ErrBadPayload, len(names), MaxGestures)
	}
	return names, nil
}

// invokes reports whether a decided pre-step goes on to its invocations:
// not when it expired, was rejected, or could not be decided on the
// skills the worker asked for (an error, or a store view behind).
func invokes(d events.Decision) bool {
	switch d.Outcome {
	case events.OutcomeExpired, events.OutcomeRejected, events.OutcomeBehind:
		return false
	}
	return d.Error == nil
}

// invocationRead is the read of a step's invocations already in the log,
// started before the step's catalog is decided so that its round trip
// overlaps the catalog's (the catalog touches another subject; a member
// appending the same invocations meanwhile is stopped by their Msg-Ids).
type invocationRead struct {
	done chan struct{}
	got  []history.Invocation
	err  error
}

// readInvocations starts reading the invocations of ps's step already in
// the log; nil when names is empty. Its owner waits for it (wait).
func (p *Processor) readInvocations(ctx context.Context, t *trigger, ps events.PreStep, names []string) *invocationRead {
	if len(names) == 0 {
		return nil
	}
	r := &invocationRead{done: make(chan struct{})}
	go func() {
		defer close(r.done)
		v, err := p.readSession(ctx, t.sid, t.seq, []events.Kind{events.KindPreStep, events.KindInvocation})
		if err != nil {
			r.err = err
			return
		}
		h := history.Session{Prefix: p.cfg.Prefix, ID: t.sid, Layout: p.cfg.Layout, Owner: p.cfg.ToolOwner}
		r.got, r.err = h.Invocations(ctx, sessionLog{p: p, sid: t.sid, view: v}, ps.Step, MaxGestures)
		if r.err != nil {
			r.err = fmt.Errorf("read invocations of %s: %w", t.sid, r.err)
		}
	}()
	return r
}

// wait returns what the read found; nil, nil for a nil read. It may be
// called more than once.
func (r *invocationRead) wait() ([]history.Invocation, error) {
	if r == nil {
		return nil, nil
	}
	<-r.done
	return r.got, r.err
}

// invoke appends the invocations of names after the step's catalog and
// records them, and the names ignored, in d; read is the step's
// invocations already in the log (readInvocations of names).
func (p *Processor) invoke(ctx context.Context, t *trigger, ps events.PreStep, names []string, read *invocationRead, d *events.Decision) error {
	if len(ps.UserText) > 0 && !p.cfg.Catalog.UserInvocation {
		d.Ignored = append(d.Ignored, events.Ignored{Reason: events.IgnoredDisabled})
		return nil
	}
	if len(names) == 0 || !invokes(*d) {
		return nil
	}
	done, err := read.wait()
	if err != nil {
		return err
	}
	l := history.Lookup(p.skills, p.cohort(t.sid, history.PreStepQuery(ps)))
	over := false
	for _, name := range names {
		if inv, ok := invoked(done, name); ok {
			d.Invocations = append(d.Invocations, inv.WithContent())
			continue
		}
		g := catalog.Invoke(ctx, l, name, p.cfg.Catalog)
		if !g.Invoked() {
			d.Ignored = append(d.Ignored, events.Ignored{Name: name, Reason: string(g.Reason)})
			if g.Reason == catalog.IgnoredLoadFailed {
				p.log.Warn("user invocation: load failed", "session", t.sid, "step", ps.Step, "skill", name, "err", g.Result.Err)
			}
			continue
		}
		if over {
			d.Ignored = append(d.Ignored, events.Ignored{Name: name, Reason: events.IgnoredOverBudget})
			continue
		}
		inv, err := p.appendInvocation(ctx, t, ps.Step, invocationOf(t.sid, ps.Step, g.Result))
		if errors.Is(err, errOverBudget) {
			// This name and the ones after it: none is appended out of
			// the order the user wrote them in.
			over = true
			p.m.overBudget.WithLabelValues(budgetInvocationBytes).Inc()
			d.Ignored = append(d.Ignored, events.Ignored{Name: name, Reason: events.IgnoredOverBudget})
			continue
		}
		if err != nil {
			return err
		}
		d.Invocations = append(d.Invocations, inv.WithContent())
	}
	return nil
}

// errOverBudget reports an invocation not appended because its session
// spent its invocation bytes for the minute (outbudget.go).
var errOverBudget = errors.New("session over its invocation budget")

func invoked(done []history.Invocation, name string) (events.SkillInvocation, bool) {
	for _, inv := range done {
		if inv.Name == name {
			return inv.SkillInvocation, true
		}
	}
	return events.SkillInvocation{}, false
}

// invocationID is the Msg-Id of the invocation of name in a step.
func invocationID(sid, step, name string) string {
	return outputID(sid, step, events.KindInvocation) + ":" + name
}

// invocationOf is the skill.invocation event of a successful invocation.
func invocationOf(sid, step string, r catalog.Result) events.SkillInvocation {
	tr := toolResult(&trigger{sid: sid}, r)
	return events.SkillInvocation{
		V: events.Version, Session: sid, Step: step, ID: invocationID(sid, step, r.Value.Name), Role: "user",
		Name: r.Value.Name, Text: tr.Text,
		Source: events.InvocationSource{Kind: events.SourceKindInvocation, Name: r.Value.Name, Form: events.InvocationFormInstructions},
		Value:  *tr.Value,
	}
}

// appendInvocation appends inv to the session (after whatever is there:
// the Msg-Id, not the session's last sequence, keeps it once) and returns
// the invocation the stream holds: inv, or the original of a duplicate.
// The record carries the instructions once, in its text: its value leaves
// the copy out (events.SkillInvocation.WithContent puts it back). Its
// bytes are taken from the session's invocation budget; errOverBudget
// when they are not there, nothing appended.
func (p *Processor) appendInvocation(ctx context.Context, t *trigger, step string, inv events.SkillInvocation) (events.SkillInvocation, error) {
	inv = inv.WithoutContent()
	data, err := events.Encode(events.Msgpack, inv)
	if errors.Is(err, events.ErrTooLarge) {
		return inv, fmt.Errorf("encode %s: %w: %w", events.KindInvocation, errTooLarge, err)
	}
	if err != nil {
		return inv, fmt.Errorf("encode %s: %w", events.KindInvocation, err)
	}
	if !p.spent.takeInvocation(t.sid, len(data), p.budgetNow()) {
		return inv, errOverBudget
	}
	subject := events.Subject(p.cfg.Prefix, t.sid, events.KindInvocation)
	id := p.msgID(inv.ID)
	for attempt := 1; ; attempt++ {
		m := &nats.Msg{
			Subject: subject,
			Header: nats.Header{
				events.HeaderContentType:  []string{events.ContentTypeMsgpack},
				events.HeaderCausationSeq: []string{strconv.FormatUint(t.seq, 10)},
				events.HeaderMsgID:        []string{id},
			},
			Data: data,
		}
		if err := p.fits(m.Header, data); err != nil {
			return inv, fmt.Errorf("append %s to %s: %w", events.KindInvocation, t.sid, err)
		}
		ack, err := p.publish(ctx, m, events.KindInvocation, t.sid)
		if err != nil {
			return inv, err
		}
		if !ack.Duplicate {
			p.m.skills.invocation(inv.Name)
		}
		if p.hooks.afterAppend != nil {
			if err := p.hooks.afterAppend(t.sid, ack.Sequence); err != nil {
				return inv, err
			}
		}
		if !ack.Duplicate {
			return inv, nil
		}
		r, _, err := p.readOutput(ctx, ack.Sequence)
		if err != nil {
			return inv, err
		}
		orig, err := history.DecodeInvocationIn(p.cfg.Layout, r)
		switch {
		case err != nil:
			err = fmt.Errorf("%w: decode invocation %d: %w", errForeignDuplicate, r.Seq, err)
		case r.Subject != subject || orig.Session != t.sid || orig.Step != step || orig.Name != inv.Name:
			err = fmt.Errorf("%w: invocation %d on %s is of session %q, step %q, skill %q", errForeignDuplicate, r.Seq,
				truncate(r.Subject, 200), truncate(orig.Session, 200), truncate(orig.Step, 200), truncate(orig.Name, 200))
		}
		if errors.Is(err, errForeignDuplicate) && attempt < p.cfg.AppendRetries {
			id = p.foreignDuplicate(t, events.KindInvocation, id, r.Seq, err)
			continue
		}
		if err != nil {
			return inv, err
		}
		p.m.duplicates.WithLabelValues(t.handler.label()).Inc()
		p.spent.refundInvocation(t.sid, len(data), p.budgetNow()) // nothing more was stored
		return orig, nil
	}
}
