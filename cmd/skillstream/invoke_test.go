package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor"
	"github.com/skillstream/skillstream/processor/demo"
)

const userInvocationLine = "A user may also invoke a skill directly; its <skill_content> block then appears in this conversation. Follow it, and do not call the `skill` tool again for that skill."

// catalog with --user-invocation (or its variable) prints the catalog with
// the extra line, the list unchanged; without it the text is as before.
func TestCatalogUserInvocation(t *testing.T) {
	root := spec4Skills(t)
	plain, err := os.ReadFile(filepath.Join("testdata", "catalog_spec4.golden"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSuffix(string(plain), "\n</system-reminder>") + "\n" + userInvocationLine + "\n</system-reminder>\n"
	args := append([]string{"catalog", "--catalog-description-max-length", "50", "--user-invocation"}, skillsArgs(t, root)...)
	code, stdout, stderr := runMain(t, args...)
	if code != exitOK || stdout != want {
		t.Fatalf("exit %d, stdout:\n%s\nwant:\n%s\nstderr:\n%s", code, stdout, want, stderr)
	}
	t.Setenv("SKILLSTREAM_USER_INVOCATION", "true")
	code, stdout, _ = runMain(t, append([]string{"catalog", "--catalog-description-max-length", "50"}, skillsArgs(t, root)...)...)
	if code != exitOK || stdout != want {
		t.Errorf("from the environment: exit %d, stdout:\n%s", code, stdout)
	}
	code, stdout, _ = runMain(t, append([]string{"catalog", "--catalog-description-max-length", "50", "--user-invocation=false"}, skillsArgs(t, root)...)...)
	if code != exitOK || stdout != string(plain)+"\n" {
		t.Errorf("flag false over the environment: exit %d, stdout:\n%s", code, stdout)
	}
}

// load --user previews a user's invocation: the tool's text for a skill
// the user may invoke, even one the model may not; the reason otherwise.
func TestLoadUser(t *testing.T) {
	root := spec4Skills(t)
	for _, tc := range []struct {
		skill, stdout, stderr string
		code                  int
	}{
		{skill: "user-only-skill", code: exitOK, stdout: "Users only."},
		{skill: "a-skill", code: exitOK, stdout: "Follow these steps."},
		{skill: "model-only-skill", code: exitFailure, stderr: "/model-only-skill invokes nothing: not_user_invocable"},
		{skill: "no-such-skill", code: exitFailure, stderr: "/no-such-skill invokes nothing: unknown"},
	} {
		t.Run(tc.skill, func(t *testing.T) {
			code, stdout, stderr := runMain(t, append(append([]string{"load", "--user"}, skillsArgs(t, root)...), tc.skill)...)
			if code != tc.code || !strings.Contains(stdout, tc.stdout) || !strings.Contains(stderr, tc.stderr) {
				t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			if tc.code == exitOK {
				_, tool, _ := runMain(t, append(append([]string{"load"}, skillsArgs(t, root)...), "a-skill")...)
				if tc.skill == "a-skill" && stdout != tool {
					t.Errorf("--user text differs from the tool's:\n%s\n%s", stdout, tool)
				}
			} else if stdout != "" {
				t.Errorf("stdout %q for a name that invokes nothing", stdout)
			}
		})
	}
}

// A session with user invocations: export records them, history shows
// them, replay and replay --as-recorded reproduce them (0 diffs), and a
// skill body changed on disk shows as a diff of the invocation.
func TestInvocationsExportHistoryReplay(t *testing.T) {
	dir := t.TempDir()
	cwd := replayProject(t)
	opts := catalog.DefaultOptions()
	opts.UserInvocation = true
	func() {
		rig := startRigWith(t, dir, processor.Config{Catalog: opts})
		defer rig.stop()
		w, err := demo.NewWorker(rig.nc, events.DefaultPrefix, "u1", processor.DefaultToolOwner)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		if d, err := w.PreStep(rig.ctx, "1", cwd, "/a-skill write it"); err != nil || len(d.Invocations) != 1 {
			t.Fatalf("step 1: %+v %v", d, err)
		}
		if d, err := w.PreStep(rig.ctx, "2", cwd, "/b-skill and /nope"); err != nil || len(d.Invocations) != 1 || len(d.Ignored) != 1 {
			t.Fatalf("step 2: %+v %v", d, err)
		}
	}()
	store := []string{"--data", dir, "--listen", quietAddr(t)}
	rec := filepath.Join(t.TempDir(), "u1.jsonl")
	if code, _, stderr := runMain(t, append([]string{"export", "--session", "u1", "--out", rec}, store...)...); code != exitOK ||
		!strings.Contains(stderr, "exported 5 events of session u1") {
		t.Fatalf("export: exit %d\n%s", code, stderr)
	}
	b, err := os.ReadFile(rec)
	if err != nil || strings.Count(string(b), ".skill.invocation\"") != 2 {
		t.Fatalf("recording does not hold the 2 invocations (%v)", err)
	}

	code, out, stderr := runMain(t, "history", rec)
	if code != exitOK || !strings.Contains(out, "step 1 (seq 1): catalog seq 2 (initial, step 1), 3 entries\n  added 3: a-skill, b-skill, release-notes\n  /a-skill (seq 3): invoked by the user\n") ||
		!strings.Contains(out, "step 2 (seq 4): catalog seq 2 (initial, step 1), 3 entries, no change\n  /b-skill (seq 5): invoked by the user\n") {
		t.Fatalf("history: exit %d\n%s%s", code, out, stderr)
	}

	on := append([]string{"--user-invocation"}, onlyProject...)
	code, out, stderr = runMain(t, append([]string{"replay", rec}, on...)...)
	if code != exitOK || !strings.Contains(out, "2 triggers replayed: 2 same, 0 differ") || !strings.Contains(out, "+ /a-skill") {
		t.Fatalf("replay: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = runMain(t, append([]string{"replay", rec, "--as-recorded"}, on...)...)
	if code != exitOK || !strings.Contains(out, "0 differ") {
		t.Fatalf("replay --as-recorded: exit %d\n%s%s", code, out, stderr)
	}

	// The body of b-skill changed: step 2's invocation differs.
	writeFile(t, filepath.Join(filepath.Dir(cwd), ".agents/skills/b-skill"), "SKILL.md",
		skillMD("Read the whole diff, twice.", "name: b-skill", "description: Review a pull request."))
	code, out, _ = runMain(t, append([]string{"replay", rec}, on...)...)
	if code != exitFailure || !strings.Contains(out, "1 differ") || !strings.Contains(out, "+++ replayed invocations") ||
		!strings.Contains(out, "+Read the whole diff, twice.") {
		t.Fatalf("replay after a body change: exit %d\n%s", code, out)
	}
}
