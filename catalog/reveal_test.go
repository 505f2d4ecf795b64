package catalog_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/skillstream/skillstream/catalog"
)

func TestReveal(t *testing.T) {
	for _, tc := range []struct {
		name, in, want, line string // line: RevealLine's answer when it differs
	}{
		{"plain text is kept", "Does A.\n\tB — é 日本 😀 \\x1b", "Does A.\n\tB — é 日本 😀 \\x1b", "Does A.\\n\\tB — é 日本 😀 \\x1b"},
		{"empty", "", "", ""},
		{"terminal title", "a\x1b]0;owned\x07b", `a\x1b]0;owned\x07b`, ""},
		{"clear screen", "\x1b[2J", `\x1b[2J`, ""},
		{"carriage return hides a line", "rm -rf /\r\x1b[Kls", `rm -rf /\r\x1b[Kls`, ""},
		{"CRLF shows its CR", "a\r\nb", "a\\r\nb", `a\r\nb`},
		{"NUL, backspace, DEL", "\x00\b\x7f", `\x00\x08\x7f`, ""},
		{"C1 controls", "a\u0085b\u009bc", `a\u0085b\u009bc`, ""},
		{"bidi override", "x\u202eevil\u202cy", `x\u202eevil\u202cy`, ""},
		{"bidi isolates and marks", "\u2066\u2067\u2068\u2069\u200e\u200f\u061c", `\u2066\u2067\u2068\u2069\u200e\u200f\u061c`, ""},
		{"line and paragraph separators", "a\u2028b\u2029c", `a\u2028b\u2029c`, ""},
		{"invisible characters", "\ufeffa\u200bb\u2060c\U000e0041", `\ufeffa\u200bb\u2060c\U000e0041`, ""},
		{"joiners stay (emoji, scripts)", "👩\u200d💻 \u200c", "👩\u200d💻 \u200c", ""},
		{"bytes that are not UTF-8", "a\x9b\xffb", `a\x9b\xffb`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := catalog.Reveal(tc.in); got != tc.want {
				t.Errorf("Reveal(%q) = %q, want %q", tc.in, got, tc.want)
			}
			want := tc.line
			if want == "" {
				want = tc.want
			}
			got := catalog.RevealLine(tc.in)
			if got != want {
				t.Errorf("RevealLine(%q) = %q, want %q", tc.in, got, want)
			}
			if strings.ContainsAny(got, "\x1b\x07\r\n\t\x00\x7f") || strings.ContainsRune(got, '\u202e') || !utf8.ValidString(got) {
				t.Errorf("RevealLine(%q) = %q still holds what it should show escaped", tc.in, got)
			}
		})
	}
}

func TestFindControl(t *testing.T) {
	for _, tc := range []struct {
		name    string
		in      string
		oneLine bool
		i       int
		r       rune
		n       int
	}{
		{"plain", "Does A.\n\tB", false, -1, 0, 0},
		{"CRLF body", "a\r\nb\r\n", false, -1, 0, 0},
		{"CR in a description", "a\rb", true, 1, '\r', 1},
		{"tab and newline in a description", "a\tb\nc", true, -1, 0, 0},
		{"escape", "ab\x1b[2J\x07", false, 2, '\x1b', 2},
		{"DEL", "\x7f", false, 0, '\x7f', 1},
		{"C1", "é\u0085", false, 2, '\u0085', 1},
		{"bidi", "x\u202ey\u2066", true, 1, '\u202e', 2},
		{"separators and joiners are not controls", "a\u2028b\u200dc\u200bd", true, -1, 0, 0},
		{"invalid UTF-8 is not a control", "a\xffb", false, -1, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i, r, n := catalog.FindControl(tc.in, tc.oneLine)
			if i != tc.i || r != tc.r || n != tc.n {
				t.Errorf("FindControl(%q, %v) = %d, %U, %d; want %d, %U, %d", tc.in, tc.oneLine, i, r, n, tc.i, tc.r, tc.n)
			}
		})
	}
	if got := catalog.ControlKind('\u202e'); got != "a bidirectional-text control" {
		t.Errorf("ControlKind(U+202E) = %q", got)
	}
	if got := catalog.ControlKind('\x1b'); got != "a control character" {
		t.Errorf("ControlKind(ESC) = %q", got)
	}
}

// Text without anything to escape comes back as it is, without a copy.
func TestRevealKeepsPlainText(t *testing.T) {
	s := strings.Repeat("plain text — é\n\t", 100)
	if n := testing.AllocsPerRun(10, func() { _ = catalog.Reveal(s) }); n != 0 {
		t.Errorf("Reveal of plain text allocates %v times", n)
	}
}

// FuzzReveal: what Reveal and RevealLine print is valid UTF-8 and holds
// no character a terminal acts on (RevealLine not even a tab or a line
// feed), nothing FindControl finds, and text holding none of them is
// returned as it is.
func FuzzReveal(f *testing.F) {
	for _, s := range []string{"plain", "a\x1b]0;t\x07\r\n\tb", "\u202e\u2066x\u2069", "\xff\x9b", "é\u0085\u2028\U000e0041"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, line := range []bool{false, true} {
			out := catalog.Reveal(s)
			if line {
				out = catalog.RevealLine(s)
			}
			if !utf8.ValidString(out) {
				t.Fatalf("%q: not UTF-8", out)
			}
			for _, r := range out {
				if r < 0x20 && (line || r != '\t' && r != '\n') || r >= 0x7f && r <= 0x9f || r == '\u2028' || r == '\u2029' {
					t.Fatalf("%q holds %U", out, r)
				}
			}
			if _, _, n := catalog.FindControl(out, true); n > 0 {
				t.Fatalf("%q holds what FindControl finds", out)
			}
			if !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r >= 0x7f }) && out != s {
				t.Fatalf("printable ASCII %q changed to %q", s, out)
			}
		}
	})
}

// TestRevealJSON: the characters Reveal escapes are written as JSON
// escapes, so the bytes show them while the value stays the same.
func TestRevealJSON(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"plain text is kept", "{\n  \"q\": \"é 日本 😀 \\u001b \\n\"\n}\n", "{\n  \"q\": \"é 日本 😀 \\u001b \\n\"\n}\n"},
		{"NEL and bidi override", "\"a\u0085b\u202eevil\u202c\"", `"a\u0085b\u202eevil\u202c"`},
		{"DEL, C1", "\"\x7f\u009b\"", `"\u007f\u009b"`},
		{"separators, isolates, invisible", "\"\u2028\u2029\u2066\ufeff\u200b\"", `"\u2028\u2029\u2066\ufeff\u200b"`},
		{"tag characters as surrogate pairs", "\"\U000e0041\"", `"\udb40\udc41"`},
		{"bytes that are not UTF-8", "\"a\x9bb\"", `"a\ufffdb"`},
		{"joiners stay", "\"👩\u200d💻\"", "\"👩\u200d💻\""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := string(catalog.RevealJSON([]byte(tc.in)))
			if got != tc.want {
				t.Errorf("RevealJSON(%q) = %q, want %q", tc.in, got, tc.want)
			}
			var a, b any
			if json.Unmarshal([]byte(tc.in), &a) == nil {
				if err := json.Unmarshal([]byte(got), &b); err != nil || !reflect.DeepEqual(a, b) {
					t.Errorf("RevealJSON(%q) changed the value: %v, %v", tc.in, b, err)
				}
			}
		})
	}
}
