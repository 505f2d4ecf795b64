package client

import (
	"context"
	"fmt"

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
// invoked nothing, with the reason (events.Ignored*).
func Invocations(d events.Decision) ([]Invocation, []events.Ignored) {
	out := make([]Invocation, len(d.Invocations))
	for i, inv := range d.Invocations {
		out[i] = Invocation{Name: inv.Name, Text: inv.Text, Value: inv.Value}
	}
	return out, d.Ignored
}

// materializeInvocations materialises the store skills among d's
// invocations, as CallSkill does for a tool result, before the worker
// shows their text to the model.
func (c *Client) materializeInvocations(ctx context.Context, ps events.PreStep, d events.Decision) error {
	if ps.ResourceDir == "" {
		return nil
	}
	for _, inv := range d.Invocations {
		v := inv.Value
		r := events.ToolResult{Text: inv.Text, Value: &v}
		if !IsStoreSkill(r) {
			continue
		}
		dir := v.ResourceBase.Path
		if err := c.materialize(ctx, r, dir); err != nil {
			return fmt.Errorf("client: skill %q into %s: %w: %w", v.Name, dir, ErrMaterialize, err)
		}
	}
	return nil
}
