package agentskills_test

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/providers/agentskills"
)

func TestCheckText(t *testing.T) {
	type w = agentskills.TextWarning
	tests := []struct {
		name string
		in   string
		want []w
	}{
		{"clean, CRLF body with tabs", "---\r\nname: a\r\ndescription: |\r\n  two\r\n  lines\r\n---\r\n\tLine 1\r\nLine 2\r\n", nil},
		{"escape sequences in the body", "---\nname: a\ndescription: d\n---\n\nfine\nprintf '\x1b]0;owned\x07'\n\x1b[2J\n",
			[]w{{Field: "body", Line: 7, Char: 0x1b, Count: 3}}},
		{"bidi override in the description", "---\nname: a\ndescription: \"Formats \u202eevil\u202c code\"\n---\nb\n",
			[]w{{Field: "description", Line: 3, Char: 0x202e, Count: 2}}},
		{"escaped ESC and CR in a quoted description", "---\nname: a\ndescription: \"a\\e[2Jb\\rc\"\n---\nb\n",
			[]w{{Field: "description", Line: 3, Char: 0x1b, Count: 2}}},
		{"a C1 control, and a bell in when_to_use", "---\nname: a\ndescription: \"one\\x9b\"\nlicense: MIT\nwhen_to_use: \"\\a\"\n---\nb\n",
			[]w{{Field: "description", Line: 3, Char: 0x9b, Count: 1}, {Field: "when_to_use", Line: 5, Char: 0x07, Count: 1}}},
		{"isolates in the body after a byte order mark", "\ufeff---\nname: a\ndescription: d\n---\nx\u2066y\u2069 \u061c\n",
			[]w{{Field: "body", Line: 5, Char: 0x2066, Count: 3}}},
		{"DEL and NUL in the body", "---\nname: a\ndescription: d\n---\na\x7f\x00\n", []w{{Field: "body", Line: 5, Char: 0x7f, Count: 2}}},
		{"not a skill", "no frontmatter \x1b", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := agentskills.Parse([]byte(tt.in)); err != nil && tt.want != nil {
				t.Fatalf("a skill warned about must be valid: %v", err)
			}
			got := agentskills.CheckText([]byte(tt.in))
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("CheckText = %+v, want %+v", got, tt.want)
			}
		})
	}
	got := agentskills.TextWarning{Field: "body", Line: 7, Char: 0x1b, Count: 3}.String()
	if want := "body on line 7 holds U+001B, a control character (and 2 more)"; !strings.HasPrefix(got, want) {
		t.Errorf("String() = %q, want it to start with %q", got, want)
	}
	got = agentskills.TextWarning{Field: "description", Line: 3, Char: 0x202e, Count: 1}.String()
	if want := "description on line 3 holds U+202E, a bidirectional-text control:"; !strings.HasPrefix(got, want) {
		t.Errorf("String() = %q, want it to start with %q", got, want)
	}
}

// The scans validate uses carry each skill's text warnings; the skill is
// valid all the same.
func TestScanCarriesTextWarnings(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "term")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: term\ndescription: d\u202e\n---\n\x1b[2J\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, l := range []agentskills.Listing{
		agentskills.ScanFolder(context.Background(), root, true),
		agentskills.ScanSkill(context.Background(), dir, true),
	} {
		if len(l.Skills) != 1 || len(l.Skills[0].Text) != 2 {
			t.Fatalf("scan = %+v, want one skill with two text warnings", l)
		}
		if f := l.Skills[0].Text; f[0].Field != "description" || f[1].Field != "body" || f[1].Line != 5 {
			t.Errorf("text warnings %+v", f)
		}
	}
}
