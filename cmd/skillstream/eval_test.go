package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
	"github.com/skillstream/skillstream/processor/replay/eval"
)

// evalSkills are the skills of the recorded session: a search for
// "invoice reconciliation" ranks inv-target fourth, one for "rotate
// certificates" finds key-keeper first.
var evalSkills = map[string]string{
	"inv-alpha":     "Invoice reconciliation for ledgers.",
	"inv-beta":      "Invoice reconciliation for banks.",
	"inv-gamma":     "Invoice reconciliation for vendors.",
	"inv-target":    "Tidy the invoice notes folder.",
	"key-keeper":    "Rotate TLS certificates before they expire.",
	"release-notes": "Draft release notes from merged pull requests.",
	"unit-tests":    "Write unit tests for a Go package.",
	"db-migrate":    "Write and check database schema migrations.",
}

func writeSkills(t *testing.T, skills map[string]string) string {
	t.Helper()
	root := t.TempDir()
	for name, desc := range skills {
		writeFile(t, root, name+"/SKILL.md", skillMD("Steps of "+name+".", "name: "+name, "description: "+desc))
	}
	return root
}

// recordEvalSession plays a session of searches and loads through serve
// --skill-search and exports it.
func recordEvalSession(t *testing.T) (rec, root, data string) {
	t.Helper()
	root = writeSkills(t, evalSkills)
	data = t.TempDir()
	cwd := t.TempDir()
	s := startServe(t, data, root, "--skill-search")
	c, err := client.New(s.connect(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tools := []events.Tool{client.SkillTool("skillstream"), client.SkillSearchTool("skillstream")}
	step := func(id string) {
		if _, err := c.PreStep(ctx, events.PreStep{Session: "ev", Step: id, Cwd: cwd, Tools: tools}); err != nil {
			t.Fatalf("step %s: %v", id, err)
		}
	}
	search := func(id, q string) {
		if _, err := c.SearchSkills(ctx, events.SkillSearch{Session: "ev", Call: id, Cwd: cwd, Args: events.SearchArgs{Query: q}}); err != nil {
			t.Fatalf("search %s: %v", id, err)
		}
	}
	call := func(id, name string) {
		if _, err := c.CallSkill(ctx, events.SkillCall{Session: "ev", Call: id, Cwd: cwd, Args: events.SkillArgs{Name: name}}); err != nil {
			t.Fatalf("call %s: %v", id, err)
		}
	}
	step("1")
	search("s1", "invoice reconciliation")
	call("c1", "inv-target")
	step("2")
	search("s2", "rotate certificates")
	step("3")
	call("c2", "key-keeper")
	step("4")
	call("c3", "release-notes")
	step("5")
	c.Close()
	if code := s.stop(); code != exitOK {
		t.Fatalf("serve: exit %d\n%s", code, s.stderr)
	}
	rec = filepath.Join(t.TempDir(), "ev.jsonl")
	if code, _, stderr := runMain(t, "export", "--session", "ev", "--out", rec, "--data", data, "--listen", quietAddr(t)); code != exitOK {
		t.Fatalf("export: exit %d\n%s", code, stderr)
	}
	return rec, root, data
}

// TestEvalCommand: eval of a recorded session against a changed skills
// folder prints the exact figures, as text and --json; --fail-on gates
// exit 1 naming the gate, pass with 0; bad input exits 2.
func TestEvalCommand(t *testing.T) {
	rec, root, data := recordEvalSession(t)
	flags := []string{"--no-bundled", "--user-skills-dir=", "--no-skill-store", "--skill-search", "--skills-dir", root}
	same, changed := flags, flags

	// The unchanged skills: nothing moves, every gate holds.
	code, out, stderr := runMain(t, append([]string{"eval", rec, "--fail-on", "hit5-drop=0,failures=0", "--fail-on", "bytes-growth=0"}, same...)...)
	if code != exitOK || !strings.Contains(out, "hit@1 0.500 → 0.500, hit@5 1.000 → 1.000, MRR 0.625 → 0.625") ||
		!strings.Contains(out, "recorded loads: 0 now fail, 0 load other text, 0 failed and now load") {
		t.Fatalf("unchanged: exit %d\n%s%s", code, out, stderr)
	}

	// The change, made in the folder the session ran with (a skill's text
	// names its folder): inv-target's description now says what the first
	// search asked, key-keeper's no longer what the second did,
	// release-notes is gone.
	writeFile(t, root, "inv-target/SKILL.md", skillMD("Steps of inv-target.", "name: inv-target",
		"description: Invoice reconciliation, reconcile every invoice against the ledger, invoice by invoice."))
	writeFile(t, root, "key-keeper/SKILL.md", skillMD("Steps of key-keeper.", "name: key-keeper", "description: Keep the team's key ring tidy."))
	if err := os.RemoveAll(filepath.Join(root, "release-notes")); err != nil {
		t.Fatal(err)
	}
	code, out, stderr = runMain(t, append([]string{"eval", rec}, changed...)...)
	if code != exitOK {
		t.Fatalf("changed: exit %d\n%s%s", code, out, stderr)
	}
	for _, want := range []string{
		"  changed: inv-target, key-keeper\n",
		"  removed: release-notes\n",
		"  call c3 (release-notes): fails (unknown)\n",
		`  search seq 3 "invoice reconciliation" then inv-target: rank 4 → 1` + "\n",
		`  search seq 8 "rotate certificates" then key-keeper: rank 1 → not shown` + "\n",
		"sessions: 1, steps with a catalog in view: 5\n",
		"entries: 0 added, 1 removed, 2 changed, 0 without description (each name once per session)\n",
		"recorded loads: 1 now fail, 0 load other text, 0 failed and now load\n",
		"search-then-load pairs: 2 (a load within 3 pre-steps of its search)\n",
		"  hit@1 0.500 → 0.500, hit@5 1.000 → 0.500, MRR 0.625 → 0.500\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}

	// The same session read from the stream, by the time of its
	// pre-steps.
	store := []string{"--data", data, "--listen", quietAddr(t)}
	code, live, stderr := runMain(t, append(append([]string{"eval", "--since", "1h"}, store...), changed...)...)
	if code != exitOK || strings.ReplaceAll(live, "(SESSIONS/ev)", "("+rec+")") != out {
		t.Errorf("--since 1h: exit %d\n%s%s\nwant\n%s", code, live, stderr, out)
	}
	code, _, stderr = runMain(t, append(append([]string{"eval", "--since", "2h", "--until", "1h"}, store...), changed...)...)
	if code != exitFailure || !strings.Contains(stderr, "no session of stream SESSIONS has a pre-step in the window") {
		t.Errorf("an empty window: exit %d\n%s", code, stderr)
	}

	// --json: the same figures, and the gates' verdicts.
	code, out, stderr = runMain(t, append([]string{"eval", rec, "--json", "--steps", "--fail-on", "hit5-drop=0.05"}, changed...)...)
	if code != exitFailure || !strings.Contains(stderr, "gate hit5-drop=0.05 tripped: 0.500") {
		t.Fatalf("--fail-on hit5-drop=0.05: exit %d\n%s", code, stderr)
	}
	var rep struct {
		eval.Report
		Gates []eval.Verdict `json:"gates"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, out)
	}
	s := rep.Summary
	if s.Pairs != 2 || s.RanksBefore.Hit5 != 1 || s.RanksAfter.Hit5 != 0.5 || s.RanksAfter.MRR != 0.5 || s.Failures != 1 ||
		len(rep.Sessions) != 1 || len(rep.Sessions[0].StepRows) != 5 || len(rep.Gates) != 1 || !rep.Gates[0].Tripped {
		t.Errorf("--json: %+v", rep)
	}

	for _, c := range []struct {
		gates string
		want  int
	}{
		{"hit5-drop=0.5", exitOK}, {"hit5-drop=49%", exitFailure}, {"failures=0", exitFailure}, {"failures=1", exitOK},
		{"hit1-drop=0,mrr-drop=0.2", exitOK}, {"bytes-growth=100%", exitOK},
	} {
		if code, _, stderr := runMain(t, append([]string{"eval", rec, "--fail-on", c.gates}, changed...)...); code != c.want {
			t.Errorf("--fail-on %s: exit %d, want %d\n%s", c.gates, code, c.want, stderr)
		}
	}

	// Bad input: exit 2, saying what was wrong.
	b, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	corrupt := filepath.Join(t.TempDir(), "corrupt.jsonl")
	if err := os.WriteFile(corrupt, bytes.Replace(b, []byte(`"type":"event"`), []byte(`"type":"evnt"`), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"eval", rec, "--fail-on", "hit5-dorp=0.05"}, `unknown key "hit5-dorp", want one of hit1-drop, hit5-drop, mrr-drop, failures, bytes-growth`},
		{[]string{"eval", rec, "--fail-on", "failures=some"}, `limit "some" is not a count`},
		{[]string{"eval", filepath.Join(t.TempDir(), "gone.jsonl")}, "gone.jsonl: open"},
		{[]string{"eval", rec, corrupt}, "corrupt.jsonl: corrupt recording: record 2 (byte offset"},
		{[]string{"eval"}, "eval needs one or more recording files, or --since"},
		{[]string{"eval", rec, "--since", "1h"}, "give recording files or --since, not both"},
		{[]string{"eval", "--since", "soon"}, `--since "soon": want a duration`},
	} {
		code, out, stderr := runMain(t, append(c.args, changed...)...)
		if code != exitUsage || !strings.Contains(stderr, c.want) || out != "" {
			t.Errorf("%q: exit %d, want 2 and %q\nstdout: %s\nstderr: %s", c.args[1:], code, c.want, out, stderr)
		}
	}
}
