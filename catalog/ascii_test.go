package catalog

import (
	"testing"
	"unicode/utf8"
)

// FuzzASCIIFastPaths: the eight-bytes-at-a-time checks agree with a byte
// at a time, and the functions using them (clean, textLen, lineLen,
// FindControl) with their general paths, whatever the bytes and wherever
// in a word they sit.
func FuzzASCIIFastPaths(f *testing.F) {
	for _, s := range []string{"", "a", "Use when the task involves area 7.", "abcdefg\x1f", "abcdefgh\x7f", "abcdefghijklmno\x80",
		"\x20\x20\x20\x20\x20\x20\x20\x20", "~~~~~~~~~~~~~~~~\x7e", "tab\there", "two  spaces in the middle", " lead", "trail ",
		"a & b < c > d", "\x00\x00\x00\x00\x00\x00\x00\x00", "\x21\x1f\x21\x21\x21\x21\x21\x21", "é", "\u202e bidi"} {
		f.Add(s, 500)
	}
	f.Fuzz(func(t *testing.T, s string, maxLen int) {
		maxLen = max(maxLen%1024, MinDescriptionMaxLength)
		printable, ascii := true, true
		for i := 0; i < len(s); i++ {
			printable = printable && s[i] >= 0x20 && s[i] < 0x7f
			ascii = ascii && s[i] < 0x80
		}
		if got := printableASCII(s); got != printable {
			t.Fatalf("printableASCII(%q) = %v", s, got)
		}
		if got := isASCII(s); got != ascii {
			t.Fatalf("isASCII(%q) = %v", s, got)
		}
		if got, want := clean(s, maxLen), slowClean(s, maxLen); got != want {
			t.Fatalf("clean(%q, %d) = %v, a byte at a time %v", s, maxLen, got, want)
		}
		if got, want := textLen(s), slowTextLen(s); got != want {
			t.Fatalf("textLen(%q) = %v, a code point at a time %v", s, got, want)
		}
		e := Entry{Name: "a-skill", Description: s}
		if got, want := lineLen(e), (listLen{points: utf8.RuneCountInString(Line(e)), units: slowTextLen(Line(e)).units}); got != want {
			t.Fatalf("lineLen(%q) = %v, the rendered line's %v", s, got, want)
		}
		gi, gr, gn := FindControl(s, true)
		if wi, wr, wn := slowFindControl(s); gi != wi || gr != wr || gn != wn {
			t.Fatalf("FindControl(%q) = %d, %q, %d; a rune at a time %d, %q, %d", s, gi, gr, gn, wi, wr, wn)
		}
	})
}

// slowClean is clean without its fast path.
func slowClean(s string, maxLen int) bool { return len(s) <= maxLen && cleanBytes(s) }

// slowTextLen counts code points and UTF-16 code units one rune at a time.
func slowTextLen(s string) listLen {
	var l listLen
	for _, r := range s {
		l.points++
		l.units++
		if r > 0xFFFF {
			l.units++
		}
	}
	return l
}

// slowFindControl is FindControl's general path alone.
func slowFindControl(s string) (int, rune, int) {
	i, n := -1, 0
	var first rune
	for j, c := range s {
		if c == '\r' || c != '\t' && c != '\n' && control(c) || bidi(c) {
			if n == 0 {
				i, first = j, c
			}
			n++
		}
	}
	return i, first, n
}
