package agentskills_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
)

func newWatchedRegistry(t *testing.T, cfg agentskills.Config) (*agentskills.Provider, *providers.Registry) {
	t.Helper()
	p := newProvider(t, cfg)
	if err := p.WatchError(); err != nil {
		t.Fatalf("watcher did not start: %v", err)
	}
	r := providers.NewRegistry([]providers.Provider{p})
	t.Cleanup(func() { _ = r.Close() })
	return p, r
}

// TestWatchWalkThrough follows one project folder through its life, each
// step seen by Snapshot without a restart. The folder does not exist at
// first (nor does its parent .agents).
func TestWatchWalkThrough(t *testing.T) {
	repo := t.TempDir()
	mkdir(t, filepath.Join(repo, ".git"))
	root := filepath.Join(repo, ".agents", "skills")
	p, r := newWatchedRegistry(t, agentskills.Config{})
	ctx := context.Background()

	t.Log("empty")
	snapshotIs(t, r, repo)
	if ch := p.Changes(catalog.At(repo)); providers.Closed(ch) {
		t.Fatal("Changes returned a closed channel while watching")
	}

	t.Log("add a skill (creating the missing folders)")
	write(t, filepath.Join(root, "alpha/SKILL.md"), skillText("alpha", "first", "alpha body"))
	snapshotIs(t, r, repo, "alpha=first")

	t.Log("edit its description")
	write(t, filepath.Join(root, "alpha/SKILL.md"), skillText("alpha", "second", "alpha body"))
	snapshotIs(t, r, repo, "alpha=second")

	t.Log("add a flat file")
	write(t, filepath.Join(root, "beta.md"), skillText("beta", "flat", "beta body"))
	snapshotIs(t, r, repo, "alpha=second", "beta=flat")

	t.Log("rename the skill directory and the flat file's skill")
	if err := os.Rename(filepath.Join(root, "alpha"), filepath.Join(root, "alpha-moved")); err != nil {
		t.Fatal(err)
	}
	eventually(t, func() string { return "alpha still at its old place" }, func() bool {
		s, err := r.Resolve(ctx, "alpha", catalog.At(repo))
		return err == nil && s.ResourceBase.Path == filepath.Join(root, "alpha-moved")
	})
	if err := os.Rename(filepath.Join(root, "beta.md"), filepath.Join(root, "gamma.md")); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(root, "gamma.md"), skillText("gamma", "renamed", "gamma body"))
	snapshotIs(t, r, repo, "alpha=second", "gamma=renamed")

	t.Log("delete a skill")
	if err := os.RemoveAll(filepath.Join(root, "alpha-moved")); err != nil {
		t.Fatal(err)
	}
	snapshotIs(t, r, repo, "gamma=renamed")

	t.Log("delete the whole folder")
	if err := os.RemoveAll(filepath.Join(repo, ".agents")); err != nil {
		t.Fatal(err)
	}
	snapshotIs(t, r, repo)

	t.Log("recreate it with a new skill")
	write(t, filepath.Join(root, "delta/SKILL.md"), skillText("delta", "new", "delta body"))
	snapshotIs(t, r, repo, "delta=new")
	sk, err := r.Load(ctx, "delta", catalog.At(repo))
	if err != nil || sk.Content != "delta body" {
		t.Fatalf("Load delta = %q, %v", sk.Content, err)
	}

	t.Log("a skill directory created empty, its SKILL.md written afterwards")
	mkdir(t, filepath.Join(root, "epsilon"))
	snapshotIs(t, r, repo, "delta=new")
	write(t, filepath.Join(root, "epsilon/SKILL.md"), skillText("epsilon", "late file", ""))
	snapshotIs(t, r, repo, "delta=new", "epsilon=late file")
	if providers.Closed(p.Changes(catalog.At(repo))) {
		t.Error("the provider fell back to stat validation; every step above must have come from watching")
	}
}

// TestWarmSnapshotReadsNothing: once a watched tree is cached, snapshots
// neither read nor list anything, in the registry or in the provider.
func TestWarmSnapshotReadsNothing(t *testing.T) {
	root := t.TempDir()
	for i := range 20 {
		write(t, filepath.Join(root, fmt.Sprintf("s%02d/SKILL.md", i)), skillText(fmt.Sprintf("s%02d", i), "d", "b"))
	}
	p, r := newWatchedRegistry(t, agentskills.Config{CustomDirs: []string{root}, NoUserDir: true})
	snapshotIs(t, r, "", wantSkills(20)...)
	before := p.Stats()
	for range 10 {
		snapshotIs(t, r, "", wantSkills(20)...)
		list(t, p, "") // the provider's own cache, bypassing the registry's
	}
	after := p.Stats()
	if after.Reads != before.Reads || after.Parses != before.Parses || after.Scans != before.Scans {
		t.Fatalf("warm snapshots did work: before %+v after %+v", before, after)
	}
	if before.Reads != 20 {
		t.Errorf("cold snapshot read %d files, want 20", before.Reads)
	}
	// One edit re-reads one file.
	write(t, filepath.Join(root, "s07/SKILL.md"), skillText("s07", "edited", "b"))
	want := wantSkills(20)
	want[7] = "s07=edited"
	snapshotIs(t, r, "", want...)
	if got := p.Stats().Reads - after.Reads; got != 1 {
		t.Errorf("an edit of one file re-read %d files, want 1", got)
	}
}

func wantSkills(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("s%02d=d", i))
	}
	return out
}

// TestStatFallbackWithoutWatcher: without a watcher nothing is cached by
// the registry, changes show up at once, and unchanged files are not
// re-read.
func TestStatFallbackWithoutWatcher(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "a/SKILL.md"), skillText("a", "one", ""))
	p := newProvider(t, agentskills.Config{CustomDirs: []string{root}, NoUserDir: true, NoWatch: true})
	if !providers.Closed(p.Changes(catalog.At(""))) {
		t.Fatal("Changes without a watcher must be a closed channel (do not cache)")
	}
	r := providers.NewRegistry([]providers.Provider{p})
	t.Cleanup(func() { _ = r.Close() })
	ctx := context.Background()
	s, _ := r.Snapshot(ctx, catalog.At(""))
	if !s.Complete || summaries(s)[0] != "a=one" {
		t.Fatalf("snapshot %v", summaries(s))
	}
	reads := p.Stats().Reads
	s, _ = r.Snapshot(ctx, catalog.At(""))
	if p.Stats().Reads != reads || !s.Complete {
		t.Errorf("unchanged file re-read without a watcher")
	}
	write(t, filepath.Join(root, "a/SKILL.md"), skillText("a", "two, same size", ""))
	write(t, filepath.Join(root, "b.md"), skillText("b", "new", ""))
	// No polling: stat validation sees the change on the very next call.
	s, _ = r.Snapshot(ctx, catalog.At(""))
	if got := summaries(s); len(got) != 2 || got[0] != "a=two, same size" || got[1] != "b=new" {
		t.Fatalf("snapshot after edit = %v", got)
	}
}

// TestUserFolderAppearsDeep: a user folder several levels below the nearest
// existing directory appears in one go.
func TestUserFolderAppearsDeep(t *testing.T) {
	base := t.TempDir()
	user := filepath.Join(base, "home", "me", ".agents", "skills")
	_, r := newWatchedRegistry(t, agentskills.Config{UserDir: user})
	snapshotIs(t, r, "")
	write(t, filepath.Join(user, "deep/SKILL.md"), skillText("deep", "found", ""))
	snapshotIs(t, r, "", "deep=found")
	// A user folder change reaches every project's snapshot.
	other := t.TempDir()
	snapshotIs(t, r, other, "deep=found")
	write(t, filepath.Join(user, "second.md"), skillText("second", "also", ""))
	snapshotIs(t, r, other, "deep=found", "second=also")
	snapshotIs(t, r, "", "deep=found", "second=also")
}

// TestSymlinkTargetEditsAreSeen: edits to files reached through links
// outside the folder are watched too.
func TestSymlinkTargetEditsAreSeen(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	write(t, filepath.Join(outside, "dir/SKILL.md"), skillText("via-dir", "v1", ""))
	write(t, filepath.Join(outside, "flat.md"), skillText("via-file", "v1", ""))
	mkdir(t, root)
	symlink(t, filepath.Join(outside, "dir"), filepath.Join(root, "via-dir"))
	symlink(t, filepath.Join(outside, "flat.md"), filepath.Join(root, "via-file.md"))
	_, r := newWatchedRegistry(t, agentskills.Config{CustomDirs: []string{root}, NoUserDir: true})
	snapshotIs(t, r, "", "via-dir=v1", "via-file=v1")
	write(t, filepath.Join(outside, "dir/SKILL.md"), skillText("via-dir", "v2", ""))
	write(t, filepath.Join(outside, "flat.md"), skillText("via-file", "v2", ""))
	snapshotIs(t, r, "", "via-dir=v2", "via-file=v2")
}

// TestBurstIsCoalesced: many writes within the debounce window produce far
// fewer notifications than events.
func TestBurstIsCoalesced(t *testing.T) {
	root := t.TempDir()
	p, r := newWatchedRegistry(t, agentskills.Config{CustomDirs: []string{root}, NoUserDir: true, Debounce: 500 * time.Millisecond})
	snapshotIs(t, r, "")
	const n = 100
	for i := range n {
		write(t, filepath.Join(root, fmt.Sprintf("s%03d.md", i)), skillText(fmt.Sprintf("s%03d", i), "d", ""))
	}
	eventually(t, func() string { return fmt.Sprint(p.Stats()) }, func() bool {
		s, _ := r.Snapshot(context.Background(), catalog.At(""))
		return s.Complete && len(s.Skills) == n
	})
	eventually(t, func() string { return fmt.Sprint(p.Stats()) }, func() bool { return p.Stats().Invalidations > 0 })
	// Each write makes at least two events (create, write); with a 500 ms
	// window they collapse into a handful of notifications.
	if got := p.Stats().Invalidations; got >= n/2 {
		t.Errorf("%d notifications for %d writes: bursts are not coalesced", got, n)
	}
}

// TestWatchedProjectsAreBounded: the least recently used project is
// dropped with its watches, and comes back on demand.
func TestWatchedProjectsAreBounded(t *testing.T) {
	var repos []string
	for i := range 3 {
		repo := t.TempDir()
		mkdir(t, filepath.Join(repo, ".git"))
		write(t, filepath.Join(repo, ".agents/skills/s/SKILL.md"), skillText("s", fmt.Sprint("repo", i), ""))
		repos = append(repos, repo)
	}
	p, r := newWatchedRegistry(t, agentskills.Config{NoUserDir: true, MaxProjects: 2})
	snapshotIs(t, r, repos[0], "s=repo0")
	snapshotIs(t, r, repos[1], "s=repo1")
	w2 := p.Stats().Watches
	snapshotIs(t, r, repos[2], "s=repo2")
	st := p.Stats()
	if st.Projects != 2 {
		t.Errorf("tracking %d projects, want 2", st.Projects)
	}
	if st.Watches != w2 {
		t.Errorf("watches = %d after evicting one project, want %d (as with two projects)", st.Watches, w2)
	}
	// The evicted project still answers, and still follows edits.
	snapshotIs(t, r, repos[0], "s=repo0")
	write(t, filepath.Join(repos[0], ".agents/skills/s/SKILL.md"), skillText("s", "edited", ""))
	snapshotIs(t, r, repos[0], "s=edited")
}
