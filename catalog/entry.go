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
// escapes it when rendering.
type Entry struct {
	Name        string
	Description string
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
	keep := maxLen - len(ellipsis)
	var b strings.Builder
	b.Grow(min(len(s), maxLen*utf8.UTFMax))
	n := 0   // code points written to b
	cut := 0 // byte length of b after keep code points
	space := false
	for _, r := range s { // invalid bytes arrive as utf8.RuneError
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space && n > 0 {
			if n == maxLen { // a further code point: over the cap
				return b.String()[:cut] + ellipsis
			}
			b.WriteByte(' ')
			n++
			if n == keep {
				cut = b.Len()
			}
		}
		space = false
		if n == maxLen {
			return b.String()[:cut] + ellipsis
		}
		b.WriteRune(r)
		n++
		if n == keep {
			cut = b.Len()
		}
	}
	return b.String()
}

// escaper replaces & first, then < and >, in one left-to-right pass; since
// the replacements introduce no new metacharacters this equals applying
// them in that order.
var escaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")

// Escape replaces & with &amp;, < with &lt; and > with &gt;. Quotes are left
// alone. It is the escaping of catalog descriptions and tool guidance.
func Escape(s string) string {
	return escaper.Replace(s)
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
	slices.SortStableFunc(out, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	out = slices.CompactFunc(out, func(a, b Entry) bool { return a.Name == b.Name })
	for i := range out {
		out[i].Description = Normalize(out[i].Description, maxLen)
	}
	return out
}

// Line renders one entry as the model reads it: "- `name`: description",
// with the description escaped.
func Line(e Entry) string {
	return "- `" + e.Name + "`: " + Escape(e.Description)
}

// Digest is the lowercase hex SHA-256 of the entry lines joined by "\n":
// exactly the text between "<available_skills>\n" and "\n</available_skills>"
// in a rendered catalog. No entries digest the empty string.
func Digest(entries []Entry) string {
	h := sha256.New()
	for i, e := range entries {
		if i > 0 {
			h.Write([]byte{'\n'})
		}
		h.Write([]byte(Line(e)))
	}
	return hex.EncodeToString(h.Sum(nil))
}

// digestText is the digest of the text between the tags of a block.
func digestText(inner string) string {
	sum := sha256.Sum256([]byte(inner))
	return hex.EncodeToString(sum[:])
}
