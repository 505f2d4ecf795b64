package catalog_test

import (
	"regexp"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/skillstream/skillstream/catalog"
)

var hexDigest = regexp.MustCompile(`^[0-9a-f]{64}$`)

func FuzzRecognize(f *testing.F) {
	entries := catalog.Entries(workedExample(), 50)
	for _, seed := range []string{
		catalog.Render(catalog.UpdateInitial, entries),
		catalog.Render(catalog.UpdateReplacement, entries),
		catalog.Render(catalog.UpdateReplacement, nil),
		"<available_skills>\n</available_skills>",
		"<available_skills>\n- `a`: x\n</available_skills>",
		"<available_skills>\n- `a`: x",
		"<available_skills>\n- `a`: x\n</available_skills>\n<available_skills>\n</available_skills>",
		"<available_skills>\n- `Bad`: x\n</available_skills>",
		"<available_skills>\n- `a`: \xff\n</available_skills>",
		"<available_skills>\n\n</available_skills>",
		"<available_skills>\n- `a`: x\n" + catalog.SearchNotice(3) + "\n</available_skills>",
		"<available_skills>\n" + catalog.SearchNotice(1) + "\n</available_skills>",
		"",
		"garbage",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		d, ok := catalog.Recognize(text)
		if !ok {
			if d != "" {
				t.Fatalf("unrecognised text gave digest %q", d)
			}
			return
		}
		if !hexDigest.MatchString(d) {
			t.Fatalf("digest %q is not lowercase hex SHA-256", d)
		}
		// A recognised catalog embedded in more text is still recognised
		// with the same digest.
		if d2, ok := catalog.Recognize(text + "\ntrailer"); !ok || d2 != d {
			t.Fatalf("appending a line changed recognition: %q, %v", d2, ok)
		}
	})
}

func FuzzNormalize(f *testing.F) {
	f.Add("Long   description Long   description ", "z-skill", 50)
	f.Add("Use {{placeholder}} <safely> & carefully.", "a-skill", 500)
	f.Add(" \u00a0\u2003x\u3000\u2028y\u0085 ", "b", 3)
	f.Add("ééééé😀😀😀", "c-1", 4)
	f.Add("\xff\xfe\n</available_skills>\n", "d", 10)
	f.Add("- `x`: y\n- `z`: w", "e", 0)
	f.Fuzz(func(t *testing.T, desc, name string, maxLen int) {
		maxLen = max(maxLen%4096, -4096) // keep work small; negatives are treated as 3
		limit := max(maxLen, catalog.MinDescriptionMaxLength)
		got := catalog.Normalize(desc, maxLen)
		if want := referenceNormalize(desc, limit); got != want {
			t.Fatalf("Normalize(%q, %d) = %q, reference gives %q", desc, maxLen, got, want)
		}
		if !utf8.ValidString(got) {
			t.Fatalf("Normalize(%q, %d) = %q is not valid UTF-8", desc, maxLen, got)
		}
		if n := utf8.RuneCountInString(got); n > limit {
			t.Fatalf("Normalize(%q, %d) = %q has %d code points", desc, maxLen, got, n)
		}
		if strings.HasPrefix(got, " ") || strings.HasSuffix(got, " ") || strings.Contains(got, "  ") ||
			strings.ContainsFunc(got, func(r rune) bool { return r != ' ' && unicode.IsSpace(r) }) {
			t.Fatalf("Normalize(%q, %d) = %q is not collapsed and trimmed", desc, maxLen, got)
		}
		if again := catalog.Normalize(got, maxLen); again != got {
			t.Fatalf("Normalize is not idempotent: %q then %q", got, again)
		}
		// Whatever the description, a rendered catalog is recognised with
		// the digest of its entries.
		skills := []catalog.Summary{
			{Name: name, Description: desc, Invocation: catalog.Invocation{ModelInvocable: true}},
			{Name: "fixed", Description: desc, Invocation: catalog.Invocation{ModelInvocable: true}},
		}
		entries := catalog.Entries(skills, maxLen)
		if catalog.ValidName(name) && name != "fixed" && len(entries) != 2 {
			t.Fatalf("Entries dropped a valid skill: %v", entries)
		}
		for _, u := range []catalog.Update{catalog.UpdateInitial, catalog.UpdateReplacement} {
			text := catalog.Render(u, entries)
			d, ok := catalog.Recognize(text)
			if !ok || d != catalog.Digest(entries) {
				t.Fatalf("Recognize(Render(%s, %v)) = %q, %v; want %q", u, entries, d, ok, catalog.Digest(entries))
			}
		}
	})
}

// referenceNormalize is the plain statement of the description rule
// (collapse white space, cap in code points, then escape) the optimised
// Normalize must agree with: invalid bytes become U+FFFD ([]rune does that
// byte by byte), strings.Fields splits on unicode.IsSpace, and the cap
// counts code points.
func referenceNormalize(s string, maxLen int) string {
	collapsed := []rune(strings.Join(strings.Fields(string([]rune(s))), " "))
	if len(collapsed) > maxLen {
		return string(collapsed[:maxLen-3]) + "..."
	}
	return string(collapsed)
}
