package client

import (
	"context"

	"github.com/skillstream/skillstream/events"
)

// Invocation is a skill the user invoked with /<name>: Text is the message
// to add to the model's context (user role), after the step's catalog and
// the invocations before it; Value the skill as the skill tool returns it.
type Invocation struct {
	Name  string
	Text  string
	Value events.SkillValue
}

// Invocations returns the skills a pre-step's userText invoked, in the
// order their messages go to the model, and the gestured names that
// invoked nothing, with the reason (events.Ignored*). Value.Content is
// the instructions whether the invocation carries them twice (as records
// did before) or only in its text (events.SkillInvocation.WithContent).
func Invocations(d events.Decision) ([]Invocation, []events.Ignored) {
	out := make([]Invocation, len(d.Invocations))
	for i, inv := range d.Invocations {
		inv = inv.WithContent()
		out[i] = Invocation{Name: inv.Name, Text: inv.Text, Value: inv.Value}
	}
	return out, d.Ignored
}

// materializeInvocations materialises the store skills among d's
// invocations exactly as CallSkill does for a tool result (the directory
// computed by the worker, checked against the answer's), before the worker
// shows their text to the model.
func (c *Client) materializeInvocations(ctx context.Context, ps events.PreStep, d events.Decision) error {
	if ps.ResourceDir == "" {
		return nil
	}
	sc := events.SkillCall{Session: ps.Session, ResourceDir: ps.ResourceDir}
	for _, inv := range d.Invocations {
		v := inv.Value
		if err := c.materializeResult(ctx, sc, events.ToolResult{Text: inv.Text, Value: &v}); err != nil {
			return err
		}
	}
	return nil
}
