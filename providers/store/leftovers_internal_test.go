package store

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/providers/agentskills"
)

// putSkill packs the files of src (written from files) into the object
// store under their digest, as a push would, and returns the digest.
func putSkill(t *testing.T, obs jetstream.ObjectStore, files map[string]string) string {
	t.Helper()
	src := t.TempDir()
	var list []agentskills.File
	for rel, body := range files {
		p := filepath.Join(src, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		list = append(list, agentskills.File{Path: rel, Size: int64(len(body)), Source: p})
	}
	slices.SortFunc(list, func(a, b agentskills.File) int { return strings.Compare(a.Path, b.Path) })
	data, digest, err := pack(list)
	if err != nil {
		t.Fatal(err)
	}
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
		"newline": "scripts/run\n.sh",
		"escape":  "\x1b[2Jclear.md",
		"DEL":     "notes\x7f.md",
	} {
		digest := putSkill(t, obs, map[string]string{"SKILL.md": "---\nname: x\ndescription: X.\n---\nBody.\n", bad: "data"})
		parent := t.TempDir()
		dir := filepath.Join(parent, "x", digest[:16])
		err := materialize(ctx, obs, Config{}.withDefaults(), digest, dir)
		if !errors.Is(err, ErrBadArchive) {
			t.Errorf("%s: %v, want ErrBadArchive", name, err)
		}
		if entries, _ := os.ReadDir(filepath.Join(parent, "x")); len(entries) != 0 {
			t.Errorf("%s: left %d entries behind", name, len(entries))
		}
	}
	good := putSkill(t, obs, map[string]string{"SKILL.md": "---\nname: x\ndescription: X.\n---\nBody.\n", "ünïcode name.md": "fine"})
	if err := materialize(ctx, obs, Config{}.withDefaults(), good, filepath.Join(t.TempDir(), "x", good[:16])); err != nil {
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
	if err := materialize(context.Background(), obs, Config{}.withDefaults(), digest, dir); err != nil {
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
