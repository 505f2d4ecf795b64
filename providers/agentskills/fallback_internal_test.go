package agentskills

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers"
)

// TestWatchFailureFallsBackToStat: when a watch cannot be added (here: the
// kernel's watch limit), the folder is validated by stat on every List and
// Changes says "do not cache", so nothing stale is ever served.
func TestWatchFailureFallsBackToStat(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "a", SkillFile)
	writeFile(t, file, "---\nname: a\ndescription: one\n---\n")
	p, err := New(Config{CustomDirs: []string{root}, NoUserDir: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.w == nil {
		t.Fatalf("watcher did not start: %v", p.watchErr)
	}
	add := p.addWatch
	p.addWatch = func(path string) error {
		if strings.HasPrefix(path, filepath.Join(root, "a")) {
			return syscall.ENOSPC
		}
		return add(path)
	}
	ctx := context.Background()
	desc := func() string {
		cs, err := p.List(ctx, catalog.At(""))
		if err != nil || len(cs) != 1 {
			t.Fatalf("List = %v, %v", cs, err)
		}
		return cs[0].Description
	}
	if got := desc(); got != "one" {
		t.Fatalf("description %q", got)
	}
	ch := p.Changes(catalog.At(""))
	select {
	case <-ch:
	default:
		t.Fatal("Changes returned an open channel although a watch failed")
	}
	reads := p.Stats().Reads
	desc()
	if p.Stats().Reads != reads {
		t.Error("unchanged file re-read under stat validation")
	}
	writeFile(t, file, "---\nname: a\ndescription: two\n---\n")
	// No waiting: stat validation sees the edit on the next List.
	if got := desc(); got != "two" {
		t.Fatalf("after edit: description %q, want two", got)
	}
	// Once watches work again, the provider is trusted again.
	p.addWatch = add
	desc()
	select {
	case <-p.Changes(catalog.At("")):
		t.Error("Changes still closed after watching recovered")
	default:
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestUnwatchableAncestorIsTolerated: a folder above a skills folder that
// cannot be watched (here: permission denied) does not stop the folder
// itself from being watched and cached.
func TestUnwatchableAncestorIsTolerated(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "locked", "skills")
	file := filepath.Join(root, "a", SkillFile)
	writeFile(t, file, "---\nname: a\ndescription: one\n---\n")
	p, err := New(Config{CustomDirs: []string{root}, NoUserDir: true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if p.w == nil {
		t.Fatalf("watcher did not start: %v", p.watchErr)
	}
	add := p.addWatch
	p.addWatch = func(path string) error {
		if path == base {
			return syscall.EACCES
		}
		return add(path)
	}
	ctx := context.Background()
	if cs, err := p.List(ctx, catalog.Query{}); err != nil || len(cs) != 1 {
		t.Fatalf("List = %v, %v", cs, err)
	}
	if providers.Closed(p.Changes(catalog.Query{})) {
		t.Fatal("an unwatchable folder above the skills folder made it unwatched")
	}
	ch := p.Changes(catalog.Query{})
	writeFile(t, file, "---\nname: a\ndescription: two\n---\n")
	select { // the edit is still seen
	case <-ch:
	case <-time.After(10 * time.Second):
		t.Fatal("the edit was not announced within 10s")
	}
}
