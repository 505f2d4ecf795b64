package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers/agentskills"
	"github.com/skillstream/skillstream/providers/store"
)

// skillsOnly are the flags that make a preview read root alone.
func skillsOnly(root string) []string {
	return []string{"--no-bundled", "--no-skill-store", "--user-skills-dir=", "--skills-dir", root}
}

// TestValidateReadsAsServe: validate reads through the provider's own
// code, so a FIFO named SKILL.md, a SKILL.md linked to /dev/zero and an
// oversized file are refused with the provider's reasons (no hang, no
// unbounded read); its errors are the files serve drops and the skills
// serve serves though the Agent Skills spec refuses them (a description
// over 1024 characters).
func TestValidateReadsAsServe(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "good/SKILL.md", skillMD("ok", "name: good", "description: Fine."))
	writeFile(t, root, "README.md", "# Our skills\n\nOne folder per skill.\n")
	writeFile(t, root, "huge/SKILL.md", skillMD(strings.Repeat("x", agentskills.MaxFileSize), "name: huge", "description: Too big."))
	writeFile(t, root, "long/SKILL.md", skillMD("ok", "name: long", "description: "+strings.Repeat("d", 1100)))
	if err := os.MkdirAll(filepath.Join(root, "fifo"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(root, "fifo", "SKILL.md"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, "zero"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/dev/zero", filepath.Join(root, "zero", "SKILL.md")); err != nil {
		t.Fatal(err)
	}

	code, stdout, _ := runMain(t, "validate", root)
	if code != exitFailure {
		t.Errorf("exit %d, want %d:\n%s", code, exitFailure, stdout)
	}
	p := func(rel string) string { return filepath.Join(root, rel) }
	for _, want := range []string{
		p("fifo/SKILL.md") + ": error: not a regular file",
		p("zero/SKILL.md") + ": error: not a regular file",
		p("huge/SKILL.md") + fmt.Sprintf(": error: file is larger than %d bytes", agentskills.MaxFileSize),
		p("long/SKILL.md") + ": error: description is 1100 characters; the Agent Skills spec allows at most 1024",
		p("README.md") + ": ignored: no frontmatter: not a skill",
		"6 files checked, 1 valid skill: 4 errors, 1 warning, 1 ignored",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	// The same files one by one.
	for _, rel := range []string{"fifo", "zero/SKILL.md"} {
		if code, stdout, _ := runMain(t, "validate", p(rel)); code != exitFailure || !strings.Contains(stdout, "not a regular file") {
			t.Errorf("validate %s: exit %d:\n%s", rel, code, stdout)
		}
	}

	// serve (through catalog, which builds the registry as serve does)
	// drops exactly the files validate calls errors but the long
	// description, which it serves.
	_, out, _ := runMain(t, append([]string{"catalog", "--json", "--cwd", t.TempDir()}, skillsOnly(root)...)...)
	var v catalogView
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("catalog --json: %v\n%s", err, out)
	}
	var dropped, errs []string
	for _, d := range v.Diagnostics {
		dropped = append(dropped, d.Path)
	}
	for _, line := range strings.Split(stdout, "\n") {
		if path, _, ok := strings.Cut(line, ": error: "); ok {
			errs = append(errs, path)
		}
	}
	dropped = append(dropped, p("long/SKILL.md"))
	slices.Sort(dropped)
	slices.Sort(errs)
	if !slices.Equal(dropped, errs) {
		t.Errorf("serve drops %q, validate reports errors for %q", dropped, errs)
	}
	var served []string
	for _, s := range v.Skills {
		served = append(served, s.Name)
	}
	if !slices.Equal(served, []string{"good", "long"}) {
		t.Errorf("serve serves %q, want good and long", served)
	}
}

// TestValidateIgnoredOnly: a root holding only a README.md is not an error.
func TestValidateIgnoredOnly(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "README.md", "# nothing yet\n")
	writeFile(t, root, "one/SKILL.md", skillMD("ok", "name: one", "description: One."))
	code, stdout, _ := runMain(t, "validate", root)
	if code != exitOK || !strings.Contains(stdout, "README.md: ignored") {
		t.Errorf("exit %d:\n%s", code, stdout)
	}
}

// TestValidateNoFollowSymlinks: validate takes --no-follow-symlinks and
// then refuses a linked skills root as serve would.
func TestValidateNoFollowSymlinks(t *testing.T) {
	real := t.TempDir()
	writeFile(t, real, "one/SKILL.md", skillMD("ok", "name: one", "description: One."))
	link := filepath.Join(t.TempDir(), "skills")
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	if code, stdout, _ := runMain(t, "validate", link); code != exitOK {
		t.Errorf("following: exit %d:\n%s", code, stdout)
	}
	code, stdout, _ := runMain(t, "validate", "--no-follow-symlinks", link)
	if code != exitFailure || !strings.Contains(stdout, link+": error: symbolic link skipped") {
		t.Errorf("not following: exit %d:\n%s", code, stdout)
	}
}

// TestLoadSaysWhyUnknown: load of a name whose file was dropped names the
// file and the reason on stderr.
func TestLoadSaysWhyUnknown(t *testing.T) {
	root := t.TempDir()
	bad := writeFile(t, root, "broken/SKILL.md", skillMD("x", "name: broken", "description: Bad flag.", "user-invocable: perhaps"))
	writeFile(t, root, "other.md", skillMD("x", "name: other", "description: Fine."))
	code, stdout, stderr := runMain(t, append([]string{"load", "broken", "--cwd", t.TempDir()}, skillsOnly(root)...)...)
	if code != exitFailure || !strings.HasPrefix(stdout, "Error:") {
		t.Errorf("exit %d, stdout %q", code, stdout)
	}
	if want := "dropped: " + bad + ": user-invocable must be true or false"; !strings.Contains(stderr, want) {
		t.Errorf("stderr %q lacks %q", stderr, want)
	}
	// An unknown name with no file for it: nothing on stderr.
	_, _, stderr = runMain(t, append([]string{"load", "nothing-here", "--cwd", t.TempDir()}, skillsOnly(root)...)...)
	if stderr != "" {
		t.Errorf("stderr %q for a name nobody defines", stderr)
	}
}

// TestCatalogReportsPolledFolders: a skills folder over
// --max-watches-per-skills-dir is named in catalog's report.
func TestCatalogReportsPolledFolders(t *testing.T) {
	root := t.TempDir()
	for _, n := range []string{"a", "b", "c"} {
		writeFile(t, root, n+"/SKILL.md", skillMD("ok", "name: "+n, "description: "+n+"."))
	}
	args := append([]string{"catalog", "--cwd", t.TempDir()}, skillsOnly(root)...)
	_, _, stderr := runMain(t, args...)
	if strings.Contains(stderr, "not watched file by file") {
		t.Errorf("under the default bound: %s", stderr)
	}
	code, _, stderr := runMain(t, append(args, "--max-watches-per-skills-dir", "2")...)
	if code != exitOK || !strings.Contains(stderr, "not watched file by file: "+root+" needs 3 watches") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
	if code, _, stderr := runMain(t, append(args, "--max-watches-per-skills-dir", "0")...); code != exitUsage {
		t.Errorf("bound 0: exit %d, stderr %s", code, stderr)
	}
}

// TestServeLogsDroppedFiles: the registry serve builds logs each dropped
// file, with path and reason, at warning level.
func TestServeLogsDroppedFiles(t *testing.T) {
	root := t.TempDir()
	bad := writeFile(t, root, "bad/SKILL.md", "---\nname: bad\n---\n")
	var logs bytes.Buffer
	c := Config{SkillsDirs: []string{root}, NoBundled: true}
	reg, err := c.registry(slog.New(slog.NewTextHandler(&logs, nil)), true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Snapshot(context.Background(), catalog.At("")); err != nil {
		t.Fatal(err)
	}
	if err := reg.Close(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"level=WARN", "skill file dropped", "path=" + bad, "description is missing"} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, logs.String())
		}
	}
}

// TestPushSkipsIgnoredFiles: a README.md beside the skills is not a skill
// for `skills push` either (validate lists it as ignored).
func TestPushSkipsIgnoredFiles(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "README.md", "# team skills\n")
	writeFile(t, root, "one/SKILL.md", skillMD("ok", "name: one", "description: One."))
	var stderr bytes.Buffer
	a := &app{stdout: &bytes.Buffer{}, stderr: &stderr}
	var c Config
	locals, err := a.readForPush([]string{root}, c.storeConfig(), store.ReadOptions{})
	if err != nil || len(locals) != 1 {
		t.Errorf("readForPush = %d skills, %v; stderr:\n%s", len(locals), err, stderr.String())
	}
}

// validate warns about what a skill folder holds besides the skill:
// version control folders, other hidden files, secret-looking files
// (hidden or not); warnings only, exit status 0.
func TestValidateWarnsAboutHiddenAndSecretFiles(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "repo/SKILL.md", skillMD("Body.", "name: repo", "description: In git."))
	for _, rel := range []string{"repo/.git/config", "repo/.env", "repo/.cache/x", "repo/keys/server.pem", "repo/id_rsa", "repo/docs/guide.md"} {
		writeFile(t, root, rel, "x")
	}
	code, stdout, _ := runMain(t, "validate", root)
	if code != 0 {
		t.Errorf("exit %d, want 0:\n%s", code, stdout)
	}
	p := func(rel string) string { return filepath.Join(root, rel) }
	for _, want := range []string{
		p("repo/.git") + ": warning: version control folder: skills push never publishes it",
		p("repo/.env") + ": warning: hidden, and looks like a secret",
		p("repo/.cache") + ": warning: hidden: skills push leaves it out (--include-hidden publishes it)",
		p("repo/keys/server.pem") + ": warning: looks like a secret",
		p("repo/id_rsa") + ": warning: looks like a secret",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "guide.md") || strings.Contains(stdout, ".git/config") {
		t.Errorf("warned about an ordinary file or inside .git:\n%s", stdout)
	}
}

// skills push of a root refuses a skill folder that is a link leading out
// of the root, naming it, unless --follow-links-out; nothing is published.
func TestPushRefusesRootLinkOut(t *testing.T) {
	root, elsewhere := t.TempDir(), t.TempDir()
	writeFile(t, root, "one/SKILL.md", skillMD("ok", "name: one", "description: One."))
	writeFile(t, elsewhere, "far/SKILL.md", skillMD("ok", "name: far", "description: Far."))
	if err := os.Symlink(filepath.Join(elsewhere, "far"), filepath.Join(root, "far")); err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	a := &app{stdout: &bytes.Buffer{}, stderr: &stderr}
	var c Config
	if _, err := a.readForPush([]string{root}, c.storeConfig(), store.ReadOptions{}); err == nil ||
		!strings.Contains(stderr.String(), filepath.Join(root, "far")) || !strings.Contains(stderr.String(), "outside the pushed root") ||
		!strings.Contains(stderr.String(), "nothing was published") {
		t.Fatalf("readForPush = %v; stderr:\n%s", err, stderr.String())
	}
	locals, err := a.readForPush([]string{root}, c.storeConfig(), store.ReadOptions{LinksOut: true})
	if err != nil || len(locals) != 2 {
		t.Fatalf("with --follow-links-out: %d skills, %v", len(locals), err)
	}
}

// TestWatchedProjectsBound: --watched-projects bounds the project roots
// the folder provider tracks at once (the least recently used dropped),
// and 0 is refused.
func TestWatchedProjectsBound(t *testing.T) {
	var cwds []string
	for i := range 3 {
		root := t.TempDir()
		writeFile(t, root, ".git/HEAD", "ref: refs/heads/main\n")
		writeFile(t, root, fmt.Sprintf(".agents/skills/p%d/SKILL.md", i), skillMD("ok", fmt.Sprintf("name: p%d", i), "description: Project skill."))
		cwds = append(cwds, root)
	}
	for _, bound := range []int{2, 3} {
		c := &Config{NoBundled: true, NoSkillStore: true, MaxWatchesPerDir: 4096, WatchedProjects: bound}
		reg, fs, err := c.skillSources(context.Background(), nil, true, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, cwd := range cwds {
			if s, err := reg.Snapshot(context.Background(), catalog.At(cwd)); err != nil || len(s.Skills) != 1 {
				t.Fatalf("snapshot of %s: %+v, %v", cwd, s, err)
			}
		}
		if n := fs.Stats().Projects; n != bound {
			t.Errorf("--watched-projects %d: %d project roots tracked", bound, n)
		}
		reg.Close()
	}
	code, _, stderr := runMain(t, "catalog", "--cwd", cwds[0], "--no-bundled", "--user-skills-dir=", "--watched-projects", "0")
	if code != exitUsage || !strings.Contains(stderr, "--watched-projects 0: must be at least 1") {
		t.Errorf("bound 0: exit %d, stderr %s", code, stderr)
	}
}
