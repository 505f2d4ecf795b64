package agentskills_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers/agentskills"
)

// TestProjectRootOfLongPath: the walk up a 10,000-component path (what a
// trigger may no longer send, but the provider's own callers could) ends
// at the nearest .git, or at "/" with the cwd as its own root, and gives
// the same answers as a walk with filepath.Dir.
func TestProjectRootOfLongPath(t *testing.T) {
	repo := t.TempDir()
	mkdir(t, filepath.Join(repo, ".git"))
	deep := repo + strings.Repeat("/a", 10000)
	if root, err := agentskills.ProjectRoot(deep); err != nil || root != repo {
		t.Errorf("ProjectRoot(10,000 components below a repo) = %q, %v; want %q", root, err, repo)
	}
	nowhere := "/no-such-folder" + strings.Repeat("/a", 10000)
	if root, err := agentskills.ProjectRoot(nowhere); err != nil || root != nowhere {
		t.Errorf("ProjectRoot(10,000 components, no repo) = %q…, %v; want the cwd", root[:min(len(root), 40)], err)
	}
	for _, cwd := range []string{"/", repo, repo + "/x/y", "/no-such-folder", "/a/./b/../c//d/"} {
		root, err := agentskills.ProjectRoot(cwd)
		want := filepath.Clean(cwd)
		if strings.HasPrefix(want, repo) {
			want = repo
		}
		if err != nil || root != want {
			t.Errorf("ProjectRoot(%q) = %q, %v; want %q", cwd, root, err, want)
		}
	}
	_, err := agentskills.ProjectRoot("relative" + strings.Repeat("/a", 10000))
	if err == nil || len(err.Error()) > 400 || !strings.Contains(err.Error(), "(20008 bytes)") {
		t.Errorf("relative cwd: %.200v, want a short error with the length", err)
	}
}

// TestListHonoursCancellation: a List or Load whose context has ended
// stops before walking or reading anything and says why; the provider
// remembers nothing for it and answers the next call in full.
func TestListHonoursCancellation(t *testing.T) {
	repo := t.TempDir()
	mkdir(t, filepath.Join(repo, ".git"))
	write(t, filepath.Join(repo, ".agents/skills/alpha/SKILL.md"), skillText("alpha", "First.", ""))
	p := newProvider(t, agentskills.Config{NoUserDir: true})
	deep := repo + strings.Repeat("/a", 200)

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	walks := p.Stats().RootWalks
	if _, err := p.List(ctx, catalog.At(deep)); !errors.Is(err, context.Canceled) {
		t.Errorf("List with an ended context: %v, want context.Canceled", err)
	}
	if _, err := p.Load(ctx, "alpha", catalog.At(deep)); !errors.Is(err, context.Canceled) {
		t.Errorf("Load with an ended context: %v, want context.Canceled", err)
	}
	if got := p.Stats().RootWalks - walks; got != 0 {
		t.Errorf("%d walks for ended contexts, want none", got)
	}
	if got := describe(list(t, p, deep)); strings.Join(got, ",") != "alpha=First.@project" {
		t.Errorf("List afterwards = %v", got)
	}
}
