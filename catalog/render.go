package catalog

import "strings"

// Update names the template a catalog message is rendered with.
type Update string

// The catalog templates. An initial catalog introduces skills to a session
// that never saw one; a replacement supersedes every earlier list (and with
// no entries it is the tombstone).
const (
	UpdateInitial     Update = "initial"
	UpdateReplacement Update = "replacement"
)

// The fixed parts of the catalog templates. Lines are joined by "\n" and
// the message has no trailing newline.
const (
	openReminder  = "<system-reminder>"
	closeReminder = "</system-reminder>"
	openBlock     = "<available_skills>"
	closeBlock    = "</available_skills>"

	initialIntro = "A skill is a reusable set of task-specific instructions. The following skills are available in this session:"
	initialOutro = "If the user names a skill, or the task clearly matches a skill's description, call the `skill` tool with the exact skill name before taking task actions. Load all applicable skills, then follow their full instructions. This catalog contains summaries only; do not infer or follow a skill's instructions until it has been loaded."

	replacementIntro = "The available skill catalog changed. This complete catalog replaces every earlier available-skills list in this session:"
	replacementOutro = "Use only names in this replacement catalog. If the user names a listed skill, or the task clearly matches its description, call the `skill` tool with the exact name before acting."
	tombstoneOutro   = "No skills are currently available through the `skill` tool. Do not use names from earlier skill catalogs."

	// The closing lines of a catalog when users may invoke skills
	// directly: one for a catalog that lists skills (or left some out),
	// one for the tombstone.
	userInvocationLine          = "A user may also invoke a skill directly; its <skill_content> block then appears in this conversation. Follow it, and do not call the `skill` tool again for that skill."
	userInvocationTombstoneLine = "A user may still invoke a skill directly; its <skill_content> block then appears in this conversation. Follow it, and do not call the `skill` tool for it."
)

// Render returns the exact text of a catalog message. UpdateInitial gives
// the initial template; any other update gives the replacement template,
// which for an empty entry list is the tombstone. (Decide never asks for an
// initial catalog without entries; Render would give it an empty block.)
// It is RenderList(u, entries, 0).
func Render(u Update, entries []Entry) string {
	return RenderList(u, entries, 0)
}

// RenderList is Render for a list that the catalog size limit shortened:
// entries are the entries shown and omitted counts those left out. A
// shortened list (omitted > 0, or some entry bare) ends with the notice
// line inside the tags. Only a list with no entries and nothing omitted is
// the tombstone.
func RenderList(u Update, entries []Entry, omitted int) string {
	return RenderWith(u, entries, omitted, false)
}

// RenderWith is RenderList, with one more line as the last before
// </system-reminder> when userInvocation is set: it tells the model that a
// user may load a skill directly, and that a skill loaded so needs no tool
// call. The line lies outside the list, so the digest (and the catalog
// size limit) ignore it: turning the option on or off does not by itself
// change a session's catalog.
func RenderWith(u Update, entries []Entry, omitted int, userInvocation bool) string {
	return render(u, entries, omitted, userInvocation, false)
}

// render is RenderWith for a list shortened for search when search is set:
// its notice, if any, is SearchNotice.
func render(u Update, entries []Entry, omitted int, userInvocation, search bool) string {
	intro, outro := replacementIntro, replacementOutro
	closing := userInvocationLine
	switch {
	case u == UpdateInitial:
		intro, outro = initialIntro, initialOutro
	case len(entries) == 0 && omitted == 0:
		outro, closing = tombstoneOutro, userInvocationTombstoneLine
	}
	if userInvocation {
		outro += "\n" + closing
	}
	head := openReminder + "\n" + intro + "\n\n" + openBlock + "\n"
	tail := closeBlock + "\n\n" + outro + "\n" + closeReminder
	buf := make([]byte, 0, len(head)+listSize(entries, omitted)+1+len(tail))
	buf = append(buf, head...)
	n := len(buf)
	buf = appendList(buf, entries, omitted, search)
	if len(buf) > n {
		buf = append(buf, '\n')
	}
	buf = append(buf, tail...)
	return string(buf)
}

// Recognize finds the available-skills block in a catalog message's text
// and returns the digest recomputed from the text between its tags, so a
// record is judged by what the model actually read, not by a digest field
// that might disagree with it.
//
// The block is "<available_skills>\n" + lines + "\n</available_skills>", or
// the empty form "<available_skills>\n</available_skills>"; each tag must
// stand on a line of its own, and each line between them must be an entry
// line "- `<name>`: <description>" or a bare one "- `<name>`", with a name
// in the skill grammar; the last line may instead be the notice of a
// shortened list (Notice, or SearchNotice for a list shortened for
// search). The first opening tag decides. Anything else is not a catalog of ours: ok is
// false. Recognize never panics, whatever the input.
func Recognize(text string) (digest string, ok bool) {
	const open = openBlock + "\n"
	i := strings.Index(text, open)
	if i < 0 || (i > 0 && text[i-1] != '\n') {
		return "", false
	}
	rest := text[i+len(open):]
	var inner, after string
	if tail, found := strings.CutPrefix(rest, closeBlock); found {
		inner, after = "", tail
	} else {
		j := strings.Index(rest, "\n"+closeBlock)
		if j < 0 {
			return "", false
		}
		inner, after = rest[:j], rest[j+1+len(closeBlock):]
		if !entryLines(inner) {
			return "", false
		}
	}
	if after != "" && after[0] != '\n' {
		return "", false
	}
	return digestText(inner), true
}

// entryLines reports whether every "\n"-separated line of inner is an entry
// line as Line renders it, except that the last may be a notice of either
// kind.
func entryLines(inner string) bool {
	if i := strings.LastIndexByte(inner, '\n'); parseNotice(inner[i+1:]) || parseSearchNotice(inner[i+1:]) {
		if i < 0 {
			return true
		}
		inner = inner[:i]
	}
	for line := range strings.SplitSeq(inner, "\n") {
		rest, ok := strings.CutPrefix(line, "- `")
		if !ok {
			return false
		}
		name, _, ok := strings.Cut(rest, "`: ")
		if !ok {
			name, ok = strings.CutSuffix(rest, "`")
		}
		if !ok || !ValidName(name) {
			return false
		}
	}
	return true
}
