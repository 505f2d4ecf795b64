package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Entry is one line of the catalog: a skill name and its description after
// whitespace collapsing and capping. The description is not escaped; Line
// escapes it when rendering. A bare entry is one whose description the
// catalog size limit took (see Shorten): it is rendered "- `name`", with no
// colon, and its Description is empty.
type Entry struct {
	Name        string
	Description string
	Bare        bool
}

// ellipsis is appended to a description that exceeds its cap.
const ellipsis = "..."

// Normalize collapses every run of white space (unicode.IsSpace) in s to a
// single space, trims the ends, and caps the result at maxLen code points:
// a longer description keeps its first maxLen-3 code points followed by
// "...". A code point is never split. Bytes that are not valid UTF-8 become
// U+FFFD, one per byte, so the text survives any transport (JSON included)
// unchanged and its digest stays stable. A maxLen below 3 is treated as 3;
// configurations are checked by Options.Validate before they get here.
//
// Work is bounded by the cap, not by the length of s beyond it.
func Normalize(s string, maxLen int) string {
	maxLen = max(maxLen, MinDescriptionMaxLength)
	if clean(s, maxLen) {
		return s
	}
	keep := maxLen - len(ellipsis)
	buf := make([]byte, 0, min(len(s), maxLen*utf8.UTFMax))
	n := 0   // code points in buf
	cut := 0 // length of buf when it held keep code points
	space := false
	for i := 0; i < len(s); {
		c, size := s[i], 1
		if c < utf8.RuneSelf {
			if asciiSpace[c] {
				space = true
				i++
				continue
			}
		} else {
			var r rune
			r, size = utf8.DecodeRuneInString(s[i:])
			if unicode.IsSpace(r) {
				space = true
				i += size
				continue
			}
		}
		if space && n > 0 {
			if n == maxLen { // one more code point would exceed the cap
				return string(buf[:cut]) + ellipsis
			}
			buf = append(buf, ' ')
			if n++; n == keep {
				cut = len(buf)
			}
		}
		space = false
		if n == maxLen {
			return string(buf[:cut]) + ellipsis
		}
		if c >= utf8.RuneSelf && size == 1 { // not UTF-8
			buf = append(buf, string(utf8.RuneError)...)
		} else {
			buf = append(buf, s[i:i+size]...)
		}
		if n++; n == keep {
			cut = len(buf)
		}
		i += size
	}
	return string(buf)
}

// asciiSpace marks the ASCII bytes unicode.IsSpace accepts.
var asciiSpace = [utf8.RuneSelf]bool{'\t': true, '\n': true, '\v': true, '\f': true, '\r': true, ' ': true}

// clean reports whether s is ASCII that Normalize would leave as it is: no
// white space but single inner spaces, and at most maxLen bytes. It spares
// the common description a copy.
func clean(s string, maxLen int) bool {
	if len(s) > maxLen {
		return false
	}
	if printableASCII(s) { // no white space but spaces: single inner ones?
		return s == "" || s[0] != ' ' && s[len(s)-1] != ' ' && !strings.Contains(s, "  ")
	}
	return cleanBytes(s)
}

// cleanBytes is clean's check a byte at a time, for any s.
func cleanBytes(s string) bool {
	prevSpace := true // a leading space is as bad as a double one
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= utf8.RuneSelf:
			return false
		case c == ' ':
			if prevSpace {
				return false
			}
			prevSpace = true
		case asciiSpace[c]:
			return false
		default:
			prevSpace = false
		}
	}
	return !prevSpace || len(s) == 0
}

// Escape replaces & with &amp;, < with &lt; and > with &gt;, in that order
// (so an existing entity is escaped again). Quotes are left alone. It is the
// escaping of catalog descriptions and tool guidance.
func Escape(s string) string {
	if !strings.ContainsAny(s, "&<>") {
		return s
	}
	return string(appendEscaped(make([]byte, 0, len(s)+16), s))
}

// appendEscaped appends Escape(s) to dst.
func appendEscaped(dst []byte, s string) []byte {
	start := 0
	for i := 0; i < len(s); i++ {
		var rep string
		switch s[i] {
		case '&':
			rep = "&amp;"
		case '<':
			rep = "&lt;"
		case '>':
			rep = "&gt;"
		default:
			continue
		}
		dst = append(append(dst, s[start:i]...), rep...)
		start = i + 1
	}
	return append(dst, s[start:]...)
}

// Entries returns the catalog entries for skills: only model-invocable
// skills with a valid name, sorted by name in byte order, each description
// normalised and capped at maxLen code points (see Normalize). If a name
// appears twice, the first occurrence wins. The result is never nil.
func Entries(skills []Summary, maxLen int) []Entry {
	out := make([]Entry, 0, len(skills))
	for _, s := range skills {
		if !s.Invocation.ModelInvocable || !ValidName(s.Name) {
			continue
		}
		out = append(out, Entry{Name: s.Name, Description: s.Description})
	}
	byName := func(a, b Entry) int { return strings.Compare(a.Name, b.Name) }
	if !slices.IsSortedFunc(out, byName) { // a registry's snapshot is sorted already
		slices.SortStableFunc(out, byName)
	}
	out = slices.CompactFunc(out, func(a, b Entry) bool { return a.Name == b.Name })
	for i := range out {
		out[i].Description = Normalize(out[i].Description, maxLen)
	}
	return out
}

// Line renders one entry as the model reads it: "- `name`: description",
// with the description escaped, or "- `name`" for a bare entry.
func Line(e Entry) string {
	return string(appendLine(nil, e))
}

// appendLine appends Line(e) to dst.
func appendLine(dst []byte, e Entry) []byte {
	dst = append(dst, "- `"...)
	dst = append(dst, e.Name...)
	if e.Bare {
		return append(dst, '`')
	}
	dst = append(dst, "`: "...)
	return appendEscaped(dst, e.Description)
}

// appendList appends the text between the tags of a list: the entry lines
// joined by "\n" and, when the list was shortened (omitted entries left
// out, or bare ones), the notice as a last line: the size limit's
// (Notice), or for a list shortened for search (search set) the one that
// points to the skill_search tool (SearchNotice).
func appendList(dst []byte, entries []Entry, omitted int, search bool) []byte {
	for i, e := range entries {
		if i > 0 {
			dst = append(dst, '\n')
		}
		dst = appendLine(dst, e)
	}
	if hasNotice(entries, omitted, search) {
		if len(entries) > 0 {
			dst = append(dst, '\n')
		}
		if search {
			dst = append(dst, SearchNotice(omitted)...)
		} else {
			dst = append(dst, Notice(bareCount(entries), omitted)...)
		}
	}
	return dst
}

// listSize estimates the length of a list's text.
func listSize(entries []Entry, omitted int) int {
	n := 0
	for _, e := range entries {
		n += len(e.Name) + len(e.Description) + 8
	}
	if shortened(entries, omitted) {
		n += max(noticeLen(len(entries), omitted), searchNoticeLen(omitted))
	}
	return n + n/8
}

// Digest is the lowercase hex SHA-256 of the entry lines joined by "\n":
// exactly the text between "<available_skills>\n" and "\n</available_skills>"
// in a rendered catalog. No entries digest the empty string. When some
// entries are bare the text ends with the notice, which is digested too;
// DigestList digests a list some entries were left out of.
func Digest(entries []Entry) string {
	return DigestList(entries, 0)
}

// DigestList is the digest of the text between the tags of a list that
// shows entries and leaves omitted more out: the entry lines and, when
// the list was shortened, the notice. A change in what was shortened is a
// change of digest.
func DigestList(entries []Entry, omitted int) string {
	return digestList(entries, omitted, false)
}

// digestList is DigestList, of a list shortened for search when search is
// set (its notice is SearchNotice).
func digestList(entries []Entry, omitted int, search bool) string {
	sum := sha256.Sum256(appendList(make([]byte, 0, listSize(entries, omitted)), entries, omitted, search))
	return hex.EncodeToString(sum[:])
}

// digestText is the digest of the text between the tags of a block.
func digestText(inner string) string {
	sum := sha256.Sum256([]byte(inner))
	return hex.EncodeToString(sum[:])
}
