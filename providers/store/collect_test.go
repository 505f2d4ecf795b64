package store_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/providers/store"
)

// objectNames lists the store's objects, sorted.
func objectNames(t testing.TB, js jetstream.JetStream) []string {
	t.Helper()
	obs, err := js.ObjectStore(context.Background(), skillstore.DefaultObjects)
	if err != nil {
		t.Fatal(err)
	}
	infos, err := obs.List(context.Background())
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, i := range infos {
		out = append(out, i.Name)
	}
	slices.Sort(out)
	return out
}

func collect(t testing.TB, pb *store.Publisher, opts store.CollectOptions) store.Collection {
	t.Helper()
	c, err := pb.Collect(context.Background(), opts)
	if err != nil {
		t.Fatalf("Collect %+v: %v", opts, err)
	}
	return c
}

func digests(objs []store.Object) []string {
	var out []string
	for _, o := range objs {
		out = append(out, o.Digest)
	}
	return out
}

// readableHistory fetches the files of every revision History lists of
// name, as `skills get NAME@REV` does.
func readableHistory(t testing.TB, pb *store.Publisher, name string) {
	t.Helper()
	hs, err := pb.History(context.Background(), skillstore.Global, name)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hs {
		if h.Removed {
			continue
		}
		dir := filepath.Join(t.TempDir(), "rev")
		t.Cleanup(func() { makeWritable(dir) })
		if err := pb.Materialize(context.Background(), h.Record.Digest, dir); err != nil {
			t.Errorf("%s rev %d, listed by History, cannot be fetched: %v", name, h.Revision, err)
		}
	}
}

func TestCollectRemovesWhatHistoryNoLongerNames(t *testing.T) {
	srv := natstest.Start(t)
	pb := publisher(t, srv.JS, store.Config{History: 1})
	root := t.TempDir()
	dir := writeSkill(t, root, "a-skill", "A.", "Version one.", nil)
	v1 := push(t, pb, skillstore.Global, false, dir, writeSkill(t, root, "b-skill", "B.", "Body B.", nil))
	writeSkill(t, root, "a-skill", "A.", "Version two.", nil)
	v2 := push(t, pb, skillstore.Global, false, dir)
	// An object not named by a digest is not skillstream's: left alone.
	obs, _ := srv.JS.ObjectStore(context.Background(), skillstore.DefaultObjects)
	if _, err := obs.PutString(context.Background(), "README", "not a skill"); err != nil {
		t.Fatal(err)
	}
	if len(objectNames(t, srv.JS)) != 4 {
		t.Fatalf("objects before gc: %v", objectNames(t, srv.JS))
	}

	dry := collect(t, pb, store.CollectOptions{DryRun: true})
	if !slices.Equal(digests(dry.Removed), []string{v1[0].Digest}) || dry.Kept != 3 || dry.Named != 2 ||
		dry.Revisions != 2 || dry.Freed != dry.Removed[0].Size || dry.Freed == 0 {
		t.Fatalf("dry run = %+v, want v1's object %s", dry, v1[0].Digest)
	}
	if len(objectNames(t, srv.JS)) != 4 {
		t.Fatalf("a dry run removed objects: %v", objectNames(t, srv.JS))
	}

	c := collect(t, pb, store.CollectOptions{})
	if !slices.Equal(digests(c.Removed), []string{v1[0].Digest}) || c.Kept != 3 || c.Named != 2 || c.Freed != dry.Freed {
		t.Fatalf("gc = %+v, want exactly v1's object %s", c, v1[0].Digest)
	}
	if got, want := objectNames(t, srv.JS), []string{"README", v1[1].Digest, v2[0].Digest}; !slices.Equal(got, sorted(want)) {
		t.Fatalf("objects after gc %v, want %v", got, want)
	}
	cur, err := pb.Get(context.Background(), skillstore.Global, "a-skill", store.At{})
	if err != nil || cur.Record.Digest != v2[0].Digest {
		t.Fatalf("current a-skill = %+v, %v", cur, err)
	}
	readableHistory(t, pb, "a-skill")
	readableHistory(t, pb, "b-skill")
	if again := collect(t, pb, store.CollectOptions{}); len(again.Removed) != 0 || again.Kept != 3 {
		t.Fatalf("second gc = %+v, want nothing removed", again)
	}

	// Pushing the old files again stores them again.
	writeSkill(t, root, "a-skill", "A.", "Version one.", nil)
	back := push(t, pb, skillstore.Global, false, dir)
	if back[0].Digest != v1[0].Digest {
		t.Fatalf("version one again has digest %s, first %s", back[0].Digest, v1[0].Digest)
	}
	readableHistory(t, pb, "a-skill")
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func TestCollectKeepsEveryRevisionInHistoryAndRemovedSkills(t *testing.T) {
	srv := natstest.Start(t)
	pb := publisher(t, srv.JS, store.Config{History: 3})
	root := t.TempDir()
	var dir string
	var revs []string
	for v := 1; v <= 4; v++ {
		dir = writeSkill(t, root, "a-skill", "A.", fmt.Sprintf("Version %d.", v), nil)
		revs = append(revs, push(t, pb, skillstore.Global, false, dir)[0].Digest)
	}
	c := collect(t, pb, store.CollectOptions{})
	if !slices.Equal(digests(c.Removed), revs[:1]) || c.Kept != 3 {
		t.Fatalf("gc with revisions 2-4 in history = %+v, want only revision 1's object", c)
	}
	readableHistory(t, pb, "a-skill")

	// A removal is a revision too: revision 2 leaves the history, 3 and 4
	// stay readable although the skill is gone.
	if _, err := pb.Remove(context.Background(), skillstore.Global, "a-skill"); err != nil {
		t.Fatal(err)
	}
	c = collect(t, pb, store.CollectOptions{})
	if !slices.Equal(digests(c.Removed), revs[1:2]) || c.Kept != 2 {
		t.Fatalf("gc after rm = %+v, want only revision 2's object", c)
	}
	if got := objectNames(t, srv.JS); !slices.Equal(got, sorted(revs[2:])) {
		t.Fatalf("objects after rm and gc: %v, want revisions 3 and 4's", got)
	}
	readableHistory(t, pb, "a-skill")
}

func TestCollectRefusesWhenAnIndexRevisionIsUnreadable(t *testing.T) {
	srv := natstest.Start(t)
	pb := publisher(t, srv.JS, store.Config{History: 2})
	root := t.TempDir()
	dir := writeSkill(t, root, "a-skill", "A.", "One.", nil)
	one := push(t, pb, skillstore.Global, false, dir)
	for _, body := range []string{"Two.", "Three."} { // one's object is unreferenced
		writeSkill(t, root, "a-skill", "A.", body, nil)
		push(t, pb, skillstore.Global, false, dir)
	}
	kv, _ := srv.JS.KeyValue(context.Background(), skillstore.DefaultBucket)
	// An older revision of a key whose current one is fine still counts.
	if _, err := kv.Put(context.Background(), "global.c-skill", []byte("{not json")); err != nil {
		t.Fatal(err)
	}
	c0 := push(t, pb, skillstore.Global, false, writeSkill(t, root, "c-skill", "C.", "C.", nil))
	if _, err := kv.Put(context.Background(), "something.else.here", []byte(`{}`)); err != nil {
		t.Fatal(err)
	}
	before := objectNames(t, srv.JS)
	for _, dry := range []bool{true, false} {
		c, err := pb.Collect(context.Background(), store.CollectOptions{DryRun: dry})
		var ue *store.UnreadableError
		if !errors.As(err, &ue) || !errors.Is(err, store.ErrBadRecord) || len(c.Removed) != 0 {
			t.Fatalf("Collect (dry run %v) = %+v, %v; want an UnreadableError", dry, c, err)
		}
		var keys []string
		for _, e := range ue.Entries {
			keys = append(keys, e.Key)
		}
		if !slices.Equal(keys, []string{"global.c-skill", "something.else.here"}) ||
			!strings.Contains(err.Error(), "global.c-skill rev ") || !strings.Contains(err.Error(), "nothing was removed") {
			t.Fatalf("unreadable entries %v: %v", keys, err)
		}
	}
	if after := objectNames(t, srv.JS); !slices.Equal(after, before) {
		t.Fatalf("objects changed by a refused gc: %v, were %v", after, before)
	}
	// Once the bad revisions are gone (purged, or pushed out of the
	// history by newer ones), gc goes ahead.
	if err := kv.Purge(context.Background(), "something.else.here"); err != nil {
		t.Fatal(err)
	}
	c1 := push(t, pb, skillstore.Global, false, writeSkill(t, root, "c-skill", "C.", "C again.", nil))
	if h, _ := pb.History(context.Background(), skillstore.Global, "c-skill"); len(h) != 2 ||
		h[0].Record.Digest != c0[0].Digest || h[1].Record.Digest != c1[0].Digest {
		t.Fatalf("c-skill history %+v, want its two good versions", h)
	}
	if c := collect(t, pb, store.CollectOptions{}); !slices.Equal(digests(c.Removed), []string{one[0].Digest}) || c.Kept != 4 {
		t.Fatalf("gc once the index reads = %+v, want only the object of one", c)
	}
	readableHistory(t, pb, "a-skill")
	readableHistory(t, pb, "c-skill")
}

func TestCollectMinAgeProtectsYoungObjects(t *testing.T) {
	srv := natstest.Start(t)
	pb := publisher(t, srv.JS, store.Config{History: 1})
	root := t.TempDir()
	dir := writeSkill(t, root, "a-skill", "A.", "One.", nil)
	v1 := push(t, pb, skillstore.Global, false, dir)
	writeSkill(t, root, "a-skill", "A.", "Two.", nil)
	push(t, pb, skillstore.Global, false, dir)

	c := collect(t, pb, store.CollectOptions{MinAge: time.Hour})
	if len(c.Removed) != 0 || c.Young != 1 || c.Kept != 2 {
		t.Fatalf("gc of a fresh unreferenced object = %+v, want it kept as young", c)
	}
	later := time.Now().Add(2 * time.Hour)
	store.SetNow(pb, func() time.Time { return later })
	c = collect(t, pb, store.CollectOptions{MinAge: time.Hour})
	if !slices.Equal(digests(c.Removed), []string{v1[0].Digest}) || c.Young != 0 {
		t.Fatalf("gc two hours later = %+v, want v1's object removed", c)
	}
}

// A push that brings back files whose object gc is removing leaves an
// entry without files: gc says which, and pushing the same files again
// repairs it.
func TestCollectReportsAnEntryPublishedOnRemovedFiles(t *testing.T) {
	srv := natstest.Start(t)
	pb := publisher(t, srv.JS, store.Config{History: 1})
	other := publisher(t, srv.JS, store.Config{History: 1})
	root := t.TempDir()
	dir := writeSkill(t, root, "a-skill", "A.", "One.", nil)
	v1 := push(t, pb, skillstore.Global, false, dir)
	writeSkill(t, root, "a-skill", "A.", "Two.", nil)
	push(t, pb, skillstore.Global, false, dir)
	writeSkill(t, root, "a-skill", "A.", "One.", nil)
	store.SetBeforeDelete(pb, func() {
		store.SetBeforeDelete(pb, nil)
		push(t, other, skillstore.Global, false, dir) // finds v1's object and reuses it
	})
	c, err := pb.Collect(context.Background(), store.CollectOptions{})
	if !errors.Is(err, store.ErrRemovedInUse) || !strings.Contains(err.Error(), "global.a-skill rev 3") ||
		!slices.Equal(digests(c.Removed), []string{v1[0].Digest}) {
		t.Fatalf("Collect racing a push = %+v, %v; want ErrRemovedInUse naming global.a-skill rev 3", c, err)
	}
	out := filepath.Join(t.TempDir(), "a")
	t.Cleanup(func() { makeWritable(out) })
	if err := pb.Materialize(context.Background(), v1[0].Digest, out); err == nil {
		t.Fatal("the reported entry's files are still there")
	}
	if again := push(t, pb, skillstore.Global, false, dir); again[0].Action != store.Unchanged {
		t.Fatalf("push again = %+v, want unchanged", again)
	}
	if err := pb.Materialize(context.Background(), v1[0].Digest, out); err != nil {
		t.Fatalf("after pushing again: %v", err)
	}
	if data, _ := os.ReadFile(filepath.Join(out, "SKILL.md")); !strings.Contains(string(data), "One.") {
		t.Fatalf("SKILL.md = %q", data)
	}
}
