package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/providers/store"
)

// revs is the history of name as (number, store revision) pairs, and
// whether the numbers are counted from the oldest kept.
func revs(t testing.TB, pb *store.Publisher, name string) ([][2]uint64, bool) {
	t.Helper()
	hist, err := pb.History(context.Background(), skillstore.Global, name)
	if err != nil {
		t.Fatal(err)
	}
	var out [][2]uint64
	counted := false
	for _, h := range hist {
		out = append(out, [2]uint64{h.Rev, h.Revision})
		counted = counted || h.Counted
	}
	return out, counted
}

func numbers(pairs [][2]uint64) []uint64 {
	var out []uint64
	for _, p := range pairs {
		out = append(out, p[0])
	}
	return out
}

// A skill's revisions count from 1 in its own history, whatever the store
// revisions: a skill pushed after others is at revision 1, then 2; a
// rollback and a removal take the next numbers; every operation takes a
// revision by its number or by store revision.
func TestRevisionsPerSkill(t *testing.T) {
	srv := natstest.Start(t)
	pb := publisher(t, srv.JS, store.Config{})
	ctx := context.Background()
	root := t.TempDir()
	push(t, pb, skillstore.Global, false, writeSkill(t, root, "other", "O.", "One.", nil), writeSkill(t, root, "more", "M.", "One.", nil))
	dir := writeSkill(t, root, "pdf", "P.", "One.", nil)
	v1 := push(t, pb, skillstore.Global, false, dir)[0]
	if v1.Rev != 1 || v1.Revision != 3 || v1.Action != store.Added {
		t.Fatalf("first push of pdf = %+v, want revision 1 at store revision 3", v1)
	}
	if again := push(t, pb, skillstore.Global, false, dir)[0]; again.Action != store.Unchanged || again.Rev != 1 || again.Revision != 3 {
		t.Fatalf("unchanged push = %+v, want revision 1 at store revision 3", again)
	}
	push(t, pb, skillstore.Global, false, writeSkill(t, root, "other", "O.", "Two.", nil))
	writeSkill(t, root, "pdf", "P.", "Two.", nil)
	v2 := push(t, pb, skillstore.Global, false, dir)[0]
	if v2.Rev != 2 || v2.Revision != 5 {
		t.Fatalf("second push of pdf = %+v, want revision 2 at store revision 5", v2)
	}

	for _, at := range []store.At{{Rev: 1}, {Store: 3}} {
		p, err := pb.Get(ctx, skillstore.Global, "pdf", at)
		if err != nil || p.Rev != 1 || p.Revision != 3 || p.Record.Digest != v1.Digest {
			t.Fatalf("Get %v = %+v, %v; want revision 1", at, p, err)
		}
	}
	if p, err := pb.Get(ctx, skillstore.Global, "pdf", store.At{}); err != nil || p.Rev != 2 || p.Revision != 5 {
		t.Fatalf("Get current = %+v, %v; want revision 2", p, err)
	}
	for _, at := range []store.At{{Rev: 3}, {Store: 4}, {Store: 2}} {
		if _, err := pb.Get(ctx, skillstore.Global, "pdf", at); !errors.Is(err, store.ErrNotKept) {
			t.Errorf("Get %v = %v, want ErrNotKept (another skill's store revision is not pdf's)", at, err)
		}
	}

	c, from, err := pb.Rollback(ctx, skillstore.Global, "pdf", store.At{Rev: 1})
	if err != nil || from.Rev != 1 || c.Rev != 3 || c.Revision != 6 || c.Digest != v1.Digest {
		t.Fatalf("rollback to 1 = %+v from %+v, %v; want revision 3 (store revision 6) with revision 1's files", c, from, err)
	}
	rm, err := pb.RemoveSkill(ctx, skillstore.Global, "pdf")
	if err != nil || rm.Rev != 4 || rm.Revision != 7 {
		t.Fatalf("remove = %+v, %v; want revision 4 at store revision 7", rm, err)
	}
	if _, err := pb.Get(ctx, skillstore.Global, "pdf", store.At{}); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("Get of a removed skill = %v, want not found", err)
	}
	if _, err := pb.Get(ctx, skillstore.Global, "pdf", store.At{Rev: 4}); !errors.Is(err, store.ErrNotKept) || !strings.Contains(err.Error(), "removal") {
		t.Fatalf("Get of the removal = %v", err)
	}
	back := push(t, pb, skillstore.Global, false, dir)[0]
	if back.Action != store.Added || back.Rev != 5 {
		t.Fatalf("push after the removal = %+v, want added at revision 5", back)
	}
	if got, counted := revs(t, pb, "pdf"); !slices.Equal(got, [][2]uint64{{1, 3}, {2, 5}, {3, 6}, {4, 7}, {5, 8}}) || counted {
		t.Fatalf("history = %v counted %v", got, counted)
	}
	if other, _ := revs(t, pb, "other"); !slices.Equal(numbers(other), []uint64{1, 2}) {
		t.Fatalf("other's history = %v, want revisions 1 and 2", other)
	}
	ps, err := pb.List(ctx, skillstore.Global)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, p := range ps {
		listed = append(listed, fmt.Sprintf("%s@%d/%d", p.Record.Name, p.Rev, p.Revision))
	}
	if want := []string{"more@1/1", "other@2/4", "pdf@5/8"}; !slices.Equal(listed, want) {
		t.Fatalf("list = %v, want %v", listed, want)
	}
}

// With a bounded history the oldest revisions drop out and the others keep
// their numbers; one that dropped is refused naming what is kept.
func TestRevisionsStableWhenOldestDrops(t *testing.T) {
	srv := natstest.Start(t)
	pb := publisher(t, srv.JS, store.Config{History: 3})
	ctx := context.Background()
	root := t.TempDir()
	var dir string
	for v := 1; v <= 5; v++ {
		dir = writeSkill(t, root, "pdf", "P.", fmt.Sprintf("Version %d.", v), nil)
		push(t, pb, skillstore.Global, false, dir)
		if got, _ := revs(t, pb, "pdf"); got[len(got)-1][0] != uint64(v) {
			t.Fatalf("push %d: history %v", v, got)
		}
	}
	if got, counted := revs(t, pb, "pdf"); !slices.Equal(numbers(got), []uint64{3, 4, 5}) || counted {
		t.Fatalf("history = %v counted %v, want revisions 3, 4, 5", got, counted)
	}
	_, err := pb.Get(ctx, skillstore.Global, "pdf", store.At{Rev: 2})
	if !errors.Is(err, store.ErrNotKept) || !strings.Contains(err.Error(), "keeps revisions 3 to 5") {
		t.Fatalf("Get of a dropped revision = %v", err)
	}
	if c, _, err := pb.Rollback(ctx, skillstore.Global, "pdf", store.At{Rev: 3}); err != nil || c.Rev != 6 {
		t.Fatalf("rollback to 3 = %+v, %v; want revision 6", c, err)
	}
	// A removal, then a push: the removal takes 7 and stays 7 once the
	// publications before it drop out (it is numbered from the push after it).
	if _, err := pb.Remove(ctx, skillstore.Global, "pdf"); err != nil {
		t.Fatal(err)
	}
	push(t, pb, skillstore.Global, false, dir)
	if got, _ := revs(t, pb, "pdf"); !slices.Equal(numbers(got), []uint64{6, 7, 8}) {
		t.Fatalf("history = %v, want 6, 7 (the removal), 8", got)
	}
	writeSkill(t, root, "pdf", "P.", "Version 9.", nil)
	push(t, pb, skillstore.Global, false, dir)
	got, _ := revs(t, pb, "pdf")
	if !slices.Equal(numbers(got), []uint64{7, 8, 9}) {
		t.Fatalf("history = %v, want 7 (the removal, now oldest), 8, 9", got)
	}
}

// legacyPut writes rec as an older skillstream would: the same record
// without its number.
func legacyPut(t testing.TB, kv jetstream.KeyValue, key string, rec []byte) uint64 {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(rec, &m); err != nil {
		t.Fatal(err)
	}
	delete(m, "rev")
	data, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	rev, err := kv.Put(context.Background(), key, data)
	if err != nil {
		t.Fatal(err)
	}
	return rev
}

// Records written before skills numbered their revisions (no "rev") are
// listed and numbered: counted from the oldest kept while no kept record
// has a number (said by Counted), anchored by the first publication that
// writes one, and stable from then on as the old ones drop.
func TestRevisionsOfOldRecords(t *testing.T) {
	srv := natstest.Start(t)
	pb := publisher(t, srv.JS, store.Config{History: 4})
	ctx := context.Background()
	kv, err := srv.JS.KeyValue(ctx, skillstore.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	dir := writeSkill(t, root, "pdf", "P.", "One.", nil)
	push(t, pb, skillstore.Global, false, dir)
	e, err := kv.Get(ctx, "global.pdf")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(e.Value()), `"rev":1`) {
		t.Fatalf("a pushed record lacks its number: %s", e.Value())
	}
	// Five old-style writes: the first push drops out, the four kept
	// record no number.
	for range 5 {
		legacyPut(t, kv, "global.pdf", e.Value())
	}
	got, counted := revs(t, pb, "pdf")
	if !slices.Equal(numbers(got), []uint64{1, 2, 3, 4}) || !counted {
		t.Fatalf("old records' history = %v counted %v, want 1-4 counted", got, counted)
	}
	ps, err := pb.ListAll(ctx)
	if err != nil || len(ps) != 1 || ps[0].Rev != 4 || ps[0].Revision != got[3][1] {
		t.Fatalf("list of an old record = %+v, %v; want revision 4", ps, err)
	}
	if p, err := pb.Get(ctx, skillstore.Global, "pdf", store.At{}); err != nil || p.Rev != 4 {
		t.Fatalf("Get of an old record = %+v, %v; want revision 4", p, err)
	}
	if p, err := pb.Get(ctx, skillstore.Global, "pdf", store.At{Rev: 2}); err != nil || p.Revision != got[1][1] {
		t.Fatalf("Get revision 2 of old records = %+v, %v", p, err)
	}
	if same := push(t, pb, skillstore.Global, false, dir)[0]; same.Action != store.Unchanged || same.Rev != 4 {
		t.Fatalf("unchanged push over an old record = %+v, want revision 4", same)
	}

	// A new publication records 5; the old ones keep their numbers as they drop.
	writeSkill(t, root, "pdf", "P.", "Two.", nil)
	if c := push(t, pb, skillstore.Global, false, dir)[0]; c.Rev != 5 {
		t.Fatalf("push after old records = %+v, want revision 5", c)
	}
	if got, counted := revs(t, pb, "pdf"); !slices.Equal(numbers(got), []uint64{2, 3, 4, 5}) || counted {
		t.Fatalf("history = %v counted %v, want 2-5, anchored", got, counted)
	}
	// An older skillstream still writing meanwhile: its record follows on.
	e, _ = kv.Get(ctx, "global.pdf")
	legacyPut(t, kv, "global.pdf", e.Value())
	if got, counted := revs(t, pb, "pdf"); !slices.Equal(numbers(got), []uint64{3, 4, 5, 6}) || counted {
		t.Fatalf("history = %v counted %v, want 3-6", got, counted)
	}
	writeSkill(t, root, "pdf", "P.", "Three.", nil)
	if c := push(t, pb, skillstore.Global, false, dir)[0]; c.Rev != 7 {
		t.Fatalf("push after an old writer's record = %+v, want revision 7", c)
	}
	ps, err = pb.ListAll(ctx)
	if err != nil || len(ps) != 1 || ps[0].Rev != 7 {
		t.Fatalf("list = %+v, %v; want revision 7", ps, err)
	}
}

// Two publishers never write one number twice: a push racing another on
// a new skill, and on a removed one (the other pushing it and removing it
// again, so that it is removed as read, at another revision), fails with
// "changed since read", and the numbers stay one per revision.
func TestRevisionsRacingPushes(t *testing.T) {
	srv := natstest.Start(t)
	pb := publisher(t, srv.JS, store.Config{})
	ctx := context.Background()
	root := t.TempDir()
	dir := writeSkill(t, root, "pdf", "P.", "Mine.", nil)
	mine, err := store.ReadSkill(dir, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	theirs := writeSkill(t, t.TempDir(), "pdf", "P.", "Theirs.", nil)
	stale := publisherWithHook(t, srv.JS, func() { push(t, pb, skillstore.Global, false, theirs) })
	if _, err := stale.Push(ctx, skillstore.Global, []store.Local{mine}, false); !errors.Is(err, store.ErrChanged) {
		t.Fatalf("new skill: racing push = %v, want ErrChanged", err)
	}
	if _, err := pb.Remove(ctx, skillstore.Global, "pdf"); err != nil {
		t.Fatal(err)
	}
	stale = publisherWithHook(t, srv.JS, func() {
		push(t, pb, skillstore.Global, false, theirs)
		if _, err := pb.Remove(ctx, skillstore.Global, "pdf"); err != nil {
			t.Error(err)
		}
	})
	if _, err := stale.Push(ctx, skillstore.Global, []store.Local{mine}, false); !errors.Is(err, store.ErrChanged) {
		t.Fatalf("removed skill: racing push = %v, want ErrChanged", err)
	}
	got, _ := revs(t, pb, "pdf")
	if !slices.Equal(numbers(got), []uint64{1, 2, 3, 4}) {
		t.Fatalf("history = %v, want 1 (theirs), 2 (removed), 3 (theirs), 4 (removed)", got)
	}
	if c := push(t, pb, skillstore.Global, false, dir)[0]; c.Action != store.Added || c.Rev != 5 {
		t.Fatalf("push after = %+v, want added at revision 5", c)
	}
}
