package store_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/providers/agentskills"
	"github.com/skillstream/skillstream/providers/store"
)

const token = "ghp_secretTOKEN0123456789"

// archivePaths lists the files of a skill's archive, failing the test
// when any holds the token.
func archivePaths(t *testing.T, arc []byte) []string {
	t.Helper()
	tr := tar.NewReader(bytes.NewReader(arc))
	var out []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatal(err)
		}
		data, _ := io.ReadAll(tr)
		if bytes.Contains(data, []byte(token)) {
			t.Errorf("%s holds the secret token", h.Name)
		}
		out = append(out, h.Name)
	}
}

// A skill folder that is a git work tree (a CI token in .git/config) with
// an untracked .env: push publishes neither, nor any other hidden file;
// with --include-hidden the hidden files go, .git still never; the
// materialised folder holds exactly what was published.
func TestPushLeavesOutVCSAndHiddenFiles(t *testing.T) {
	srv := natstest.Start(t)
	root := t.TempDir()
	dir := writeSkill(t, root, "repo-skill", "A skill kept in git.", "Body.", map[string]string{
		".git/config":          "[remote \"origin\"]\n\turl = https://x-access-token:" + token + "@github.com/o/r\n[core]\n\tfsmonitor = touch pwned\n",
		".git/HEAD":            "ref: refs/heads/main\n",
		".env":                 "API_TOKEN=" + token + "\n",
		".cache/data":          token,
		"scripts/run.sh":       "echo run\n",
		"scripts/.hg/hgrc":     "[paths]\ndefault = https://" + token + "@hg/\n",
		"scripts/.svn/entries": token,
	})
	l, err := store.ReadSkill(dir, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if got := archivePaths(t, store.ArchiveOf(l)); !slices.Equal(got, []string{"SKILL.md", "scripts/run.sh"}) {
		t.Fatalf("published %v, want SKILL.md and scripts/run.sh only", got)
	}
	if l.Record.Files != 2 {
		t.Errorf("record counts %d files", l.Record.Files)
	}
	pb := publisher(t, srv.JS, store.Config{})
	cs, err := pb.Push(context.Background(), skillstore.Global, []store.Local{l}, false)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "got")
	if err := pb.Materialize(context.Background(), cs[0].Digest, out); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{".git", ".env", ".cache", "scripts/.hg", "scripts/.svn"} {
		if _, err := os.Lstat(filepath.Join(out, p)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("materialised %s: %v", p, err)
		}
	}

	// --include-hidden: .env and .cache go (the author asked), .git never.
	withHidden, err := store.ReadSkillWith(dir, store.Config{}, store.ReadOptions{IncludeHidden: true})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	tr := tar.NewReader(bytes.NewReader(store.ArchiveOf(withHidden)))
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		got = append(got, h.Name)
	}
	if !slices.Equal(got, []string{".cache/data", ".env", "SKILL.md", "scripts/run.sh"}) {
		t.Fatalf("with --include-hidden published %v", got)
	}
}

// A skill folder of a pushed root that is a symbolic link leading outside
// the root is refused unless asked for; pushed by its own path it is the
// author's choice.
func TestPushRefusesSkillLinkedOutOfRoot(t *testing.T) {
	root, elsewhere := t.TempDir(), t.TempDir()
	target := writeSkill(t, elsewhere, "far-skill", "Lives elsewhere.", "Body.", nil)
	if err := os.Symlink(target, filepath.Join(root, "far-skill")); err != nil {
		t.Fatal(err)
	}
	linked := filepath.Join(root, "far-skill")
	_, err := store.ReadSkillWith(linked, store.Config{}, store.ReadOptions{Root: root})
	if !errors.Is(err, store.ErrInvalidSkill) || !strings.Contains(err.Error(), store.ErrLinkOut.Error()) {
		t.Fatalf("ReadSkillWith of a skill linked out of its root = %v", err)
	}
	if _, err := store.ReadSkillWith(linked, store.Config{}, store.ReadOptions{Root: root, LinksOut: true}); err != nil {
		t.Fatalf("with LinksOut: %v", err)
	}
	// A link inside the root is fine.
	inside := writeSkill(t, filepath.Join(root, "real"), "near-skill", "Lives inside.", "Body.", nil)
	if err := os.Symlink(inside, filepath.Join(root, "near-skill")); err != nil {
		t.Fatal(err)
	}
	if _, err := store.ReadSkillWith(filepath.Join(root, "near-skill"), store.Config{}, store.ReadOptions{Root: root}); err != nil {
		t.Fatalf("a link inside the root: %v", err)
	}
}

// A file swapped for a symbolic link to a secret between the listing and
// the read is never read: Open refuses the link (O_NOFOLLOW) and a file
// that is not the one listed.
func TestOpenRefusesFileSwappedAfterListing(t *testing.T) {
	dir := writeSkill(t, t.TempDir(), "swap-skill", "S.", "Body.", map[string]string{"notes.md": "harmless"})
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte(token), 0o600)
	files, err := agentskills.FilesOf(dir, agentskills.Limits{}, agentskills.NoHidden)
	if err != nil {
		t.Fatal(err)
	}
	notes := filepath.Join(dir, "notes.md")
	os.Remove(notes)
	if err := os.Symlink(secret, notes); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.Path != "notes.md" {
			continue
		}
		if fh, err := agentskills.Open(f); !errors.Is(err, agentskills.ErrFileChanged) {
			if fh != nil {
				fh.Close()
			}
			t.Fatalf("Open of a file swapped for a link = %v, want ErrFileChanged", err)
		}
	}
	// Swapped for another regular file (same name and size): not the one
	// listed either.
	os.Remove(notes)
	os.WriteFile(notes, []byte("harmles!"), 0o644)
	for _, f := range files {
		if f.Path == "notes.md" {
			if _, err := agentskills.Open(f); !errors.Is(err, agentskills.ErrFileChanged) {
				t.Fatalf("Open of a replaced file = %v, want ErrFileChanged", err)
			}
		}
	}
}

// Push while another process keeps swapping a skill's file for a link to
// a secret and back: whatever each read gets, no archive ever holds the
// secret.
func TestPushTOCTOUNeverPublishesLinkedSecret(t *testing.T) {
	dir := writeSkill(t, t.TempDir(), "race-skill", "R.", "Body.", map[string]string{"notes.md": "harmless notes"})
	secret := filepath.Join(t.TempDir(), "secret")
	os.WriteFile(secret, []byte(token+" padded to a similar size"), 0o600)
	notes := filepath.Join(dir, "notes.md")
	tmpLink, tmpFile := filepath.Join(dir, ".swap-link"), filepath.Join(dir, ".swap-file")
	var stop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !stop.Load() {
			os.Symlink(secret, tmpLink)
			os.Rename(tmpLink, notes) // the file becomes a link to the secret
			os.WriteFile(tmpFile, []byte("harmless notes"), 0o644)
			os.Rename(tmpFile, notes) // and a file again
		}
	}()
	published, refused := 0, 0
	for range 300 {
		l, err := store.ReadSkill(dir, store.Config{})
		if err != nil {
			refused++
			continue
		}
		published++
		archivePaths(t, store.ArchiveOf(l)) // fails on the token
	}
	stop.Store(true)
	wg.Wait()
	t.Logf("300 reads under swapping: %d published (none with the secret), %d refused", published, refused)
}

// A skill folder holding hidden files and a version control folder has
// one digest whether it is pushed or served from disk (Load's digest, the
// files the provider hands out): both leave hidden files out. A push with
// hidden files asked for digests what it publishes, hidden files included.
func TestPushedAndServedFolderHaveOneDigest(t *testing.T) {
	srv := natstest.Start(t)
	root := t.TempDir()
	dir := writeSkill(t, root, "dotted", "Has hidden files.", "Body.", map[string]string{
		".env":           "TOKEN=x\n",
		".cache/data":    "cached",
		".git/HEAD":      "ref: refs/heads/main\n",
		"scripts/.keep":  "",
		"scripts/run.sh": "echo run\n",
	})
	pb := publisher(t, srv.JS, store.Config{})
	pushed := push(t, pb, skillstore.Global, false, dir)[0].Digest

	for _, noWatch := range []bool{false, true} {
		p, err := agentskills.New(agentskills.Config{CustomDirs: []string{root}, NoUserDir: true, NoWatch: noWatch})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		sk, err := p.Load(context.Background(), "dotted", catalog.Query{})
		if err != nil {
			t.Fatal(err)
		}
		if sk.Digest != pushed {
			t.Errorf("NoWatch %v: served from disk with digest %s, pushed with %s", noWatch, sk.Digest, pushed)
		}
		files, err := p.Files(context.Background(), "dotted", catalog.Query{}, 100, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		var sf []skillstore.File
		var paths []string
		for _, f := range files {
			sf = append(sf, skillstore.File{Path: f.Path, Data: f.Data})
			paths = append(paths, f.Path)
		}
		if d, err := skillstore.Digest(sf); err != nil || d != pushed || !slices.Equal(paths, []string{"SKILL.md", "scripts/run.sh"}) {
			t.Errorf("NoWatch %v: the provider hands out %v, digest %s (%v), pushed %s", noWatch, paths, d, err, pushed)
		}
	}
	if d, err := agentskills.Digest(dir); err != nil || d != pushed {
		t.Errorf("agentskills.Digest = %s (%v), pushed %s", d, err, pushed)
	}

	// --include-hidden: the digest is of what is published, hidden files
	// and all, and what is materialised hashes to it.
	withHidden, err := store.ReadSkillWith(dir, store.Config{}, store.ReadOptions{IncludeHidden: true})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := pb.Push(context.Background(), skillstore.Global, []store.Local{withHidden}, false)
	if err != nil {
		t.Fatal(err)
	}
	if cs[0].Action != store.Updated || cs[0].Digest == pushed {
		t.Fatalf("push with hidden files = %+v, want an update with another digest than %s", cs[0], pushed)
	}
	out := filepath.Join(t.TempDir(), "got")
	if err := pb.Materialize(context.Background(), cs[0].Digest, out); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(out, ".env")); err != nil {
		t.Errorf("materialised without .env: %v", err)
	}
	if d, err := skillstore.DigestDir(out, skillstore.Limits{}); err != nil || d != cs[0].Digest {
		t.Errorf("materialised folder digests to %s (%v), published %s", d, err, cs[0].Digest)
	}
}
