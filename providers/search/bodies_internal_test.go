package search

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestBoundBody: a body is kept for its first MaxBodyBytes, cut between
// runes, and a short one whole.
func TestBoundBody(t *testing.T) {
	for _, body := range []string{"", "short", strings.Repeat("é", 3000), strings.Repeat("a", MaxBodyBytes-1) + "€€", strings.Repeat("x", 10<<20)} {
		got := boundBody(body)
		if len(got) > MaxBodyBytes || !strings.HasPrefix(body, got) || len(got) < min(len(body), MaxBodyBytes-utf8.UTFMax+1) {
			t.Errorf("bound of a %d-byte body: %d bytes", len(body), len(got))
		}
		if utf8.ValidString(body) && !utf8.ValidString(got) {
			t.Errorf("bound of a %d-byte body cuts a rune", len(body))
		}
	}
}
