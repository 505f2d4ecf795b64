package processor

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/providers/store"
)

// A read-your-writes token carries its store's epoch. With the epoch of
// the member's buckets it works as a revision alone did; without one, as
// before. After the buckets were recreated, a token of the old ones is
// answered at once, whatever its revision (one the new buckets reached
// too, or one they never reached), saying which epochs differ: the
// pre-step incomplete and the call unavailable, nothing appended, never
// a wait (the member's catch-up wait here is a minute, and the metric
// says whether it waited). A token of the new buckets is served even by
// a member that has not noticed the recreation yet.
func TestStoreTokenOfAnotherEpoch(t *testing.T) {
	e := newEnv(t)
	for i := range 6 { // old revisions well above the new buckets' first ones
		pushSkill(t, e, "s-old", fmt.Sprintf("Old version %d.", i))
	}
	rOld := pushSkill(t, e, "s-old", "The last old version.")
	reg := storeRegistry(t, e, nil)
	q := catalog.Query{}
	storeDigest(t, reg, q, rOld)
	oldEpoch := reg.Position().Epoch
	cfg := viewConfig("token-member")
	cfg.CatchUpWait = time.Minute
	m := startMember(t, e.srv, reg, cfg, hooks{})
	w := e.worker()
	far := time.Now().Add(2 * time.Minute).UnixMilli()
	step := func(sid string, epoch string, rev uint64) events.Decision {
		t.Helper()
		return askStep(t, w, events.PreStep{V: 1, Session: sid, Step: "1", Tools: ourTool(), DeadlineMs: far,
			MinStoreEpoch: epoch, MinStoreRevision: rev})
	}
	entries := func(d events.Decision) string {
		if d.Catalog == nil {
			return ""
		}
		var names []string
		for _, e := range d.Catalog.Source.Entries {
			names = append(names, e.Name)
		}
		return strings.Join(names, ",")
	}

	// The buckets' own epoch: as a revision alone.
	if d := step("tok-same", oldEpoch, rOld); d.Outcome != events.OutcomeAppended || entries(d) != "s-old" {
		t.Fatalf("token of the member's epoch: %+v", d)
	}

	ctx := context.Background()
	if err := e.js.DeleteKeyValue(ctx, skillstore.DefaultBucket); err != nil {
		t.Fatal(err)
	}
	if err := e.js.DeleteObjectStore(ctx, skillstore.DefaultObjects); err != nil {
		t.Fatal(err)
	}
	rNew := pushSkill(t, e, "s-new", "Published after the buckets were recreated.")
	pb, err := store.NewPublisher(ctx, e.js, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	newEpoch, err := pb.Epoch(ctx)
	if err != nil || newEpoch == oldEpoch || rNew >= rOld {
		t.Fatalf("new epoch %q (%v), old %q; new revision %d, old %d: the test proves nothing", newEpoch, err, oldEpoch, rNew, rOld)
	}

	// A token of the new buckets, at once: the member checks its buckets
	// and decides on the new ones.
	d := step("tok-new", newEpoch, rNew)
	if d.Outcome != events.OutcomeAppended || entries(d) != "s-new" || d.Catalog.Source.View == nil || d.Catalog.Source.View.Epoch != newEpoch {
		t.Errorf("token of the new buckets: %+v, entries %q", d, entries(d))
	}

	// Tokens of the old buckets: a revision the new ones reached, one they
	// never reached, and the epoch alone.
	want := fmt.Sprintf("store epoch %s is not this store's (%s)", oldEpoch, newEpoch)
	for sid, rev := range map[string]uint64{"tok-old-low": rNew, "tok-old-high": rOld, "tok-old-any": 0} {
		d := step(sid, oldEpoch, rev)
		if d.Outcome != events.OutcomeIncomplete || d.Error == nil || d.Error.Code != codeUnavailable || !strings.Contains(d.Error.Message, want) {
			t.Errorf("%s, a token of the old buckets at revision %d: %+v %+v", sid, rev, d, d.Error)
		}
		if n := len(e.catalogs(sid)); n != 0 {
			t.Errorf("%s: %d catalogs appended", sid, n)
		}
	}
	r := w.call(events.SkillCall{V: 1, Session: "tok-call", Call: "c1", Args: events.SkillArgs{Name: "s-new"}, DeadlineMs: far,
		MinStoreEpoch: oldEpoch, MinStoreRevision: rNew})
	if !r.IsError || r.Error == nil || r.Error.Code != codeUnavailable || !strings.Contains(r.Error.Message, want) {
		t.Errorf("skill call with a token of the old buckets: %+v %+v", r, r.Error)
	}
	if n := len(e.outputs("tok-call", events.KindToolResult)); n != 0 {
		t.Errorf("%d tool results appended", n)
	}
	waits := m.p.m.freshWaits
	if n := histCount(t, waits.WithLabelValues("pre-step", freshEpoch)); n != 3 {
		t.Errorf("pre-steps answered for another epoch: %d, want 3", n)
	}
	if n := histCount(t, waits.WithLabelValues("skill-call", freshEpoch)); n != 1 {
		t.Errorf("skill calls answered for another epoch: %d, want 1", n)
	}
	for _, kind := range []string{"pre-step", "skill-call"} {
		if n := histCount(t, waits.WithLabelValues(kind, freshTimedOut)); n != 0 {
			t.Errorf("%s: %d triggers waited out their time", kind, n)
		}
	}

	// Without an epoch, as before: a revision the current buckets reached.
	if d := step("tok-none", "", rNew); d.Outcome != events.OutcomeAppended || entries(d) != "s-new" {
		t.Fatalf("token without an epoch: %+v", d)
	}
	r = w.call(events.SkillCall{V: 1, Session: "tok-call-new", Call: "c1", Args: events.SkillArgs{Name: "s-new"}, DeadlineMs: far,
		MinStoreEpoch: newEpoch, MinStoreRevision: rNew})
	if r.IsError {
		t.Fatalf("skill call with a token of the new buckets: %+v %+v", r, r.Error)
	}
}
