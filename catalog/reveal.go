package catalog

import (
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// Reveal returns s as it may be shown to a person on a terminal: every
// character a terminal or an editor would act on, or hide, instead of
// showing is replaced by an escape that shows it. Tabs and line feeds are
// kept, so multi-line text (a skill's body, a diff) keeps its shape. A
// carriage return becomes \r; another C0 control or DEL \x1b-style; a C1
// control, a bidirectional-text control (U+061C, U+200E, U+200F,
// U+202A–U+202E, U+2066–U+2069), a line or paragraph separator (U+2028,
// U+2029) and an invisible character that can hide text (U+200B,
// U+2060–U+2064, U+FEFF, the tag characters U+E0000–U+E007F) \u202e-style;
// a byte that is not UTF-8 \x9b-style. Backslashes are left as they are:
// the exact text is what --json prints. Text without such characters is
// returned as it is.
func Reveal(s string) string { return reveal(s, false) }

// RevealLine is Reveal for text meant to stay on one line (a file name,
// one line of a report): tabs and line feeds are escaped too, as \t and
// \n.
func RevealLine(s string) string { return reveal(s, true) }

func reveal(s string, line bool) string {
	i := 0
	for i < len(s) {
		if b := s[i]; b >= 0x20 && b < 0x7f {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if hidden(r, n, line) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case !hidden(r, n, line):
			b.WriteString(s[i : i+n])
		case r == utf8.RuneError:
			b.WriteString(`\x`)
			writeHex(&b, uint32(s[i]), 2)
		case r == '\t':
			b.WriteString(`\t`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r < 0x80:
			b.WriteString(`\x`)
			writeHex(&b, uint32(r), 2)
		case r > 0xffff:
			b.WriteString(`\U`)
			writeHex(&b, uint32(r), 8)
		default:
			b.WriteString(`\u`)
			writeHex(&b, uint32(r), 4)
		}
		i += n
	}
	return b.String()
}

func writeHex(b *strings.Builder, v uint32, digits int) {
	h := strconv.FormatUint(uint64(v), 16)
	for range digits - len(h) {
		b.WriteByte('0')
	}
	b.WriteString(h)
}

// hidden reports whether Reveal escapes r (n bytes long in the text).
func hidden(r rune, n int, line bool) bool {
	switch {
	case r == utf8.RuneError && n == 1: // not UTF-8
		return true
	case r == '\t' || r == '\n':
		return line
	case control(r) || bidi(r):
		return true
	}
	switch r {
	case '\u2028', '\u2029', '\u200b', '\ufeff':
		return true
	}
	return r >= 0x2060 && r <= 0x2064 || r >= 0xe0000 && r <= 0xe007f
}

// control reports whether r is a control character: C0, DEL or C1.
func control(r rune) bool { return r < 0x20 || r >= 0x7f && r <= 0x9f }

// bidi reports whether r is a bidirectional-text control: a mark, an
// embedding, an override or an isolate, which change the order in which
// the text around them is shown.
func bidi(r rune) bool {
	switch {
	case r == '\u061c', r == '\u200e', r == '\u200f':
		return true
	case r >= '\u202a' && r <= '\u202e', r >= '\u2066' && r <= '\u2069':
		return true
	}
	return false
}

// FindControl finds the characters skill text should not hold: a control
// character other than tab, line feed and carriage return (the rest of
// C0, DEL, C1), which a terminal acts on instead of showing, and a
// bidirectional-text control (U+061C, U+200E, U+200F, U+202A–U+202E,
// U+2066–U+2069), which makes text read otherwise than it is. With
// oneLine, for a field of one line (a name, a description), a carriage
// return counts too. It returns the byte offset and the character of the
// first one and how many s holds; i is -1 when there is none.
func FindControl(s string, oneLine bool) (i int, r rune, n int) {
	i = -1
	if printableASCII(s) {
		return i, 0, 0
	}
	for j := 0; j < len(s); {
		if b := s[j]; b >= 0x20 && b < 0x7f {
			j++
			continue
		}
		c, size := utf8.DecodeRuneInString(s[j:])
		if c == '\r' && oneLine || c != '\t' && c != '\n' && c != '\r' && control(c) || bidi(c) {
			if n == 0 {
				i, r = j, c
			}
			n++
		}
		j += size
	}
	return i, r, n
}

// ControlKind names what FindControl found in r, for a warning: "a
// control character" or "a bidirectional-text control".
func ControlKind(r rune) string {
	if bidi(r) {
		return "a bidirectional-text control"
	}
	return "a control character"
}

// RevealJSON returns the JSON text js with every character Reveal escapes
// (a C1 control or DEL, a bidirectional-text control, a line or paragraph
// separator, an invisible character; a byte that is not UTF-8) written as
// a JSON escape instead (\u0085, \u202e; past U+FFFF as a surrogate pair,
// \udb40\udc01; a byte that is not UTF-8 as \ufffd, as encoding/json
// writes it): the same JSON value, whose bytes a terminal or a log viewer
// shows rather than acts on. JSON text holds such characters only inside
// strings, where an escape is equivalent; C0 controls there are escaped
// by every encoder already, and those outside (the line feeds of indented
// output) are left as they are. Text without such characters is returned
// as it is.
func RevealJSON(js []byte) []byte {
	i := 0
	for i < len(js) {
		if js[i] < 0x7f {
			i++
			continue
		}
		r, n := utf8.DecodeRune(js[i:])
		if hidden(r, n, false) {
			break
		}
		i += n
	}
	if i == len(js) {
		return js
	}
	out := make([]byte, 0, len(js)+16)
	out = append(out, js[:i]...)
	for i < len(js) {
		if js[i] < 0x7f {
			out = append(out, js[i])
			i++
			continue
		}
		r, n := utf8.DecodeRune(js[i:])
		switch {
		case !hidden(r, n, false):
			out = append(out, js[i:i+n]...)
		case r > 0xffff:
			hi, lo := utf16.EncodeRune(r)
			out = appendJSONEscape(appendJSONEscape(out, hi), lo)
		default: // a byte that is not UTF-8 decodes as U+FFFD
			out = appendJSONEscape(out, r)
		}
		i += n
	}
	return out
}

func appendJSONEscape(b []byte, r rune) []byte {
	const hex = "0123456789abcdef"
	return append(b, '\\', 'u', hex[r>>12&0xf], hex[r>>8&0xf], hex[r>>4&0xf], hex[r&0xf])
}
