package agentskills_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
)

// TestProjectRootRemembered: once the way from a working directory to its
// root is watched, Changes and List find the root without walking.
func TestProjectRootRemembered(t *testing.T) {
	repo := t.TempDir()
	mkdir(t, filepath.Join(repo, ".git"))
	sub := filepath.Join(repo, "sub", "deeper")
	mkdir(t, sub)
	write(t, filepath.Join(repo, ".agents/skills/r/SKILL.md"), skillText("r", "repo", ""))
	p, r := newWatchedRegistry(t, agentskills.Config{NoUserDir: true})
	snapshotIs(t, r, sub, "r=repo")
	walks := p.Stats().RootWalks
	for range 20 {
		if providers.Closed(p.Changes(catalog.At(sub))) {
			t.Fatal("Changes returned a closed channel while watching")
		}
		snapshotIs(t, r, sub, "r=repo")
		list(t, p, sub)
	}
	if got := p.Stats().RootWalks; got != walks {
		t.Errorf("%d more walks for a remembered working directory, want 0", got-walks)
	}
	// Without a watcher every call walks, as before.
	nw := newProvider(t, agentskills.Config{NoUserDir: true, NoWatch: true})
	list(t, nw, sub)
	list(t, nw, sub)
	if got := nw.Stats().RootWalks; got != 2 {
		t.Errorf("unwatched provider walked %d times for two lists, want 2", got)
	}
}

// TestProjectRootFollowsGit: a .git appearing or vanishing on the way
// from a working directory to its remembered root moves the root, and the
// registry's snapshot follows, with no restart.
func TestProjectRootFollowsGit(t *testing.T) {
	base := t.TempDir()
	repo := filepath.Join(base, "repo")
	mkdir(t, filepath.Join(repo, ".git"))
	sub := filepath.Join(repo, "sub")
	cwd := filepath.Join(sub, "deeper")
	mkdir(t, cwd)
	write(t, filepath.Join(repo, ".agents/skills/r/SKILL.md"), skillText("r", "repo", ""))
	write(t, filepath.Join(sub, ".agents/skills/s/SKILL.md"), skillText("s", "sub", ""))
	write(t, filepath.Join(cwd, ".agents/skills/c/SKILL.md"), skillText("c", "cwd", ""))
	_, r := newWatchedRegistry(t, agentskills.Config{NoUserDir: true})
	snapshotIs(t, r, cwd, "r=repo")

	t.Log("git init in a folder between the working directory and the root")
	mkdir(t, filepath.Join(sub, ".git"))
	snapshotIs(t, r, cwd, "s=sub")
	if root, _ := agentskills.ProjectRoot(cwd); root != sub {
		t.Fatalf("ProjectRoot = %s, want %s", root, sub)
	}

	t.Log("a .git file (worktree) in the working directory itself")
	write(t, filepath.Join(cwd, ".git"), "gitdir: elsewhere\n")
	snapshotIs(t, r, cwd, "c=cwd")

	t.Log("both removed: back to the repository")
	for _, g := range []string{filepath.Join(cwd, ".git"), filepath.Join(sub, ".git")} {
		if err := os.RemoveAll(g); err != nil {
			t.Fatal(err)
		}
	}
	snapshotIs(t, r, cwd, "r=repo")

	t.Log("the root's .git removed: no repository, the working directory is the root")
	if err := os.RemoveAll(filepath.Join(repo, ".git")); err != nil {
		t.Fatal(err)
	}
	snapshotIs(t, r, cwd, "c=cwd")

	t.Log("a .git created above the old root")
	mkdir(t, filepath.Join(base, ".git"))
	snapshotIs(t, r, cwd) // base has no skills folder
	if root, _ := agentskills.ProjectRoot(cwd); root != base {
		t.Fatalf("ProjectRoot = %s, want %s", root, base)
	}

}

// TestProjectRootFolderReplaced: a folder on the way to the root renamed
// away and replaced by another one holding a .git (whose inode the old
// watches do not cover) moves the root.
func TestProjectRootFolderReplaced(t *testing.T) {
	repo := t.TempDir()
	mkdir(t, filepath.Join(repo, ".git"))
	mid := filepath.Join(repo, "mid")
	cwd := filepath.Join(mid, "cwd")
	mkdir(t, cwd)
	write(t, filepath.Join(repo, ".agents/skills/r/SKILL.md"), skillText("r", "repo", ""))
	_, r := newWatchedRegistry(t, agentskills.Config{NoUserDir: true})
	snapshotIs(t, r, cwd, "r=repo")
	if err := os.Rename(mid, filepath.Join(repo, "mid-old")); err != nil {
		t.Fatal(err)
	}
	mkdir(t, filepath.Join(mid, ".git"))
	mkdir(t, cwd)
	write(t, filepath.Join(mid, ".agents/skills/m/SKILL.md"), skillText("m", "new mid", ""))
	snapshotIs(t, r, cwd, "m=new mid")
}

// TestProjectRootOfMissingFolder: a working directory that does not exist
// here (an agent on another machine) is remembered too, and a repository
// created there later is still seen.
func TestProjectRootOfMissingFolder(t *testing.T) {
	repo := t.TempDir()
	mkdir(t, filepath.Join(repo, ".git"))
	write(t, filepath.Join(repo, ".agents/skills/r/SKILL.md"), skillText("r", "repo", ""))
	cwd := filepath.Join(repo, "not", "here")
	p, r := newWatchedRegistry(t, agentskills.Config{NoUserDir: true})
	snapshotIs(t, r, cwd, "r=repo")
	walks := p.Stats().RootWalks
	for range 5 {
		snapshotIs(t, r, cwd, "r=repo")
	}
	if got := p.Stats().RootWalks; got != walks {
		t.Errorf("%d more walks for a remembered missing working directory", got-walks)
	}
	mkdir(t, filepath.Join(cwd, ".git"))
	write(t, filepath.Join(cwd, ".agents/skills/h/SKILL.md"), skillText("h", "here", ""))
	snapshotIs(t, r, cwd, "h=here")
}

// TestRememberedRootsAreBounded: remembered working directories and their
// watches go with their project when it is evicted.
func TestRememberedRootsAreBounded(t *testing.T) {
	repo := t.TempDir()
	mkdir(t, filepath.Join(repo, ".git"))
	write(t, filepath.Join(repo, ".agents/skills/r/SKILL.md"), skillText("r", "repo", ""))
	var cwds []string
	for _, d := range []string{"a", "b", "c", "d", "e", "f"} { // more than 4 per project
		cwd := filepath.Join(repo, d)
		mkdir(t, cwd) // before watching: no events to cancel a first remembering
		cwds = append(cwds, cwd)
	}
	p, r := newWatchedRegistry(t, agentskills.Config{NoUserDir: true, MaxProjects: 1})
	for _, cwd := range cwds {
		snapshotIs(t, r, cwd, "r=repo")
	}
	full := p.Stats().Watches
	walks := p.Stats().RootWalks
	snapshotIs(t, r, cwds[0], "r=repo") // the least recently used one was forgotten
	if p.Stats().RootWalks == walks {
		t.Error("a fifth working directory of one project is still remembered")
	}
	// Another project evicts the first one and everything it watched.
	other := t.TempDir()
	mkdir(t, filepath.Join(other, ".git"))
	snapshotIs(t, r, other)
	st := p.Stats()
	if st.Projects != 1 || st.Watches >= full {
		t.Errorf("after eviction: %d projects, %d watches (had %d)", st.Projects, st.Watches, full)
	}
}

// BenchmarkChanges is what the registry asks of the provider at every
// cached snapshot, from a working directory three levels below its root;
// BenchmarkProjectRoot is the walk Changes made each time before project
// roots were remembered.
func BenchmarkChanges(b *testing.B) {
	cwd := benchDeepCwd(b)
	p := newProvider(b, agentskills.Config{NoUserDir: true})
	b.ReportAllocs()
	for b.Loop() {
		if providers.Closed(p.Changes(catalog.At(cwd))) {
			b.Fatal("closed channel")
		}
	}
}

func BenchmarkProjectRoot(b *testing.B) {
	cwd := benchDeepCwd(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := agentskills.ProjectRoot(cwd); err != nil {
			b.Fatal(err)
		}
	}
}

func benchDeepCwd(b *testing.B) string {
	repo := b.TempDir()
	mkdir(b, filepath.Join(repo, ".git"))
	cwd := filepath.Join(repo, "a", "b", "c")
	mkdir(b, cwd)
	return cwd
}
