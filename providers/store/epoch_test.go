package store_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/store"
)

// syncBuilder is a strings.Builder safe for the provider's goroutine and
// the test's.
type syncBuilder struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuilder) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuilder) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Buckets deleted and created again under a running provider: while they
// are gone the store is unavailable (an incomplete snapshot, not the
// deleted index); once they are back the provider loads them from
// scratch under a new epoch, its revision starts over, the new skills are
// served, and it says so at warn.
func TestBucketsRecreatedAreLoadedUnderNewEpoch(t *testing.T) {
	srv := natstest.Start(t)
	ctx := context.Background()
	pb := publisher(t, srv.JS, store.Config{})
	root := t.TempDir()
	var cs []store.Change
	for _, d := range []string{"One.", "Two.", "Three."} {
		cs = push(t, pb, skillstore.Global, false, writeSkill(t, root, "old-skill", d, "Body.", nil))
	}
	var logs syncBuilder
	p := open(t, srv.JS, store.Config{Logger: newLogger(&logs)})
	old := p.Position()
	if old.Epoch == "" || old.Revision != cs[0].Revision {
		t.Fatalf("position %+v, want an epoch and revision %d", old, cs[0].Revision)
	}
	reg := providers.NewRegistry([]providers.Provider{p})
	defer reg.Close()
	if s, _ := reg.Snapshot(ctx, catalog.Query{}); s.Epoch != old.Epoch || s.Revision != old.Revision {
		t.Fatalf("snapshot at %q/%d, want %+v", s.Epoch, s.Revision, old)
	}

	if err := srv.JS.DeleteKeyValue(ctx, skillstore.DefaultBucket); err != nil {
		t.Fatal(err)
	}
	if err := srv.JS.DeleteObjectStore(ctx, skillstore.DefaultObjects); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deleted buckets to make the store unavailable", func() bool {
		_, err := p.List(ctx, catalog.Query{})
		return errors.Is(err, store.ErrUnavailable)
	})
	start := time.Now()
	pb2 := publisher(t, srv.JS, store.Config{})
	nc := push(t, pb2, skillstore.Global, false, writeSkill(t, t.TempDir(), "new-skill", "New.", "Body.", nil))
	eventually(t, "the recreated buckets to be served", func() bool {
		s, err := reg.Snapshot(ctx, catalog.Query{})
		return err == nil && s.Complete && slices.Equal(names(s), []string{"new-skill"})
	})
	t.Logf("recreated buckets served %v after they were created", time.Since(start).Round(time.Millisecond))
	now := p.Position()
	if now.Epoch == old.Epoch || now.Revision != nc[0].Revision {
		t.Fatalf("position after recreation %+v, want a new epoch at revision %d (was %+v)", now, nc[0].Revision, old)
	}
	if now.Reaches(old) || old.Reaches(now) {
		t.Fatal("positions of two epochs compare")
	}
	if !strings.Contains(logs.String(), "level=WARN msg=\"skill store buckets recreated or replaced") {
		t.Errorf("no warning:\n%s", logs.String())
	}
	// A revision the new bucket never reached is unknown, at once.
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := p.CatchUp(cctx, old.Revision+100); !errors.Is(err, providers.ErrUnknownRevision) {
		t.Fatalf("CatchUp to a revision the bucket never reached = %v", err)
	}
}

// Buckets recreated while the provider's watch keeps running (no gap in
// which they are missing long enough to break it) are found by the
// identity check, and Refresh finds them at once.
func TestRefreshFindsRecreatedBuckets(t *testing.T) {
	srv := natstest.Start(t)
	ctx := context.Background()
	pb := publisher(t, srv.JS, store.Config{})
	push(t, pb, skillstore.Global, false, writeSkill(t, t.TempDir(), "old-skill", "Old.", "Body.", nil))
	p := open(t, srv.JS, store.Config{})
	old := p.Position()
	if got, err := p.Refresh(ctx); err != nil || got != old.Epoch {
		t.Fatalf("Refresh of unchanged buckets = %q, %v; want %q", got, err, old.Epoch)
	}
	srv.JS.DeleteKeyValue(ctx, skillstore.DefaultBucket)
	srv.JS.DeleteObjectStore(ctx, skillstore.DefaultObjects)
	push(t, publisher(t, srv.JS, store.Config{}), skillstore.Global, false, writeSkill(t, t.TempDir(), "new-skill", "New.", "Body.", nil))
	var got string
	eventually(t, "Refresh to load the recreated buckets", func() bool {
		rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		var err error
		got, err = p.Refresh(rctx)
		return err == nil && got != old.Epoch
	})
	if p.Position().Epoch != got {
		t.Fatalf("Refresh returned %q, position %+v", got, p.Position())
	}
	if s, err := p.List(ctx, catalog.Query{}); err != nil || len(s) != 1 || s[0].Name != "new-skill" {
		t.Fatalf("List after Refresh = %+v, %v", s, err)
	}
}

// A publisher names the buckets' epoch as the providers following them
// do, and buckets created again have another.
func TestPublisherEpoch(t *testing.T) {
	srv := natstest.Start(t)
	ctx := context.Background()
	pb := publisher(t, srv.JS, store.Config{})
	push(t, pb, skillstore.Global, false, writeSkill(t, t.TempDir(), "a-skill", "A.", "Body.", nil))
	p := open(t, srv.JS, store.Config{})
	old, err := pb.Epoch(ctx)
	if err != nil || old == "" || old != p.Position().Epoch {
		t.Fatalf("publisher's epoch %q, %v; the provider's %q", old, err, p.Position().Epoch)
	}
	srv.JS.DeleteKeyValue(ctx, skillstore.DefaultBucket)
	srv.JS.DeleteObjectStore(ctx, skillstore.DefaultObjects)
	if _, err := pb.Epoch(ctx); err == nil {
		t.Fatal("an epoch of deleted buckets")
	}
	pb2 := publisher(t, srv.JS, store.Config{})
	push(t, pb2, skillstore.Global, false, writeSkill(t, t.TempDir(), "b-skill", "B.", "Body.", nil))
	now, err := pb2.Epoch(ctx)
	if err != nil || now == "" || now == old {
		t.Fatalf("epoch of recreated buckets %q, %v (was %q)", now, err, old)
	}
	if got, err := p.Refresh(ctx); err != nil || got != now {
		t.Fatalf("the provider's epoch after Refresh %q, %v; the publisher's %q", got, err, now)
	}
}
