package mcp_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/skillstream/skillstream/catalog"
	mcpserver "github.com/skillstream/skillstream/processor/mcp"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// golden compares got with testdata/<name>.golden byte for byte, or
// rewrites the file when -update is set.
func golden(t testing.TB, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run with -update to create it): %v", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from the golden file:\n got %q\nwant %q", path, got, want)
	}
}

// fleet writes n skills the size of a real organisation's, whose full
// catalog is far over what a host keeps of a tool's description.
func fleet(n int) func(testing.TB, string) {
	return func(t testing.TB, root string) {
		for i := range n {
			name := fmt.Sprintf("team-%03d-runbook", i)
			writeSkill(t, root, name, map[string]string{"SKILL.md": skillMD(name,
				fmt.Sprintf("Use for the on-call runbook of team %d, with the checks to run, who to page, and how to roll back a bad deploy 🚀.", i), "Body.")})
		}
	}
}

// TestToolDescriptionBudget: with 301 skills the skill tool's description
// keeps within the 2,048 UTF-16 code units Claude Code keeps of it, whole
// entries, the notice and the closing lines included; without a budget
// it is the catalog the size limit alone gives.
func TestToolDescriptionBudget(t *testing.T) {
	for _, c := range []struct {
		name   string
		max    int // Config.ToolDescriptionMax
		budget int // as catalog.DescribeTool takes it
	}{
		{"default", 0, catalog.DefaultToolDescriptionMax},
		{"none", -1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, fixtureOpts{setup: fleet(301), config: mcpserver.Config{ToolDescriptionMax: c.max}})
			<-f.srv.Complete()
			cs, _, _ := f.connect(t, "2025-11-25")
			tl, err := cs.ListTools(context.Background(), nil)
			if err != nil || len(tl.Tools) != 1 {
				t.Fatalf("tools/list: %+v %v", tl, err)
			}
			got := tl.Tools[0].Description
			snap, err := f.reg.Snapshot(context.Background(), catalog.Query{})
			if err != nil || !snap.Complete || len(snap.Skills) != 301 {
				t.Fatalf("snapshot of %d skills, complete %v: %v", len(snap.Skills), snap.Complete, err)
			}
			if want := catalog.DescribeTool(snap, catalog.DefaultOptions(), c.budget); got != want {
				t.Errorf("description is not the catalog's:\n got %q\nwant %q", got, want)
			}
			units := len(utf16.Encode([]rune(got)))
			if c.budget == 0 {
				if units <= catalog.DefaultToolDescriptionMax {
					t.Errorf("without a budget the description has %d UTF-16 code units", units)
				}
				return
			}
			golden(t, "tool-description-301", got)
			if units > c.budget {
				t.Errorf("description of %d UTF-16 code units, over %d", units, c.budget)
			}
			if !strings.Contains(got, "\n(Shortened to fit the catalog size limit: ") ||
				!strings.HasSuffix(got, "do not infer or follow a skill's instructions until it has been loaded.\n</system-reminder>") {
				t.Errorf("the notice or the closing lines are missing:\n%s", got)
			}
		})
	}
}
