package agentskills_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
	"github.com/skillstream/skillstream/providers/bundled"
)

func TestSameNameInEveryRoot(t *testing.T) {
	base := t.TempDir()
	repo := filepath.Join(base, "repo")
	mkdir(t, filepath.Join(repo, ".git"))
	custom := filepath.Join(base, "custom")
	user := filepath.Join(base, "user")
	files := map[string]string{
		filepath.Join(repo, ".agents/skills/same/SKILL.md"): "project",
		filepath.Join(repo, ".claude/skills/same/SKILL.md"): "claude",
		filepath.Join(custom, "same/SKILL.md"):              "custom",
		filepath.Join(user, "same/SKILL.md"):                "user",
	}
	for path, desc := range files {
		write(t, path, skillText("same", desc, "body from "+desc))
	}
	write(t, filepath.Join(user, "only-user.md"), skillText("only-user", "u", ""))

	p := newProvider(t, agentskills.Config{
		ProjectDirs: []string{".agents/skills", ".claude/skills"},
		CustomDirs:  []string{custom},
		UserDir:     user,
		NoWatch:     true, // every List validates by stat; watching is tested separately
	})
	b, err := bundled.New(bundled.WithFS(fstest.MapFS{
		"same/SKILL.md": {Data: []byte(skillText("same", "bundled", "bundled body"))},
	}))
	if err != nil {
		t.Fatal(err)
	}
	r := providers.NewRegistry([]providers.Provider{b, p}) // bundled first: rank, not order, must decide
	t.Cleanup(func() { _ = r.Close() })

	ctx := context.Background()
	rep := r.Inspect(ctx, catalog.At(repo))
	if !rep.Snapshot.Complete {
		t.Fatalf("incomplete: %v", rep.Errors)
	}
	if got := summaries(rep.Snapshot); !slices.Equal(got, []string{"only-user=u", "same=project"}) {
		t.Fatalf("snapshot = %v", got)
	}
	var shadowed []string
	for _, s := range rep.Shadowed {
		if s.By.Description != "project" {
			t.Errorf("%v shadowed by %v, want by project", s.Candidate.Description, s.By.Description)
		}
		shadowed = append(shadowed, s.Candidate.Description+"@"+s.Candidate.Source+"/"+s.Candidate.Provider)
	}
	want := []string{"claude@project/agentskills", "custom@custom/agentskills", "user@user/agentskills", "bundled@bundled/bundled"}
	if !slices.Equal(shadowed, want) {
		t.Errorf("shadowed = %v, want %v (rank order)", shadowed, want)
	}
	sum := rep.Snapshot.Skills[1]
	if sum.Source != catalog.SourceProject || sum.ResourceBase == nil ||
		sum.ResourceBase.Path != filepath.Join(repo, ".agents/skills/same") || sum.ResourceBase.Kind != catalog.ResourceDirectory {
		t.Errorf("winner = %+v %+v", sum, sum.ResourceBase)
	}

	// Remove winners one by one: the next root in rank order takes over.
	order := []struct{ dir, desc, body string }{
		{filepath.Join(repo, ".agents/skills/same"), "claude", "body from claude"},
		{filepath.Join(repo, ".claude/skills/same"), "custom", "body from custom"},
		{filepath.Join(custom, "same"), "user", "body from user"},
		{filepath.Join(user, "same"), "bundled", "bundled body"},
	}
	for _, step := range order {
		if err := os.RemoveAll(step.dir); err != nil {
			t.Fatal(err)
		}
		sk, err := r.Load(ctx, "same", catalog.At(repo))
		if err != nil {
			t.Fatalf("Load after removing %s: %v", step.dir, err)
		}
		if sk.Description != step.desc || sk.Content != step.body {
			t.Errorf("after removing %s: got %q / %q, want %q / %q", step.dir, sk.Description, sk.Content, step.desc, step.body)
		}
	}
}

func TestProjectRoot(t *testing.T) {
	base := t.TempDir()
	repo := filepath.Join(base, "repo")
	mkdir(t, filepath.Join(repo, ".git"))
	sub := filepath.Join(repo, "sub", "deeper")
	mkdir(t, sub)
	write(t, filepath.Join(repo, ".agents/skills/repo-skill/SKILL.md"), skillText("repo-skill", "r", ""))
	// A skills folder in a subfolder of the repo is not a project root.
	write(t, filepath.Join(repo, "sub/.agents/skills/sub-skill/SKILL.md"), skillText("sub-skill", "s", ""))
	// Outside any repo, the working directory itself is the project root.
	loose := filepath.Join(base, "loose", "dir")
	write(t, filepath.Join(loose, ".agents/skills/loose-skill.md"), skillText("loose-skill", "l", ""))
	write(t, filepath.Join(base, "loose/.agents/skills/parent-skill.md"), skillText("parent-skill", "p", ""))
	// A .git file (worktree) counts too.
	wt := filepath.Join(base, "worktree")
	write(t, filepath.Join(wt, ".git"), "gitdir: elsewhere\n")
	write(t, filepath.Join(wt, ".agents/skills/wt.md"), skillText("wt", "w", ""))

	p := newProvider(t, agentskills.Config{})
	for _, tt := range []struct {
		cwd  string
		want []string
	}{
		{repo, []string{"repo-skill=r@project"}},
		{sub, []string{"repo-skill=r@project"}},
		{loose, []string{"loose-skill=l@project"}},
		{filepath.Join(wt, "a"), []string{"wt=w@project"}},
		{"", nil},
	} {
		if got := describe(list(t, p, tt.cwd)); !slices.Equal(got, tt.want) {
			t.Errorf("cwd %q: got %v, want %v", tt.cwd, got, tt.want)
		}
	}
	if root, _ := agentskills.ProjectRoot(sub); root != repo {
		t.Errorf("ProjectRoot(%s) = %s", sub, root)
	}
	if _, err := p.List(context.Background(), catalog.At("relative/dir")); err == nil || !strings.Contains(err.Error(), "not an absolute path") {
		t.Errorf("relative cwd: %v", err)
	}
}

func TestFlatFilesBesideDirectories(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "b-dir/SKILL.md"), skillText("b-dir", "dir skill", "dir body"))
	write(t, filepath.Join(root, "b-dir/notes.md"), "not a skill, just a resource")
	write(t, filepath.Join(root, "a-flat.md"), skillText("a-flat", "flat skill", "flat body"))
	write(t, filepath.Join(root, "README.txt"), "ignored")
	write(t, filepath.Join(root, "empty-dir/other.txt"), "a directory without SKILL.md")
	write(t, filepath.Join(root, "outer/inner/SKILL.md"), skillText("too-deep", "two levels", "")) // one level only
	write(t, filepath.Join(root, ".hidden/SKILL.md"), skillText("hidden", "h", ""))
	write(t, filepath.Join(root, ".hidden.md"), skillText("hidden-flat", "h", ""))

	p := newProvider(t, agentskills.Config{CustomDirs: []string{root}, NoUserDir: true})
	cs := list(t, p, "")
	if got := describe(cs); !slices.Equal(got, []string{"a-flat=flat skill@custom", "b-dir=dir skill@custom"}) {
		t.Fatalf("got %v", got)
	}
	if rb := cs[0].ResourceBase; rb.Path != root {
		t.Errorf("flat skill resource base = %q, want the folder %q", rb.Path, root)
	}
	if rb := cs[1].ResourceBase; rb.Path != filepath.Join(root, "b-dir") {
		t.Errorf("dir skill resource base = %q", rb.Path)
	}
	if cs[0].Rank != providers.RankCustom || cs[0].Provider != "agentskills" {
		t.Errorf("candidate = %+v", cs[0])
	}
	sk, err := p.Load(context.Background(), "a-flat", catalog.At(""))
	if err != nil || sk.Content != "flat body" || sk.Source != catalog.SourceCustom {
		t.Fatalf("Load = %+v, %v", sk, err)
	}
	if d := diagnostics(t, p, ""); len(d) != 0 {
		t.Errorf("unexpected diagnostics %v", d)
	}
}

func TestInvalidFileZoo(t *testing.T) {
	root := t.TempDir()
	zoo := map[string]struct{ content, reason string }{
		"bad-name/SKILL.md":    {"---\nname: Bad_Name\ndescription: d\n---\n", `name "Bad_Name" is invalid`},
		"no-desc/SKILL.md":     {"---\nname: no-desc\n---\n", "description is missing"},
		"no-front/SKILL.md":    {"# hello\n", "no frontmatter"},
		"unclosed/SKILL.md":    {"---\nname: unclosed\ndescription: d\n", "unclosed frontmatter"},
		"non-mapping/SKILL.md": {"---\n- a\n---\n", "not a mapping"},
		"bad-yaml/SKILL.md":    {"---\nname: [x\n---\n", "not valid YAML"},
		"maybe/SKILL.md":       {"---\nname: maybe\ndescription: d\ndisable-model-invocation: maybe\n---\n", `not "maybe"`},
		"legacy-1/SKILL.md":    {"---\nname: legacy-1\ndescription: d\ndisableModelInvocation: true\n---\n", "legacy key"},
		"legacy-2/SKILL.md":    {"---\nname: legacy-2\ndescription: d\nmodelInvocable: true\n---\n", "legacy key"},
		"legacy-3/SKILL.md":    {"---\nname: legacy-3\ndescription: d\nuserInvocable: true\n---\n", "legacy key"},
		"flat-invalid.md":      {"---\nname: flat-invalid\n", "unclosed frontmatter"},
		// A flat file without frontmatter is not meant as a skill: neither
		// a skill nor a diagnostic.
		"README.md":            {"# Our skills\n\nSee each folder.\n", ""},
		"zz-good/SKILL.md":     {skillText("good", "the only good one", "good body"), ""},
		"aa-also-good-flat.md": {skillText("flat-good", "flat and fine", ""), ""},
	}
	for rel, f := range zoo {
		write(t, filepath.Join(root, rel), f.content)
	}
	p := newProvider(t, agentskills.Config{CustomDirs: []string{root}, NoUserDir: true})
	r := providers.NewRegistry([]providers.Provider{p})
	t.Cleanup(func() { _ = r.Close() })
	s, err := r.Snapshot(context.Background(), catalog.At(""))
	if err != nil || !s.Complete {
		t.Fatalf("snapshot err=%v complete=%v: invalid files must not make it incomplete", err, s.Complete)
	}
	if got := summaries(s); !slices.Equal(got, []string{"flat-good=flat and fine", "good=the only good one"}) {
		t.Fatalf("snapshot = %v", got)
	}
	diags := diagnostics(t, p, "")
	for rel, f := range zoo {
		path := filepath.Join(root, rel)
		if f.reason == "" {
			if r, ok := diags[path]; ok {
				t.Errorf("good file %s has diagnostic %q", rel, r)
			}
			continue
		}
		if !strings.Contains(diags[path], f.reason) {
			t.Errorf("%s: diagnostic %q, want it to contain %q", rel, diags[path], f.reason)
		}
	}
	if len(diags) != len(zoo)-3 {
		t.Errorf("%d diagnostics, want %d: %v", len(diags), len(zoo)-3, diags)
	}
	// The same through the exported Scan, as a validate command uses it.
	sums, sdiags, err := agentskills.Scan(context.Background(), root, true)
	if err != nil || len(sums) != 2 || len(sdiags) != len(zoo)-3 {
		t.Errorf("Scan = %d skills, %d diagnostics, %v", len(sums), len(sdiags), err)
	}
	if l := agentskills.ScanFolder(context.Background(), root, true); !slices.Equal(l.Ignored, []string{filepath.Join(root, "README.md")}) {
		t.Errorf("ScanFolder ignored %q, want the README.md", l.Ignored)
	}
	rep := r.Inspect(context.Background(), catalog.At(""))
	if len(rep.Diagnostics) != len(zoo)-3 {
		t.Errorf("Inspect diagnostics = %d, want %d", len(rep.Diagnostics), len(zoo)-3)
	}
}

func TestSymlinks(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	write(t, filepath.Join(outside, "linked-dir/SKILL.md"), skillText("linked-dir", "via a linked directory", "ld body"))
	write(t, filepath.Join(outside, "file.md"), skillText("linked-file", "via a linked file", "lf body"))
	write(t, filepath.Join(outside, "skill-md-target.md"), skillText("linked-skill-md", "SKILL.md is a link", ""))
	write(t, filepath.Join(root, "plain/SKILL.md"), skillText("plain", "plain", ""))
	mkdir(t, root)
	symlink(t, filepath.Join(outside, "linked-dir"), filepath.Join(root, "linked-dir"))
	symlink(t, filepath.Join(outside, "file.md"), filepath.Join(root, "linked-file.md"))
	mkdir(t, filepath.Join(root, "inner"))
	symlink(t, filepath.Join(outside, "skill-md-target.md"), filepath.Join(root, "inner", "SKILL.md"))
	symlink(t, filepath.Join(base, "nowhere"), filepath.Join(root, "dangling.md"))
	symlink(t, filepath.Join(base, "nowhere"), filepath.Join(root, "dangling-dir"))
	symlink(t, "/dev/null", filepath.Join(root, "devnull.md"))
	mkdir(t, filepath.Join(root, "null-skill"))
	symlink(t, "/dev/null", filepath.Join(root, "null-skill", "SKILL.md"))
	symlink(t, filepath.Join(root, "loop.md"), filepath.Join(root, "loop.md"))

	t.Run("followed", func(t *testing.T) {
		p := newProvider(t, agentskills.Config{CustomDirs: []string{root}, NoUserDir: true})
		want := []string{
			"linked-skill-md=SKILL.md is a link@custom",
			"linked-dir=via a linked directory@custom",
			"linked-file=via a linked file@custom",
			"plain=plain@custom",
		}
		if got := describe(list(t, p, "")); !slices.Equal(got, want) {
			t.Fatalf("got %v, want %v", got, want)
		}
		sk, err := p.Load(context.Background(), "linked-dir", catalog.At(""))
		if err != nil || sk.Content != "ld body" || sk.ResourceBase.Path != filepath.Join(root, "linked-dir") {
			t.Errorf("Load linked-dir = %+v, %v", sk, err)
		}
		diags := diagnostics(t, p, "")
		for rel, reason := range map[string]string{
			"dangling.md":         "dangling symbolic link",
			"dangling-dir":        "dangling symbolic link",
			"devnull.md":          "not a regular file",
			"null-skill/SKILL.md": "not a regular file",
			"loop.md":             "symbolic link loop",
		} {
			if got := diags[filepath.Join(root, rel)]; got != reason {
				t.Errorf("%s: diagnostic %q, want %q", rel, got, reason)
			}
		}
	})
	t.Run("not followed", func(t *testing.T) {
		p := newProvider(t, agentskills.Config{CustomDirs: []string{root}, NoUserDir: true, NoFollowSymlinks: true})
		if got := describe(list(t, p, "")); !slices.Equal(got, []string{"plain=plain@custom"}) {
			t.Fatalf("got %v", got)
		}
		diags := diagnostics(t, p, "")
		for _, rel := range []string{"linked-dir", "linked-file.md", "inner/SKILL.md", "devnull.md"} {
			if !strings.Contains(diags[filepath.Join(root, rel)], "following links is disabled") {
				t.Errorf("%s: diagnostic %q", rel, diags[filepath.Join(root, rel)])
			}
		}
	})
}

func TestSkillFileThatIsADirectoryIsIncomplete(t *testing.T) {
	root := t.TempDir()
	mkdir(t, filepath.Join(root, "weird/SKILL.md"))
	write(t, filepath.Join(root, "fine/SKILL.md"), skillText("fine", "fine", ""))
	p := newProvider(t, agentskills.Config{CustomDirs: []string{root}, NoUserDir: true})
	cs, err := p.List(context.Background(), catalog.At(""))
	if !errors.Is(err, syscall.EISDIR) || !strings.Contains(err.Error(), filepath.Join(root, "weird/SKILL.md")) {
		t.Fatalf("err = %v, want EISDIR naming the file", err)
	}
	if got := describe(cs); !slices.Equal(got, []string{"fine=fine@custom"}) {
		t.Errorf("siblings hidden by the error: %v", got)
	}
	r := providers.NewRegistry([]providers.Provider{p})
	t.Cleanup(func() { _ = r.Close() })
	s, err := r.Snapshot(context.Background(), catalog.At(""))
	if err != nil || s.Complete || len(s.Skills) != 1 {
		t.Fatalf("snapshot = %v complete=%v err=%v, want incomplete with fine", summaries(s), s.Complete, err)
	}
	// Fixing it makes the next snapshot complete: errors are never cached.
	if err := os.Remove(filepath.Join(root, "weird/SKILL.md")); err != nil {
		t.Fatal(err)
	}
	snapshotIs(t, r, "", "fine=fine")
}

func TestUnreadableRootIsIncomplete(t *testing.T) {
	if os.Geteuid() == 0 {
		t.Skip("root reads any directory")
	}
	root := t.TempDir()
	write(t, filepath.Join(root, "x/SKILL.md"), skillText("x", "x", ""))
	if err := os.Chmod(root, 0o000); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.Chmod(root, 0o755) })
	p := newProvider(t, agentskills.Config{CustomDirs: []string{root}, NoUserDir: true})
	if _, err := p.List(context.Background(), catalog.At("")); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("err = %v, want permission error", err)
	}
}

func TestRootThatIsAFile(t *testing.T) {
	base := t.TempDir()
	write(t, filepath.Join(base, "file-root"), "x")
	p := newProvider(t, agentskills.Config{CustomDirs: []string{filepath.Join(base, "file-root")}, NoUserDir: true})
	if cs := list(t, p, ""); len(cs) != 0 {
		t.Fatalf("got %v", describe(cs))
	}
	if d := diagnostics(t, p, ""); d[filepath.Join(base, "file-root")] != "not a directory" {
		t.Errorf("diagnostics = %v", d)
	}
}

func TestMissingRootsAreCompleteAndEmpty(t *testing.T) {
	base := t.TempDir()
	p := newProvider(t, agentskills.Config{
		CustomDirs: []string{filepath.Join(base, "no/such/dir")},
		UserDir:    filepath.Join(base, "no-user"),
	})
	cs, err := p.List(context.Background(), catalog.At(filepath.Join(base, "no-such-cwd")))
	if err != nil || len(cs) != 0 {
		t.Fatalf("List = %v, %v; want empty, no error", cs, err)
	}
}

func TestLoadSeesBodyEditWithoutCatalogChange(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "edit-me/SKILL.md")
	write(t, file, skillText("edit-me", "stable description", "first body"))
	p := newProvider(t, agentskills.Config{CustomDirs: []string{root}, NoUserDir: true})
	r := providers.NewRegistry([]providers.Provider{p})
	t.Cleanup(func() { _ = r.Close() })
	ctx := context.Background()
	before, err := r.Snapshot(ctx, catalog.At(""))
	if err != nil || !before.Complete {
		t.Fatal(err)
	}
	sk, err := r.Load(ctx, "edit-me", catalog.At(""))
	if err != nil || sk.Content != "first body" {
		t.Fatalf("Load = %q, %v", sk.Content, err)
	}
	write(t, file, skillText("edit-me", "stable description", "second body"))
	// No waiting: Load reads the file again.
	sk, err = r.Load(ctx, "edit-me", catalog.At(""))
	if err != nil || sk.Content != "second body" {
		t.Fatalf("Load after edit = %q, %v", sk.Content, err)
	}
	after, err := r.Snapshot(ctx, catalog.At(""))
	if err != nil || !slices.Equal(summaries(before), summaries(after)) {
		t.Fatalf("catalog changed on a body edit: %v -> %v", summaries(before), summaries(after))
	}
	// A file that turned invalid is either already gone from the listing
	// (the watcher saw the edit) or a readable provider error.
	write(t, file, "---\nname: edit-me\n---\n")
	_, err = r.Load(ctx, "edit-me", catalog.At(""))
	if !errors.Is(err, catalog.ErrNotFound) &&
		(err == nil || err.Error() != `read skill "edit-me": skill file is no longer valid: description is missing`) {
		t.Fatalf("Load of invalid file: %v", err)
	}
	// Deleted: not found.
	if err := os.Remove(file); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Load(ctx, "edit-me", catalog.At("")); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("Load of deleted file: %v", err)
	}
}

func TestConfigValidation(t *testing.T) {
	for _, dirs := range [][]string{{"/abs"}, {"../up"}, {""}, {"."}} {
		if _, err := agentskills.New(agentskills.Config{ProjectDirs: dirs, NoUserDir: true, NoWatch: true}); err == nil {
			t.Errorf("ProjectDirs %q accepted", dirs)
		}
	}
}

func TestNameNeverBecomesAPath(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	write(t, filepath.Join(base, "secret/SKILL.md"), skillText("secret", "outside the root", "secret body"))
	write(t, filepath.Join(root, "ok/SKILL.md"), skillText("ok", "ok", ""))
	p := newProvider(t, agentskills.Config{CustomDirs: []string{root}, NoUserDir: true})
	for _, name := range []string{"../secret", "secret", "../../etc/passwd", "ok/../../secret", ""} {
		if _, err := p.Load(context.Background(), name, catalog.At("")); !errors.Is(err, catalog.ErrNotFound) {
			t.Errorf("Load(%q) = %v, want ErrNotFound", name, err)
		}
	}
}

// TestLoadFallsToNextRootWhenWinnerVanishes: a deleted winner is replaced by
// the next root's skill of that name at once, even before the watcher
// reports the deletion.
func TestLoadFallsToNextRootWhenWinnerVanishes(t *testing.T) {
	base := t.TempDir()
	first, second := filepath.Join(base, "first"), filepath.Join(base, "second")
	write(t, filepath.Join(first, "x/SKILL.md"), skillText("x", "first", "first body"))
	write(t, filepath.Join(second, "x.md"), skillText("x", "second", "second body"))
	p := newProvider(t, agentskills.Config{CustomDirs: []string{first, second}, NoUserDir: true})
	r := providers.NewRegistry([]providers.Provider{p})
	t.Cleanup(func() { _ = r.Close() })
	ctx := context.Background()
	if sk, err := r.Load(ctx, "x", catalog.At("")); err != nil || sk.Content != "first body" {
		t.Fatalf("Load = %q, %v", sk.Content, err)
	}
	if err := os.RemoveAll(filepath.Join(first, "x")); err != nil {
		t.Fatal(err)
	}
	sk, err := r.Load(ctx, "x", catalog.At(""))
	if err != nil || sk.Content != "second body" || sk.ResourceBase.Path != second {
		t.Fatalf("Load after removing the winner = %+v, %v", sk, err)
	}
}
