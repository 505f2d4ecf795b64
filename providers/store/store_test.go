package store_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
	"github.com/skillstream/skillstream/providers/providertest"
	"github.com/skillstream/skillstream/providers/store"
)

// writeSkill writes a skill folder <root>/<name> with SKILL.md and extra
// files, and returns its path.
func writeSkill(t testing.TB, root, name, desc, body string, extra map[string]string) string {
	t.Helper()
	dir := filepath.Join(root, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	md := fmt.Sprintf("---\nname: %s\ndescription: %q\n---\n%s\n", name, desc, body)
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	for p, data := range extra {
		fp := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(fp), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(fp, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func publisher(t testing.TB, js jetstream.JetStream, cfg store.Config) *store.Publisher {
	t.Helper()
	pb, err := store.NewPublisher(context.Background(), js, cfg)
	if err != nil {
		t.Fatalf("NewPublisher: %v", err)
	}
	return pb
}

func push(t testing.TB, pb *store.Publisher, scope skillstore.Scope, prune bool, dirs ...string) []store.Change {
	t.Helper()
	var ls []store.Local
	for _, d := range dirs {
		l, err := store.ReadSkill(d, store.Config{})
		if err != nil {
			t.Fatalf("ReadSkill %s: %v", d, err)
		}
		ls = append(ls, l)
	}
	cs, err := pb.Push(context.Background(), scope, ls, prune)
	if err != nil {
		t.Fatalf("Push: %v", err)
	}
	return cs
}

func open(t testing.TB, js jetstream.JetStream, cfg store.Config) *store.Provider {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p, err := store.Open(ctx, js, cfg)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// eventually polls cond until it holds or 30 s pass. The ceiling is
// generous on purpose: after a cluster node is lost, a watch is noticed
// stalled and started again, and stream leaders are elected, which on a
// loaded 2-core machine under -race has taken over 10 s. How long the wait
// took is logged (go test -v) for when the ceiling is reached all the same.
func eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s after %v", what, time.Since(start).Round(time.Millisecond))
		}
		time.Sleep(5 * time.Millisecond) // polling interval, not synchronisation
	}
	if d := time.Since(start); d > time.Second {
		t.Logf("waited %v for %s", d.Round(time.Millisecond), what)
	}
}

func names(s catalog.Snapshot) []string {
	var out []string
	for _, sk := range s.Skills {
		out = append(out, sk.Name)
	}
	return out
}

func TestConformance(t *testing.T) {
	srv := natstest.Start(t)
	n := 0
	providertest.Run(t, func(t *testing.T, seeds []providertest.Seed) providertest.Harness {
		n++
		cfg := store.Config{Bucket: fmt.Sprintf("C%d", n), Objects: fmt.Sprintf("C%d", n)}
		pb := publisher(t, srv.JS, cfg)
		root := t.TempDir()
		for _, s := range seeds {
			push(t, pb, skillstore.Global, false, writeSkill(t, root, s.Name, s.Description, s.Body, nil))
		}
		p := open(t, srv.JS, cfg)
		return providertest.Harness{
			Provider: p,
			Add: func(t testing.TB, s providertest.Seed) {
				push(t, pb, skillstore.Global, false, writeSkill(t, root, s.Name, s.Description, s.Body, nil))
			},
			Remove: func(t testing.TB, name string) {
				if _, err := pb.Remove(context.Background(), skillstore.Global, name); err != nil {
					t.Fatalf("Remove: %v", err)
				}
			},
		}
	})
}

func TestTwoRegistriesConvergeAfterPush(t *testing.T) {
	srv := natstest.Start(t)
	pb := publisher(t, srv.JS, store.Config{})
	root := t.TempDir()
	push(t, pb, skillstore.Global, false, writeSkill(t, root, "a-skill", "A.", "Body A.", nil))
	regs := make([]*providers.Registry, 2)
	for i := range regs {
		js, _ := jetstream.New(srv.Connect())
		regs[i] = providers.NewRegistry([]providers.Provider{open(t, js, store.Config{})})
		t.Cleanup(func() { regs[i].Close() })
	}
	ctx := context.Background()
	for i, r := range regs {
		s, err := r.Snapshot(ctx, catalog.Query{})
		if err != nil || !s.Complete || !slices.Equal(names(s), []string{"a-skill"}) || s.Revision == 0 {
			t.Fatalf("member %d first snapshot = %v complete %v rev %d, %v", i, names(s), s.Complete, s.Revision, err)
		}
	}
	cs := push(t, pb, skillstore.Global, false, writeSkill(t, root, "b-skill", "B.", "Body B.", nil))
	if len(cs) != 1 || cs[0].Action != store.Added {
		t.Fatalf("push = %+v", cs)
	}
	for i, r := range regs {
		eventually(t, fmt.Sprintf("member %d to see b-skill", i), func() bool {
			s, err := r.Snapshot(ctx, catalog.Query{})
			return err == nil && s.Complete && slices.Equal(names(s), []string{"a-skill", "b-skill"}) && s.Revision >= cs[0].Revision
		})
		if err := r.CatchUp(ctx, cs[0].Revision); err != nil {
			t.Fatalf("CatchUp: %v", err)
		}
	}
}

func TestPushTwiceWritesNothingAndUpdateKeepsOldRevision(t *testing.T) {
	srv := natstest.Start(t)
	pb := publisher(t, srv.JS, store.Config{})
	root := t.TempDir()
	dir := writeSkill(t, root, "a-skill", "A.", "Version one.", map[string]string{"ref/notes.txt": "notes"})
	first := push(t, pb, skillstore.Global, false, dir)
	again := push(t, pb, skillstore.Global, false, dir)
	if first[0].Action != store.Added || again[0].Action != store.Unchanged || again[0].Revision != first[0].Revision {
		t.Fatalf("first %+v, again %+v", first, again)
	}
	h, err := pb.History(context.Background(), skillstore.Global, "a-skill")
	if err != nil || len(h) != 1 {
		t.Fatalf("history after two identical pushes = %d revisions, %v; want 1", len(h), err)
	}
	want, err := agentskills.Digest(dir)
	if err != nil || first[0].Digest != want {
		t.Fatalf("pushed digest %s, folder digest %s (%v)", first[0].Digest, want, err)
	}

	writeSkill(t, root, "a-skill", "A.", "Version two.", nil)
	upd := push(t, pb, skillstore.Global, false, dir)
	if upd[0].Action != store.Updated || upd[0].Revision <= first[0].Revision || upd[0].Digest == first[0].Digest {
		t.Fatalf("update = %+v after %+v", upd, first)
	}
	old, err := pb.Get(context.Background(), skillstore.Global, "a-skill", store.At{Store: first[0].Revision})
	if err != nil || old.Record.Digest != first[0].Digest {
		t.Fatalf("old revision = %+v, %v", old, err)
	}
	out := filepath.Join(t.TempDir(), "old")
	if err := pb.Materialize(context.Background(), old.Record.Digest, out); err != nil {
		t.Fatalf("Materialize old revision: %v", err)
	}
	t.Cleanup(func() { makeWritable(out) })
	data, err := os.ReadFile(filepath.Join(out, "SKILL.md"))
	if err != nil || !strings.Contains(string(data), "Version one.") {
		t.Fatalf("old SKILL.md = %q, %v", data, err)
	}

	p := open(t, srv.JS, store.Config{})
	sk, err := p.Load(context.Background(), "a-skill", catalog.Query{})
	if err != nil || sk.Content != "Version two." || sk.Digest != upd[0].Digest || sk.Revision != upd[0].Revision {
		t.Fatalf("Load = %q digest %s rev %d, %v", sk.Content, sk.Digest, sk.Revision, err)
	}
}

func makeWritable(root string) {
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil {
			os.Chmod(p, 0o755)
		}
		return nil
	})
}

func TestRacingPublishersGetChangedSinceRead(t *testing.T) {
	srv := natstest.Start(t)
	pb := publisher(t, srv.JS, store.Config{})
	root := t.TempDir()
	dir := writeSkill(t, root, "a-skill", "A.", "One.", nil)
	push(t, pb, skillstore.Global, false, dir)
	// The second publisher read revision r; the first writes meanwhile.
	writeSkill(t, root, "a-skill", "A.", "Two.", nil)
	l2, err := store.ReadSkill(dir, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	kv, err := srv.JS.KeyValue(context.Background(), skillstore.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	e, _ := kv.Get(context.Background(), "global.a-skill")
	writeSkill(t, root, "a-skill", "A.", "Three.", nil)
	push(t, pb, skillstore.Global, false, dir)
	if _, err := kv.Update(context.Background(), "global.a-skill", []byte("{}"), e.Revision()); err == nil {
		t.Fatal("stale update succeeded")
	}
	// Through Push: a concurrent write between its read and its write.
	stale := publisherWithHook(t, srv.JS, func() {
		writeSkill(t, root, "a-skill", "A.", "Four.", nil)
		push(t, pb, skillstore.Global, false, dir)
	})
	_, err = stale.Push(context.Background(), skillstore.Global, []store.Local{l2}, false)
	if !errors.Is(err, store.ErrChanged) || !strings.Contains(err.Error(), "changed since read") {
		t.Fatalf("racing push = %v, want ErrChanged", err)
	}
}

func TestPushRefusesBadSkills(t *testing.T) {
	root := t.TempDir()
	outside := filepath.Join(t.TempDir(), "secret.txt")
	os.WriteFile(outside, []byte("secret"), 0o644)
	link := writeSkill(t, root, "link-out", "L.", "B.", nil)
	if err := os.Symlink(outside, filepath.Join(link, "secret.txt")); err != nil {
		t.Fatal(err)
	}
	big := writeSkill(t, root, "big-file", "B.", "B.", nil)
	os.WriteFile(filepath.Join(big, "blob.bin"), make([]byte, 2048), 0o644)
	many := writeSkill(t, root, "many-files", "M.", "B.", nil)
	for i := range 10000 {
		os.WriteFile(filepath.Join(many, fmt.Sprintf("f%05d", i)), nil, 0o644)
	}
	badName := writeSkill(t, root, "bad-name", "N.", "B.", nil)
	os.WriteFile(filepath.Join(badName, "SKILL.md"), []byte("---\nname: Bad_Name\ndescription: x\n---\nB.\n"), 0o644)
	differs := writeSkill(t, root, "folder-name", "D.", "B.", nil)
	os.WriteFile(filepath.Join(differs, "SKILL.md"), []byte("---\nname: other-name\ndescription: x\n---\nB.\n"), 0o644)
	// What the Agent Skills spec refuses, though serve serves it.
	longDesc := writeSkill(t, root, "long-desc", strings.Repeat("d", 1025), "B.", nil)
	longCompat := writeSkill(t, root, "long-compat", "C.", "B.", nil)
	os.WriteFile(filepath.Join(longCompat, "SKILL.md"), []byte("---\nname: long-compat\ndescription: x\ncompatibility: "+strings.Repeat("c", 501)+"\n---\nB.\n"), 0o644)
	upper := writeSkill(t, root, "upper", "U.", "B.", nil)
	os.Rename(filepath.Join(upper, "SKILL.md"), filepath.Join(upper, "Skill.md"))
	lower := writeSkill(t, root, "lower", "L.", "B.", nil)
	os.Rename(filepath.Join(lower, "SKILL.md"), filepath.Join(lower, "skill.md"))
	cfg := store.Config{MaxBytes: 1024}
	for _, tc := range []struct{ dir, want string }{
		{link, "leaves the skill folder"},
		{big, "over the limit of 1024"},
		{many, "more than 1000 files"},
		{badName, "name"},
		{differs, `name "other-name" differs from its folder name "folder-name"; the Agent Skills spec requires them to be equal`},
		{upper, upper + "/Skill.md: file is named Skill.md: a skill's file must be named exactly SKILL.md"},
		{lower, lower + "/skill.md: file is named skill.md: a skill's file must be named exactly SKILL.md"},
		{filepath.Join(lower, "skill.md"), "file is named skill.md: a skill's file must be named exactly SKILL.md"},
	} {
		_, err := store.ReadSkill(tc.dir, cfg)
		if !errors.Is(err, store.ErrInvalidSkill) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReadSkill %s = %v, want an ErrInvalidSkill saying %q", filepath.Base(tc.dir), err, tc.want)
		}
	}
	for _, tc := range []struct{ dir, want string }{
		{longDesc, "description is 1025 characters; the Agent Skills spec allows at most 1024"},
		{longCompat, "compatibility is 501 characters; the Agent Skills spec allows at most 500"},
	} {
		_, err := store.ReadSkill(tc.dir, store.Config{})
		if !errors.Is(err, store.ErrInvalidSkill) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ReadSkill %s = %v, want an ErrInvalidSkill saying %q", filepath.Base(tc.dir), err, tc.want)
		}
	}
}

func TestMalformedEntrySkippedDeletedObjectIsProviderError(t *testing.T) {
	srv := natstest.Start(t)
	pb := publisher(t, srv.JS, store.Config{})
	root := t.TempDir()
	cs := push(t, pb, skillstore.Global, false,
		writeSkill(t, root, "a-skill", "A.", "Body A.", nil), writeSkill(t, root, "b-skill", "B.", "Body B.", nil))
	kv, _ := srv.JS.KeyValue(context.Background(), skillstore.DefaultBucket)
	for key, val := range map[string]string{
		"global.bad-json":     "{not json",
		"global.wrong-name":   `{"name":"other","description":"x","digest":"` + cs[0].Digest + `","object":"` + cs[0].Digest + `","size":1,"files":1}`,
		"global.Upper":        `{}`,
		"something.else.here": `{}`,
	} {
		if _, err := kv.Put(context.Background(), key, []byte(val)); err != nil {
			t.Fatal(err)
		}
	}
	var logs syncBuilder
	p := open(t, srv.JS, store.Config{Logger: newLogger(&logs)})
	reg := providers.NewRegistry([]providers.Provider{p})
	defer reg.Close()
	s, err := reg.Snapshot(context.Background(), catalog.Query{})
	if err != nil || !s.Complete || !slices.Equal(names(s), []string{"a-skill", "b-skill"}) {
		t.Fatalf("snapshot = %v complete %v, %v", names(s), s.Complete, err)
	}
	if strings.Count(logs.String(), "skill index entry skipped") != 4 {
		t.Errorf("log:\n%s", logs.String())
	}
	reg.Snapshot(context.Background(), catalog.Query{Project: "x"})
	if strings.Count(logs.String(), "skill index entry skipped") != 4 {
		t.Errorf("skipped entries logged more than once:\n%s", logs.String())
	}

	obs, _ := srv.JS.ObjectStore(context.Background(), skillstore.DefaultObjects)
	if err := obs.Delete(context.Background(), cs[1].Digest); err != nil {
		t.Fatal(err)
	}
	_, err = reg.Load(context.Background(), "b-skill", catalog.Query{})
	if !errors.Is(err, skillstore.ErrObjectMissing) || errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("Load of a skill whose object is gone = %v, want ErrObjectMissing", err)
	}
	s2, err := reg.Snapshot(context.Background(), catalog.Query{})
	if err != nil || !s2.Complete || !slices.Equal(names(s2), names(s)) {
		t.Fatalf("catalog changed after a failed load: %v complete %v", names(s2), s2.Complete)
	}
	if _, err := reg.Load(context.Background(), "a-skill", catalog.Query{}); err != nil {
		t.Fatalf("other skill: %v", err)
	}
}

func TestScopesRanksAndResourceBase(t *testing.T) {
	srv := natstest.Start(t)
	pb := publisher(t, srv.JS, store.Config{})
	root, proot := t.TempDir(), t.TempDir()
	gl := push(t, pb, skillstore.Global, false, writeSkill(t, root, "a-skill", "Global.", "Global body.", nil))
	proj, _ := skillstore.Project("team-1")
	pr := push(t, pb, proj, false, writeSkill(t, proot, "a-skill", "Project.", "Project body.", nil))
	p := open(t, srv.JS, store.Config{})
	reg := providers.NewRegistry([]providers.Provider{p})
	defer reg.Close()
	ctx := context.Background()
	sk, err := reg.Load(ctx, "a-skill", catalog.Query{Project: "team-1", ResourceDir: "/work/res"})
	if err != nil || sk.Content != "Project body." || sk.Source != catalog.SourceStoreProject || sk.Digest != pr[0].Digest {
		t.Fatalf("project load = %+v, %v", sk, err)
	}
	if want := "/work/res/a-skill/" + pr[0].Digest[:16]; sk.ResourceBase == nil || sk.ResourceBase.Path != want {
		t.Fatalf("resource base %+v, want %s", sk.ResourceBase, want)
	}
	sk, err = reg.Load(ctx, "a-skill", catalog.Query{Project: "other"})
	if err != nil || sk.Content != "Global body." || sk.Source != catalog.SourceStoreGlobal || sk.ResourceBase != nil || sk.Digest != gl[0].Digest {
		t.Fatalf("global load = %+v, %v", sk, err)
	}
	rep := reg.Inspect(ctx, catalog.Query{Project: "team-1"})
	if len(rep.Shadowed) != 1 || rep.Shadowed[0].Candidate.Source != catalog.SourceStoreGlobal {
		t.Fatalf("shadowed = %+v", rep.Shadowed)
	}
}

func TestStoppedServerIncompleteThenRecovers(t *testing.T) {
	dir := t.TempDir()
	srv := startTCP(t, dir, 0)
	port := srv.port
	nc := connectTCP(t, srv.url)
	js, _ := jetstream.New(nc)
	pb := publisher(t, js, store.Config{})
	root := t.TempDir()
	push(t, pb, skillstore.Global, false, writeSkill(t, root, "a-skill", "A.", "Body.", nil))
	p := open(t, js, store.Config{})
	reg := providers.NewRegistry([]providers.Provider{p})
	defer reg.Close()
	ctx := context.Background()
	if s, _ := reg.Snapshot(ctx, catalog.Query{}); !s.Complete {
		t.Fatal("first snapshot incomplete")
	}
	srv.stop()
	eventually(t, "an incomplete snapshot that still lists a-skill", func() bool {
		s, err := reg.Snapshot(ctx, catalog.Query{})
		return err == nil && !s.Complete && slices.Equal(names(s), []string{"a-skill"})
	})
	srv = startTCP(t, dir, port)
	eventually(t, "a complete snapshot after the server is back", func() bool {
		s, err := reg.Snapshot(ctx, catalog.Query{})
		return err == nil && s.Complete && slices.Equal(names(s), []string{"a-skill"})
	})
	push(t, pb, skillstore.Global, false, writeSkill(t, root, "b-skill", "B.", "Body.", nil))
	eventually(t, "the watch to follow new publishes", func() bool {
		s, err := reg.Snapshot(ctx, catalog.Query{})
		return err == nil && s.Complete && len(s.Skills) == 2
	})
}

func TestClusterR3SurvivesNodeLoss(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	cfg := store.Config{Replicas: 3}
	js0, _ := jetstream.New(c.Connect(0))
	pb := publisher(t, js0, cfg)
	root := t.TempDir()
	push(t, pb, skillstore.Global, false, writeSkill(t, root, "a-skill", "A.", "Body.", nil))
	var regs []*providers.Registry
	for i := range 3 {
		js, _ := jetstream.New(c.Connect(i))
		r := providers.NewRegistry([]providers.Provider{open(t, js, cfg)})
		t.Cleanup(func() { r.Close() })
		regs = append(regs, r)
	}
	victim := 2
	jsSurvivor, _ := jetstream.New(c.Connect(1))
	pb2 := publisher(t, jsSurvivor, cfg)
	c.Stop(victim)
	eventually(t, "a push after the node loss", func() bool {
		var ls []store.Local
		l, err := store.ReadSkill(writeSkill(t, root, "b-skill", "B.", "Body.", nil), store.Config{})
		if err != nil {
			return false
		}
		ls = append(ls, l)
		_, err = pb2.Push(context.Background(), skillstore.Global, ls, false)
		return err == nil
	})
	for i, r := range regs {
		if i == victim {
			continue
		}
		eventually(t, fmt.Sprintf("member %d to answer with both skills", i), func() bool {
			s, err := r.Snapshot(context.Background(), catalog.Query{})
			if err != nil || !s.Complete || len(s.Skills) != 2 {
				return false
			}
			sk, err := r.Load(context.Background(), "b-skill", catalog.Query{})
			return err == nil && sk.Content == "Body."
		})
	}
	c.Restart(victim)
	eventually(t, "the restarted node's member to catch up", func() bool {
		s, err := regs[victim].Snapshot(context.Background(), catalog.Query{})
		return err == nil && s.Complete && len(s.Skills) == 2
	})
}

func TestMaterialize(t *testing.T) {
	srv := natstest.Start(t)
	pb := publisher(t, srv.JS, store.Config{})
	root := t.TempDir()
	cs := push(t, pb, skillstore.Global, false, writeSkill(t, root, "a-skill", "A.", "Body.", map[string]string{"scripts/run.sh": "echo hi"}))
	res := t.TempDir()
	t.Cleanup(func() { makeWritable(res) })
	dir := skillstore.ResourcePath(res, "a-skill", cs[0].Digest)
	for range 2 { // the second call is a no-op
		if err := pb.Materialize(context.Background(), cs[0].Digest, dir); err != nil {
			t.Fatalf("Materialize: %v", err)
		}
	}
	if got, _ := agentskills.Digest(dir); got != cs[0].Digest {
		t.Fatalf("materialised digest %s, want %s", got, cs[0].Digest)
	}
	if fi, err := os.Stat(filepath.Join(dir, "scripts", "run.sh")); err != nil || fi.Mode().Perm()&0o222 != 0 {
		t.Fatalf("materialised file %v, %v: want read-only", fi, err)
	}
	entries, _ := os.ReadDir(filepath.Dir(dir))
	if len(entries) != 1 {
		t.Fatalf("temporary directories left behind: %v", entries)
	}
	other := filepath.Join(res, "other")
	os.MkdirAll(other, 0o755)
	os.WriteFile(filepath.Join(other, "x"), []byte("x"), 0o644)
	if err := pb.Materialize(context.Background(), cs[0].Digest, other); !errors.Is(err, skillstore.ErrExists) {
		t.Fatalf("Materialize over other files = %v, want ErrExists", err)
	}
}

// Past MaxChans projects the provider forgets the least recently asked
// about. Forgetting is no change: the forgotten channel stays open (a
// registry holding it would otherwise drop its cache and collect again for
// nothing) and the next Changes hands out another one, which tells the
// registry the answer is no longer watched. A real change still closes
// the channels handed out since.
func TestForgottenChangeChannelStaysOpen(t *testing.T) {
	srv := natstest.Start(t)
	p := open(t, srv.JS, store.Config{})
	first := p.Changes(catalog.Query{Project: "first"})
	if providers.Closed(first) {
		t.Fatal("a healthy store hands out a closed channel")
	}
	for i := range store.MaxChans {
		p.Changes(catalog.Query{Project: fmt.Sprintf("p%d", i)})
	}
	if providers.Closed(first) {
		t.Fatal("forgetting a project closed its channel: callers take it for a change")
	}
	again := p.Changes(catalog.Query{Project: "first"})
	if again == first {
		t.Fatal("a forgotten project still has its channel")
	}
	recent := p.Changes(catalog.Query{Project: fmt.Sprintf("p%d", store.MaxChans-1)})
	if providers.Closed(recent) {
		t.Fatal("a recently used channel closed without a change")
	}

	pb := publisher(t, srv.JS, store.Config{})
	push(t, pb, skillstore.Global, false, writeSkill(t, t.TempDir(), "a-skill", "A.", "Body.", nil))
	eventually(t, "a global change to close the current channels", func() bool {
		return providers.Closed(again) && providers.Closed(recent)
	})
}
