package store_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/store"
)

// kinds counts the warnings a provider reports, by kind.
type kinds struct {
	mu sync.Mutex
	n  map[string]int
}

func (k *kinds) add(kind string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.n == nil {
		k.n = make(map[string]int)
	}
	k.n[kind]++
}

func (k *kinds) get(kind string) int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.n[kind]
}

// hostile writes what an administrator of the store can write without
// skills push: the object of a valid skill named name, and an index
// record naming it with edit applied. It returns the index revision.
func hostile(t testing.TB, js jetstream.JetStream, root, name string, edit func(*store.Record)) uint64 {
	t.Helper()
	ctx := context.Background()
	l, err := store.ReadSkill(writeSkill(t, root, name, "Hostile.", "Body.", nil), store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	obs, err := js.ObjectStore(ctx, skillstore.DefaultObjects)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := obs.GetInfo(ctx, l.Record.Object); err != nil {
		if _, err := obs.PutBytes(ctx, l.Record.Object, store.ArchiveOf(l)); err != nil {
			t.Fatal(err)
		}
	}
	rec := l.Record
	if edit != nil {
		edit(&rec)
	}
	data, err := json.Marshal(rec)
	if err != nil {
		t.Fatal(err)
	}
	kv, err := js.KeyValue(ctx, skillstore.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := kv.Put(ctx, skillstore.Global.Key(name), data)
	if err != nil {
		t.Fatalf("put %s (%d bytes): %v", name, len(data), err)
	}
	return rev
}

func listed(t testing.TB, p *store.Provider) []string {
	t.Helper()
	l, err := p.List(context.Background(), catalog.Query{})
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	var out []string
	for _, c := range l {
		out = append(out, c.Name)
	}
	return out
}

// Records longer than a push publishes, written straight to the index as
// a hostile administrator would (each naming a valid object of its own
// skill), are refused on read like malformed values: a pushed skill's
// oversized revision keeps its last good one listed, the others are not
// listed, on a running provider and on a fresh one. Every one is counted;
// the log stays within the store's lines per minute; what the store holds
// is the honest skill's summary alone.
func TestRecordsOverTheirBoundsRefusedOnRead(t *testing.T) {
	srv := natstest.Start(t)
	ctx := context.Background()
	pb := publisher(t, srv.JS, store.Config{})
	root := t.TempDir()
	cs := push(t, pb, skillstore.Global, false, writeSkill(t, root, "honest", "Honest skill.", "Body.", nil))
	var warned kinds
	var logs syncBuilder
	p := open(t, srv.JS, store.Config{Logger: newLogger(&logs), OnWarning: warned.add})

	const n = 200
	long := strings.Repeat("flood words everywhere ", 60<<10/23) // 60 KiB
	hroot := t.TempDir()
	var last uint64
	// The honest skill's own key gets an oversized description.
	last = hostile(t, srv.JS, hroot, "honest", func(r *store.Record) { r.Description = long })
	for i := range n {
		name := fmt.Sprintf("flood-%03d", i)
		last = hostile(t, srv.JS, hroot, name, func(r *store.Record) {
			if i%2 == 0 {
				r.WhenToUse = long
			} else {
				r.Description = strings.Repeat("é", store.MaxDescriptionLength+1)
			}
		})
	}
	if err := p.CatchUp(ctx, last); err != nil {
		t.Fatal(err)
	}
	fresh := open(t, srv.JS, store.Config{OnWarning: warned.add})
	for i, prov := range []*store.Provider{p, fresh} {
		if got := listed(t, prov); !slices.Equal(got, []string{"honest"}) {
			t.Fatalf("provider %d lists %d skills (%v...), want only the honest one", i, len(got), got[:min(3, len(got))])
		}
		sk, err := prov.Load(ctx, "honest", catalog.Query{})
		if err != nil || sk.Revision != cs[0].Revision || sk.Description != "Honest skill." {
			t.Fatalf("provider %d: Load = rev %d %.40q, %v; want the last good revision %d", i, sk.Revision, sk.Description, err, cs[0].Revision)
		}
		b := prov.Bounds()
		if b.Skills != 1 || b.SummaryBytes != int64(len("honest")+len("Honest skill.")) || b.Over != nil {
			t.Errorf("provider %d holds %+v, want the honest skill's summary alone", i, b)
		}
	}
	eventually(t, "every refusal counted", func() bool { return warned.get("malformed_entry") >= 2*(n+1) })
	lines := strings.Count(logs.String(), "\n")
	if lines > 20 {
		t.Errorf("%d lines logged for %d refused records, want at most 20 a minute per store:\n%.2000s", lines, n+1, logs.String())
	}
	if !strings.Contains(logs.String(), "whenToUse of") || !strings.Contains(logs.String(), "description of") {
		t.Errorf("the log does not say which bound a record broke:\n%.2000s", logs.String())
	}
}

// A store whose skills go past its bound loses its view: the registry
// serves the other sources' skills, complete; the store says why (Bounds,
// a diagnostic for operators, one error line, one over_bounds warning) and
// lets go of the texts. Back within its bound, it is loaded again and
// listed as before. A fresh provider of a store over its bound lists
// nothing either, and reads no object.
func TestStoreOverItsBoundsLosesItsView(t *testing.T) {
	srv := natstest.Start(t)
	ctx := context.Background()
	pb := publisher(t, srv.JS, store.Config{})
	root := t.TempDir()
	var dirs []string
	for i := range 6 {
		dirs = append(dirs, writeSkill(t, root, fmt.Sprintf("skill-%d", i), fmt.Sprintf("Skill %d.", i), "Body.", nil))
	}
	push(t, pb, skillstore.Global, false, dirs[:4]...)
	var warned kinds
	var logs syncBuilder
	cfg := store.Config{MaxSkills: 5, Logger: newLogger(&logs), OnWarning: warned.add}
	p := open(t, srv.JS, cfg)
	other := static{{Name: "other-skill", Description: "From another source.", Invocation: catalog.Invocation{ModelInvocable: true}}}
	reg := providers.NewRegistry([]providers.Provider{p, other})
	snapNames := func() []string {
		s, err := reg.Snapshot(ctx, catalog.Query{})
		if err != nil || !s.Complete {
			t.Fatalf("snapshot complete %v, %v", s.Complete, err)
		}
		return names(s)
	}
	if got := snapNames(); len(got) != 5 {
		t.Fatalf("within its bound: %v", got)
	}
	push(t, pb, skillstore.Global, false, dirs[4:]...) // 6 skills, over 5
	eventually(t, "the store's view dropped", func() bool { return slices.Equal(snapNames(), []string{"other-skill"}) })
	b := p.Bounds()
	if !errors.Is(b.Over, store.ErrOverBounds) || b.Skills != 6 {
		t.Errorf("Bounds = %+v, want over with 6 skills", b)
	}
	if _, err := reg.Load(ctx, "skill-0", catalog.Query{}); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("Load of a dropped store's skill: %v, want not found", err)
	}
	rep := reg.Inspect(ctx, catalog.Query{Cwd: t.TempDir()})
	if len(rep.Diagnostics) != 1 || !strings.Contains(rep.Diagnostics[0].Reason, "6 skills, over 5") {
		t.Errorf("operators' diagnostics: %+v", rep.Diagnostics)
	}
	if s, _ := reg.Snapshot(ctx, catalog.Query{Cwd: t.TempDir()}); len(s.Diagnostics) != 0 {
		t.Errorf("a session is told about the store's bounds: %+v", s.Diagnostics)
	}
	if n := strings.Count(logs.String(), "level=ERROR msg=\"skill store over its bounds"); n != 1 || warned.get("over_bounds") != 1 {
		t.Errorf("%d error lines, %d over_bounds warnings; want 1 each:\n%s", n, warned.get("over_bounds"), logs.String())
	}
	// A fresh provider of the store over its bound lists nothing, and
	// does not read the objects of skills it will not list.
	fresh := open(t, srv.JS, store.Config{MaxSkills: 5})
	if got := listed(t, fresh); len(got) != 0 || fresh.Fetches() != 0 {
		t.Errorf("fresh provider over its bound lists %v after %d object reads", got, fresh.Fetches())
	}
	// Back within: listed again, texts and all.
	kv, _ := srv.JS.KeyValue(ctx, skillstore.DefaultBucket)
	if err := kv.Delete(ctx, skillstore.Global.Key("skill-5")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the store listed again", func() bool { return len(snapNames()) == 6 })
	s, _ := reg.Snapshot(ctx, catalog.Query{})
	for _, sk := range s.Skills {
		if sk.Description == "" {
			t.Errorf("%s listed without its description", sk.Name)
		}
	}
	if p.Bounds().Over != nil {
		t.Errorf("still over: %+v", p.Bounds())
	}
	if !strings.Contains(logs.String(), "within its bounds again") {
		t.Errorf("no line says the store is listed again:\n%s", logs.String())
	}
}

// Summaries past the store's bound on bytes drop its view as well.
func TestStoreOverItsSummaryBytesLosesItsView(t *testing.T) {
	srv := natstest.Start(t)
	ctx := context.Background()
	pb := publisher(t, srv.JS, store.Config{})
	root := t.TempDir()
	push(t, pb, skillstore.Global, false,
		writeSkill(t, root, "small-skill", "Small.", "Body.", nil),
		writeSkill(t, root, "large-skill", strings.Repeat("x", 1000), "Body.", nil))
	p := open(t, srv.JS, store.Config{MaxSummaryBytes: 1000})
	if got := listed(t, p); len(got) != 0 {
		t.Errorf("over its bytes: lists %v", got)
	}
	if b := p.Bounds(); !errors.Is(b.Over, store.ErrOverBounds) || !strings.Contains(b.Over.Error(), "bytes") {
		t.Errorf("Bounds = %+v", b)
	}
	_ = ctx
}

// Records naming one large object under 300 names (each name its own
// key) read the object once: its check is kept by digest, and every
// record is still compared with the skill the object defines, so none of
// them is listed; the record of the skill it does define is.
func TestObjectReadOncePerDigest(t *testing.T) {
	srv := natstest.Start(t)
	ctx := context.Background()
	pb := publisher(t, srv.JS, store.Config{})
	var warned kinds
	p := open(t, srv.JS, store.Config{OnWarning: warned.add})
	big := make([]byte, 4<<20)
	rand.Read(big)
	root := t.TempDir()
	cs := push(t, pb, skillstore.Global, false, writeSkill(t, root, "big-skill", "Big.", "Body.", map[string]string{"data.bin": string(big)}))
	if err := p.CatchUp(ctx, cs[0].Revision); err != nil {
		t.Fatal(err)
	}
	before := p.Fetches()
	kv, _ := srv.JS.KeyValue(ctx, skillstore.DefaultBucket)
	const n = 300
	var last uint64
	for i := range n {
		name := fmt.Sprintf("copy-%03d", i)
		rec := fmt.Sprintf(`{"name":%q,"description":"Copy.","invocation":{},"digest":%q,"object":%q,"size":10,"files":2}`, name, cs[0].Digest, cs[0].Digest)
		var err error
		if last, err = kv.Put(ctx, skillstore.Global.Key(name), []byte(rec)); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.CatchUp(ctx, last); err != nil {
		t.Fatal(err)
	}
	if got := p.Fetches() - before; got != 0 {
		t.Errorf("the object was read %d more times for %d records naming it", got, n)
	}
	fresh := open(t, srv.JS, store.Config{})
	if got := fresh.Fetches(); got != 1 {
		t.Errorf("a fresh load read the object %d times, want once", got)
	}
	for i, prov := range []*store.Provider{p, fresh} {
		if got := listed(t, prov); !slices.Equal(got, []string{"big-skill"}) {
			t.Errorf("provider %d lists %d skills (%v...), want big-skill alone", i, len(got), got[:min(3, len(got))])
		}
	}
	eventually(t, "every wrong record counted", func() bool { return warned.get("bad_object") >= n })
}

// static serves a fixed list of skills that never changes.
type static []catalog.Summary

func (s static) Name() string { return "static" }
func (s static) List(context.Context, catalog.Query) ([]providers.Candidate, error) {
	out := make([]providers.Candidate, len(s))
	for i, sk := range s {
		out[i] = providers.Candidate{Summary: sk, Rank: providers.RankCustom}
	}
	return out, nil
}
func (s static) Load(_ context.Context, name string, _ catalog.Query) (catalog.Skill, error) {
	for _, sk := range s {
		if sk.Name == name {
			return catalog.Skill{Summary: sk, Content: "Body."}, nil
		}
	}
	return catalog.Skill{}, catalog.ErrNotFound
}

// Records beyond the store's rate of object reads wait for their turn:
// every one is checked, none is dropped or listed unchecked.
func TestObjectReadsRateLimitedNotDropped(t *testing.T) {
	srv := natstest.Start(t)
	ctx := context.Background()
	publisher(t, srv.JS, store.Config{}) // the buckets
	// 4 MiB a second and a burst of the largest object (8 MiB): with 64
	// KiB a read, about 130 reads go at once and the others wait.
	p := open(t, srv.JS, store.Config{VerifyBytes: 4 << 20})
	root := t.TempDir()
	const n = 160
	var last uint64
	for i := range n {
		edit := func(*store.Record) {}
		if i%40 == 0 { // a few name another skill's object: checked, not listed
			edit = func(r *store.Record) {
				other := strings.Repeat("0", 64)
				r.Digest, r.Object = other, other
			}
		}
		last = hostile(t, srv.JS, root, fmt.Sprintf("skill-%03d", i), edit)
	}
	if err := p.CatchUp(ctx, last); err != nil {
		t.Fatal(err)
	}
	if got := listed(t, p); len(got) != n-n/40 {
		t.Errorf("%d of %d skills listed", len(got), n-n/40)
	}
	// The missing object is one digest: read once for its four records.
	if got, want := p.Fetches(), uint64(n-n/40+1); got != want {
		t.Errorf("%d objects read, want %d (each digest's once)", got, want)
	}
}

// Warnings are rate limited per store, not only per key: 60 malformed
// keys log at most 20 lines in a period, then one line counting what was
// left out, by kind; all are counted.
func TestWarningsBoundedPerStore(t *testing.T) {
	srv := natstest.Start(t)
	ctx := context.Background()
	publisher(t, srv.JS, store.Config{}) // the buckets
	var warned kinds
	var logs syncBuilder
	cfg := store.Config{Logger: newLogger(&logs), OnWarning: warned.add}
	store.SetWarnEvery(&cfg, 2*time.Second)
	p := open(t, srv.JS, cfg)
	kv, _ := srv.JS.KeyValue(ctx, skillstore.DefaultBucket)
	const n = 60
	var last uint64
	for i := range n {
		var err error
		if last, err = kv.Put(ctx, skillstore.Global.Key(fmt.Sprintf("bad-%02d", i)), []byte("{not json")); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.CatchUp(ctx, last); err != nil {
		t.Fatal(err)
	}
	eventually(t, "every warning counted", func() bool { return warned.get("malformed_entry") == n })
	eventually(t, "the summary of what was left out", func() bool {
		return strings.Contains(logs.String(), "skill store warnings not logged")
	})
	// However the writes fell into periods, each period logs at most 20
	// lines about keys, and the summaries count the rest.
	var lines, left int
	for _, l := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		if strings.Contains(l, "key=global.bad-") {
			lines++
		}
		if i := strings.Index(l, "malformed_entry="); i >= 0 {
			var k int
			fmt.Sscanf(l[i+len("malformed_entry="):], "%d", &k)
			left += k
		}
	}
	if lines+left != n {
		t.Errorf("%d lines and %d counted in summaries, want %d in all:\n%s", lines, left, n, logs.String())
	}
	if lines >= n {
		t.Errorf("every warning logged (%d lines)", lines)
	}
}
