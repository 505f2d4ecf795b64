package catalog_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/skillstream/skillstream/catalog"
)

func TestNormalize(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		max  int
		want string
	}{
		{"plain", "Does A.", 500, "Does A."},
		{"empty", "", 500, ""},
		{"only whitespace", " \t\n\r\v\f\u00a0\u2003\u3000 ", 500, ""},
		{"ascii whitespace runs", "  a\t\tb\n\nc \r\n d  ", 500, "a b c d"},
		{"unicode spaces", "a\u00a0b\u2003\u2009c\u3000\u3000d\u0085e\u2028f\u2029g\u1680h", 500, "a b c d e f g h"},
		{"zero-width space is not white space", "a\u200bb", 500, "a\u200bb"},
		{"exactly at the cap", "abcde", 5, "abcde"},
		{"one over the cap", "abcdef", 5, "ab..."},
		{"cap counts collapsed text", "a   b   c", 5, "a b c"},
		{"trailing space does not count", "abcde     ", 5, "abcde"},
		{"max 3 at the cap", "abc", 3, "abc"},
		{"max 3 over the cap", "abcd", 3, "..."},
		{"max 3 multi-byte", "ééé", 3, "ééé"},
		{"max 3 multi-byte over", "éééé", 3, "..."},
		{"multi-byte within the cap", "héllo wörld", 11, "héllo wörld"},
		{"two-byte code points cut", "ééééééé", 6, "ééé..."},
		{"three-byte code points cut", "日本語のテキストです", 7, "日本語の..."},
		{"four-byte code points cut", "😀😀😀😀😀😀", 5, "😀😀..."},
		{"combining marks count as code points", "e\u0301e\u0301e\u0301", 5, "e\u0301..."},
		{"cut keeps a collapsed space", "ab   cd ef", 6, "ab ..."},
		{"escaping happens later", "<a & b>", 500, "<a & b>"},
		{"invalid UTF-8 becomes U+FFFD per byte", "a\xff\xfeb", 500, "a\ufffd\ufffdb"},
		{"max below 3 behaves as 3", "abcd", 0, "..."},
		{"worked example", strings.Repeat("Long   description ", 5), 50, "Long description Long description Long descript..."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := catalog.Normalize(tc.in, tc.max)
			if got != tc.want {
				t.Errorf("Normalize(%q, %d) = %q, want %q", tc.in, tc.max, got, tc.want)
			}
			if ref := referenceNormalize(tc.in, max(tc.max, 3)); got != ref {
				t.Errorf("Normalize(%q, %d) = %q, reference gives %q", tc.in, tc.max, got, ref)
			}
			if !utf8.ValidString(got) || utf8.RuneCountInString(got) > max(tc.max, 3) {
				t.Errorf("Normalize(%q, %d) = %q: invalid or over the cap", tc.in, tc.max, got)
			}
		})
	}
}

func TestNormalizeLongInputBoundedOutput(t *testing.T) {
	in := strings.Repeat("word ", 1<<16)
	got := catalog.Normalize(in, 500)
	if utf8.RuneCountInString(got) != 500 || !strings.HasSuffix(got, "...") {
		t.Errorf("Normalize of a long text gave %d code points, want 500 ending in ...", utf8.RuneCountInString(got))
	}
}

func TestEscape(t *testing.T) {
	for in, want := range map[string]string{
		"a & b":             "a &amp; b",
		"<tag>":             "&lt;tag&gt;",
		"&lt;":              "&amp;lt;",
		`"quoted" 'single'`: `"quoted" 'single'`,
		"&<>&":              "&amp;&lt;&gt;&amp;",
	} {
		if got := catalog.Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
	if got := catalog.Line(catalog.Entry{Name: "a", Description: `x & <y> "z"`}); got != "- `a`: x &amp; &lt;y&gt; \"z\"" {
		t.Errorf("Line = %q", got)
	}
}
