package agentskills_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers/agentskills"
)

// FuzzParseSkillFile: the parser never panics, returns either a skill whose
// name is in the grammar and whose description is not empty, or a
// *ParseError naming the path.
func FuzzParseSkillFile(f *testing.F) {
	for _, s := range []string{
		"---\nname: a\ndescription: d\n---\nbody",
		"---\r\nname: crlf\r\ndescription: d\r\n---\r\nbody\r\n",
		"---\nname: x\ndescription: |\n  ----\n  y\n---\n",
		"---\nname: x\ndescription: d\ndisable-model-invocation: maybe\n---\n",
		"---\nname: x\ndescription: d\nuserInvocable: no\n---\n",
		"---\nname: x\ndescription: d\nmetadata: &a {k: *a}\n---\n",
		"---\n- list\n---\n",
		"---\nname: [\n---\n",
		"---\nname: x\n",
		"no frontmatter",
		"\ufeff---\nname: \"123\"\ndescription: 'q'\nuser-invocable: 'Off'\n---\n",
		"---\nname: a\ndescription: d\nallowed-tools: [a, b]\nwhen_to_use: w\n---\n\xff",
		"---\nname: a\ndescription: \"\\e[2J\\u202e\"\n---\nbody\x1b]0;t\x07\r\n\u2066",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		sk, err := agentskills.ParseFile("fuzz/SKILL.md", data)
		if err != nil {
			var pe *agentskills.ParseError
			if !errors.As(err, &pe) || pe.Path != "fuzz/SKILL.md" || pe.Reason == "" || !errors.Is(err, agentskills.ErrInvalidSkill) {
				t.Fatalf("error %#v is not a ParseError with path and reason", err)
			}
			return
		}
		if !catalog.ValidName(sk.Name) {
			t.Fatalf("accepted name %q outside the grammar", sk.Name)
		}
		if strings.TrimSpace(sk.Description) == "" {
			t.Fatalf("accepted an empty description")
		}
		if sk.Content != strings.TrimSpace(sk.Content) {
			t.Fatalf("body not trimmed: %q", sk.Content)
		}
		// The text warnings of a valid file name a line of it.
		lines := strings.Count(string(data), "\n") + 1
		for _, w := range agentskills.CheckText(data) {
			if w.Line < 1 || w.Line > lines || w.Count < 1 {
				t.Fatalf("warning %+v outside the file's %d lines", w, lines)
			}
		}
	})
}
