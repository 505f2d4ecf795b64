package main

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
)

// TestChangeListsExportHistoryReplayUsage plays a session through serve
// --catalog-updates changes: its first catalog, a description edited on
// disk (a change list), a step with nothing new (the list carried whole),
// then exports it and reads it back: history marks the change list and
// shows the list it leads to, replay reproduces it (as recorded and
// against the captured skills, 0 diffs), and usage counts the catalog
// text by form.
func TestChangeListsExportHistoryReplayUsage(t *testing.T) {
	root := searchRoot(t)
	data := t.TempDir()
	cwd := t.TempDir()
	s := startServe(t, data, root, "--catalog-updates", "changes")
	c, err := client.New(s.connect(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tools := []events.Tool{client.SkillTool("skillstream")}
	step := func(n string) events.Decision {
		t.Helper()
		d, err := c.PreStep(ctx, events.PreStep{Session: "chg", Step: n, Cwd: cwd, Tools: tools})
		if err != nil {
			t.Fatalf("step %s: %v", n, err)
		}
		return d
	}
	first := step("1")
	if first.Outcome != events.OutcomeAppended || first.Catalog.Source.Update != "initial" {
		t.Fatalf("step 1: %+v", first)
	}
	writeFile(t, root, "git-review/SKILL.md", skillMD("Steps.", "name: git-review",
		"description: Review a pull request, its comments and its tests."))
	var second events.Decision
	for deadline := time.Now().Add(10 * time.Second); ; {
		second = step("2")
		if second.Outcome == events.OutcomeAppended || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond) // the edit is seen through fsnotify
	}
	if second.Catalog == nil || second.Catalog.Source.Update != events.UpdateChanges ||
		len(second.CatalogSeqs) != 2 || second.CatalogSeqs[0] != first.CatalogSeq || second.CurrentList == nil {
		t.Fatalf("step 2: %+v", second)
	}
	third := step("3")
	if third.Outcome != events.OutcomeUnchanged || third.CurrentList == nil || third.CurrentList.Digest != second.CurrentList.Digest {
		t.Fatalf("step 3: %+v", third)
	}
	c.Close()
	if code := s.stop(); code != exitOK {
		t.Fatalf("serve: exit %d\n%s", code, s.stderr)
	}

	skills := []string{"--no-bundled", "--user-skills-dir=", "--skills-dir", root}
	store := []string{"--data", data, "--listen", quietAddr(t)}
	rec := filepath.Join(t.TempDir(), "chg.jsonl")
	if code, _, stderr := runMain(t, append(append([]string{"export", "--session", "chg", "--out", rec, "--capture-skills"}, store...), skills...)...); code != exitOK {
		t.Fatalf("export: exit %d\n%s", code, stderr)
	}
	// As recorded: the same. Against the skills captured at export (the
	// edited ones), the first catalog differs, and the change list is
	// made again, the same.
	if code, out, stderr := runMain(t, "replay", rec, "--as-recorded", "--catalog-updates", "changes"); code != exitOK ||
		!strings.HasSuffix(out, "3 triggers replayed: 3 same, 0 differ\n") {
		t.Errorf("replay --as-recorded: exit %d\n%s%s", code, out, stderr)
	}
	_, out, _ := runMain(t, append([]string{"replay", rec, "--recorded-skills", "--catalog-updates", "changes"}, skills...)...)
	for _, want := range []string{
		"seq 3 step 2: recorded appended changes (seq 4); replayed appended changes: same",
		"3 triggers replayed: 2 same, 1 differ",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("replay against the captured skills lacks %q:\n%s", want, out)
		}
	}
	code, out, stderr := runMain(t, "history", rec)
	if code != exitOK {
		t.Fatalf("history: exit %d\n%s", code, stderr)
	}
	// Each step names the list the model has after it, the change list
	// marked as such.
	for _, want := range []string{
		"step 1 (seq 1): catalog seq 2 (initial, step 1), 8 entries",
		"step 2 (seq 3): catalog seq 4 (changes, step 2), 8 entries\n  changed 1: git-review\n",
		"step 3 (seq 5): catalog seq 4 (changes, step 2), 8 entries, no change",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("history lacks %q:\n%s", want, out)
		}
	}
	code, out, stderr = runMain(t, "history", rec, "--step", "2", "--json")
	if code != exitOK || !strings.Contains(out, "Review a pull request, its comments and its tests.") {
		t.Errorf("history --step 2 --json: exit %d, the edited description missing\n%s%s", code, out, stderr)
	}
	code, out, stderr = runMain(t, append([]string{"usage"}, store...)...)
	if code != exitOK || !strings.Contains(out, "change lists: 1,") {
		t.Errorf("usage: exit %d\n%s%s", code, out, stderr)
	}
}
