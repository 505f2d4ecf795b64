package main

import (
	"context"
	"maps"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
)

// TestEvalSkillRevision: a session recorded while the store held
// revision 2 of inv-target, evaluated with --skill-revision naming
// revision 1 (by its number and by store revision), shows the description
// change and the search-then-load pair's rank change; a revision that is
// a removal makes the recorded call fail; bad revisions exit 2, naming
// what was wrong.
func TestEvalSkillRevision(t *testing.T) {
	folder := maps.Clone(evalSkills)
	delete(folder, "inv-target")
	root := writeSkills(t, folder)
	s := startServe(t, t.TempDir(), root, "--skill-search")
	nats := []string{"--nats-url", s.url}
	dir := filepath.Join(t.TempDir(), "inv-target")
	pushRev := func(body, desc, want string) {
		t.Helper()
		writeFile(t, dir, "SKILL.md", skillMD(body, "name: inv-target", "description: "+desc))
		if code, out, stderr := runMain(t, append([]string{"skills", "push", dir}, nats...)...); code != exitOK || !strings.HasPrefix(out, want) {
			t.Fatalf("push: exit %d\n%s%s", code, out, stderr)
		}
	}
	// Revision 1 (store revision 1) answers the search first; revision 2
	// (store revision 2), with other instructions, fourth.
	pushRev("First steps of inv-target.", "Invoice reconciliation, reconcile every invoice against the ledger, invoice by invoice.", "added inv-target rev 1 ")
	pushRev("Steps of inv-target.", "Tidy the invoice notes folder.", "updated inv-target rev 2 ")

	c, err := client.New(s.connect(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cwd := t.TempDir()
	tools := []events.Tool{client.SkillTool("skillstream"), client.SkillSearchTool("skillstream")}
	if _, err := c.PreStep(ctx, events.PreStep{Session: "rv", Step: "1", Cwd: cwd, Tools: tools, MinStoreRevision: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.SearchSkills(ctx, events.SkillSearch{Session: "rv", Call: "s1", Cwd: cwd, Args: events.SearchArgs{Query: "invoice reconciliation"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CallSkill(ctx, events.SkillCall{Session: "rv", Call: "c1", Cwd: cwd, Args: events.SkillArgs{Name: "inv-target"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PreStep(ctx, events.PreStep{Session: "rv", Step: "2", Cwd: cwd, Tools: tools}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	rec := filepath.Join(t.TempDir(), "rv.jsonl")
	if code, _, stderr := runMain(t, append([]string{"export", "--session", "rv", "--out", rec}, nats...)...); code != exitOK {
		t.Fatalf("export: exit %d\n%s", code, stderr)
	}
	// Then removed (revision 3) and published again as revision 2 was
	// (revision 4): the current store is what the session saw.
	if code, out, stderr := runMain(t, append([]string{"skills", "rm", "inv-target", "--scope", "global"}, nats...)...); code != exitOK {
		t.Fatalf("rm: exit %d\n%s%s", code, out, stderr)
	}
	pushRev("Steps of inv-target.", "Tidy the invoice notes folder.", "added inv-target rev 4 ")

	flags := append([]string{"--no-bundled", "--user-skills-dir=", "--skill-search", "--skills-dir", root}, nats...)
	eval := func(want int, args ...string) (string, string) {
		t.Helper()
		code, out, stderr := runMain(t, append(append([]string{"eval", rec}, args...), flags...)...)
		if code != want {
			t.Fatalf("eval %q: exit %d, want %d\n%s%s", args, code, want, out, stderr)
		}
		return out, stderr
	}
	pair := `  search seq 3 "invoice reconciliation" then inv-target: rank `
	for _, args := range [][]string{nil, {"--skill-revision", "inv-target@2"}, {"--skill-revision", "inv-target@store:2", "--scope", "global"}} {
		out, _ := eval(exitOK, args...)
		for _, want := range []string{
			pair + "4 → 4\n",
			"entries: 0 added, 0 removed, 0 changed, 0 without description (each name once per session)\n",
			"recorded loads: 0 now fail, 0 load other text, 0 failed and now load\n",
			"  hit@1 0.000 → 0.000, hit@5 1.000 → 1.000, MRR 0.250 → 0.250\n",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%q: output lacks %q:\n%s", args, want, out)
			}
		}
	}
	var first string
	for _, rev := range []string{"inv-target@1", "inv-target@store:1"} {
		out, _ := eval(exitOK, "--skill-revision", rev)
		for _, want := range []string{
			"  changed: inv-target\n",
			pair + "4 → 1\n",
			"entries: 0 added, 0 removed, 1 changed, 0 without description (each name once per session)\n",
			"  call c1 (inv-target): other-text\n",
			"recorded loads: 0 now fail, 1 load other text, 0 failed and now load\n",
			"search-then-load pairs: 1 (a load within 3 pre-steps of its search)\n",
			"  hit@1 0.000 → 1.000, hit@5 1.000 → 1.000, MRR 0.250 → 1.000\n",
		} {
			if !strings.Contains(out, want) {
				t.Errorf("%s: output lacks %q:\n%s", rev, want, out)
			}
		}
		if first == "" {
			first = out
		} else if out != first {
			t.Errorf("%s: output differs from inv-target@1:\n%s\nwant\n%s", rev, out, first)
		}
	}
	out, _ := eval(exitFailure, "--skill-revision", "inv-target@3", "--fail-on", "failures=0")
	for _, want := range []string{
		"  removed: inv-target\n",
		"  call c1 (inv-target): fails (unknown)\n",
		pair + "4 → not shown\n",
		"recorded loads: 1 now fail, 0 load other text, 0 failed and now load\n",
		"  hit@1 0.000 → 0.000, hit@5 1.000 → 0.000, MRR 0.250 → 0.000\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("removal: output lacks %q:\n%s", want, out)
		}
	}

	// A store whose history keeps two revisions: revision 1 left it.
	small := []string{"--skill-store-bucket", "SMALL", "--skill-store-objects", "SMALL_OBJ", "--skill-store-history", "2"}
	for _, desc := range []string{"One.", "Two.", "Three."} {
		writeFile(t, dir, "SKILL.md", skillMD("Steps.", "name: inv-target", "description: "+desc))
		if code, out, stderr := runMain(t, append(append([]string{"skills", "push", dir}, small...), nats...)...); code != exitOK {
			t.Fatalf("push to SMALL: exit %d\n%s%s", code, out, stderr)
		}
	}

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--skill-revision", "nope@1"}, `--skill-revision: skill store: skill "nope" in global: skill not found`},
		{[]string{"--skill-revision", "inv-target@9"}, `skill "inv-target" in global: revision 9 is not one the index keeps (its newest is 4; see skills history)`},
		{[]string{"--skill-revision", "inv-target@store:9"}, `skill "inv-target" in global: store revision 9 is not one of its revisions the index keeps (store revisions 1 to 4; see skills history)`},
		{append([]string{"--skill-revision", "inv-target@1"}, small...), `skill "inv-target" in global: revision 1 is not one the index keeps (it keeps revisions 2 to 3, older ones left its history)`},
		{[]string{"--skill-revision", "inv-target@1", "--scope", "project/p1"}, `skill "inv-target" in project/p1: skill not found`},
		{[]string{"--skill-revision", "inv-target@x"}, `--skill-revision "inv-target@x": revision "x": want a positive integer`},
		{[]string{"--skill-revision", "inv-target"}, `--skill-revision "inv-target": want NAME@REV`},
		{[]string{"--skill-revision", "Bad_Name@1"}, `--skill-revision "Bad_Name@1": `},
		{[]string{"--skill-revision", "inv-target@1", "--skill-revision", "inv-target@2"}, `skill inv-target is named twice`},
		{[]string{"--skill-revision", "inv-target@1", "--no-skill-store"}, "--skill-revision names a revision of the skill store: drop --no-skill-store"},
		{[]string{"--scope", "global"}, "--scope applies to --skill-revision only"},
		{[]string{"--skill-revision", "inv-target@1", "--scope", "team"}, `--scope: `},
	} {
		_, stderr := eval(exitUsage, c.args...)
		if !strings.Contains(stderr, c.want) {
			t.Errorf("%q: stderr lacks %q:\n%s", c.args, c.want, stderr)
		}
	}

	// A draft (revision 5, revision 1's text pushed with --draft) is
	// offered to no session, so the store as it is judges as before; named
	// by --skill-revision, it is the candidate judged, as revision 1 was.
	writeFile(t, dir, "SKILL.md", skillMD("First steps of inv-target.", "name: inv-target", "description: Invoice reconciliation, reconcile every invoice against the ledger, invoice by invoice."))
	if code, out, stderr := runMain(t, append([]string{"skills", "push", dir, "--draft"}, nats...)...); code != exitOK || !strings.HasPrefix(out, "updated inv-target rev 5 ") || !strings.Contains(out, "(draft: ") {
		t.Fatalf("draft push: exit %d\n%s%s", code, out, stderr)
	}
	if out, _ := eval(exitOK); !strings.Contains(out, pair+"4 → 4\n") || !strings.Contains(out, "entries: 0 added, 0 removed, 0 changed,") {
		t.Errorf("the store with a draft, judged as it is: the draft was seen:\n%s", out)
	}
	if out, _ := eval(exitOK, "--skill-revision", "inv-target@5"); out != first {
		t.Errorf("the draft as the candidate: output differs from inv-target@1's:\n%s\nwant\n%s", out, first)
	}
}
