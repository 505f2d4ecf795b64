package store_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"runtime"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/store"
)

func record(name, digest string) []byte {
	return []byte(`{"name":"` + name + `","description":"D.","invocation":{},"digest":"` + digest + `","object":"` + digest + `","size":10,"files":1}`)
}

func fakeDigest(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

// An object that links to itself (the object store follows links within a
// bucket without a bound) fails at once with a provider error: whether
// its record is applied (not listed), loaded after the object was swapped
// for the link, or materialised. Nothing spins, memory does not grow.
func TestSelfLinkedObjectFailsAtOnce(t *testing.T) {
	srv := natstest.Start(t)
	ctx := context.Background()
	pb := publisher(t, srv.JS, store.Config{})
	cs := push(t, pb, skillstore.Global, false, writeSkill(t, t.TempDir(), "a-skill", "A.", "Body A.", nil))
	obs, err := srv.JS.ObjectStore(ctx, skillstore.DefaultObjects)
	if err != nil {
		t.Fatal(err)
	}
	// The link's meta is written as the object store writes it (AddLink
	// refuses a name an object had).
	selfLink := func(name string) {
		t.Helper()
		info := jetstream.ObjectInfo{ObjectMeta: jetstream.ObjectMeta{Name: name,
			Opts: &jetstream.ObjectMetaOptions{Link: &jetstream.ObjectLink{Bucket: skillstore.DefaultObjects, Name: name}}},
			Bucket: skillstore.DefaultObjects, NUID: "selflink" + name[:8]}
		data, err := json.Marshal(info)
		if err != nil {
			t.Fatal(err)
		}
		m := nats.NewMsg("$O." + skillstore.DefaultObjects + ".M." + base64.URLEncoding.EncodeToString([]byte(name)))
		m.Header.Set(jetstream.MsgRollup, jetstream.MsgRollupSubject)
		m.Data = data
		if _, err := srv.JS.PublishMsg(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	var logs syncBuilder
	p := open(t, srv.JS, store.Config{Logger: newLogger(&logs)})
	reg := providers.NewRegistry([]providers.Provider{p}, providers.WithProviderTimeout(10*time.Second))
	defer reg.Close()

	// The object of a listed skill swapped for a link to itself.
	if err := obs.Delete(ctx, cs[0].Digest); err != nil {
		t.Fatal(err)
	}
	selfLink(cs[0].Digest)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	start := time.Now()
	for range 20 {
		lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := reg.Load(lctx, "a-skill", catalog.Query{})
		cancel()
		if !errors.Is(err, skillstore.ErrBadArchive) || !strings.Contains(err.Error(), "is a link") {
			t.Fatalf("Load of a self-linked object = %v, want ErrBadArchive naming the link", err)
		}
	}
	took := time.Since(start)
	runtime.GC()
	runtime.ReadMemStats(&after)
	t.Logf("20 loads of a self-linked object failed in %v; heap %d -> %d KiB", took.Round(time.Millisecond), before.HeapAlloc>>10, after.HeapAlloc>>10)
	dir := t.TempDir() + "/a-skill"
	if err := pb.Materialize(ctx, cs[0].Digest, dir); !errors.Is(err, skillstore.ErrBadArchive) {
		t.Fatalf("Materialize of a self-linked object = %v", err)
	}

	// A record naming a self-linked object is not listed.
	d := fakeDigest("loop")
	selfLink(d)
	kv, _ := srv.JS.KeyValue(ctx, skillstore.DefaultBucket)
	if _, err := kv.Put(ctx, "global.loop-skill", record("loop-skill", d)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the looping record to be checked", func() bool { return p.Warnings()["bad_object"] >= 1 })
	s, err := reg.Snapshot(ctx, catalog.Query{})
	if err != nil || slices.Contains(names(s), "loop-skill") {
		t.Fatalf("snapshot %v, %v: the self-linked record is listed", names(s), err)
	}
}

// A malformed value written over a good one keeps the good revision
// listed, on a running provider and on one that loads the index afresh,
// and says so; a later good value replaces it.
func TestMalformedValueKeepsLastGoodRevision(t *testing.T) {
	srv := natstest.Start(t)
	ctx := context.Background()
	pb := publisher(t, srv.JS, store.Config{})
	root := t.TempDir()
	cs := push(t, pb, skillstore.Global, false, writeSkill(t, root, "a-skill", "A.", "Body A.", nil), writeSkill(t, root, "b-skill", "B.", "Body B.", nil))
	var logs syncBuilder
	p := open(t, srv.JS, store.Config{Logger: newLogger(&logs)})
	kv, _ := srv.JS.KeyValue(ctx, skillstore.DefaultBucket)
	bad, err := kv.Put(ctx, "global.a-skill", []byte("{not json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := p.CatchUp(ctx, bad); err != nil {
		t.Fatal(err)
	}
	fresh := open(t, srv.JS, store.Config{Logger: newLogger(&logs)})
	for i, prov := range []*store.Provider{p, fresh} {
		reg := providers.NewRegistry([]providers.Provider{prov})
		s, err := reg.Snapshot(ctx, catalog.Query{})
		if err != nil || !s.Complete || !slices.Equal(names(s), []string{"a-skill", "b-skill"}) {
			t.Fatalf("provider %d: snapshot %v complete %v, %v", i, names(s), s.Complete, err)
		}
		sk, err := reg.Load(ctx, "a-skill", catalog.Query{})
		if err != nil || sk.Revision != cs[0].Revision || strings.TrimSpace(sk.Content) != "Body A." {
			t.Fatalf("provider %d: Load = rev %d %q, %v; want the last good revision %d", i, sk.Revision, sk.Content, err, cs[0].Revision)
		}
	}
	if n := strings.Count(logs.String(), "its last good revision stays listed"); n != 2 {
		t.Errorf("%d warnings about the kept revision, want 2 (one per provider):\n%s", n, logs.String())
	}
	// A removal after the malformed value removes it.
	if err := kv.Delete(ctx, "global.a-skill"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the removal", func() bool {
		l, _ := p.List(ctx, catalog.Query{})
		return len(l) == 1
	})
}

// Records whose object is missing, tampered with or another skill's are
// not listed (checked when applied, on a running provider and on a fresh
// one); a rejected record's object is read once, not at every
// re-application; warnings about one key are rate limited and counted.
func TestRecordsWithBadObjectsNotListed(t *testing.T) {
	srv := natstest.Start(t)
	ctx := context.Background()
	// The index keeps every revision this test writes of one key: with a
	// shorter history a watch running behind the writes (as under the race
	// detector on a busy machine) is rightly handed only the newest value,
	// and the count of re-applications below would be smaller.
	pb := publisher(t, srv.JS, store.Config{History: 64})
	root := t.TempDir()
	cs := push(t, pb, skillstore.Global, false, writeSkill(t, root, "a-skill", "A.", "Body A.", nil), writeSkill(t, root, "b-skill", "B.", "Body B.", nil))
	var warned atomic.Int64
	var logs syncBuilder
	p := open(t, srv.JS, store.Config{Logger: newLogger(&logs), OnWarning: func(kind string) {
		if kind == "bad_object" {
			warned.Add(1)
		}
	}})
	obs, _ := srv.JS.ObjectStore(ctx, skillstore.DefaultObjects)
	kv, _ := srv.JS.KeyValue(ctx, skillstore.DefaultBucket)
	archiveB, err := obs.GetBytes(ctx, cs[1].Digest)
	if err != nil {
		t.Fatal(err)
	}
	tampered := fakeDigest("tampered")
	if _, err := obs.PutBytes(ctx, tampered, archiveB); err != nil {
		t.Fatal(err)
	}
	var last uint64
	for key, val := range map[string][]byte{
		"global.missing-skill":  record("missing-skill", fakeDigest("nothing here")),
		"global.tampered-skill": record("tampered-skill", tampered),
		"global.other-skill":    record("other-skill", cs[0].Digest), // a-skill's files
	} {
		if last, err = kv.Put(ctx, key, val); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.CatchUp(ctx, last); err != nil {
		t.Fatal(err)
	}
	fresh := open(t, srv.JS, store.Config{})
	for i, prov := range []*store.Provider{p, fresh} {
		l, err := prov.List(ctx, catalog.Query{})
		var got []string
		for _, c := range l {
			got = append(got, c.Name)
		}
		if err != nil || !slices.Equal(got, []string{"a-skill", "b-skill"}) {
			t.Fatalf("provider %d lists %v, %v", i, got, err)
		}
	}
	// A fresh provider that checks objects after listing (LazyVerify)
	// drops the three once checked, and says its answers changed.
	var lazyLogs syncBuilder
	lazy := open(t, srv.JS, store.Config{LazyVerify: true, Logger: newLogger(&lazyLogs)})
	changed := lazy.Changes(catalog.Query{})
	eventually(t, "the lazy provider's check", func() bool {
		l, _ := lazy.List(ctx, catalog.Query{})
		return len(l) == 2
	})
	select {
	case <-changed:
	default:
		t.Error("the lazy provider dropped records without announcing a change")
	}
	if l, _ := lazy.List(ctx, catalog.Query{}); len(l) != 2 || l[0].Name != "a-skill" || l[1].Name != "b-skill" {
		t.Errorf("the lazy provider lists %v", l)
	}
	if !strings.Contains(lazyLogs.String(), "no longer listed") {
		t.Errorf("the lazy provider did not say why it dropped them:\n%s", lazyLogs.String())
	}
	for _, want := range []string{"global.missing-skill", "global.tampered-skill", "global.other-skill"} {
		if !strings.Contains(logs.String(), "key="+want) {
			t.Errorf("no warning about %s:\n%s", want, logs.String())
		}
	}
	// The same bad record applied 30 more times (another value each time,
	// the same object): its object is not read again, one line is logged,
	// every one is counted.
	fetches, before := p.Fetches(), warned.Load()
	for i := range 30 {
		rec := record("other-skill", cs[0].Digest)
		rec = append(rec[:len(rec)-1], []byte(`,"published":`+string(rune('1'+i%9))+`}`)...)
		if last, err = kv.Put(ctx, "global.other-skill", rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.CatchUp(ctx, last); err != nil {
		t.Fatal(err)
	}
	if p.Fetches() != fetches {
		t.Errorf("objects read again for a record already checked: %d -> %d", fetches, p.Fetches())
	}
	// A change is counted as applied before its warning is counted (the
	// warning is given outside the provider's lock): wait for the count.
	for deadline := time.Now().Add(30 * time.Second); warned.Load()-before < 30; {
		if time.Now().After(deadline) {
			t.Fatalf("%d of 30 warnings counted after 30 s; warnings %v, logs:\n%s", warned.Load()-before, p.Warnings(), logs.String())
		}
		time.Sleep(5 * time.Millisecond) // polling interval, not synchronisation
	}
	if got := warned.Load() - before; got != 30 {
		t.Errorf("%d warnings counted, want 30", got)
	}
	if n := strings.Count(logs.String(), "key=global.other-skill"); n != 1 {
		t.Errorf("%d lines logged about one key, want 1 (rate limited)", n)
	}
}

// Values the store did not write (a JetStream acknowledgement stored in the
// index, as happened when a worker could name an index subject as a reply
// subject) keep the good revision listed and are reported at error level
// with how many the history holds; once they have pushed the good revision
// out of the history, the report says that the skill is gone at the next
// restart, which a fresh provider confirms.
func TestForeignValuesReportedBeforeTheyPushTheGoodRevisionOut(t *testing.T) {
	srv := natstest.Start(t)
	ctx := context.Background()
	pb := publisher(t, srv.JS, store.Config{History: 4})
	root := t.TempDir()
	push(t, pb, skillstore.Global, false, writeSkill(t, root, "a-skill", "A.", "Body A.", nil))
	var logs syncBuilder
	p := open(t, srv.JS, store.Config{Logger: newLogger(&logs)})
	kv, _ := srv.JS.KeyValue(ctx, skillstore.DefaultBucket)
	ack := []byte(`{"stream":"SESSIONS","seq":12}`)
	var last uint64
	for i := range 3 {
		rev, err := kv.Put(ctx, "global.a-skill", ack)
		if err != nil {
			t.Fatal(err)
		}
		last = rev
		if err := p.CatchUp(ctx, rev); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			// Rate limited after the first: only the first is logged, just
			// after the change is applied.
			want := "level=ERROR msg=\"skill index entry not written by skillstream"
			eventually(t, "the report", func() bool { return strings.Contains(logs.String(), want) })
			if !strings.Contains(logs.String(), "foreign_revisions=1 history=2") {
				t.Fatalf("the report does not say how many:\n%s", logs.String())
			}
		}
	}
	if l, _ := p.List(ctx, catalog.Query{}); len(l) != 1 {
		t.Fatalf("the running provider lists %d skills, want the good revision kept", len(l))
	}
	// The fourth pushes the good revision out of a history of four.
	rev, err := kv.Put(ctx, "global.a-skill", ack)
	if err != nil {
		t.Fatal(err)
	}
	var logs2 syncBuilder
	p2 := open(t, srv.JS, store.Config{Logger: newLogger(&logs2)})
	if err := p2.CatchUp(ctx, max(rev, last)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the fresh provider's report", func() bool { return strings.Contains(logs2.String(), "holds no good revision") })
	if l, _ := p2.List(ctx, catalog.Query{}); len(l) != 0 {
		t.Fatalf("a fresh provider lists %d skills", len(l))
	}
}
