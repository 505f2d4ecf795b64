package events

import "strings"

// A skill.invocation record carries the skill's instructions once: in
// Text, the message the model reads. Records written before carried them
// a second time in Value.Content, as a tool result's value does; records
// now leave Value.Content out. Readers call WithContent to get the same
// SkillInvocation from either.

// WithContent returns x with Value.Content filled in from Text when the
// record left it out: the part of Text between the first
// "<skill_instructions>\n" and the final
// "\n</skill_instructions>\n</skill_content>", which is exactly the
// content as shown. A record that carries Value.Content is returned as it
// is.
func (x SkillInvocation) WithContent() SkillInvocation {
	if x.Value.Content == "" {
		x.Value.Content = InstructionsOf(x.Text)
	}
	return x
}

// WithoutContent returns x without the copy of the instructions in
// Value.Content, as processors append it.
func (x SkillInvocation) WithoutContent() SkillInvocation {
	x.Value.Content = ""
	return x
}

// InstructionsOf returns the instructions in a skill tool success text
// (a <skill_content> document): what lies between its first
// "<skill_instructions>\n" and its final
// "\n</skill_instructions>\n</skill_content>"; "" when text is not such a
// document.
func InstructionsOf(text string) string {
	_, rest, ok := strings.Cut(text, "<skill_instructions>\n")
	if !ok {
		return ""
	}
	body, ok := strings.CutSuffix(rest, "\n</skill_instructions>\n</skill_content>")
	if !ok {
		return ""
	}
	return body
}
