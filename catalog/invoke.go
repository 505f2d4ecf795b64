package catalog

import (
	"context"
	"unicode"
	"unicode/utf8"
)

// A user invokes a skill by writing "/<name>" in a message: a slash at the
// start of the text or after white space, a name in the skill grammar, then
// white space or the end of the text. "/x/refs", "5/8" and "foo/x" are not
// invocations; neither is "/pdf," (the name must end at white space).
// White space is Unicode white space, as unicode.IsSpace says.

// Gestures returns the names invoked in texts, each once, in the order of
// their first appearance across texts. A name longer than the grammar
// allows is returned too (Invoke reports it unknown), so that what a user
// wrote is accounted for.
func Gestures(texts []string) []string {
	var names []string
	for _, s := range texts {
		names = appendGestures(names, s)
	}
	return names
}

// appendGestures appends to names the gestured names of s not in it yet.
func appendGestures(names []string, s string) []string {
	atSpace := true // the start of s counts as white space
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r != '/' || !atSpace {
			atSpace = unicode.IsSpace(r)
			i += size
			continue
		}
		// "/" after white space: a name, then white space or the end.
		j := i + 1
		for j < len(s) && nameByte(s[j]) {
			j++
		}
		name := s[i+1 : j]
		end := j == len(s)
		if !end {
			next, _ := utf8.DecodeRuneInString(s[j:])
			end = unicode.IsSpace(next)
		}
		if end && grammarShape(name) && !contains(names, name) {
			names = append(names, name)
		}
		// Go on after the name: its last character is not white space,
		// so the next gesture needs white space first.
		atSpace = false
		i = max(j, i+1)
	}
	return names
}

func nameByte(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' }

// grammarShape reports whether name is runs of [a-z0-9] joined by single
// hyphens, whatever its length.
func grammarShape(name string) bool {
	if name == "" || name[0] == '-' || name[len(name)-1] == '-' {
		return false
	}
	for i := 1; i < len(name); i++ {
		if name[i] == '-' && name[i-1] == '-' {
			return false
		}
	}
	return true
}

func contains(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// IgnoreReason says why a gestured name invoked nothing.
type IgnoreReason string

// The reasons a gestured name invokes nothing.
const (
	// IgnoredUnknown: no skill of that name wins for the session.
	IgnoredUnknown IgnoreReason = "unknown"
	// IgnoredNotUserInvocable: the winner is not user-invocable.
	IgnoredNotUserInvocable IgnoreReason = "not_user_invocable"
	// IgnoredLoadFailed: the winner could not be loaded (it vanished
	// between resolution and load, or its provider failed).
	IgnoredLoadFailed IgnoreReason = "load_failed"
	// IgnoredDisabled: user invocation is off; the user's text was not
	// read.
	IgnoredDisabled IgnoreReason = "disabled"
)

// Gesture is the outcome of one gestured name: a Result whose Value is
// set (its Text is what is appended to the session), or the Reason it
// invoked nothing (with the Result's Err saying more when the load failed).
type Gesture struct {
	Name   string
	Result Result
	Reason IgnoreReason
}

// Invoked reports whether the name invokes a skill.
func (g Gesture) Invoked() bool { return g.Reason == "" && g.Result.Value != nil }

// Invoke resolves a name a user gestured exactly as Execute resolves the
// skill tool's argument (same winner, same load, same instruction size
// limit and resource base), but the rule of who may invoke is the user's:
// the winner must be user-invocable, and whether the model may invoke it
// plays no part. The Result's Text is the document the tool gives for that
// skill.
func Invoke(ctx context.Context, l Lookup, name string, opts Options) Gesture {
	g := Gesture{Name: name}
	rl := &resolving{Lookup: l}
	res := run(ctx, rl, name, opts, func(i Invocation) bool { return i.UserInvocable }, notUserInvocable)
	switch {
	case res.Err == nil:
		g.Result = res
	case res.Err.Code == CodeInvalidName || res.Err.Code == CodeUnknown && !rl.resolved:
		g.Reason = IgnoredUnknown
	case res.Err.Code == codeNotUserInvocable:
		g.Reason = IgnoredNotUserInvocable
	default:
		g.Reason, g.Result = IgnoredLoadFailed, res
	}
	return g
}

// resolving is a Lookup that remembers whether the name resolved, so that
// a skill that vanished between resolution and load is told from one that
// never existed.
type resolving struct {
	Lookup
	resolved bool
}

func (r *resolving) Resolve(ctx context.Context, name string) (Summary, error) {
	s, err := r.Lookup.Resolve(ctx, name)
	r.resolved = err == nil
	return s, err
}

// codeNotUserInvocable is Invoke's refusal; it never reaches the model.
const codeNotUserInvocable ErrorCode = "not_user_invocable"

func notUserInvocable(name string) Result {
	return fail(codeNotUserInvocable, `skill "`+name+`" is not available for user invocation`)
}
