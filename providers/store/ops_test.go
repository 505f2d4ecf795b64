package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/providers/store"
)

func TestRollback(t *testing.T) {
	srv := natstest.Start(t)
	pb := publisher(t, srv.JS, store.Config{})
	ctx := context.Background()
	root := t.TempDir()
	dir := writeSkill(t, root, "a-skill", "A.", "One.", map[string]string{"old.txt": "old"})
	v1 := push(t, pb, skillstore.Global, false, dir)[0]
	writeSkill(t, root, "a-skill", "A.", "Two.", nil)
	v2 := push(t, pb, skillstore.Global, false, dir)[0]

	// Default: the newest earlier revision with other files.
	c, from, err := pb.Rollback(ctx, skillstore.Global, "a-skill", store.At{})
	if err != nil {
		t.Fatal(err)
	}
	if from.Revision != v1.Revision || c.Action != store.Updated || c.Digest != v1.Digest || c.Revision <= v2.Revision {
		t.Fatalf("rollback = %+v from %d, want v1's digest %s at a new revision", c, from.Revision, v1.Digest)
	}
	hist, err := pb.History(ctx, skillstore.Global, "a-skill")
	if err != nil || len(hist) != 3 || hist[2].Record.Digest != v1.Digest || hist[1].Record.Digest != v2.Digest {
		t.Fatalf("history after rollback: %+v, %v; want v1, v2, v1", hist, err)
	}
	files, err := pb.Files(ctx, c.Digest)
	if err != nil || len(files) != 2 {
		t.Fatalf("files of the rolled back version: %+v, %v", files, err)
	}
	// Again: back to v2 (the newest earlier one whose files differ).
	if c, from, err = pb.Rollback(ctx, skillstore.Global, "a-skill", store.At{}); err != nil || from.Revision != v2.Revision || c.Digest != v2.Digest {
		t.Fatalf("second rollback = %+v from %d, %v; want v2", c, from.Revision, err)
	}
	// To the current files: nothing written.
	if c, _, err = pb.Rollback(ctx, skillstore.Global, "a-skill", store.At{Store: v2.Revision}); err != nil || c.Action != store.Unchanged {
		t.Fatalf("rollback to the current files = %+v, %v; want unchanged", c, err)
	}

	elsewhere, err := skillstore.Project("elsewhere")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		to    uint64
		scope skillstore.Scope
		want  error
	}{
		{"nope", 0, skillstore.Global, catalog.ErrNotFound},
		{"a-skill", 999, skillstore.Global, store.ErrNotKept},
		{"a-skill", 1, elsewhere, catalog.ErrNotFound},
		{"Bad Name", 0, skillstore.Global, catalog.ErrInvalidName},
	} {
		if _, _, err := pb.Rollback(ctx, tt.scope, tt.name, store.At{Rev: tt.to}); !errors.Is(err, tt.want) {
			t.Errorf("rollback %s --to %d in %s = %v, want %v", tt.name, tt.to, tt.scope, err, tt.want)
		}
	}
	// A removal is not a revision to publish; a removed skill can be put back.
	rm, err := pb.Remove(ctx, skillstore.Global, "a-skill")
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := pb.Rollback(ctx, skillstore.Global, "a-skill", store.At{Store: rm}); !errors.Is(err, store.ErrNotKept) || !strings.Contains(err.Error(), "removal") {
		t.Fatalf("rollback to a removal = %v", err)
	}
	if c, _, err = pb.Rollback(ctx, skillstore.Global, "a-skill", store.At{}); err != nil || c.Digest != v2.Digest {
		t.Fatalf("rollback of a removed skill = %+v, %v; want the last published files (v2) back", c, err)
	}

	// Files removed (as by gc): refused, nothing written.
	obs, err := srv.JS.ObjectStore(ctx, skillstore.DefaultObjects)
	if err != nil {
		t.Fatal(err)
	}
	if err := obs.Delete(ctx, v1.Digest); err != nil {
		t.Fatal(err)
	}
	before, _ := pb.History(ctx, skillstore.Global, "a-skill")
	_, _, err = pb.Rollback(ctx, skillstore.Global, "a-skill", store.At{Rev: v1.Rev})
	if !errors.Is(err, skillstore.ErrObjectMissing) || !strings.Contains(err.Error(), "removed by gc") {
		t.Fatalf("rollback to removed files = %v, want ErrObjectMissing", err)
	}
	if after, _ := pb.History(ctx, skillstore.Global, "a-skill"); len(after) != len(before) {
		t.Fatalf("a refused rollback wrote: %d revisions, was %d", len(after), len(before))
	}
}

func TestRollbackChangedSinceRead(t *testing.T) {
	srv := natstest.Start(t)
	pb := publisher(t, srv.JS, store.Config{})
	root := t.TempDir()
	dir := writeSkill(t, root, "a-skill", "A.", "One.", nil)
	push(t, pb, skillstore.Global, false, dir)
	writeSkill(t, root, "a-skill", "A.", "Two.", nil)
	push(t, pb, skillstore.Global, false, dir)
	stale := publisherWithHook(t, srv.JS, func() {
		writeSkill(t, root, "a-skill", "A.", "Three.", nil)
		push(t, pb, skillstore.Global, false, dir)
	})
	_, _, err := stale.Rollback(context.Background(), skillstore.Global, "a-skill", store.At{})
	if !errors.Is(err, store.ErrChanged) || !strings.Contains(err.Error(), "changed since read") {
		t.Fatalf("racing rollback = %v, want ErrChanged", err)
	}
	hist, _ := pb.History(context.Background(), skillstore.Global, "a-skill")
	if len(hist) != 3 {
		t.Fatalf("%d revisions, want 3 (the racing push's kept, the rollback's not written)", len(hist))
	}
}

func TestFilesRefusesBadDigest(t *testing.T) {
	srv := natstest.Start(t)
	pb := publisher(t, srv.JS, store.Config{})
	for _, d := range []string{"", "../x", strings.Repeat("A", 64), strings.Repeat("0", 64)} {
		if _, err := pb.Files(context.Background(), d); err == nil {
			t.Errorf("Files(%q) succeeded", d)
		}
	}
}
