package agentskills_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
)

// folderSkill writes the skill "big" (SKILL.md and 19 resources, some in
// nested folders) into repo's project folder and returns its folder.
func folderSkill(t testing.TB, repo string) string {
	t.Helper()
	mkdir(t, filepath.Join(repo, ".git"))
	dir := filepath.Join(repo, ".agents/skills/big")
	writeResources(t, dir, "big")
	return dir
}

func writeResources(t testing.TB, dir, name string) {
	t.Helper()
	write(t, filepath.Join(dir, "SKILL.md"), skillText(name, "A skill with resources.", "Use the scripts."))
	for i := range 19 {
		sub := []string{"", "scripts", "references/deep"}[i%3]
		write(t, filepath.Join(dir, sub, fmt.Sprintf("file-%02d.txt", i)), fmt.Sprintf("resource %02d\n", i))
	}
}

// loadDigest loads name in repo and returns its digest.
func loadDigest(t testing.TB, p *agentskills.Provider, repo, name string) string {
	t.Helper()
	sk, err := p.Load(context.Background(), name, catalog.At(repo))
	if err != nil {
		t.Fatalf("Load(%s): %v", name, err)
	}
	if sk.Digest == "" {
		t.Fatalf("Load(%s): no digest", name)
	}
	return sk.Digest
}

func freshDigest(t testing.TB, dir string) string {
	t.Helper()
	d, err := agentskills.Digest(dir)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// overwrite writes content over the start of path in place: same inode,
// same size when content is as long as what it replaces.
func overwrite(t testing.TB, path, content string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte(content), 0); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

// warmLoads loads name three times and fails if any walked the folder.
func warmLoads(t testing.TB, p *agentskills.Provider, repo, name, want string) {
	t.Helper()
	before := p.Stats()
	for range 3 {
		if got := loadDigest(t, p, repo, name); got != want {
			t.Fatalf("warm Load: digest %s, want %s", got, want)
		}
	}
	if after := p.Stats(); after.DigestWalks != before.DigestWalks {
		t.Fatalf("warm Loads walked the folder %d times, want 0", after.DigestWalks-before.DigestWalks)
	}
}

// TestWatchedDigestFollowsEveryChange: a warm Load of an unchanged folder
// skill does not walk it, and a change of any kind anywhere in the folder
// is in the digest of the very next Load (no waiting: the watch's queue is
// read before a kept digest is served).
func TestWatchedDigestFollowsEveryChange(t *testing.T) {
	repo := t.TempDir()
	dir := folderSkill(t, repo)
	elsewhere := t.TempDir()
	p := newProvider(t, agentskills.Config{})

	prev := loadDigest(t, p, repo, "big")
	if want := freshDigest(t, dir); prev != want {
		t.Fatalf("cold Load: digest %s, want %s", prev, want)
	}
	warmLoads(t, p, repo, "big", prev)
	if w := p.Stats().DigestWatches; w < 23 { // the folder, 3 subfolders, 20 files
		t.Fatalf("%d digest watches, want the folder, its subfolders and files watched", w)
	}

	changes := []struct {
		name   string
		change func()
		same   bool // the files' bytes are unchanged
	}{
		{"top-level file, same size, new mtime", func() {
			write(t, filepath.Join(dir, "file-00.txt"), "RESOURCE 00\n")
			future := time.Now().Add(time.Hour)
			if err := os.Chtimes(filepath.Join(dir, "file-00.txt"), future, future); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"top-level file rewritten in place, same size", func() {
			overwrite(t, filepath.Join(dir, "file-03.txt"), "X")
		}, false},
		{"SKILL.md edited", func() {
			write(t, filepath.Join(dir, "SKILL.md"), skillText("big", "A skill with resources.", "Use the tools."))
		}, false},
		{"nested file edited in place", func() {
			overwrite(t, filepath.Join(dir, "references/deep/file-02.txt"), "R")
		}, false},
		{"nested file added in a new subfolder", func() {
			write(t, filepath.Join(dir, "references/deep/deeper/new.txt"), "new\n")
		}, false},
		{"file of the new subfolder edited", func() {
			overwrite(t, filepath.Join(dir, "references/deep/deeper/new.txt"), "N")
		}, false},
		{"nested file removed", func() {
			if err := os.Remove(filepath.Join(dir, "scripts/file-01.txt")); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"file renamed", func() {
			if err := os.Rename(filepath.Join(dir, "file-06.txt"), filepath.Join(dir, "file-06b.txt")); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"subfolder renamed", func() {
			if err := os.Rename(filepath.Join(dir, "scripts"), filepath.Join(dir, "tools")); err != nil {
				t.Fatal(err)
			}
		}, false},
		{"empty subfolder added", func() {
			mkdir(t, filepath.Join(dir, "assets"))
		}, true},
		{"file added to the empty subfolder", func() {
			write(t, filepath.Join(dir, "assets/logo.txt"), "logo\n")
		}, false},
		{"hard link made from elsewhere", func() {
			if err := os.Link(filepath.Join(dir, "file-09.txt"), filepath.Join(elsewhere, "h.txt")); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"file edited through the hard link from elsewhere", func() {
			overwrite(t, filepath.Join(elsewhere, "h.txt"), "H")
		}, false},
		{"skill folder replaced by another", func() {
			if err := os.Rename(dir, dir+".old"); err != nil {
				t.Fatal(err)
			}
			writeResources(t, dir, "big")
			write(t, filepath.Join(dir, "scripts/extra.txt"), "extra\n")
		}, false},
		{"old folder edited after the swap", func() {
			overwrite(t, filepath.Join(dir+".old", "file-00.txt"), "Z")
		}, true},
	}
	for _, c := range changes {
		c.change()
		want := freshDigest(t, dir)
		before := p.Stats().DigestWalks
		got := loadDigest(t, p, repo, "big")
		if got != want {
			t.Fatalf("%s: Load gave digest %s, want %s", c.name, got, want)
		}
		if !c.same && got == prev {
			t.Fatalf("%s: the digest did not change", c.name)
		}
		if c.same && got != prev {
			t.Fatalf("%s: the digest changed though the files did not", c.name)
		}
		if !c.same && p.Stats().DigestWalks == before {
			t.Fatalf("%s: Load served the kept digest", c.name)
		}
		warmLoads(t, p, repo, "big", want)
		// The body follows the skill file too, warm Loads included.
		data, err := os.ReadFile(filepath.Join(dir, "SKILL.md"))
		if err != nil {
			t.Fatal(err)
		}
		file, err := agentskills.ParseFile(filepath.Join(dir, "SKILL.md"), data)
		if err != nil {
			t.Fatal(err)
		}
		for range 2 {
			if sk, err := p.Load(context.Background(), "big", catalog.At(repo)); err != nil || sk.Content != file.Content {
				t.Fatalf("%s: Load content %q, %v; want %q", c.name, sk.Content, err, file.Content)
			}
		}
		prev = got
	}
}

// TestWatchedDigestOfLinkedFolder: a skill folder that is a symbolic link
// is watched at its target, and retargeting the link changes the digest.
func TestWatchedDigestOfLinkedFolder(t *testing.T) {
	repo := t.TempDir()
	mkdir(t, filepath.Join(repo, ".git"))
	a, b := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "b")
	writeResources(t, a, "big")
	writeResources(t, b, "big")
	write(t, filepath.Join(b, "scripts/only-in-b.txt"), "b\n")
	link := filepath.Join(repo, ".agents/skills/big")
	mkdir(t, filepath.Dir(link))
	symlink(t, a, link)
	p := newProvider(t, agentskills.Config{})

	da := loadDigest(t, p, repo, "big")
	if want := freshDigest(t, a); da != want {
		t.Fatalf("digest %s, want %s", da, want)
	}
	warmLoads(t, p, repo, "big", da)

	overwrite(t, filepath.Join(a, "references/deep/file-02.txt"), "A")
	if got, want := loadDigest(t, p, repo, "big"), freshDigest(t, a); got != want || got == da {
		t.Fatalf("after an edit in the target: digest %s, want %s (was %s)", got, want, da)
	}

	tmp := link + ".tmp"
	symlink(t, b, tmp)
	if err := os.Rename(tmp, link); err != nil {
		t.Fatal(err)
	}
	db := loadDigest(t, p, repo, "big")
	if want := freshDigest(t, b); db != want {
		t.Fatalf("after retargeting: digest %s, want %s", db, want)
	}
	warmLoads(t, p, repo, "big", db)
}

// TestDigestOfFolderWithLinksIsWalked: a folder holding a symbolic link is
// not watched but walked on every Load, and a retargeted link is seen.
func TestDigestOfFolderWithLinksIsWalked(t *testing.T) {
	repo := t.TempDir()
	dir := folderSkill(t, repo)
	symlink(t, "file-01.txt", filepath.Join(dir, "scripts/current.txt"))
	p := newProvider(t, agentskills.Config{})

	walkedEveryLoad(t, p, repo, dir)
	// Retargeted to another file of the folder, of the same size.
	tmp := filepath.Join(dir, "scripts/tmp")
	symlink(t, "file-04.txt", tmp)
	if err := os.Rename(tmp, filepath.Join(dir, "scripts/current.txt")); err != nil {
		t.Fatal(err)
	}
	if got, want := loadDigest(t, p, repo, "big"), freshDigest(t, dir); got != want {
		t.Fatalf("after retargeting: digest %s, want %s", got, want)
	}
}

// editNewMtime rewrites path with content (same size) and gives it an
// mtime an hour later than before, so an identity check sees the change
// whatever the clock's resolution.
func editNewMtime(t testing.TB, path, content string) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	overwrite(t, path, content)
	later := fi.ModTime().Add(time.Hour)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
}

// TestDigestWalkedWithoutWatching: with watching off every Load walks the
// folder, and edits are seen.
func TestDigestWalkedWithoutWatching(t *testing.T) {
	repo := t.TempDir()
	dir := folderSkill(t, repo)
	p := newProvider(t, agentskills.Config{NoWatch: true})

	d0 := walkedEveryLoad(t, p, repo, dir)
	editNewMtime(t, filepath.Join(dir, "references/deep/file-02.txt"), "W")
	if got, want := loadDigest(t, p, repo, "big"), freshDigest(t, dir); got != want || got == d0 {
		t.Fatalf("after a nested edit: digest %s, want %s (was %s)", got, want, d0)
	}
}

// TestDigestWalkedOverTheWatchBound: a skill folder needing more watches
// than Config.MaxWatchesPerFolder, in a skills folder polled for the same
// reason, is walked on every Load and its edits are seen.
func TestDigestWalkedOverTheWatchBound(t *testing.T) {
	repo := t.TempDir()
	dir := folderSkill(t, repo)
	for i := range 4 {
		name := fmt.Sprintf("small-%d", i)
		write(t, filepath.Join(repo, ".agents/skills", name, "SKILL.md"), skillText(name, "Small.", "Body."))
	}
	p := newProvider(t, agentskills.Config{MaxWatchesPerFolder: 3, PollInterval: 10 * time.Millisecond})

	if polled, err := p.Polled(context.Background(), catalog.At(repo)); err != nil || len(polled) != 1 {
		t.Fatalf("Polled: %v, %v; want the skills folder polled", polled, err)
	}
	d0 := walkedEveryLoad(t, p, repo, dir)
	editNewMtime(t, filepath.Join(dir, "scripts/file-01.txt"), "P")
	write(t, filepath.Join(dir, "scripts/added.txt"), "added\n")
	if got, want := loadDigest(t, p, repo, "big"), freshDigest(t, dir); got != want || got == d0 {
		t.Fatalf("after edits: digest %s, want %s (was %s)", got, want, d0)
	}
	// A small skill fits: it is watched within the bound.
	loadDigest(t, p, repo, "small-0")
	warmLoads(t, p, repo, "small-0", freshDigest(t, filepath.Join(repo, ".agents/skills/small-0")))
}

// TestDigestWatchesAreBounded: the watches of all kept digests stay within
// Config.MaxWatchesPerFolder, the least recently used giving theirs up, and
// Close releases them.
func TestDigestWatchesAreBounded(t *testing.T) {
	repo := t.TempDir()
	mkdir(t, filepath.Join(repo, ".git"))
	var dirs []string
	for i := range 5 {
		name := fmt.Sprintf("skill-%d", i)
		dir := filepath.Join(repo, ".agents/skills", name)
		write(t, filepath.Join(dir, "SKILL.md"), skillText(name, "Bounded.", "Body."))
		write(t, filepath.Join(dir, "notes.txt"), "notes\n") // 3 watches a skill
		dirs = append(dirs, dir)
	}
	p, err := agentskills.New(agentskills.Config{NoUserDir: true, MaxWatchesPerFolder: 7})
	if err != nil {
		t.Fatal(err)
	}
	for round := range 2 {
		for i, dir := range dirs {
			name := filepath.Base(dir)
			if i > 0 { // the most recently used before this one
				warmLoads(t, p, repo, filepath.Base(dirs[i-1]), freshDigest(t, dirs[i-1]))
			}
			if got, want := loadDigest(t, p, repo, name), freshDigest(t, dir); got != want {
				t.Fatalf("round %d, %s: digest %s, want %s", round, name, got, want)
			}
			if w := p.Stats().DigestWatches; w > 7 || w < 3 {
				t.Fatalf("round %d, %s: %d digest watches, want 3 to 7", round, name, w)
			}
			warmLoads(t, p, repo, name, freshDigest(t, dir))
			if i > 0 { // it kept its watches: two skills fit
				warmLoads(t, p, repo, filepath.Base(dirs[i-1]), freshDigest(t, dirs[i-1]))
			}
		}
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if w := p.Stats().DigestWatches; w != 0 {
		t.Fatalf("%d digest watches after Close", w)
	}
}

// TestDigestUnderConcurrentEdits: Loads racing with edits never fail, and
// once the edits stop the digest is the folder's.
func TestDigestUnderConcurrentEdits(t *testing.T) {
	repo := t.TempDir()
	dir := folderSkill(t, repo)
	p := newProvider(t, agentskills.Config{})
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := p.Load(context.Background(), "big", catalog.At(repo)); err != nil {
					t.Errorf("Load: %v", err)
					return
				}
			}
		})
	}
	for i := range 200 {
		overwrite(t, filepath.Join(dir, "references/deep/file-05.txt"), fmt.Sprint(i%10))
		if i%50 == 0 {
			write(t, filepath.Join(dir, fmt.Sprintf("scripts/n%d/f.txt", i)), "x\n")
		}
	}
	close(stop)
	wg.Wait()
	want := freshDigest(t, dir)
	if got := loadDigest(t, p, repo, "big"); got != want {
		t.Fatalf("after the edits: digest %s, want %s", got, want)
	}
	warmLoads(t, p, repo, "big", want)
}

// LoadQuick answers from memory exactly what Load answers, only while the
// skill's body and digest are kept and current: not before a first Load,
// not after an edit until Load has read it again, not for a cwd it has
// not seen.
func TestLoadQuick(t *testing.T) {
	repo := t.TempDir()
	dir := folderSkill(t, repo)
	p := newProvider(t, agentskills.Config{})
	q := catalog.At(repo)
	if _, ok := p.LoadQuick("big", q); ok {
		t.Fatal("LoadQuick answered before any Load")
	}
	loaded := func() catalog.Skill {
		t.Helper()
		sk, err := p.Load(context.Background(), "big", q)
		if err != nil {
			t.Fatal(err)
		}
		return sk
	}
	want := loaded()
	got, ok := p.LoadQuick("big", q)
	if !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("LoadQuick = %+v, %v; want %+v", got, ok, want)
	}
	if _, ok := p.LoadQuick("big", catalog.At(t.TempDir())); ok {
		t.Fatal("LoadQuick answered for a cwd never seen")
	}
	for _, bad := range []string{"no-such-skill", "", "../big", "big/../big", "Big", "big\x00", strings.Repeat("b", 100000)} {
		if _, ok := p.LoadQuick(bad, q); ok {
			t.Fatalf("LoadQuick answered for %q", bad)
		}
	}
	if _, ok := p.LoadQuick("big", catalog.Query{Cwd: "relative/dir"}); ok {
		t.Fatal("LoadQuick answered for a relative cwd")
	}

	write(t, filepath.Join(dir, "SKILL.md"), skillText("big", "A skill with resources.", "Use the tools."))
	if sk, ok := p.LoadQuick("big", q); ok {
		t.Fatalf("LoadQuick after an edit = %q", sk.Content)
	}
	// The provider's root watch reports the edit on its own goroutine, and
	// until it has, a scan may count as stale and LoadQuick declines (the
	// registry then loads as usual): once a Load has read the edit and the
	// report is in, LoadQuick answers with the edit.
	deadline := time.Now().Add(5 * time.Second)
	for {
		want = loaded()
		if !strings.Contains(want.Content, "Use the tools.") {
			t.Fatalf("Load after the edit = %q", want.Content)
		}
		got, ok := p.LoadQuick("big", q)
		if ok {
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("LoadQuick after Load read the edit = %+v; want %+v", got, want)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("LoadQuick never answered after a Load read the edit")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// walkedEveryLoad loads the skill "big" of repo (its folder dir) and checks
// the digest against a fresh walk of dir, then loads it again and checks
// that the load walked the folder once and watched nothing. It returns the
// digest.
func walkedEveryLoad(t *testing.T, p *agentskills.Provider, repo, dir string) string {
	t.Helper()
	d := loadDigest(t, p, repo, "big")
	if want := freshDigest(t, dir); d != want {
		t.Fatalf("digest %s, want %s", d, want)
	}
	before := p.Stats()
	loadDigest(t, p, repo, "big")
	if after := p.Stats(); after.DigestWalks != before.DigestWalks+1 || after.DigestWatches != 0 {
		t.Fatalf("Load walked %d times with %d digest watches; want one walk, no watch",
			after.DigestWalks-before.DigestWalks, after.DigestWatches)
	}
	return d
}

// LoadQuickAfterChanges answers as LoadQuick once Changes has read the
// listings' change queue: a skill added since to a folder that outranks
// the one answered before, completed before Changes began, is never
// answered from the outranked folder.
func TestLoadQuickAfterChanges(t *testing.T) {
	repo := t.TempDir()
	mkdir(t, filepath.Join(repo, ".git"))
	user := filepath.Join(t.TempDir(), "user-skills")
	writeResources(t, filepath.Join(user, "big"), "big")
	p := newProvider(t, agentskills.Config{UserDir: user})
	q := catalog.At(repo)
	if _, ok := p.LoadQuickAfterChanges("big", q); ok {
		t.Fatal("LoadQuickAfterChanges answered before any Load")
	}
	want, err := p.Load(context.Background(), "big", q)
	if err != nil {
		t.Fatal(err)
	}
	_ = p.Changes(q)
	got, ok := p.LoadQuickAfterChanges("big", q)
	if !ok || !reflect.DeepEqual(got, want) {
		t.Fatalf("LoadQuickAfterChanges = %+v, %v; want %+v", got, ok, want)
	}
	if quick, ok := p.LoadQuick("big", q); !ok || !reflect.DeepEqual(quick, got) {
		t.Fatalf("LoadQuick = %+v, %v; LoadQuickAfterChanges %+v", quick, ok, got)
	}
	for _, bad := range []string{"no-such-skill", "", "../big", "Big"} {
		if _, ok := p.LoadQuickAfterChanges(bad, q); ok {
			t.Fatalf("LoadQuickAfterChanges answered for %q", bad)
		}
	}

	// The project's folder outranks the user's: once it has "big", the
	// user's is not the answer.
	write(t, filepath.Join(repo, ".agents/skills/big/SKILL.md"), skillText("big", "The project's own.", "Project steps."))
	_ = p.Changes(q)
	if sk, ok := p.LoadQuickAfterChanges("big", q); ok && sk.Source == want.Source {
		t.Fatalf("LoadQuickAfterChanges after the project gained the skill answered the user's: %+v", sk)
	}
	sk, err := p.Load(context.Background(), "big", q)
	if err != nil || sk.Description != "The project's own." {
		t.Fatalf("Load after the project gained the skill = %+v, %v", sk, err)
	}
}

// Loads and skill calls made at the same time share reads of the watches'
// queues, and still each sees every change completed before it began: a
// resource edited, then many concurrent Loads and registry skill calls,
// every one with the new digest; round after round.
func TestConcurrentLoadsSeeEarlierChanges(t *testing.T) {
	repo := t.TempDir()
	dir := folderSkill(t, repo)
	p := newProvider(t, agentskills.Config{NoUserDir: true})
	r := providers.NewRegistry([]providers.Provider{p})
	defer r.Close()
	q := catalog.At(repo)
	loadDigest(t, p, repo, "big")
	for round := range 20 {
		write(t, filepath.Join(dir, "scripts", "file-01.txt"), fmt.Sprintf("resource, round %d\n", round))
		want := freshDigest(t, dir)
		var wg sync.WaitGroup
		errs := make(chan error, 16)
		for g := range 16 {
			wg.Go(func() {
				var digest string
				if g%2 == 0 {
					sk, err := p.Load(context.Background(), "big", q)
					if err != nil {
						errs <- err
						return
					}
					digest = sk.Digest
				} else {
					res := catalog.Execute(context.Background(), r.Lookup(q), "big", catalog.Options{})
					if res.Value == nil {
						errs <- fmt.Errorf("skill call: %+v", res.Err)
						return
					}
					digest = res.Value.Digest
				}
				if digest != want {
					errs <- fmt.Errorf("round %d, goroutine %d: digest %s, want %s", round, g, digest, want)
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
	}
}

// A skill answered from memory is answered from the folder its path names
// now: the folder replaced, or a folder above the skills folder swapped
// for another, is seen by the very next Changes and LoadQuickAfterChanges
// (no stat of the skill folder is made when its path holds no link; the
// listing's watches vouch for the path). A skills folder reached through a
// link is checked with a stat, and its swaps are seen too.
func TestLoadQuickFollowsPathSwaps(t *testing.T) {
	for _, linked := range []bool{false, true} {
		t.Run(fmt.Sprintf("linked=%v", linked), func(t *testing.T) {
			base := t.TempDir()
			top := filepath.Join(base, "top")
			user := filepath.Join(top, "user-skills")
			if linked {
				real := filepath.Join(base, "real")
				mkdir(t, real)
				symlink(t, real, top)
			}
			repo := t.TempDir()
			mkdir(t, filepath.Join(repo, ".git"))
			dir := filepath.Join(user, "big")
			writeResources(t, dir, "big")
			p := newProvider(t, agentskills.Config{UserDir: user})
			q := catalog.At(repo)

			// quick answers as Load does, once a Load has kept the skill.
			quick := func(step string) catalog.Skill {
				t.Helper()
				want, err := p.Load(context.Background(), "big", q)
				if err != nil {
					t.Fatalf("%s: Load: %v", step, err)
				}
				if want.Digest != freshDigest(t, dir) {
					t.Fatalf("%s: Load digest %s, want %s", step, want.Digest, freshDigest(t, dir))
				}
				deadline := time.Now().Add(5 * time.Second)
				for {
					_ = p.Changes(q)
					got, ok := p.LoadQuickAfterChanges("big", q)
					if ok {
						if !reflect.DeepEqual(got, want) {
							t.Fatalf("%s: LoadQuickAfterChanges = %+v, want %+v", step, got, want)
						}
						return got
					}
					if time.Now().After(deadline) {
						t.Fatalf("%s: LoadQuickAfterChanges never answered", step)
					}
					time.Sleep(5 * time.Millisecond)
				}
			}
			// stale fails if the next Changes and quick load still answer
			// what was, then loads the skill as it is now.
			stale := func(step string, was catalog.Skill) {
				t.Helper()
				_ = p.Changes(q)
				if got, ok := p.LoadQuickAfterChanges("big", q); ok && (got.Digest == was.Digest || got.Content == was.Content) {
					t.Fatalf("%s: LoadQuickAfterChanges answered the old folder: %q", step, got.Content)
				}
				quick(step)
			}

			first := quick("first")
			// The skill folder moved away and another put in its place.
			if err := os.Rename(dir, filepath.Join(user, "big-old")); err != nil {
				t.Fatal(err)
			}
			write(t, filepath.Join(dir, "SKILL.md"), skillText("big", "A skill with resources.", "Second folder."))
			stale("skill folder replaced", first)

			second := quick("second")
			// The folder above the skills folder swapped for another.
			moved := top + ".old"
			if err := os.Rename(top, moved); err != nil {
				t.Fatal(err)
			}
			if linked {
				real := filepath.Join(base, "real2")
				mkdir(t, real)
				symlink(t, real, top)
			}
			write(t, filepath.Join(dir, "SKILL.md"), skillText("big", "A skill with resources.", "Third folder."))
			stale("folder above swapped", second)
		})
	}
}
