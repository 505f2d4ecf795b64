package main

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/natstest"
)

func makeWritable(root string) {
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			os.Chmod(p, 0o755)
		}
		return nil
	})
}

var revDigest = regexp.MustCompile(`rev \d+ [0-9a-f]{12}`)

func TestSkillsPushLsHistoryRmGet(t *testing.T) {
	srv := natstest.Start(t, natstest.WithTCP())
	nats := []string{"--nats-url", srv.URL()}
	root := t.TempDir()
	writeFile(t, root, "a-skill/SKILL.md", skillMD("Version one.", "name: a-skill", "description: A skill."))
	writeFile(t, root, "a-skill/notes/ref.txt", "reference")
	writeFile(t, root, "b-skill.md", skillMD("Flat.", "name: b-skill", "description: B skill."))

	run := func(want int, args ...string) string {
		t.Helper()
		code, stdout, stderr := runMain(t, append(append([]string{"skills"}, args...), nats...)...)
		if code != want {
			t.Fatalf("skills %v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, code, want, stdout, stderr)
		}
		return stdout + stderr
	}
	out := run(0, "push", root)
	if !regexp.MustCompile(`^added a-skill rev 1 [0-9a-f]{12}\nadded b-skill rev 1 [0-9a-f]{12}\nstore revision 2 epoch [0-9a-f]{16}\n$`).MatchString(out) {
		t.Fatalf("first push:\n%s", out)
	}
	out = run(0, "push", root)
	if strings.Count(out, "unchanged") != 2 {
		t.Fatalf("second push:\n%s", out)
	}
	writeFile(t, root, "a-skill/SKILL.md", skillMD("Version two.", "name: a-skill", "description: A skill."))
	out = run(0, "push", root)
	if !strings.Contains(out, "updated a-skill rev 2 ") || !strings.Contains(out, "unchanged b-skill rev 1 ") || !strings.Contains(out, "store revision 3 ") {
		t.Fatalf("update push:\n%s", out)
	}
	hist := run(0, "history", "a-skill")
	if lines := strings.Split(strings.TrimSpace(hist), "\n"); len(lines) != 2 || !revDigest.MatchString(lines[0]) {
		t.Fatalf("history:\n%s", hist)
	}
	ls := run(0, "ls")
	if !hasRow(ls, []string{"global", "a-skill", "2"}) || !hasRow(ls, []string{"global", "b-skill", "1"}) {
		t.Fatalf("ls:\n%s", ls)
	}
	dest := t.TempDir()
	t.Cleanup(func() { makeWritable(dest) })
	run(0, "get", "a-skill@1", "--out", dest)
	data, err := os.ReadFile(filepath.Join(dest, "a-skill", "SKILL.md"))
	if err != nil || !strings.Contains(string(data), "Version one.") {
		t.Fatalf("get a-skill@1: %q, %v", data, err)
	}
	if ref, _ := os.ReadFile(filepath.Join(dest, "a-skill", "notes", "ref.txt")); string(ref) != "reference" {
		t.Fatalf("get: notes/ref.txt = %q", ref)
	}
	out = run(2, "rm", "a-skill")
	if !strings.Contains(out, "needs --scope") {
		t.Fatalf("rm without scope:\n%s", out)
	}
	out = run(0, "rm", "a-skill", "--scope", "global")
	if !regexp.MustCompile(`^removed a-skill rev 3\nstore revision 4 epoch [0-9a-f]{16}\n$`).MatchString(out) {
		t.Fatalf("rm:\n%s", out)
	}
	run(1, "rm", "a-skill", "--scope", "global") // gone: nothing to remove
	os.RemoveAll(filepath.Join(root, "a-skill"))
	writeFile(t, root, "c-skill/SKILL.md", skillMD("C.", "name: c-skill", "description: C skill."))
	proj := run(0, "push", filepath.Join(root, "c-skill"), "--scope", "project/team_1")
	if !strings.HasPrefix(proj, "added c-skill rev 1 ") || !strings.Contains(proj, "store revision 5 ") {
		t.Fatalf("project push:\n%s", proj)
	}
	out = run(0, "push", filepath.Join(root, "c-skill"), "--prune")
	if !strings.Contains(out, "added c-skill") || !strings.Contains(out, "removed b-skill rev") {
		t.Fatalf("prune push:\n%s", out)
	}
	run(2, "push", root, "--scope", "project/bad id")

	// A preview sees store skills, with the project's scope and a resource dir.
	code, stdout, stderr := runMain(t, append([]string{"load", "c-skill", "--json", "--no-bundled", "--user-skills-dir=",
		"--project", "team_1", "--resource-dir", "/res"}, nats...)...)
	if code != 0 || !strings.Contains(stdout, `"provider": "store"`) || !strings.Contains(stdout, `"digest": "`) ||
		!strings.Contains(stdout, `"path": "/res/c-skill/`) {
		t.Fatalf("load of a store skill: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

func TestSkillsPushRefusesEveryProblem(t *testing.T) {
	srv := natstest.Start(t, natstest.WithTCP())
	root := t.TempDir()
	writeFile(t, root, "good-skill/SKILL.md", skillMD("Good.", "name: good-skill", "description: Good."))
	writeFile(t, root, "bad-name/SKILL.md", skillMD("B.", "name: Bad_Name", "description: Bad."))
	writeFile(t, root, "folder-name/SKILL.md", skillMD("D.", "name: other-name", "description: Differs."))
	writeFile(t, root, "link-out/SKILL.md", skillMD("L.", "name: link-out", "description: Link."))
	outside := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(outside, []byte("x"), 0o644)
	os.Symlink(outside, filepath.Join(root, "link-out", "secret"))
	writeFile(t, root, "many-files/SKILL.md", skillMD("M.", "name: many-files", "description: Many."))
	for i := range 10000 {
		os.WriteFile(filepath.Join(root, "many-files", fmt.Sprintf("f%05d", i)), nil, 0o644)
	}
	writeFile(t, root, "big-file/SKILL.md", skillMD("Big.", "name: big-file", "description: Big."))
	os.WriteFile(filepath.Join(root, "big-file", "blob"), make([]byte, 9<<20), 0o644)
	code, stdout, stderr := runMain(t, "skills", "push", root, "--nats-url", srv.URL())
	if code != exitFailure || stdout != "" {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	for _, want := range []string{"bad-name", `name "other-name" differs from its folder name "folder-name"`,
		"leaves the skill folder", "more than 1000 files", "over the limit of 8388608", "nothing was published"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	code, stdout, _ = runMain(t, "skills", "ls", "--nats-url", srv.URL())
	if code != 0 || stdout != "" {
		t.Fatalf("something was published: exit %d\n%s", code, stdout)
	}
}

// TestSkillsPushAcceptsWhatValidateAccepts: push refuses what validate
// calls an error, with validate's very lines, and publishes what it
// accepts, at the Agent Skills spec's limits included.
func TestSkillsPushAcceptsWhatValidateAccepts(t *testing.T) {
	srv := natstest.Start(t, natstest.WithTCP())
	base := t.TempDir()
	dir := func(name string, files ...string) string {
		for i := 0; i+1 < len(files); i += 2 {
			writeFile(t, filepath.Join(base, name), files[i], files[i+1])
		}
		return filepath.Join(base, name)
	}
	refused := []string{
		dir("folder-name", "SKILL.md", skillMD("B.", "name: other-name", "description: Differs.")),
		dir("long-desc", "SKILL.md", skillMD("B.", "name: long-desc", "description: "+strings.Repeat("d", 1025))),
		dir("long-compat", "SKILL.md", skillMD("B.", "name: long-compat", "description: d", "compatibility: "+strings.Repeat("c", 501))),
		dir("upper", "Skill.md", skillMD("B.", "name: upper", "description: Wrong case.")),
		dir("lower", "skill.md", skillMD("B.", "name: lower", "description: Wrong case."), "scripts/run.sh", "echo\n"),
		filepath.Join(dir("flat", "skill.md", skillMD("B.", "name: skill", "description: Wrong case.")), "skill.md"),
		dir("bare", "README.md", "# No SKILL.md here\n"),
		dir("root", "ok-skill/SKILL.md", skillMD("B.", "name: ok-skill", "description: Fine."),
			"bad-skill/SKILL.md", skillMD("B.", "name: bad", "description: Differs.")),
	}
	errorLines := func(out string) []string {
		var lines []string
		for _, l := range strings.Split(out, "\n") {
			if strings.Contains(l, ": error: ") {
				lines = append(lines, l)
			}
		}
		return lines
	}
	for _, p := range refused {
		code, vout, _ := runMain(t, "validate", p)
		verrs := errorLines(vout)
		if code != exitFailure || len(verrs) == 0 {
			t.Errorf("validate %s: exit %d:\n%s", p, code, vout)
		}
		code, stdout, stderr := runMain(t, "skills", "push", p, "--nats-url", srv.URL())
		if code != exitFailure || stdout != "" || !strings.Contains(stderr, "nothing was published") {
			t.Errorf("push %s: exit %d\nstdout:\n%s\nstderr:\n%s", p, code, stdout, stderr)
		}
		if perrs := errorLines(stderr); strings.Join(perrs, "\n") != strings.Join(verrs, "\n") {
			t.Errorf("push %s refuses with\n%s\nvalidate with\n%s", p, strings.Join(perrs, "\n"), strings.Join(verrs, "\n"))
		}
	}
	if code, stdout, _ := runMain(t, "skills", "ls", "--nats-url", srv.URL()); code != 0 || stdout != "" {
		t.Fatalf("something was published: exit %d\n%s", code, stdout)
	}

	edge := dir("edge", "SKILL.md", skillMD("B.", "name: edge", "description: "+strings.Repeat("d", 1024), "compatibility: "+strings.Repeat("c", 500)))
	if code, stdout, _ := runMain(t, "validate", edge); code != exitOK {
		t.Errorf("validate at the limits: exit %d\n%s", code, stdout)
	}
	if code, stdout, stderr := runMain(t, "skills", "push", edge, "--nats-url", srv.URL()); code != exitOK || !strings.HasPrefix(stdout, "added edge rev 1 ") {
		t.Errorf("push at the limits: exit %d\n%s%s", code, stdout, stderr)
	}
}

// TestSkillsGC runs skills gc the way an operator does: the old version
// of an updated skill is kept while it is young, listed by a dry run,
// removed by gc, and the current version is still fetched.
func TestSkillsGC(t *testing.T) {
	srv := natstest.Start(t, natstest.WithTCP())
	nats := []string{"--nats-url", srv.URL(), "--skill-store-history", "1"}
	run := func(want int, args ...string) (string, string) {
		t.Helper()
		code, stdout, stderr := runMain(t, append(append([]string{"skills"}, args...), nats...)...)
		if code != want {
			t.Fatalf("skills %v: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", args, code, want, stdout, stderr)
		}
		return stdout, stderr
	}
	root := t.TempDir()
	writeFile(t, root, "a-skill/SKILL.md", skillMD("Version one.", "name: a-skill", "description: A skill."))
	writeFile(t, root, "b-skill.md", skillMD("Flat.", "name: b-skill", "description: B skill."))
	run(0, "push", root)
	writeFile(t, root, "a-skill/SKILL.md", skillMD("Version two.", "name: a-skill", "description: A skill."))
	run(0, "push", root)

	var transcript strings.Builder
	for _, args := range [][]string{
		{"gc"},                                // v1's object is unreferenced but young
		{"gc", "--dry-run", "--min-age", "0"}, // listed, not removed
		{"gc", "--min-age", "0"},              // removed
		{"gc", "--min-age", "0"},              // nothing left to remove
	} {
		stdout, stderr := run(0, args...)
		fmt.Fprintf(&transcript, "$ skillstream skills %s\n%s%s", strings.Join(args, " "), stdout, stderr)
	}
	golden(t, "skills_gc.golden", transcript.String())

	dest := t.TempDir()
	t.Cleanup(func() { makeWritable(dest) })
	run(0, "get", "a-skill", "--out", dest)
	if data, err := os.ReadFile(filepath.Join(dest, "a-skill", "SKILL.md")); err != nil || !strings.Contains(string(data), "Version two.") {
		t.Fatalf("get a-skill after gc: %q, %v", data, err)
	}

	// An index entry gc cannot read stops it: nothing removed, exit 1.
	writeFile(t, root, "a-skill/SKILL.md", skillMD("Version three.", "name: a-skill", "description: A skill."))
	run(0, "push", root)
	kv, err := srv.JS.KeyValue(context.Background(), "SKILLS")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(context.Background(), "global.odd-skill", []byte(`{"name":"odd-skill"}`)); err != nil {
		t.Fatal(err)
	}
	stdout, stderr := run(1, "gc", "--min-age", "0")
	if stdout != "" || !strings.Contains(stderr, "cannot read global.odd-skill at store revision ") || !strings.Contains(stderr, "nothing was removed") {
		t.Fatalf("gc with a malformed entry:\nstdout:\n%s\nstderr:\n%s", stdout, stderr)
	}
	if err := kv.Purge(context.Background(), "global.odd-skill"); err != nil {
		t.Fatal(err)
	}
	if stdout, _ := run(0, "gc", "--min-age", "0"); !strings.HasPrefix(stdout, "removed ") || !strings.Contains(stdout, ", removed 1 (") {
		t.Fatalf("gc once the entry is purged:\n%s", stdout)
	}

	for _, args := range [][]string{
		{"gc", "extra"}, {"gc", "--scope", "global"}, {"gc", "--min-age", "-1s"}, {"ls", "--dry-run"}, {"ls", "--min-age", "0"},
	} {
		run(2, args...)
	}
	code, stdout, stderr := runMain(t, "skills", "gc", "--nats-url", "nats://"+quietAddr(t))
	if code != exitFailure || stdout != "" || !strings.Contains(stderr, "skillstream skills: connect to nats://") {
		t.Fatalf("gc without a server: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
}
