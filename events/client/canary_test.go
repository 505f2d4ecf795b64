package client

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
	"github.com/skillstream/skillstream/providers/store"
)

// TestStoreCanaryMaterialized: with a real processor serving a store
// skill released to half of the sessions, a session in the canary
// materialises the candidate's files and a session outside it the
// stable's, each under its own digest, as the result names them.
func TestStoreCanaryMaterialized(t *testing.T) {
	w := newWorld(t)
	ctx := timeout(t)
	src := filepath.Join(t.TempDir(), "pdf")
	write := func(script string) store.Local {
		t.Helper()
		for rel, body := range map[string]string{
			"SKILL.md":        "---\nname: pdf\ndescription: Fill PDF forms.\n---\nRun scripts/fill.sh.\n",
			"scripts/fill.sh": script,
		} {
			path := filepath.Join(src, rel)
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		local, err := store.ReadSkill(src, store.Config{})
		if err != nil {
			t.Fatal(err)
		}
		return local
	}
	pb, err := store.NewPublisher(ctx, w.srv.JS, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	stable := write("#!/bin/sh\necho stable\n")
	if _, err := pb.Push(ctx, skillstore.Global, []store.Local{stable}, false); err != nil {
		t.Fatal(err)
	}
	candidate := write("#!/bin/sh\necho candidate\n")
	if _, err := pb.PushWith(ctx, skillstore.Global, []store.Local{candidate}, store.PushOptions{Draft: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := pb.Release(ctx, skillstore.Global, "pdf", 2, 5000, "test"); err != nil {
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

	rel := catalog.Release{Name: "pdf", Candidate: candidate.Record.Digest, Share: 5000}
	c := w.client()
	resDir := t.TempDir()
	seen := map[bool]bool{}
	for i := 0; len(seen) < 2 && i < 50; i++ {
		sid := "canary-" + strconv.Itoa(i)
		in := catalog.InCanary("", sid, rel)
		if seen[in] {
			continue
		}
		seen[in] = true
		want, script, channel := stable, "stable", catalog.ChannelStable
		if in {
			want, script, channel = candidate, "candidate", catalog.ChannelCanary
		}
		r, err := c.CallSkill(ctx, events.SkillCall{Session: sid, Call: "c1", Args: events.SkillArgs{Name: "pdf"}, ResourceDir: resDir})
		if err != nil || r.IsError || r.Value == nil || r.Value.ResourceBase == nil {
			t.Fatalf("%s: %+v, %v", sid, r, err)
		}
		path := skillstore.ResourcePath(resDir, "pdf", want.Record.Digest)
		if r.Value.Digest != want.Record.Digest || r.Value.Channel != channel || r.Value.ResourceBase.Path != path {
			t.Fatalf("%s (in the canary: %v): digest %s channel %q at %q; want %s %q at %q", sid, in,
				r.Value.Digest, r.Value.Channel, r.Value.ResourceBase.Path, want.Record.Digest, channel, path)
		}
		got, err := os.ReadFile(filepath.Join(path, "scripts", "fill.sh"))
		if err != nil || string(got) != "#!/bin/sh\necho "+script+"\n" {
			t.Fatalf("%s: scripts/fill.sh = %q, %v; want the %s's", sid, got, err, script)
		}
		if digest, err := agentskills.Digest(path); err != nil || digest != want.Record.Digest {
			t.Fatalf("%s: materialised folder digest %s, %v; want %s", sid, digest, err, want.Record.Digest)
		}
	}
	if len(seen) != 2 {
		t.Fatalf("50 sessions all on one side of a 50%% canary: %v", seen)
	}
}
