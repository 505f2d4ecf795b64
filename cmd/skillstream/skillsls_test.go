package main

import (
	"strings"
	"testing"

	"github.com/skillstream/skillstream/natstest"
)

// TestSkillsLsTable: skills ls prints a header, then one row per skill,
// its columns aligned under the header's whatever the names' lengths;
// --scope keeps the rows of one scope, and an empty store prints nothing.
func TestSkillsLsTable(t *testing.T) {
	srv := natstest.Start(t, natstest.WithTCP())
	nats := []string{"--nats-url", srv.URL()}
	skills := func(args ...string) string {
		t.Helper()
		code, stdout, stderr := runMain(t, append(append([]string{"skills"}, args...), nats...)...)
		if code != exitOK {
			t.Fatalf("skills %v: exit %d\n%s%s", args, code, stdout, stderr)
		}
		return stdout
	}
	if out := skills("ls"); out != "" {
		t.Fatalf("ls of an empty store:\n%q", out)
	}
	root := t.TempDir()
	writeFile(t, root, "a/SKILL.md", skillMD("A.", "name: a", "description: Short name."))
	writeFile(t, root, "a-much-longer-skill-name/SKILL.md", skillMD("L.", "name: a-much-longer-skill-name", "description: Long name."))
	skills("push", root)
	team := t.TempDir()
	writeFile(t, team, "team-skill/SKILL.md", skillMD("T.", "name: team-skill", "description: The team's."))
	skills("push", team, "--scope", "project/payments")

	out := skills("ls")
	t.Logf("skills ls:\n%s", out)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	header := lines[0]
	if got := strings.Join(strings.Fields(header), " "); got != "SCOPE NAME REVISION DIGEST PUBLISHED" {
		t.Fatalf("header %q", header)
	}
	if len(lines) != 4 {
		t.Fatalf("%d lines, want a header and 3 rows:\n%s", len(lines), out)
	}
	for _, row := range [][]string{{"global", "a", "1"}, {"global", "a-much-longer-skill-name", "1"}, {"project/payments", "team-skill", "1"}} {
		if !hasRow(out, row) {
			t.Errorf("no row %v:\n%s", row, out)
		}
	}
	// Each column starts where its header does, in every row.
	for _, col := range []string{"NAME", "REVISION", "DIGEST", "PUBLISHED"} {
		at := strings.Index(header, col)
		for _, l := range lines[1:] {
			if len(l) <= at || l[at] == ' ' || l[at-1] != ' ' {
				t.Errorf("column %s (at %d) is not aligned in %q", col, at, l)
			}
		}
	}
	scoped := skills("ls", "--scope", "project/payments")
	if lines := strings.Split(strings.TrimSuffix(scoped, "\n"), "\n"); len(lines) != 2 || !strings.HasPrefix(lines[0], "SCOPE ") ||
		!hasRow(scoped, []string{"project/payments", "team-skill", "1"}) {
		t.Errorf("ls --scope project/payments:\n%s", scoped)
	}
}
