package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
	"github.com/skillstream/skillstream/processor/replay"
)

// searchRoot writes skills a search tells apart.
func searchRoot(t *testing.T) string {
	root := t.TempDir()
	for _, s := range []struct{ name, desc string }{
		{"changelog", "Draft a changelog entry for a release."},
		{"db-migrate", "Write and check database schema migrations."},
		{"deploy-preview", "Deploy a preview environment for a pull request."},
		{"git-review", "Review a pull request and its comments."},
		{"k8s-deploy", "Deploy services to Kubernetes and roll back a bad deploy."},
		{"pdf-forms", "Fill in PDF forms and extract their fields."},
		{"terraform-plan", "Plan infrastructure changes with Terraform."},
		{"unit-tests", "Write unit tests for a Go package."},
	} {
		writeFile(t, root, s.name+"/SKILL.md", skillMD("Steps of "+s.name+".", "name: "+s.name, "description: "+s.desc))
	}
	return root
}

// TestReplayHistorySearches plays a session of searches through serve
// --skill-search, exports it with its skills, and replays it: identical as
// recorded, against today's skills and the captured ones; refused searches
// without --skill-search; a changed ranking on disk is a diff at the
// search it changes. history shows the searches under their step.
func TestReplayHistorySearches(t *testing.T) {
	root := searchRoot(t)
	data := t.TempDir()
	cwd := t.TempDir()
	s := startServe(t, data, root, "--skill-search", "--catalog-listed-max", "3")
	c, err := client.New(s.connect(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tools := []events.Tool{client.SkillTool("skillstream"), client.SkillSearchTool("skillstream")}
	if d, err := c.PreStep(ctx, events.PreStep{Session: "srch", Step: "1", Cwd: cwd, Tools: tools}); err != nil || d.Outcome != events.OutcomeAppended {
		t.Fatalf("step 1: %+v %v", d, err)
	}
	for _, q := range []struct {
		call string
		args events.SearchArgs
	}{
		{"s1", events.SearchArgs{Query: "deploy a service"}},
		{"s2", events.SearchArgs{Query: "quantum chromodynamics"}},
		{"s3", events.SearchArgs{Query: "deploy", Limit: 17}},
	} {
		if _, err := c.SearchSkills(ctx, events.SkillSearch{Session: "srch", Call: q.call, Cwd: cwd, Args: q.args}); err != nil {
			t.Fatalf("search %s: %v", q.call, err)
		}
	}
	if _, err := c.CallSkill(ctx, events.SkillCall{Session: "srch", Call: "c1", Cwd: cwd, Args: events.SkillArgs{Name: "k8s-deploy"}}); err != nil {
		t.Fatal(err)
	}
	if d, err := c.PreStep(ctx, events.PreStep{Session: "srch", Step: "2", Cwd: cwd, Tools: tools}); err != nil || d.Outcome != events.OutcomeUnchanged {
		t.Fatalf("step 2: %+v %v", d, err)
	}
	c.Close()
	if code := s.stop(); code != exitOK {
		t.Fatalf("serve: exit %d\n%s", code, s.stderr)
	}

	skills := []string{"--no-bundled", "--user-skills-dir=", "--skills-dir", root}
	search := append([]string{"--skill-search", "--catalog-listed-max", "3"}, skills...)
	store := []string{"--data", data, "--listen", quietAddr(t)}
	rec := filepath.Join(t.TempDir(), "srch.jsonl")
	if code, _, stderr := runMain(t, append(append([]string{"export", "--session", "srch", "--out", rec, "--capture-skills"}, store...), skills...)...); code != exitOK {
		t.Fatalf("export: exit %d\n%s", code, stderr)
	}

	const same = "6 triggers replayed: 6 same, 0 differ\n"
	for _, args := range [][]string{
		{"replay", rec, "--as-recorded", "--skill-search", "--catalog-listed-max", "3"},
		append([]string{"replay", rec}, search...),
		append([]string{"replay", rec, "--recorded-skills"}, search...),
	} {
		code, out, stderr := runMain(t, args...)
		if code != exitOK || !strings.HasSuffix(out, same) {
			t.Errorf("%q: exit %d\n%s%s", args[2:], code, out, stderr)
		}
	}
	// The searches, each under its trigger name.
	_, out, _ := runMain(t, "replay", rec, "--as-recorded", "--skill-search", "--catalog-listed-max", "3")
	for _, want := range []string{
		`seq 3 search s1 ("deploy a service"): recorded ok (seq 4); replayed ok: same`,
		`seq 7 search s3 ("deploy"): recorded error bad_request (seq 8); replayed error bad_request: same`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("replay output lacks %q:\n%s", want, out)
		}
	}

	// The recording says search was on: a replay without the flag has it
	// on too, and says so.
	code, out, _ := runMain(t, append([]string{"replay", rec, "--recorded-skills"}, skills...)...)
	if first, _, _ := strings.Cut(out, "\n"); code != exitOK || !strings.Contains(first, "--skill-search=true") || !strings.HasSuffix(first, "(as recorded)") {
		t.Errorf("replay with the recorded options: exit %d\n%s", code, out)
	}
	// With search turned off by the flag, the searches are refused: those
	// with a result to show differ, and the first line names the option.
	code, out, _ = runMain(t, append([]string{"replay", rec, "--recorded-skills", "--skill-search=false"}, skills...)...)
	if code != exitFailure || !strings.Contains(out, `search s1 ("deploy a service"): recorded ok (seq 4); replayed rejected bad_request: DIFFERS`) ||
		!strings.Contains(out, "differ from the recording: --skill-search=false (recorded true)") {
		t.Errorf("replay without --skill-search: exit %d\n%s", code, out)
	}

	// History: the searches under the step they were made in.
	code, out, stderr := runMain(t, "history", rec)
	if code != exitOK {
		t.Fatalf("history: exit %d\n%s", code, stderr)
	}
	golden(t, "replay/history-search.golden", out)
	code, out, _ = runMain(t, "history", rec, "--json")
	var steps []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var d replay.Delta
		if err := json.Unmarshal([]byte(line), &d); err != nil {
			t.Fatalf("history --json line %q: %v", line, err)
		}
		steps = append(steps, fmt.Sprintf("%s:%d+%d/%d", d.Step, len(d.Added), len(d.Searches), len(d.Loads)))
		if d.Step == "1" && (len(d.Searches) != 3 || d.Searches[0].Query != "deploy a service" || d.Searches[0].Shown[0] != "k8s-deploy" ||
			d.Searches[0].Total != 2 || d.Loads[0].Name != "k8s-deploy" || d.Loads[0].Outcome != replay.OutcomeOK) {
			t.Errorf("history --json step 1: %s", line)
		}
	}
	if code != exitOK || strings.Join(steps, ",") != "1:3+3/1,2:0+0/0" {
		t.Errorf("history --json: exit %d, steps (step:added+searches/loads) %v", code, steps)
	}

	// A description edited on disk ranks unit-tests (left out of the
	// catalog) first for "deploy a service": that search alone differs.
	writeFile(t, root, "unit-tests/SKILL.md", skillMD("Steps.", "name: unit-tests",
		"description: Deploy a service, deploy it again, and test the deployed service."))
	code, out, stderr = runMain(t, append([]string{"replay", rec}, search...)...)
	if code != exitFailure {
		t.Fatalf("replay after the edit: exit %d\n%s%s", code, out, stderr)
	}
	golden(t, "replay/search-changed.golden", out)
}
