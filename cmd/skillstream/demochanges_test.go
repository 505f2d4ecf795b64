package main

import (
	"strings"
	"testing"
)

// TestDemoChangeLists: with --catalog-updates changes the demo's added
// skill reaches the model as a change list naming it, and the compaction
// that masks it re-establishes the whole list.
func TestDemoChangeLists(t *testing.T) {
	code, stdout, stderr := runMain(t, "demo", "--catalog-updates", "changes")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"== 5. A skill is added on disk: a change list names it",
		"processor: appended, change list naming 1 skill (the list now has 3)",
		"    | <skill_catalog_changes>\n    | - added `release-notes`: Draft release notes from the merged changes since the last tag.\n    | </skill_catalog_changes>",
		"processor: appended, replacement catalog with 3 skills",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("demo output lacks %q:\n%s", want, stdout)
		}
	}
}
