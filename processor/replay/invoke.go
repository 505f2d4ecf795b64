package replay

import (
	"context"
	"fmt"
	"strings"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/history"
)

// hasUserText reports whether a recorded pre-step carries userText: its
// invocations, if any, follow its catalog.
func hasUserText(l events.Layout, e Event) bool {
	enc, err := events.EncodingOf(e.Header(events.HeaderContentType))
	if err != nil {
		return false
	}
	ps, err := events.DecodePreStepIn(l, enc, e.Data)
	return err == nil && len(ps.UserText) > 0
}

// decodeInvocation decodes a recorded skill.invocation.
func decodeInvocation(l events.Layout, e Event) (events.SkillInvocation, bool) {
	enc, err := events.EncodingOf(e.Header(events.HeaderContentType))
	if err != nil {
		return events.SkillInvocation{}, false
	}
	inv, err := events.DecodeSkillInvocationIn(l, enc, e.Data)
	return inv, err == nil
}

// recordedInvocations is the recorded side of a pre-step's invocations.
func recordedInvocations(l events.Layout, evs []Event) []Invoked {
	var out []Invoked
	for _, e := range evs {
		inv, ok := decodeInvocation(l, e)
		if !ok {
			out = append(out, Invoked{Seq: e.Seq, Text: "(undecodable skill.invocation)"})
			continue
		}
		out = append(out, Invoked{Name: inv.Name, Seq: e.Seq, Text: inv.Text})
	}
	return out
}

// replayInvocations runs the processor's user invocation rule for ps on
// the replay's skills: the gestures of its userText, each resolved with
// catalog.Invoke, when the replay's options have user invocation on.
// Replaying as recorded, a name invokes what the recording shows it
// invoked at this step (the recording says nothing else about who may
// invoke a skill), so an unchanged processor reproduces the recording.
func (r *Replayer) replayInvocations(ctx context.Context, p *pending, h history.State, ps events.PreStep) ([]Invoked, error) {
	if !r.opts.Catalog.UserInvocation || len(ps.UserText) == 0 {
		return nil, nil
	}
	skills, q, m := r.skillsFor(p, h, history.PreStepQuery(ps))
	if r.opts.AsRecorded {
		skills = invokedAsRecorded(r.layout, p.invocations, r.opts.Catalog.MaxSkillBytes)
	}
	l := history.Lookup(skills, q)
	var out []Invoked
	for _, name := range catalog.Gestures(ps.UserText) {
		g := catalog.Invoke(ctx, l, name, r.opts.Catalog)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("replay step %s: invoke %s: %w", ps.Step, name, ctx.Err())
		}
		if !g.Invoked() {
			continue
		}
		text := g.Result.Text()
		if m != nil {
			text = strings.ReplaceAll(text, m.New, m.Old)
		}
		out = append(out, Invoked{Name: name, Text: text})
	}
	return out, nil
}

// invokedAsRecorded serves the skills a step's recorded invocations show.
func invokedAsRecorded(l events.Layout, evs []Event, maxBytes int) shown {
	sh := shown{results: map[string]events.ToolResult{}, maxBytes: maxBytes}
	for _, e := range evs {
		if inv, ok := decodeInvocation(l, e); ok {
			// Records of either form (the instructions in the value too,
			// or in the text only) give the same skill.
			v := inv.WithContent().Value
			sh.results[inv.Name] = events.ToolResult{Text: inv.Text, Value: &v}
		}
	}
	return sh
}

// invocationsDiff is a unified diff between the invocations each side
// appended, or "" when they are the same.
func invocationsDiff(rec, rep []Invoked) string {
	join := func(invs []Invoked) string {
		var b strings.Builder
		for _, inv := range invs {
			b.WriteString("/" + inv.Name + "\n" + inv.Text + "\n")
		}
		return b.String()
	}
	a, b := join(rec), join(rep)
	if a == b {
		return ""
	}
	return UnifiedDiff("recorded invocations", "replayed invocations", a, b)
}
