package processor

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/store"
)

// The store's buckets deleted and created again under two running
// members (as changing the index history or the replicas requires): both
// load the new buckets by themselves, the new skills are served, every
// session whose catalog came from the old buckets gets exactly one
// replacement, and no pre-step is answered "behind" (the old revisions
// were higher than the new ones). A member started afterwards agrees.
func TestStoreBucketsRecreatedUnderRunningMembers(t *testing.T) {
	e := newEnv(t)
	for i := range 6 { // old revisions well above the new buckets' first ones
		pushSkill(t, e, "s-old", fmt.Sprintf("Old version %d.", i))
	}
	rOld := pushSkill(t, e, "s-two", "Another old skill.")
	logsA, logsB := &records{next: slog.DiscardHandler}, &records{next: slog.DiscardHandler}
	regA, regB := storeRegistryWith(t, e, store.Config{Logger: slog.New(logsA)}), storeRegistryWith(t, e, store.Config{Logger: slog.New(logsB)})
	q := catalog.Query{}
	dOld := storeDigest(t, regA, q, rOld)
	storeDigest(t, regB, q, rOld)
	oldEpoch := regA.Position().Epoch
	if oldEpoch == "" || regB.Position().Epoch != oldEpoch {
		t.Fatalf("epochs %q and %q: want one, not empty", oldEpoch, regB.Position().Epoch)
	}
	tu := newTurns(2)
	a := startMember(t, e.srv, regA, viewConfig("member-a"), hooks{take: tu.hook(0)})
	b := startMember(t, e.srv, regB, viewConfig("member-b"), hooks{take: tu.hook(1)})
	w := e.worker()
	sessions := []string{"rc-1", "rc-2", "rc-3", "rc-4"}
	step := func(sid string, n int) events.Decision {
		t.Helper()
		d := askStep(t, w, events.PreStep{V: 1, Session: sid, Step: fmt.Sprint(n), Tools: ourTool()})
		if d.Outcome == events.OutcomeBehind || d.Outcome == events.OutcomeDiverged || d.Outcome == events.OutcomeIncomplete {
			t.Fatalf("%s step %d: %+v", sid, n, d)
		}
		return d
	}
	for _, sid := range append(sessions, "rc-late") {
		d := step(sid, 1)
		if d.Outcome != events.OutcomeAppended || d.Catalog.Source.View.Epoch != oldEpoch {
			t.Fatalf("%s step 1: %+v", sid, d)
		}
		step(sid, 2)
	}

	ctx := context.Background()
	if err := e.js.DeleteKeyValue(ctx, skillstore.DefaultBucket); err != nil {
		t.Fatal(err)
	}
	if err := e.js.DeleteObjectStore(ctx, skillstore.DefaultObjects); err != nil {
		t.Fatal(err)
	}
	recreated := time.Now()
	rNew := pushSkill(t, e, "s-new", "Published after the buckets were recreated.") // creates them again
	if rNew >= rOld {
		t.Fatalf("new revision %d not below the old %d: the test proves nothing", rNew, rOld)
	}
	var dNew string
	for _, reg := range []*providers.Registry{regA, regB} {
		dNew = digestOf(t, reg, q, "s-new")
	}
	t.Logf("both members serve the recreated buckets %s after recreation", time.Since(recreated).Round(time.Millisecond))
	newEpoch := regA.Position().Epoch
	if newEpoch == oldEpoch || regB.Position().Epoch != newEpoch {
		t.Fatalf("epochs after recreation: A %q, B %q, old %q", newEpoch, regB.Position().Epoch, oldEpoch)
	}
	for _, l := range []*records{logsA, logsB} {
		if len(l.matching(slog.LevelWarn, "skill store buckets recreated or replaced")) == 0 {
			t.Error("a member's store logged no warning about the recreated buckets")
		}
	}
	for _, sid := range sessions {
		for n := 3; n < 11; n++ {
			step(sid, n)
		}
		cats := checkCatalogs(t, e, sid, dOld, dNew)
		if v := cats[1].Source.View; v == nil || v.Epoch != newEpoch {
			t.Fatalf("%s: replacement's view %+v, want epoch %s", sid, v, newEpoch)
		}
	}

	// A member started now (new instance, new buckets only) agrees.
	regC := storeRegistry(t, e, nil)
	tu.only.Store(2)
	startMember(t, e.srv, regC, viewConfig("member-c"), hooks{take: func(jetstream.Msg) bool { return tu.only.Load() == 2 }})
	for _, sid := range sessions {
		if d := step(sid, 11); d.Outcome != events.OutcomeUnchanged {
			t.Fatalf("%s on member C: %+v", sid, d)
		}
	}
	// A session not seen since the recreation, taken by the member started
	// afterwards (which never knew the old buckets): one replacement, not
	// "behind" at every step.
	if d := step("rc-late", 3); d.Outcome != events.OutcomeAppended {
		t.Fatalf("rc-late on member C: %+v", d)
	}
	for n := 4; n < 8; n++ {
		if d := step("rc-late", n); d.Outcome != events.OutcomeUnchanged {
			t.Fatalf("rc-late step %d on member C: %+v", n, d)
		}
	}
	checkCatalogs(t, e, "rc-late", dOld, dNew)
	// A new session on the old member gets its catalog at its first step.
	if d := step("rc-new", 1); d.Outcome != events.OutcomeAppended {
		t.Fatalf("new session: %+v", d)
	}
	// A worker still holding a read-your-writes token of the old buckets
	// (a revision the new ones never reached) is answered unavailable at
	// once (no wait can make it true), nothing appended; the worker pushes
	// again for a token of the new buckets.
	tu.only.Store(0)
	d := askStep(t, w, events.PreStep{V: 1, Session: "rc-token", Step: "1", Tools: ourTool(), MinStoreRevision: rOld + 1000})
	if d.Outcome != events.OutcomeIncomplete || d.Error == nil || !strings.Contains(d.Error.Message, "never reached") {
		t.Fatalf("pre-step naming a revision the bucket never reached: %+v %+v", d, d.Error)
	}
	if cats := e.catalogs("rc-token"); len(cats) != 0 {
		t.Fatalf("appended %d catalogs", len(cats))
	}
	t.Logf("view checks: A %s; B %s", viewChecks(a), viewChecks(b))
}

// storeRegistryWith is storeRegistry with a store configuration of its
// own.
func storeRegistryWith(t *testing.T, e *env, cfg store.Config) *providers.Registry {
	t.Helper()
	js, err := jetstream.New(e.srv.Connect())
	if err != nil {
		t.Fatal(err)
	}
	sp, err := store.Open(context.Background(), js, cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := providers.NewRegistry([]providers.Provider{sp}, providers.WithLogger(quietLogger()))
	t.Cleanup(func() { r.Close() })
	return r
}

// Members whose store configuration differs: A serves the default
// buckets, B another bucket, C no store (local folders only). Sessions
// whose steps go round the three keep the one catalog their first step
// got, whoever took it (no flip); every first step gets a catalog; no
// pre-step is answered "behind"; the others answer "diverged" (reason
// member_serves_other_store) and each member reports a store divergence:
// error log, gauge, Divergences (the /readyz detail), found by asking the
// other members even before a session is shared.
func TestStoreConfigurationDivergence(t *testing.T) {
	e := newEnv(t)
	pushSkill(t, e, "s-one", "In the default buckets.")
	ctx := context.Background()
	other := store.Config{Bucket: "OTHER", Objects: "OTHER"}
	pb, err := store.NewPublisher(ctx, e.js, other)
	if err != nil {
		t.Fatal(err)
	}
	l, err := store.ReadSkill(storeSkill(t, t.TempDir(), "s-other", "In the other buckets.", "Body."), other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pb.Push(ctx, skillstore.Global, []store.Local{l}, false); err != nil {
		t.Fatal(err)
	}
	dirC := t.TempDir()
	writeLocal(t, dirC, "local-one", "Only on C's disk.")
	regA, regB, regC := storeRegistry(t, e, nil), storeRegistryWith(t, e, other), localRegistry(t, dirC)
	q := catalog.Query{}
	digestOf(t, regA, q, "s-one")
	digestOf(t, regB, q, "s-other")
	digestOf(t, regC, q, "local-one")
	tu := newTurns(3)
	ms := []*member{
		startMember(t, e.srv, regA, viewConfig("member-a"), hooks{take: tu.hook(0)}),
		startMember(t, e.srv, regB, viewConfig("member-b"), hooks{take: tu.hook(1)}),
		startMember(t, e.srv, regC, viewConfig("member-c"), hooks{take: tu.hook(2)}),
	}
	// Found before any session is shared: each member asks the others
	// which store they serve.
	for _, m := range ms {
		poll(t, func() error {
			n := 0
			for _, d := range m.p.Divergences() {
				if d.StoreDiffers {
					n++
				}
			}
			if n != 2 {
				return fmt.Errorf("%s: %d store divergences before any session, want 2", m.p.cfg.Instance, n)
			}
			return nil
		})
	}
	w := e.worker()
	for first := range 3 { // the first step taken by A, by B, by C
		for s := range 3 {
			sid := fmt.Sprintf("cfg-%d-%d", first, s)
			for n := first; n < first+12; n++ {
				d := askStep(t, w, events.PreStep{V: 1, Session: sid, Step: fmt.Sprint(n), Tools: ourTool()})
				switch {
				case n == first && d.Outcome != events.OutcomeAppended:
					t.Fatalf("%s first step %d: %+v", sid, n, d)
				case n != first && d.Outcome == events.OutcomeAppended:
					t.Fatalf("%s step %d: the catalog flipped: %+v", sid, n, d)
				case d.Outcome == events.OutcomeDiverged && d.Reason != events.ReasonMemberServesOtherStore:
					t.Fatalf("%s step %d: reason %q", sid, n, d.Reason)
				case d.Outcome == events.OutcomeBehind || d.Outcome == events.OutcomeIncomplete:
					t.Fatalf("%s step %d: %+v", sid, n, d)
				}
			}
			if cats := e.catalogs(sid); len(cats) != 1 {
				t.Fatalf("%s: %d catalogs, want 1", sid, len(cats))
			}
		}
	}
	for _, m := range ms {
		var found []string
		for _, d := range m.p.Divergences() {
			if d.StoreDiffers {
				found = append(found, d.String())
			}
		}
		if len(found) != 2 {
			t.Errorf("%s: store divergences %q, want one with each other member", m.p.cfg.Instance, found)
		}
		if m.divergenceGauge(t) != 1 {
			t.Errorf("%s: divergence gauge %v", m.p.cfg.Instance, m.divergenceGauge(t))
		}
		if n := len(m.logs.matching(slog.LevelError, "members serve different skill store configurations")); n != 2 {
			t.Errorf("%s: %d error logs about store divergence, want 2 (one per other member)", m.p.cfg.Instance, n)
		}
		t.Logf("%s: %s; view checks %s", m.p.cfg.Instance, strings.Join(found, " | "), viewChecks(m))
	}
}

// Buckets restored from a backup keep their epoch (their creation times)
// but go back in revisions: a session's catalog naming a revision the
// bucket never reached is replaced once, not answered "behind" at every
// step.
func TestStoreRevisionTheBucketNeverReached(t *testing.T) {
	e := newEnv(t)
	r0 := pushSkill(t, e, "s-one", "After the restore.")
	reg := storeRegistry(t, e, nil)
	q := catalog.Query{}
	d0 := storeDigest(t, reg, q, r0)
	m := startMember(t, e.srv, reg, viewConfig("member-a"), hooks{})
	w := e.worker()
	// The catalog a member wrote before the restore, at a revision far
	// ahead in this epoch (its member is gone).
	const sid = "restored"
	entries := []catalog.Entry{{Name: "s-gone", Description: "Published before the backup was restored."}}
	text := catalog.RenderList(catalog.UpdateInitial, entries, 0)
	digest, ok := catalog.Recognize(text)
	if !ok {
		t.Fatal("rendered list not recognised")
	}
	w.publish(sid, events.KindCatalog, events.Catalog{V: 1, Session: sid, Step: "0", ID: sid + ":0:catalog.append", Role: "user", Text: text,
		Source: events.CatalogSource{Kind: events.SourceKindCatalog, Producer: DefaultToolOwner, Update: string(catalog.UpdateInitial),
			Entries: []events.Entry{{Name: "s-gone", Description: entries[0].Description}}, Digest: digest,
			View: &events.View{Revision: r0 + 500, Instance: "member-gone", Epoch: reg.Position().Epoch}}}, nil)
	for n := 1; n < 6; n++ {
		d := askStep(t, w, events.PreStep{V: 1, Session: sid, Step: fmt.Sprint(n), Tools: ourTool()})
		want := events.OutcomeUnchanged
		if n == 1 {
			want = events.OutcomeAppended
		}
		if d.Outcome != want {
			t.Fatalf("step %d: %+v, want %s", n, d, want)
		}
	}
	checkCatalogs(t, e, sid, digest, d0)
	t.Logf("view checks %s", viewChecks(m))
}
