package skillstore

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/natstest"
)

// putSkill archives files into the object store under their digest, as a
// push would, and returns the digest.
func putSkill(t *testing.T, obs jetstream.ObjectStore, files map[string]string) string {
	t.Helper()
	var paths []string
	for rel := range files {
		paths = append(paths, rel)
	}
	sort.Strings(paths)
	// Written as Archive writes, without its path checks: the test's
	// names may be hostile.
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	h := NewHasher()
	for _, rel := range paths {
		body := []byte(files[rel])
		if err := h.Add(rel, int64(len(body)), bytes.NewReader(body)); err != nil {
			t.Fatal(err)
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: rel, Size: int64(len(body)), Mode: 0o644, Format: tar.FormatPAX}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	data, digest := buf.Bytes(), h.Sum()
	if _, err := obs.PutBytes(context.Background(), digest, data); err != nil {
		t.Fatal(err)
	}
	return digest
}

func objectStore(t *testing.T) jetstream.ObjectStore {
	t.Helper()
	srv := natstest.Start(t)
	obs, err := srv.JS.CreateObjectStore(context.Background(), jetstream.ObjectStoreConfig{Bucket: DefaultObjects})
	if err != nil {
		t.Fatal(err)
	}
	return obs
}

// TestMaterializeRefusesControlCharacters: a skill whose file names hold
// control characters (a newline, a terminal escape) is not written at
// all, and leaves nothing behind.
func TestMaterializeRefusesControlCharacters(t *testing.T) {
	obs := objectStore(t)
	ctx := context.Background()
	for name, bad := range map[string]string{
		"newline":   "scripts/run\n.sh",
		"escape":    "\x1b[2Jclear.md",
		"DEL":       "notes\x7f.md",
		"not UTF-8": "notes\xff.md",
	} {
		digest := putSkill(t, obs, map[string]string{"SKILL.md": "---\nname: x\ndescription: X.\n---\nBody.\n", bad: "data"})
		parent := t.TempDir()
		dir := filepath.Join(parent, "x", digest[:16])
		err := Materialize(ctx, obs, digest, dir, Limits{})
		if !errors.Is(err, ErrBadArchive) {
			t.Errorf("%s: %v, want ErrBadArchive", name, err)
		}
		if entries, _ := os.ReadDir(filepath.Join(parent, "x")); len(entries) != 0 {
			t.Errorf("%s: left %d entries behind", name, len(entries))
		}
	}
	good := putSkill(t, obs, map[string]string{"SKILL.md": "---\nname: x\ndescription: X.\n---\nBody.\n", "ünïcode name.md": "fine"})
	if err := Materialize(ctx, obs, good, filepath.Join(t.TempDir(), "x", good[:16]), Limits{}); err != nil {
		t.Errorf("a name with letters beyond ASCII: %v", err)
	}
}

// TestMaterializeRemovesLeftovers: the temporary folder a killed
// materialisation left (its process gone, or older than an hour) is
// removed by the next materialisation beside it; one of a process still
// materialising is left alone.
func TestMaterializeRemovesLeftovers(t *testing.T) {
	obs := objectStore(t)
	digest := putSkill(t, obs, map[string]string{"SKILL.md": "---\nname: x\ndescription: X.\n---\nBody.\n"})
	parent := filepath.Join(t.TempDir(), "x")

	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	leftover := func(pid int, suffix string, age time.Duration) string {
		d := filepath.Join(parent, ".0123456789abcdef.tmp-"+strconv.Itoa(pid)+"-"+suffix)
		if err := os.MkdirAll(filepath.Join(d, "scripts"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "scripts", "a.sh"), []byte("x"), 0o444); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{filepath.Join(d, "scripts"), d} {
			if err := os.Chmod(p, 0o555); err != nil { // as a materialisation leaves it before its rename
				t.Fatal(err)
			}
		}
		when := time.Now().Add(-age)
		if err := os.Chtimes(d, when, when); err != nil {
			t.Fatal(err)
		}
		return d
	}
	killed := leftover(gone.Process.Pid, "1", 0)
	old := leftover(os.Getpid(), "2", 2*staleTemp)
	busy := leftover(os.Getpid(), "3", 0)
	t.Cleanup(func() { removeTree(busy) })
	// Names that only look like temporary folders are left alone.
	var others []string
	for _, name := range []string{".x.tmp-", ".x.tmp-abc-1", ".x.tmp--1", ".x.tmp-0-1", "x.tmp-1-1", ".tmp-1-1"} {
		d := filepath.Join(parent, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		others = append(others, d)
	}
	if err := os.WriteFile(filepath.Join(parent, ".y.tmp-1-1"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	others = append(others, filepath.Join(parent, ".y.tmp-1-1"))

	dir := filepath.Join(parent, digest[:16])
	if err := Materialize(context.Background(), obs, digest, dir, Limits{}); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{killed, old} {
		if _, err := os.Stat(d); !os.IsNotExist(err) {
			t.Errorf("leftover %s not removed: %v", filepath.Base(d), err)
		}
	}
	for _, d := range others {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s: %v, want it left alone", filepath.Base(d), err)
		}
	}
	if _, err := os.Stat(busy); err != nil {
		t.Errorf("the folder of a running materialisation was removed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "SKILL.md")); err != nil {
		t.Errorf("materialised: %v", err)
	}
}

// TestMaterializeExistingFolder: a folder holding exactly the skill's
// files is left as it is; one holding anything else — other files, a
// symbolic link in place of a file, a file in place of the folder — is
// refused with ErrExists and not changed.
func TestMaterializeExistingFolder(t *testing.T) {
	obs := objectStore(t)
	ctx := context.Background()
	files := map[string]string{"SKILL.md": "---\nname: x\ndescription: X.\n---\nBody.\n", "scripts/run.sh": "echo hi\n"}
	digest := putSkill(t, obs, files)
	res := t.TempDir()
	t.Cleanup(func() { removeTree(res) })
	dir := ResourcePath(res, "x", digest)
	for range 2 {
		if err := Materialize(ctx, obs, digest, dir, Limits{}); err != nil {
			t.Fatal(err)
		}
	}
	if got, err := DigestDir(dir, Limits{}); err != nil || got != digest {
		t.Fatalf("DigestDir = %s, %v; want %s", got, err, digest)
	}
	if fi, err := os.Stat(filepath.Join(dir, "scripts", "run.sh")); err != nil || fi.Mode().Perm()&0o222 != 0 {
		t.Fatalf("materialised file %v, %v: want read-only", fi, err)
	}

	// The same files, SKILL.md a symbolic link to a copy outside.
	linked := filepath.Join(res, "linked")
	outside := filepath.Join(t.TempDir(), "SKILL.md")
	os.WriteFile(outside, []byte(files["SKILL.md"]), 0o644)
	os.MkdirAll(filepath.Join(linked, "scripts"), 0o755)
	os.WriteFile(filepath.Join(linked, "scripts", "run.sh"), []byte(files["scripts/run.sh"]), 0o644)
	if err := os.Symlink(outside, filepath.Join(linked, "SKILL.md")); err != nil {
		t.Fatal(err)
	}
	asFile := filepath.Join(res, "file")
	os.WriteFile(asFile, []byte("x"), 0o644)
	other := filepath.Join(res, "other")
	os.MkdirAll(other, 0o755)
	os.WriteFile(filepath.Join(other, "x"), []byte("x"), 0o644)
	for _, d := range []string{linked, asFile, other} {
		if err := Materialize(ctx, obs, digest, d, Limits{}); !errors.Is(err, ErrExists) {
			t.Errorf("%s: %v, want ErrExists", filepath.Base(d), err)
		}
	}
	if fi, err := os.Lstat(filepath.Join(linked, "SKILL.md")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("the refused folder was changed: %v, %v", fi, err)
	}
}

// Garbage digests and missing objects are clear errors, and write nothing.
func TestMaterializeRefusesGarbage(t *testing.T) {
	obs := objectStore(t)
	ctx := context.Background()
	res := t.TempDir()
	for _, d := range []string{"", "../../etc", strings.Repeat("A", 64), strings.Repeat("0", 63), strings.Repeat("0", 65), strings.Repeat("g", 64)} {
		if err := Materialize(ctx, obs, d, filepath.Join(res, "x"), Limits{}); err == nil || !strings.Contains(err.Error(), "64 lowercase hex") {
			t.Errorf("digest %q: %v", d, err)
		}
		if _, err := Fetch(ctx, obs, d, Limits{}); !errors.Is(err, ErrBadArchive) {
			t.Errorf("Fetch %q: %v, want ErrBadArchive", d, err)
		}
	}
	missing := strings.Repeat("0", 64)
	if err := Materialize(ctx, obs, missing, filepath.Join(res, "x"), Limits{}); !errors.Is(err, ErrObjectMissing) {
		t.Errorf("missing object: %v, want ErrObjectMissing", err)
	}
	if entries, _ := os.ReadDir(res); len(entries) != 0 {
		t.Errorf("left %d entries behind", len(entries))
	}
}
