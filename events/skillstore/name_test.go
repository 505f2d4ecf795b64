package skillstore

import (
	"errors"
	"strings"
	"testing"
)

func TestValidName(t *testing.T) {
	for name, want := range map[string]bool{
		"a":                      true,
		"pdf-tools":              true,
		"a--b":                   true, // the store's alphabet; a catalog refuses it
		"-a":                     true,
		strings.Repeat("a", 64):  true,
		"":                       false,
		strings.Repeat("a", 65):  false,
		".":                      false,
		"..":                     false,
		"a.b":                    false,
		"a/b":                    false,
		`a\b`:                    false,
		"A":                      false,
		"a*":                     false,
		"a>":                     false,
		"a b":                    false,
		"ü":                      false,
		"a\x00":                  false,
		"global.a":               false,
		strings.Repeat("-", 10):  true,
		strings.Repeat("0", 64):  true,
		strings.Repeat("z", 100): false,
	} {
		if got := ValidName(name); got != want {
			t.Errorf("ValidName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestScopesAndKeys(t *testing.T) {
	p, err := Project("team_1-A")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		sc               Scope
		str, key, filter string
	}{
		{Global, "global", "global.pdf", "global.*"},
		{p, "project/team_1-A", "project.team_1-A.pdf", "project.team_1-A.*"},
	} {
		if got := tc.sc.String(); got != tc.str {
			t.Errorf("String = %q, want %q", got, tc.str)
		}
		if got := tc.sc.Key("pdf"); got != tc.key {
			t.Errorf("Key = %q, want %q", got, tc.key)
		}
		if got := tc.sc.Filter(); got != tc.filter {
			t.Errorf("Filter = %q, want %q", got, tc.filter)
		}
		back, err := ParseScope(tc.str)
		if err != nil || back != tc.sc {
			t.Errorf("ParseScope(%q) = %v, %v", tc.str, back, err)
		}
		sc, name, err := ParseKey(tc.key)
		if err != nil || sc != tc.sc || name != "pdf" {
			t.Errorf("ParseKey(%q) = %v, %q, %v", tc.key, sc, name, err)
		}
	}
}

// Garbage scopes and keys are refused with the sentinel, never split into
// a scope and a name.
func TestParseRefusesGarbage(t *testing.T) {
	for _, s := range []string{"", "Global", "project/", "project/a.b", "project/a b", "project/" + strings.Repeat("a", 129), "projects/a", "global/x"} {
		if _, err := ParseScope(s); !errors.Is(err, ErrBadScope) {
			t.Errorf("ParseScope(%q) = %v, want ErrBadScope", s, err)
		}
	}
	for _, k := range []string{"", "global", "global.", "global.A", "global.a.b", "project.x", "project..a", "project.x.", "other.a",
		"project.a*b.c", "global.a\x00", "global." + strings.Repeat("a", 65), strings.Repeat(".", 300)} {
		_, _, err := ParseKey(k)
		if !errors.Is(err, ErrBadKey) && !errors.Is(err, ErrBadScope) {
			t.Errorf("ParseKey(%q) = %v, want ErrBadKey or ErrBadScope", k, err)
		}
		if err != nil && len(err.Error()) > 400 {
			t.Errorf("ParseKey(%q): error of %d bytes quotes the whole key", k[:10], len(err.Error()))
		}
	}
}

// FuzzParseKey: whatever the key, ParseKey either refuses it or returns a
// scope and a valid name that build the same key again.
func FuzzParseKey(f *testing.F) {
	for _, k := range []string{"global.a", "project.p.a-b", "global..", "project.p.q.r"} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		sc, name, err := ParseKey(key)
		if err != nil {
			return
		}
		if !ValidName(name) || sc.Key(name) != key {
			t.Fatalf("ParseKey(%q) = %v, %q: not the key's parts", key, sc, name)
		}
	})
}
