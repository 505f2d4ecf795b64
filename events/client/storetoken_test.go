package client

import (
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/processor"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/store"
)

// pushOne publishes a skill to the store's global scope and returns the
// token a push prints for it.
func pushOne(t *testing.T, w *world, name, desc string) events.StoreToken {
	t.Helper()
	ctx := timeout(t)
	dir := filepath.Join(t.TempDir(), name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	md := "---\nname: " + name + "\ndescription: " + desc + "\n---\nBody.\n"
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	pb, err := store.NewPublisher(ctx, w.srv.JS, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	local, err := store.ReadSkill(dir, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := pb.Push(ctx, skillstore.Global, []store.Local{local}, false)
	if err != nil {
		t.Fatal(err)
	}
	epoch, err := pb.Epoch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return events.StoreToken{Epoch: epoch, Revision: cs[0].Revision}
}

// A client holding the token of a push asks for that store in every
// trigger. After the store's buckets were recreated, a processor answers a
// token of the old ones unavailable at once (its catch-up wait is a
// minute here), saying so; the client then requires the new push's token
// and is served from the new buckets.
func TestStoreTokenAcrossRecreatedBuckets(t *testing.T) {
	w := newWorld(t)
	var old events.StoreToken
	for _, d := range []string{"One.", "Two.", "Three.", "Four."} {
		old = pushOne(t, w, "s-old", d)
	}
	ctx := timeout(t)
	sp, err := store.Open(ctx, w.srv.JS, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	w.registry.Close()
	w.registry = providers.NewRegistry([]providers.Provider{sp}, providers.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil))))
	t.Cleanup(func() { w.registry.Close() })
	w.configure = func(cfg *processor.Config) { cfg.CatchUpWait = time.Minute }
	w.startProcessor()

	c := w.client(WithStoreToken(old.String()))
	if got := c.StoreFloor(); got != old {
		t.Fatalf("floor %+v, want %+v", got, old)
	}
	step := func(sid string) (events.Decision, error) {
		return c.PreStep(ctx, events.PreStep{Session: sid, Step: "1", Tools: tools()})
	}
	if d, err := step("tok-1"); err != nil || d.Outcome != events.OutcomeAppended || d.Catalog.Source.Entries[0].Name != "s-old" {
		t.Fatalf("pre-step with the push's token: %+v, %v", d, err)
	}

	if err := w.srv.JS.DeleteKeyValue(ctx, skillstore.DefaultBucket); err != nil {
		t.Fatal(err)
	}
	if err := w.srv.JS.DeleteObjectStore(ctx, skillstore.DefaultObjects); err != nil {
		t.Fatal(err)
	}
	fresh := pushOne(t, w, "s-new", "After the buckets were recreated.")
	if fresh.Epoch == old.Epoch || fresh.Revision >= old.Revision {
		t.Fatalf("new token %+v, old %+v: the test proves nothing", fresh, old)
	}
	// Wait until the processor serves the new buckets, so that nothing
	// below is answered for lack of them.
	poll(t, func() error {
		if ep := w.registry.Position().Epoch; ep != fresh.Epoch {
			return errors.New("the processor's store is at epoch " + ep)
		}
		return nil
	})

	want := "store epoch " + old.Epoch + " is not this store's (" + fresh.Epoch + ")"
	d, err := step("tok-2")
	if !errors.Is(err, ErrUnavailable) || d.Outcome != events.OutcomeIncomplete || !strings.Contains(err.Error(), want) {
		t.Fatalf("pre-step with the old buckets' token: %+v, %v", d, err)
	}
	r, err := c.CallSkill(ctx, events.SkillCall{Session: "tok-2", Call: "c1", Args: events.SkillArgs{Name: "s-new"}})
	if !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), want) {
		t.Fatalf("skill call with the old buckets' token: %+v, %v", r, err)
	}

	c.RequireStore(fresh)
	if got := c.StoreFloor(); got != fresh {
		t.Fatalf("floor %+v after requiring %+v", got, fresh)
	}
	if d, err := step("tok-3"); err != nil || d.Outcome != events.OutcomeAppended || d.Catalog.Source.Entries[0].Name != "s-new" {
		t.Fatalf("pre-step with the new push's token: %+v, %v", d, err)
	}
	if r, err := c.CallSkill(ctx, events.SkillCall{Session: "tok-3", Call: "c1", Args: events.SkillArgs{Name: "s-new"}}); err != nil || r.IsError {
		t.Fatalf("skill call with the new push's token: %+v, %v", r, err)
	}
}

// The floor a client's triggers carry: it rises within one epoch, a token
// of another epoch replaces it, a revision alone keeps the epoch, and a
// request's own epoch wins over the floor's.
func TestStoreFloor(t *testing.T) {
	w := newWorld(t)
	c := w.client(WithMinStoreRevision(5))
	steps := []struct {
		require events.StoreToken
		want    events.StoreToken
	}{
		{events.StoreToken{Revision: 3}, events.StoreToken{Revision: 5}},
		{events.StoreToken{Epoch: "e1", Revision: 3}, events.StoreToken{Epoch: "e1", Revision: 3}},
		{events.StoreToken{Epoch: "e1", Revision: 2}, events.StoreToken{Epoch: "e1", Revision: 3}},
		{events.StoreToken{Revision: 9}, events.StoreToken{Epoch: "e1", Revision: 9}},
		{events.StoreToken{Epoch: "e2", Revision: 1}, events.StoreToken{Epoch: "e2", Revision: 1}},
	}
	for _, s := range steps {
		c.RequireStore(s.require)
		if got := c.StoreFloor(); got != s.want {
			t.Fatalf("after %+v: floor %+v, want %+v", s.require, got, s.want)
		}
	}
	for _, tr := range []struct {
		epoch        string
		rev          uint64
		wantE        string
		wantRevision uint64
	}{
		{"", 0, "e2", 1},
		{"", 4, "e2", 4},
		{"e2", 0, "e2", 1},
		{"e3", 0, "e3", 0},
	} {
		if e, r := c.storeDemand(tr.epoch, tr.rev); e != tr.wantE || r != tr.wantRevision {
			t.Errorf("a trigger asking for %q/%d asks for %q/%d, want %q/%d", tr.epoch, tr.rev, e, r, tr.wantE, tr.wantRevision)
		}
	}
	if _, err := New(w.srv.Connect(), WithStoreToken("no token")); err == nil {
		t.Error("a client with a bad store token")
	}
	if got := w.client(WithStoreToken("e1:7")).StoreFloor(); got != (events.StoreToken{Epoch: "e1", Revision: 7}) {
		t.Errorf("floor of a client made with token e1:7: %+v", got)
	}
}
