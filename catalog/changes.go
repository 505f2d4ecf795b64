package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// Updates says how a catalog that changed reaches the model once a session
// has one (Options.Updates, flag --catalog-updates).
type Updates string

// The ways a changed catalog reaches the model.
const (
	// UpdatesFull: every change appends the whole list again (a
	// replacement). The default.
	UpdatesFull Updates = "full"
	// UpdatesChanges: a change that names few skills appends a change
	// list, which names only what was added, changed or removed (see
	// DecideView); the rest appends a replacement as with UpdatesFull.
	UpdatesChanges Updates = "changes"
)

// UpdateChanges is the update of a change list: a message naming the
// entries added, changed or removed since the session's current list.
const UpdateChanges Update = "changes"

// The bounds of change lists: a full catalog is followed by at most
// MaxChangeLists change lists, and a change list names at most MaxChanges
// skills (and at most half of the updated list's shown entries, rounded
// up). A change beyond them appends a replacement.
const (
	MaxChangeLists = 15
	MaxChanges     = 64
)

// CheckUpdates reports whether u is a usable Updates: "full", "changes",
// or "" (full).
func CheckUpdates(u Updates) error {
	switch u {
	case "", UpdatesFull, UpdatesChanges:
		return nil
	}
	return fmt.Errorf("catalog updates is %q, it must be %q or %q", string(u), UpdatesFull, UpdatesChanges)
}

// ChangeKind says what happened to one entry of a change list.
type ChangeKind string

// The kinds of change.
const (
	ChangeAdded   ChangeKind = "added"
	ChangeChanged ChangeKind = "changed"
	ChangeRemoved ChangeKind = "removed"
)

// Change is one line of a change list: the entry Name was added, or its
// shown text changed (Description and Bare as it is shown now, see Entry),
// or it was removed (Description empty).
type Change struct {
	Name        string
	Kind        ChangeKind
	Description string
	Bare        bool
}

// List is a catalog's list as the model has it: the entries shown, sorted
// by name in byte order, and the notice line that ends a shortened list
// ("" when there is none). Its Digest is the digest of a catalog that lists
// it.
type List struct {
	Entries []Entry
	Notice  string
}

// ListOf is the list a View shows.
func ListOf(v View) List {
	return List{Entries: v.Entries, Notice: noticeOf(v.Entries, v.Omitted, v.Search)}
}

// noticeOf is the notice line that ends a list of entries with omitted more
// left out, "" when it was not shortened.
func noticeOf(entries []Entry, omitted int, search bool) string {
	switch {
	case !hasNotice(entries, omitted, search):
		return ""
	case search:
		return SearchNotice(omitted)
	}
	return Notice(bareCount(entries), omitted)
}

// Digest is the digest of the list's text: the entry lines and the notice,
// as between the <available_skills> tags.
func (l List) Digest() string {
	buf := make([]byte, 0, listSize(l.Entries, 0)+len(l.Notice)+1)
	for i, e := range l.Entries {
		if i > 0 {
			buf = append(buf, '\n')
		}
		buf = appendLine(buf, e)
	}
	if l.Notice != "" {
		if len(l.Entries) > 0 {
			buf = append(buf, '\n')
		}
		buf = append(buf, l.Notice...)
	}
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:])
}

// The fixed parts of a change list's text.
const (
	openChanges  = "<skill_catalog_changes>"
	closeChanges = "</skill_catalog_changes>"
	changesIntro = "The available skill catalog changed. These changes update the latest available-skills list in this session; skills not named here are unchanged:"
	changesOutro = "Use only names in the updated list. If the user names a listed skill, or the task clearly matches its description, call the `skill` tool with the exact name before acting."
)

// RenderChanges returns the exact text of a change list: one line per
// change, in the order given (DecideView gives them in byte order of
// name), then notice when it is not "" (the notice of the updated list,
// given only when it differs from the current list's), and with
// userInvocation the line a non-empty replacement ends with.
func RenderChanges(changes []Change, notice string, userInvocation bool) string {
	var b strings.Builder
	n := len(changesIntro) + len(changesOutro) + len(notice) + 128
	for _, c := range changes {
		n += len(c.Name) + len(c.Description) + 24
	}
	if userInvocation {
		n += len(userInvocationLine) + 1
	}
	b.Grow(n)
	b.WriteString(openReminder + "\n" + changesIntro + "\n\n" + openChanges + "\n")
	for _, c := range changes {
		b.Write(appendChange(nil, c))
		b.WriteByte('\n')
	}
	if notice != "" {
		b.WriteString(notice)
		b.WriteByte('\n')
	}
	b.WriteString(closeChanges + "\n\n" + changesOutro)
	if userInvocation {
		b.WriteString("\n" + userInvocationLine)
	}
	b.WriteString("\n" + closeReminder)
	return b.String()
}

// appendChange appends a change's line: "- added `name`: description",
// "- changed `name`" for an entry now shown bare, "- removed `name`".
func appendChange(dst []byte, c Change) []byte {
	dst = append(dst, "- "...)
	dst = append(dst, c.Kind...)
	dst = append(dst, " `"...)
	dst = append(dst, c.Name...)
	dst = append(dst, '`')
	if c.Kind == ChangeRemoved || c.Bare {
		return dst
	}
	dst = append(dst, ": "...)
	return appendEscaped(dst, c.Description)
}

// diff returns the changes that turn cur's entries into next (both sorted
// by name), in byte order of name, and false when there are more than
// limit.
func diff(cur, next []Entry, limit int) ([]Change, bool) {
	var out []Change
	add := func(c Change) bool {
		out = append(out, c)
		return len(out) <= limit
	}
	i, j := 0, 0
	for i < len(cur) || j < len(next) {
		switch {
		case j == len(next) || (i < len(cur) && cur[i].Name < next[j].Name):
			if !add(Change{Name: cur[i].Name, Kind: ChangeRemoved}) {
				return nil, false
			}
			i++
		case i == len(cur) || next[j].Name < cur[i].Name:
			e := next[j]
			if !add(Change{Name: e.Name, Kind: ChangeAdded, Description: e.Description, Bare: e.Bare}) {
				return nil, false
			}
			j++
		default:
			if c, e := cur[i], next[j]; c != e {
				if !add(Change{Name: e.Name, Kind: ChangeChanged, Description: e.Description, Bare: e.Bare}) {
					return nil, false
				}
			}
			i++
			j++
		}
	}
	return out, true
}

// changeList is the change list that brings the session's current list
// cur, after changeLists change lists, to what v shows; ok is false when
// the change must be a replacement: the chain is full, the updated list
// lost its notice, or the change names more than MaxChanges skills or
// more than half of the entries v shows (rounded up).
func changeList(v View, cur List, changeLists int) (changes []Change, notice string, ok bool) {
	if changeLists >= MaxChangeLists {
		return nil, "", false
	}
	next := noticeOf(v.Entries, v.Omitted, v.Search)
	if next == "" && cur.Notice != "" {
		return nil, "", false
	}
	if next != cur.Notice {
		notice = next
	}
	changes, ok = diff(cur.Entries, v.Entries, min(MaxChanges, (len(v.Entries)+1)/2))
	if !ok || (len(changes) == 0 && notice == "") {
		return nil, "", false
	}
	return changes, notice, true
}

// Apply returns the list that the change list of changes and notice (as
// ParseChanges reads them) makes of l: added entries must be new, changed
// and removed ones listed; a notice replaces l's. ok is false when the
// changes do not fit l. l is not modified.
func (l List) Apply(changes []Change, notice string) (List, bool) {
	out := make([]Entry, 0, len(l.Entries)+len(changes))
	i := 0
	for _, c := range changes {
		for i < len(l.Entries) && l.Entries[i].Name < c.Name {
			out = append(out, l.Entries[i])
			i++
		}
		present := i < len(l.Entries) && l.Entries[i].Name == c.Name
		switch {
		case c.Kind == ChangeAdded && !present:
			out = append(out, Entry{Name: c.Name, Description: c.Description, Bare: c.Bare})
		case c.Kind == ChangeChanged && present:
			out = append(out, Entry{Name: c.Name, Description: c.Description, Bare: c.Bare})
			i++
		case c.Kind == ChangeRemoved && present:
			i++
		default:
			return List{}, false
		}
	}
	out = append(out, l.Entries[i:]...)
	if notice == "" {
		notice = l.Notice
	}
	return List{Entries: out, Notice: notice}, true
}

// ParseList reads the list of a full catalog's text (initial or
// replacement) back: its entries as shown and its notice. ok is false
// unless the block is one Render could have written: entry lines in
// strictly increasing name order, descriptions escaped as Line escapes
// them, and at most a notice after them. A record whose list does not
// read back so cannot be the base of a change list.
func ParseList(text string) (List, bool) {
	inner, ok := block(text, openBlock, closeBlock)
	if !ok {
		return List{}, false
	}
	if inner == "" {
		return List{Entries: []Entry{}}, true
	}
	lines := strings.Split(inner, "\n")
	var l List
	if last := lines[len(lines)-1]; parseNotice(last) || parseSearchNotice(last) {
		l.Notice, lines = last, lines[:len(lines)-1]
	}
	l.Entries = make([]Entry, 0, len(lines))
	for _, line := range lines {
		e, ok := parseLine(line)
		if !ok || (len(l.Entries) > 0 && l.Entries[len(l.Entries)-1].Name >= e.Name) {
			return List{}, false
		}
		l.Entries = append(l.Entries, e)
	}
	return l, true
}

// ParseChanges reads a change list's text back: its changes in order and
// its notice ("" when it has none). ok is false unless the text holds a
// <skill_catalog_changes> block RenderChanges could have written: at least
// one line, changes in strictly increasing name order, descriptions
// escaped as Line escapes them, and at most a notice after them.
func ParseChanges(text string) (changes []Change, notice string, ok bool) {
	inner, ok := block(text, openChanges, closeChanges)
	if !ok || inner == "" {
		return nil, "", false
	}
	lines := strings.Split(inner, "\n")
	if last := lines[len(lines)-1]; parseNotice(last) || parseSearchNotice(last) {
		notice, lines = last, lines[:len(lines)-1]
	}
	changes = make([]Change, 0, len(lines))
	for _, line := range lines {
		c, ok := parseChange(line)
		if !ok || (len(changes) > 0 && changes[len(changes)-1].Name >= c.Name) {
			return nil, "", false
		}
		changes = append(changes, c)
	}
	return changes, notice, true
}

// block returns the text between "<open>\n" and "\n<close>" (or "" for
// "<open>\n<close>"), each tag on a line of its own; the first opening
// tag decides.
func block(text, open, closing string) (string, bool) {
	open += "\n"
	i := strings.Index(text, open)
	if i < 0 || (i > 0 && text[i-1] != '\n') {
		return "", false
	}
	rest := text[i+len(open):]
	var inner, after string
	if tail, found := strings.CutPrefix(rest, closing); found {
		after = tail
	} else {
		j := strings.Index(rest, "\n"+closing)
		if j < 0 {
			return "", false
		}
		inner, after = rest[:j], rest[j+1+len(closing):]
	}
	if after != "" && after[0] != '\n' {
		return "", false
	}
	return inner, true
}

// parseLine reads an entry line as Line writes it.
func parseLine(line string) (Entry, bool) {
	rest, ok := strings.CutPrefix(line, "- `")
	if !ok {
		return Entry{}, false
	}
	if name, desc, found := strings.Cut(rest, "`: "); found {
		d, ok := unescape(desc)
		return Entry{Name: name, Description: d}, ok && ValidName(name)
	}
	name, ok := strings.CutSuffix(rest, "`")
	return Entry{Name: name, Bare: true}, ok && ValidName(name)
}

// parseChange reads a change line as appendChange writes it.
func parseChange(line string) (Change, bool) {
	rest, ok := strings.CutPrefix(line, "- ")
	if !ok {
		return Change{}, false
	}
	kind, rest, ok := strings.Cut(rest, " ")
	if !ok {
		return Change{}, false
	}
	switch k := ChangeKind(kind); k {
	case ChangeRemoved:
		name, ok := strings.CutPrefix(rest, "`")
		if name, ok2 := strings.CutSuffix(name, "`"); ok && ok2 && ValidName(name) {
			return Change{Name: name, Kind: k}, true
		}
	case ChangeAdded, ChangeChanged:
		if e, ok := parseLine("- " + rest); ok {
			return Change{Name: e.Name, Kind: k, Description: e.Description, Bare: e.Bare}, true
		}
	}
	return Change{}, false
}

// unescape undoes Escape, and reports whether s is exactly what Escape
// writes for the result (no bare '<', '>' or '&' outside an entity).
func unescape(s string) (string, bool) {
	if !strings.ContainsAny(s, "&<>") {
		return s, true
	}
	var b strings.Builder
	b.Grow(len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '<', '>':
			return "", false
		case '&':
			switch {
			case strings.HasPrefix(s[i:], "&amp;"):
				b.WriteByte('&')
				i += len("&amp;") - 1
			case strings.HasPrefix(s[i:], "&lt;"):
				b.WriteByte('<')
				i += len("&lt;") - 1
			case strings.HasPrefix(s[i:], "&gt;"):
				b.WriteByte('>')
				i += len("&gt;") - 1
			default:
				return "", false
			}
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), true
}

// RecognizeChanges reports whether text holds a change list's block as
// ParseChanges reads it.
func RecognizeChanges(text string) bool {
	_, _, ok := ParseChanges(text)
	return ok
}
