package client

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
	"github.com/skillstream/skillstream/providers/store"
)

// TestStoreSkillMaterialized: with a real processor serving the skill
// store, a call naming a resource directory returns only once the skill's
// files are there, read-only, under <resourceDir>/<name>/<digest's first 16
// hex>, as the result says; a second call leaves them as they are.
func TestStoreSkillMaterialized(t *testing.T) {
	w := newWorld(t)
	ctx := timeout(t)
	src := filepath.Join(t.TempDir(), "pdf")
	if err := os.MkdirAll(filepath.Join(src, "scripts"), 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"SKILL.md":          "---\nname: pdf\ndescription: Fill PDF forms.\n---\nRun scripts/fill.sh.\n",
		"scripts/fill.sh":   "#!/bin/sh\necho filled\n",
		"reference/form.md": "Field list.\n",
	}
	for rel, body := range files {
		path := filepath.Join(src, rel)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	pb, err := store.NewPublisher(ctx, w.srv.JS, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	local, err := store.ReadSkill(src, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pb.Push(ctx, skillstore.Global, []store.Local{local}, false); err != nil {
		t.Fatal(err)
	}
	sp, err := store.Open(ctx, w.srv.JS, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	fs, err := agentskills.New(agentskills.Config{NoUserDir: true})
	if err != nil {
		t.Fatal(err)
	}
	w.registry.Close()
	w.registry = providers.NewRegistry([]providers.Provider{fs, sp}, providers.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	t.Cleanup(func() { w.registry.Close() })
	w.startProcessor()

	c := w.client()
	resDir := t.TempDir()
	for _, call := range []string{"c1", "c2"} {
		r, err := c.CallSkill(ctx, events.SkillCall{Session: "st", Call: call, Args: events.SkillArgs{Name: "pdf"}, ResourceDir: resDir})
		if err != nil || r.IsError || r.Value == nil || r.Value.ResourceBase == nil {
			t.Fatalf("call %s: %+v, %v", call, r, err)
		}
		want := skillstore.ResourcePath(resDir, "pdf", local.Record.Digest)
		if r.Value.ResourceBase.Path != want || r.Value.Digest != local.Record.Digest {
			t.Fatalf("call %s: resource base %q digest %s, want %q %s", call, r.Value.ResourceBase.Path, r.Value.Digest, want, local.Record.Digest)
		}
		for rel, body := range files {
			got, err := os.ReadFile(filepath.Join(want, rel))
			if err != nil || string(got) != body {
				t.Fatalf("call %s: %s = %q, %v; want %q", call, rel, got, err, body)
			}
		}
		if digest, err := agentskills.Digest(want); err != nil || digest != local.Record.Digest {
			t.Fatalf("materialised folder digest %s, %v; want %s", digest, err, local.Record.Digest)
		}
		fi, err := os.Stat(filepath.Join(want, "scripts", "fill.sh"))
		if err != nil || fi.Mode().Perm()&0o222 != 0 {
			t.Fatalf("materialised file mode %v, %v: want read-only", fi.Mode(), err)
		}
	}
}
