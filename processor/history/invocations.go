package history

import (
	"context"

	"github.com/skillstream/skillstream/events"
)

// Invocation is a skill a user invoked, as found in a session log.
type Invocation struct {
	Record
	events.SkillInvocation
}

// DecodeInvocation decodes a skill.invocation record of a session of the
// flat layout.
func DecodeInvocation(r Record) (events.SkillInvocation, error) {
	return DecodeInvocationIn(events.LayoutFlat, r)
}

// DecodeInvocationIn decodes a skill.invocation record of a session of
// layout l, its value's content filled in from its text when the record
// carries the instructions only once (events.SkillInvocation.WithContent):
// records of either form read the same.
func DecodeInvocationIn(l events.Layout, r Record) (events.SkillInvocation, error) {
	enc, err := r.encoding()
	if err != nil {
		return events.SkillInvocation{}, err
	}
	inv, err := events.DecodeSkillInvocationIn(l, enc, r.Data)
	if err != nil {
		return inv, err
	}
	return inv.WithContent(), nil
}

// Invocations returns the user invocations already appended for step,
// oldest first: the invocations of one step lie together at the end of
// the invocation subject until a later step invokes, so it walks back from
// the newest while they belong to this session and step, reading at most
// limit records. A record that does not decode ends the walk.
//
// A retried or redelivered pre-step uses it to answer with what it
// appended before and to append only what is missing.
func (s Session) Invocations(ctx context.Context, log Log, step string, limit int) ([]Invocation, error) {
	subject := events.Subject(s.Prefix, s.ID, events.KindInvocation)
	cur, err := log.Newest(ctx, events.KindInvocation)
	if err != nil {
		return nil, err
	}
	var out []Invocation
	for cur != nil && len(out) < limit {
		inv, err := DecodeInvocationIn(s.Layout, *cur)
		if err != nil || inv.Session != s.ID || inv.Step != step {
			break
		}
		out = append(out, Invocation{Record: *cur, SkillInvocation: inv})
		if cur, err = before(ctx, log, subject, cur.Seq); err != nil {
			return nil, err
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out, nil
}
