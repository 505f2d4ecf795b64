package mcp_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/skillstream/skillstream/natstest"
)

// TestResyncReadsOnlyTheChange: with 40 folder skills and 10 store skills
// served (real files and file watches, an embedded NATS server), each
// change makes the server read the files of the skill it changed and of
// no other, and load none: a SKILL.md replaced on disk (seen through the
// watcher, by Run), a file below a skill folder rewritten in place, a
// skill pushed anew to the store, a skill added; a skill removed reads
// nothing.
func TestResyncReadsOnlyTheChange(t *testing.T) {
	f := newFixture(t, fixtureOpts{store: true, config: defaultResync()})
	var names []string
	for i := range 40 {
		n := "folder-" + strconv.Itoa(i)
		names = append(names, n)
		writeSkill(t, f.root, n, map[string]string{"SKILL.md": skillMD(n, "Folder skill "+strconv.Itoa(i)+".", "Body."), "refs/guide.md": "Guide " + n})
	}
	src := t.TempDir()
	var dirs []string
	for i := range 10 {
		n := "stored-" + strconv.Itoa(i)
		names = append(names, n)
		dirs = append(dirs, writeSkill(t, src, n, map[string]string{"SKILL.md": skillMD(n, "Stored skill "+strconv.Itoa(i)+".", "Body."), "data.txt": n}))
	}
	f.push(t, dirs...)
	f.waitFor(t, names...)
	// Settle: a few syncs with nothing changed read nothing.
	f.sync(t)
	files, loads := f.reg.files.Load(), f.reg.loads.Load()
	f.sync(t)
	f.sync(t)
	expect := func(what string, reads int64) {
		t.Helper()
		if n := f.reg.files.Load() - files; n != reads {
			t.Errorf("%s: %d skills' files read, want %d", what, n, reads)
		}
		if n := f.reg.loads.Load() - loads; n != 0 {
			t.Errorf("%s: %d skills loaded, want none", what, n)
		}
		files, loads = f.reg.files.Load(), f.reg.loads.Load()
	}
	expect("syncs with nothing changed", 0)

	// served waits until the entry of name satisfies ok.
	served := func(name string, ok func(entry) error) {
		t.Helper()
		natstest.Eventually(t, 20*time.Second, name+" served anew", func() error {
			e, err := find(f.listAll(t), name)
			if err != nil {
				return err
			}
			return ok(e)
		})
	}
	digestOf := func(path, data string) func(entry) error {
		return func(e entry) error {
			for _, r := range e.Resources {
				if r.URI == path {
					if r.Digest != sha([]byte(data)) {
						return fmt.Errorf("%s: digest %s", path, r.Digest)
					}
					return nil
				}
			}
			return fmt.Errorf("%s not in the manifest", path)
		}
	}

	// A SKILL.md replaced, as editors save: Run hears of it.
	md := skillMD("folder-7", "Folder skill seven, revised.", "New body.")
	replaceFile(t, filepath.Join(f.root, "folder-7", "SKILL.md"), md)
	served("folder-7", digestOf("skill://folder-7/SKILL.md", md))
	time.Sleep(300 * time.Millisecond) // any sync Run still makes for it
	expect("one SKILL.md replaced", 1)

	// A file below a skill folder rewritten in place (no listing event:
	// the sync is asked for).
	if err := os.WriteFile(filepath.Join(f.root, "folder-23", "refs", "guide.md"), []byte("Guide, revised."), 0o644); err != nil {
		t.Fatal(err)
	}
	served("folder-23", func(e entry) error {
		f.sync(t)
		return digestOf("skill://folder-23/refs/guide.md", "Guide, revised.")(e)
	})
	f.sync(t)
	expect("one nested file rewritten", 1)

	// A store skill pushed anew.
	writeSkill(t, src, "stored-3", map[string]string{"data.txt": "revised"})
	f.push(t, filepath.Join(src, "stored-3"))
	served("stored-3", digestOf("skill://stored-3/data.txt", "revised"))
	time.Sleep(300 * time.Millisecond)
	expect("one store skill pushed", 1)

	// A skill added, then one removed.
	writeSkill(t, f.root, "added", map[string]string{"SKILL.md": skillMD("added", "Added later.", "A.")})
	f.waitFor(t, "added")
	time.Sleep(300 * time.Millisecond)
	expect("one skill added", 1)
	if err := os.RemoveAll(filepath.Join(f.root, "folder-11")); err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 20*time.Second, "folder-11 gone", func() error {
		if _, err := find(f.listAll(t), "folder-11"); err == nil {
			return fmt.Errorf("still served")
		}
		return nil
	})
	f.sync(t)
	expect("one skill removed", 0)
}
