package store_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/store"
)

// served is what a session of q gets of skill name from p: its
// description and origin, by List, checked to be what Load answers.
func served(t *testing.T, p *store.Provider, name string, q catalog.Query) (string, catalog.Origin) {
	t.Helper()
	cs, err := p.List(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.Name != name || c.Source != catalog.SourceStoreGlobal && q.Project == "" {
			continue
		}
		sk, err := p.Load(context.Background(), name, q)
		if err != nil || sk.Description != c.Description || sk.Origin != c.Origin || sk.Digest != c.Origin.Digest {
			t.Fatalf("%s for %+v: listed %q %+v, loaded %q %+v (%s), %v", name, q, c.Description, c.Origin, sk.Description, sk.Origin, sk.Digest, err)
		}
		return c.Description, c.Origin
	}
	if _, err := p.Load(context.Background(), name, q); !errors.Is(err, catalog.ErrNotFound) {
		t.Fatalf("%s for %+v: not listed, but Load = %v", name, q, err)
	}
	return "", catalog.Origin{}
}

// waitServed waits until a session of q gets description want of name
// startPDF starts what most release tests start from: a server, a
// publisher, and skill pdf published once ("PDF one.", rev 1) from dir
// under root.
func startPDF(t *testing.T) (*natstest.Server, *store.Publisher, string, string, store.Change) {
	t.Helper()
	srv := natstest.Start(t)
	pb := publisher(t, srv.JS, store.Config{})
	root := t.TempDir()
	dir := writeSkill(t, root, "pdf", "PDF one.", "One.", nil)
	return srv, pb, root, dir, push(t, pb, skillstore.Global, false, dir)[0]
}

// (empty: none) and returns its origin.
func waitServed(t *testing.T, p *store.Provider, name string, q catalog.Query, want string) catalog.Origin {
	t.Helper()
	var o catalog.Origin
	eventually(t, name+" serving "+want, func() bool {
		var d string
		d, o = served(t, p, name, q)
		return d == want
	})
	return o
}

func readLocal(t *testing.T, dir string) store.Local {
	t.Helper()
	l, err := store.ReadSkill(dir, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func pushDraft(t *testing.T, pb *store.Publisher, scope skillstore.Scope, dir string) store.Change {
	t.Helper()
	cs, err := pb.PushWith(context.Background(), scope, []store.Local{readLocal(t, dir)}, store.PushOptions{Draft: true, By: "tester"})
	if err != nil || len(cs) != 1 {
		t.Fatalf("draft push: %+v, %v", cs, err)
	}
	return cs[0]
}

// lastSeq is the index's stream sequence: unchanged when nothing was
// written.
func lastSeq(t *testing.T, js jetstream.JetStream) uint64 {
	t.Helper()
	s, err := js.Stream(context.Background(), "KV_"+skillstore.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return info.State.LastSeq
}

// A draft is kept (history, status) and offered to no session; released
// as a canary, the sessions whose cohort names the skill get it (channel
// canary) and the others the stable revision; promoted, every session
// gets it. Each step closes the change channels.
func TestReleaseDraftCanaryPromote(t *testing.T) {
	srv, pb, root, dir, v1 := startPDF(t)
	ctx := context.Background()
	p := open(t, srv.JS, store.Config{})
	stable, canary := catalog.Query{}, catalog.Query{Canary: "other,pdf"}
	if o := waitServed(t, p, "pdf", stable, "PDF one."); o != (catalog.Origin{Rev: 1, Digest: v1.Digest, Channel: catalog.ChannelStable}) {
		t.Fatalf("origin before any release: %+v", o)
	}

	writeSkill(t, root, "pdf", "PDF two.", "Two.", nil)
	ch := p.Changes(stable)
	v2 := pushDraft(t, pb, skillstore.Global, dir)
	if !v2.Draft || v2.Rev != 2 || v2.Action != store.Updated {
		t.Fatalf("draft push: %+v", v2)
	}
	<-ch
	eventually(t, "the draft applied", func() bool { return p.Revision() >= v2.Revision })
	for _, q := range []catalog.Query{stable, canary} {
		if d, o := served(t, p, "pdf", q); d != "PDF one." || o.Channel != catalog.ChannelStable || o.Rev != 1 {
			t.Errorf("draft: %+v gets %q %+v, want rev 1 stable", q, d, o)
		}
	}
	if rels := p.Releases(stable); len(rels) != 0 {
		t.Errorf("a draft is no release to a cohort: %+v", rels)
	}
	hist, err := pb.History(ctx, skillstore.Global, "pdf")
	if err != nil || len(hist) != 2 || hist[1].Record.Digest != v2.Digest {
		t.Fatalf("history keeps the draft: %+v, %v", hist, err)
	}
	st, err := pb.Status(ctx, skillstore.Global, "pdf")
	if err != nil || st.Channel != store.ChannelDraft || st.Stable == nil || st.Stable.Rev != 1 || st.Candidate == nil || st.Candidate.Rev != 2 || st.HeldBack {
		t.Fatalf("status of a draft: %+v, %v", st, err)
	}

	// A registry's cached views: the canary's own view refreshes when the
	// release lands, and a session's cohort comes from its Releases.
	reg := providers.NewRegistry([]providers.Provider{p})
	defer reg.Close()
	regDesc := func(q catalog.Query) string {
		s, err := reg.Snapshot(ctx, q)
		if err != nil || len(s.Skills) != 1 {
			t.Fatalf("snapshot %+v: %+v, %v", q, s, err)
		}
		return s.Skills[0].Description
	}
	if d := regDesc(canary); d != "PDF one." {
		t.Fatalf("registry before the release: %q", d)
	}
	ch = p.Changes(stable)
	if _, err := pb.Release(ctx, skillstore.Global, "pdf", 2, 1000, "tester"); err != nil {
		t.Fatal(err)
	}
	<-ch
	eventually(t, "the registry's canary view refreshed", func() bool { return regDesc(canary) == "PDF two." })
	// Another member decides alike.
	member := open(t, srv.JS, store.Config{})
	if o := waitServed(t, member, "pdf", canary, "PDF two."); o.Channel != catalog.ChannelCanary {
		t.Errorf("another member: %+v", o)
	}
	if d, _ := served(t, member, "pdf", stable); d != "PDF one." {
		t.Errorf("another member, outside the canary: %q", d)
	}
	if regDesc(stable) != "PDF one." {
		t.Errorf("registry: a session outside the canary got the candidate")
	}
	if rels := reg.Releases(stable); len(rels) != 1 || rels[0].Share != 1000 {
		t.Errorf("registry releases: %+v", rels)
	}
	waitServed(t, p, "pdf", canary, "PDF two.")
	if d, o := served(t, p, "pdf", canary); d != "PDF two." || o != (catalog.Origin{Rev: 2, Digest: v2.Digest, Channel: catalog.ChannelCanary}) {
		t.Errorf("canary session gets %q %+v", d, o)
	}
	if d, o := served(t, p, "pdf", stable); d != "PDF one." || o.Channel != catalog.ChannelStable {
		t.Errorf("session outside the canary gets %q %+v", d, o)
	}
	if rels := p.Releases(stable); len(rels) != 1 || rels[0] != catalog.NewRelease("pdf", v2.Digest, 1000) {
		t.Errorf("releases: %+v", rels)
	}
	if st, _ := pb.Status(ctx, skillstore.Global, "pdf"); st.Channel != store.ChannelCanary || st.Share != 1000 || st.By != "tester" {
		t.Errorf("status of a canary: %+v", st)
	}

	ch = p.Changes(stable)
	if _, err := pb.Promote(ctx, skillstore.Global, "pdf"); err != nil {
		t.Fatal(err)
	}
	<-ch
	if o := waitServed(t, p, "pdf", stable, "PDF two."); o != (catalog.Origin{Rev: 2, Digest: v2.Digest, Channel: catalog.ChannelStable}) {
		t.Errorf("promoted: %+v", o)
	}
	if rels := p.Releases(stable); len(rels) != 0 {
		t.Errorf("releases after promote: %+v", rels)
	}
	waitServed(t, member, "pdf", stable, "PDF two.")
	if st, _ := pb.Status(ctx, skillstore.Global, "pdf"); st.Channel != store.ChannelStable || st.Stable.Rev != 2 || st.Candidate != nil {
		t.Errorf("status after promote: %+v", st)
	}
	// A push without --draft while a release is in progress is stable at
	// once and ends the release.
	writeSkill(t, root, "pdf", "PDF three.", "Three.", nil)
	pushDraft(t, pb, skillstore.Global, dir)
	writeSkill(t, root, "pdf", "PDF four.", "Four.", nil)
	if c := push(t, pb, skillstore.Global, false, dir)[0]; !c.Ended || c.Draft {
		t.Errorf("push over a draft: %+v, want the release ended", c)
	}
	waitServed(t, p, "pdf", stable, "PDF four.")
	if st, _ := pb.Status(ctx, skillstore.Global, "pdf"); st.Channel != store.ChannelStable {
		t.Errorf("status after a plain push: %+v", st)
	}
}

// Rollback with a release in progress ends it: every session is back on
// the stable revision (published again as the newest), and a skill new in
// the release is removed.
func TestReleaseRollbackEndsRelease(t *testing.T) {
	srv, pb, root, dir, v1 := startPDF(t)
	ctx := context.Background()
	writeSkill(t, root, "pdf", "PDF two.", "Two.", nil)
	pushDraft(t, pb, skillstore.Global, dir)
	if _, err := pb.Release(ctx, skillstore.Global, "pdf", 2, 5000, ""); err != nil {
		t.Fatal(err)
	}
	fresh := pushDraft(t, pb, skillstore.Global, writeSkill(t, root, "fresh", "Fresh.", "F.", nil))
	if _, err := pb.Release(ctx, skillstore.Global, "fresh", fresh.Rev, catalog.FullShare, ""); err != nil {
		t.Fatal(err)
	}
	p := open(t, srv.JS, store.Config{})
	canary := catalog.Query{Canary: "fresh,pdf"}
	waitServed(t, p, "pdf", canary, "PDF two.")
	waitServed(t, p, "fresh", canary, "Fresh.")
	if d, _ := served(t, p, "fresh", catalog.Query{}); d != "" {
		t.Errorf("a skill new in a canary reached a session outside it: %q", d)
	}

	c, from, err := pb.Rollback(ctx, skillstore.Global, "pdf", store.At{})
	if err != nil || !c.Ended || c.Action != store.Updated || c.Digest != v1.Digest || c.Rev != 3 || from.Rev != 1 {
		t.Fatalf("rollback of a canary = %+v from %+v, %v", c, from, err)
	}
	last := lastSeq(t, srv.JS)
	eventually(t, "rollback applied", func() bool { return p.Revision() >= last })
	for _, q := range []catalog.Query{{}, canary} {
		if o := waitServed(t, p, "pdf", q, "PDF one."); o != (catalog.Origin{Rev: 3, Digest: v1.Digest, Channel: catalog.ChannelStable}) {
			t.Errorf("%+v after rollback: %+v", q, o)
		}
	}
	c, _, err = pb.Rollback(ctx, skillstore.Global, "fresh", store.At{})
	if err != nil || !c.Ended || c.Action != store.Removed {
		t.Fatalf("rollback of a new skill's canary = %+v, %v", c, err)
	}
	waitServed(t, p, "fresh", canary, "")
	if len(p.Releases(catalog.Query{})) != 0 {
		t.Errorf("releases after rollbacks: %+v", p.Releases(catalog.Query{}))
	}
	// Without a release, rollback is as before.
	if c, _, err := pb.Rollback(ctx, skillstore.Global, "pdf", store.At{}); err != nil || c.Ended || c.Rev != 4 {
		t.Errorf("plain rollback = %+v, %v", c, err)
	}
}

// A pin beats the release and the newest revision for its scope's
// sessions, canary or not; a project's pin beats the tenant's; unpinned,
// the release state answers again.
func TestPinBeatsReleaseAndHead(t *testing.T) {
	srv, pb, root, dir, v1 := startPDF(t)
	ctx := context.Background()
	writeSkill(t, root, "pdf", "PDF two.", "Two.", nil)
	push(t, pb, skillstore.Global, false, dir)
	writeSkill(t, root, "pdf", "PDF three.", "Three.", nil)
	pushDraft(t, pb, skillstore.Global, dir)
	if _, err := pb.Release(ctx, skillstore.Global, "pdf", 3, 2000, ""); err != nil {
		t.Fatal(err)
	}
	projX, _ := skillstore.Project("x")
	p := open(t, srv.JS, store.Config{})
	tenant, canary := catalog.Query{}, catalog.Query{Canary: "pdf"}
	inX, inXCanary := catalog.Query{Project: "x"}, catalog.Query{Project: "x", Canary: "pdf"}
	waitServed(t, p, "pdf", canary, "PDF three.")

	pin, err := pb.Pin(ctx, skillstore.Global, "pdf", store.At{Rev: 1})
	if err != nil || pin.Pin.Of != store.PinOfGlobal || pin.Pin.Digest != v1.Digest {
		t.Fatalf("pin: %+v, %v", pin, err)
	}
	for _, q := range []catalog.Query{tenant, canary, inX, inXCanary} {
		if o := waitServed(t, p, "pdf", q, "PDF one."); o != (catalog.Origin{Rev: 1, Digest: v1.Digest, Channel: catalog.ChannelPin}) {
			t.Errorf("%+v pinned: %+v", q, o)
		}
		if rels := p.Releases(q); len(rels) != 0 {
			t.Errorf("%+v pinned, yet a release: %+v", q, rels)
		}
	}
	if _, err := pb.Pin(ctx, projX, "pdf", store.At{Rev: 2}); err != nil {
		t.Fatal(err)
	}
	waitServed(t, p, "pdf", inXCanary, "PDF two.")
	if d, _ := served(t, p, "pdf", tenant); d != "PDF one." {
		t.Errorf("project pin reached another scope: %q", d)
	}
	st, err := pb.Status(ctx, skillstore.Global, "pdf")
	if err != nil || len(st.Pins) != 2 || st.Pins[0].Scope != "global" || st.Pins[0].Rev != 1 || st.Pins[1].Scope != "project/x" || st.Pins[1].Rev != 2 {
		t.Fatalf("status pins: %+v, %v", st.Pins, err)
	}
	if _, err := pb.Unpin(ctx, skillstore.Global, "pdf"); err != nil {
		t.Fatal(err)
	}
	waitServed(t, p, "pdf", tenant, "PDF two.")
	waitServed(t, p, "pdf", canary, "PDF three.")
	if d, o := served(t, p, "pdf", inXCanary); d != "PDF two." || o.Channel != catalog.ChannelPin {
		t.Errorf("project still pinned: %q %+v", d, o)
	}
	if _, err := pb.Unpin(ctx, skillstore.Global, "pdf"); !errors.Is(err, store.ErrNotPinned) {
		t.Errorf("unpin twice = %v", err)
	}
	// A project pin of the project's own skill.
	push(t, pb, projX, false, writeSkill(t, t.TempDir(), "pdf", "Project PDF.", "P.", nil))
	pp, err := pb.Pin(ctx, projX, "pdf", store.At{Rev: 1})
	if err != nil || pp.Pin.Of != store.PinOfProject {
		t.Fatalf("pin of the project's own skill: %+v, %v", pp, err)
	}
	// gc reads past release and pin entries, and keeps what they name.
	col, err := pb.Collect(ctx, store.CollectOptions{})
	if err != nil || col.Revisions == 0 {
		t.Fatalf("gc with releases and pins: %+v, %v", col, err)
	}
	waitServed(t, p, "pdf", canary, "PDF three.")
	if _, err := p.Load(ctx, "pdf", tenant); err != nil {
		t.Errorf("stable revision after gc: %v", err)
	}
}

// A draft push is two writes, the release entry first. Interrupted
// between them, or with the skill's key written alone (its release not
// naming it as candidate), nothing new reaches any session.
func TestReleaseCrashBetweenWritesExposesNothing(t *testing.T) {
	srv, pb, _, _, v1 := startPDF(t)
	ctx := context.Background()
	kv, err := srv.JS.KeyValue(ctx, skillstore.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	// A record of other files, with its object stored: pushed to a
	// scratch project, then copied.
	scratch, _ := skillstore.Project("scratch")
	push(t, pb, scratch, false, writeSkill(t, t.TempDir(), "pdf", "Never served.", "X.", nil))
	e, err := kv.Get(ctx, scratch.Key("pdf"))
	if err != nil {
		t.Fatal(err)
	}
	var rec store.Record
	json.Unmarshal(e.Value(), &rec)
	rec.Rev = 9

	p := open(t, srv.JS, store.Config{})
	all := []catalog.Query{{}, {Canary: "pdf"}}
	// First write of a draft push alone: the release names a candidate
	// never written.
	rel := store.ReleaseState{V: 1, Channel: store.ChannelCanary, Share: catalog.FullShare,
		Stable:    &store.RevRef{Rev: 1, Revision: v1.Revision, Digest: v1.Digest},
		Candidate: &store.RevRef{Rev: 2, Digest: rec.Digest}}
	relRev, err := kv.Create(ctx, store.ReleaseKey(skillstore.Global, "pdf"), mustJSON(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "release applied", func() bool { return p.Revision() >= relRev })
	for _, q := range all {
		if d, o := served(t, p, "pdf", q); d != "PDF one." || o.Rev != 1 {
			t.Errorf("release entry alone: %+v gets %q %+v", q, d, o)
		}
	}
	// The skill's key written alone over a release naming another
	// candidate (a second draft push interrupted after its skill write).
	rel.Candidate.Digest = v1.Digest
	rel.Candidate.Rev = 1
	if _, err := kv.Update(ctx, store.ReleaseKey(skillstore.Global, "pdf"), mustJSON(t, rel), relRev); err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(rec)
	rev, err := kv.Put(ctx, skillstore.Global.Key("pdf"), b)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "skill write applied", func() bool { return p.Revision() >= rev })
	for _, q := range all {
		if d, o := served(t, p, "pdf", q); d != "PDF one." || o.Rev != 1 || o.Channel != catalog.ChannelStable {
			t.Errorf("skill key alone: %+v gets %q %+v", q, d, o)
		}
	}
	if rels := p.Releases(catalog.Query{}); len(rels) != 0 {
		t.Errorf("a held back head is released: %+v", rels)
	}
	if st, err := pb.Status(ctx, skillstore.Global, "pdf"); err != nil || !st.HeldBack {
		t.Errorf("status of a held back head: %+v, %v", st, err)
	}
	// The same, seen by a provider loading the index from scratch.
	p2 := open(t, srv.JS, store.Config{})
	for _, q := range all {
		if d, _ := served(t, p2, "pdf", q); d != "PDF one." {
			t.Errorf("fresh load: %+v gets %q", q, d)
		}
	}
}

func mustJSON(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// Bad input is refused with an error naming what was wrong, and the
// store is unchanged.
func TestReleaseBadInput(t *testing.T) {
	srv, pb, root, dir, _ := startPDF(t)
	ctx := context.Background()
	if _, err := pb.RemoveSkill(ctx, skillstore.Global, "pdf"); err != nil { // rev 2
		t.Fatal(err)
	}
	writeSkill(t, root, "pdf", "PDF three.", "Three.", nil)
	push(t, pb, skillstore.Global, false, dir) // rev 3
	for _, tt := range []struct {
		what string
		do   func() error
		want error
		text string
	}{
		{"release of a stable revision", func() error { _, err := pb.Release(ctx, skillstore.Global, "pdf", 3, 1000, ""); return err }, store.ErrNoRelease, "rev 3 is already stable"},
		{"release of an earlier revision", func() error { _, err := pb.Release(ctx, skillstore.Global, "pdf", 1, 1000, ""); return err }, store.ErrNoRelease, "--draft first"},
		{"unknown revision", func() error { _, err := pb.Release(ctx, skillstore.Global, "pdf", 9, 1000, ""); return err }, store.ErrNotKept, "revision 9"},
		{"unknown skill", func() error { _, err := pb.Release(ctx, skillstore.Global, "nope", 1, 1000, ""); return err }, catalog.ErrNotFound, "nope"},
		{"share over 100%", func() error { _, err := pb.Release(ctx, skillstore.Global, "pdf", 3, 10001, ""); return err }, store.ErrBadShare, "100.01%"},
		{"share below 0%", func() error { _, err := pb.Release(ctx, skillstore.Global, "pdf", 3, -1, ""); return err }, store.ErrBadShare, "-0.01%"},
		{"promote without a canary", func() error { _, err := pb.Promote(ctx, skillstore.Global, "pdf"); return err }, store.ErrNoCanary, "no release is in progress"},
		{"pin of a missing revision", func() error { _, err := pb.Pin(ctx, skillstore.Global, "pdf", store.At{Rev: 7}); return err }, store.ErrNotKept, "revision 7"},
		{"pin of a removal", func() error { _, err := pb.Pin(ctx, skillstore.Global, "pdf", store.At{Rev: 2}); return err }, store.ErrNotKept, "is a removal"},
		{"pin of a missing skill", func() error { _, err := pb.Pin(ctx, skillstore.Global, "nope", store.At{Rev: 1}); return err }, catalog.ErrNotFound, "nope"},
		{"unpin of nothing", func() error { _, err := pb.Unpin(ctx, skillstore.Global, "pdf"); return err }, store.ErrNotPinned, "not pinned"},
	} {
		before := lastSeq(t, srv.JS)
		err := tt.do()
		if !errors.Is(err, tt.want) || !strings.Contains(err.Error(), tt.text) {
			t.Errorf("%s: %v, want %v naming %q", tt.what, err, tt.want, tt.text)
		}
		if after := lastSeq(t, srv.JS); after != before {
			t.Errorf("%s wrote to the index (sequence %d -> %d)", tt.what, before, after)
		}
	}
	// Promote of a draft: no canary either.
	writeSkill(t, root, "pdf", "PDF four.", "Four.", nil)
	pushDraft(t, pb, skillstore.Global, dir)
	before := lastSeq(t, srv.JS)
	if _, err := pb.Promote(ctx, skillstore.Global, "pdf"); !errors.Is(err, store.ErrNoCanary) || !strings.Contains(err.Error(), "is a draft") {
		t.Errorf("promote of a draft: %v", err)
	}
	if _, err := pb.Release(ctx, skillstore.Global, "pdf", 3, 1000, ""); err == nil || !strings.Contains(err.Error(), "not the release's candidate (rev 4") {
		t.Errorf("release of a revision that is not the candidate: %v", err)
	}
	if _, _, err := pb.Rollback(ctx, skillstore.Global, "pdf", store.At{Rev: 1}); err == nil || !strings.Contains(err.Error(), "a release is in progress") {
		t.Errorf("rollback --to during a release: %v", err)
	}
	if after := lastSeq(t, srv.JS); after != before {
		t.Errorf("refused operations wrote to the index (sequence %d -> %d)", before, after)
	}
}

// Two publishers release one skill at once: exactly one wins, the other is
// told it changed and writes nothing.
func TestConcurrentReleasesOneWins(t *testing.T) {
	srv := natstest.Start(t)
	pbB := publisher(t, srv.JS, store.Config{})
	ctx := context.Background()
	root := t.TempDir()
	dir := writeSkill(t, root, "pdf", "PDF one.", "One.", nil)
	push(t, pbB, skillstore.Global, false, dir)
	writeSkill(t, root, "pdf", "PDF two.", "Two.", nil)
	pushDraft(t, pbB, skillstore.Global, dir)
	var bErr error
	pbA := publisherWithHook(t, srv.JS, func() {
		_, bErr = pbB.Release(ctx, skillstore.Global, "pdf", 2, 500, "b")
	})
	_, aErr := pbA.Release(ctx, skillstore.Global, "pdf", 2, 1000, "a")
	if bErr != nil {
		t.Fatalf("the first release: %v", bErr)
	}
	if !errors.Is(aErr, store.ErrChanged) || !strings.Contains(aErr.Error(), "by another publisher; read again") {
		t.Fatalf("the second release = %v, want changed by another publisher", aErr)
	}
	st, err := pbB.Status(ctx, skillstore.Global, "pdf")
	if err != nil || st.Share != 500 || st.By != "b" {
		t.Fatalf("status after the race: %+v, %v; want b's release", st, err)
	}
	// Promote and rollback race alike.
	pbA = publisherWithHook(t, srv.JS, func() {
		if _, _, err := pbB.Rollback(ctx, skillstore.Global, "pdf", store.At{}); err != nil {
			t.Errorf("rollback: %v", err)
		}
	})
	if _, err := pbA.Promote(ctx, skillstore.Global, "pdf"); !errors.Is(err, store.ErrChanged) {
		t.Fatalf("promote racing a rollback = %v", err)
	}
	// Two draft pushes of one skill: one wins, the other's release entry
	// and revision are not written.
	other := writeSkill(t, t.TempDir(), "pdf", "PDF other.", "Other.", nil)
	writeSkill(t, root, "pdf", "PDF five.", "Five.", nil)
	var won store.Change
	pbA = publisherWithHook(t, srv.JS, func() { won = pushDraft(t, pbB, skillstore.Global, dir) })
	before := lastSeq(t, srv.JS)
	_, err = pbA.PushWith(ctx, skillstore.Global, []store.Local{readLocal(t, other)}, store.PushOptions{Draft: true})
	if !errors.Is(err, store.ErrChanged) {
		t.Fatalf("the second draft push = %v, want changed", err)
	}
	if after := lastSeq(t, srv.JS); after != won.Revision || won.Revision <= before {
		t.Errorf("the losing draft push wrote (sequence %d, winner's revision %d)", after, won.Revision)
	}
	if st, _ := pbB.Status(ctx, skillstore.Global, "pdf"); st.Candidate == nil || st.Candidate.Digest != won.Digest || st.HeldBack {
		t.Errorf("status after racing drafts: %+v", st)
	}
}

// Release and pin entries written by hand that skillstream would not
// write are ignored with a warning: the skills are listed as before, and
// no key under release. or pin. is reported as a bad skill key.
func TestMalformedReleaseAndPinIgnored(t *testing.T) {
	srv := natstest.Start(t)
	pb := publisher(t, srv.JS, store.Config{})
	ctx := context.Background()
	root := t.TempDir()
	push(t, pb, skillstore.Global, false, writeSkill(t, root, "pdf", "PDF one.", "One.", nil), writeSkill(t, root, "other", "Other.", "O.", nil))
	kv, _ := srv.JS.KeyValue(ctx, skillstore.DefaultBucket)
	hostile := map[string]string{
		"release.global.pdf":      `{"v":1,"channel":"canary","share":99999,"candidate":{"rev":2,"digest":"x"}}`,
		"pin.global.other":        `{not json`,
		"pin.project.x.pdf":       `{"v":1,"rev":1,"revision":1,"digest":"` + strings.Repeat("a", 64) + `","of":"elsewhere"}`,
		"release.project.x.other": strings.Repeat("[", 5000),
	}
	var logs syncBuilder
	warnings := 0
	p := open(t, srv.JS, store.Config{Logger: newLogger(&logs), OnWarning: func(string) { warnings++ }})
	for k, v := range hostile {
		if _, err := kv.Put(ctx, k, []byte(v)); err != nil {
			t.Fatal(err)
		}
	}
	last := lastSeq(t, srv.JS)
	eventually(t, "hostile entries applied", func() bool { return p.Revision() >= last })
	check := func(p *store.Provider) {
		for _, q := range []catalog.Query{{}, {Project: "x", Canary: "pdf,other"}} {
			if d, o := served(t, p, "pdf", q); d != "PDF one." || o.Channel != catalog.ChannelStable {
				t.Errorf("%+v: pdf %q %+v", q, d, o)
			}
			if d, _ := served(t, p, "other", q); d != "Other." {
				t.Errorf("%+v: other %q", q, d)
			}
		}
	}
	check(p)
	var logs2 syncBuilder
	check(open(t, srv.JS, store.Config{Logger: newLogger(&logs2)}))
	for _, l := range []string{logs.String(), logs2.String()} {
		if strings.Contains(l, "skill index entry skipped") || strings.Count(l, "not written by skillstream (malformed): ignored") < len(hostile) {
			t.Errorf("warnings:\n%s", l)
		}
	}
	st, err := pb.Status(ctx, skillstore.Global, "pdf")
	if err != nil || len(st.Malformed) != 2 || st.Channel != store.ChannelStable {
		t.Errorf("status with malformed entries: %+v, %v", st, err)
	}
	// A draft cannot build on it; a push makes the skill stable and takes
	// it away, and so does a rollback.
	writeSkill(t, root, "pdf", "PDF two.", "Two.", nil)
	if _, err := pb.PushWith(ctx, skillstore.Global, []store.Local{readLocal(t, root+"/pdf")}, store.PushOptions{Draft: true}); !errors.Is(err, store.ErrBadControl) || !strings.Contains(err.Error(), "release.global.pdf") {
		t.Errorf("draft over a malformed release: %v", err)
	}
	if c := push(t, pb, skillstore.Global, false, root+"/pdf")[0]; !c.Ended {
		t.Errorf("push over a malformed release: %+v", c)
	}
	if c, _, err := pb.Rollback(ctx, projX(t), "other", store.At{}); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("rollback of a skill a project lacks: %+v, %v", c, err)
	}
	kv.Put(ctx, "release.global.other", []byte("{"))
	if c, _, err := pb.Rollback(ctx, skillstore.Global, "other", store.At{}); err != nil || !c.Ended || c.Action != store.Unchanged {
		t.Errorf("rollback of a malformed release: %+v, %v", c, err)
	}
	if st, err := pb.Status(ctx, skillstore.Global, "other"); err != nil || len(st.Malformed) != 1 {
		// the pin of other stays malformed; the release is gone
		t.Errorf("status after: %+v, %v", st, err)
	}
}

func projX(t *testing.T) skillstore.Scope {
	sc, err := skillstore.Project("x")
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

func FuzzDecodeRelease(f *testing.F) {
	d := strings.Repeat("a", 64)
	f.Add([]byte(`{"v":1,"channel":"canary","share":1000,"stable":{"rev":1,"revision":3,"digest":"` + d + `"},"candidate":{"rev":2,"revision":4,"digest":"` + d + `"},"by":"x","at":1}`))
	f.Add([]byte(`{"v":1,"channel":"draft","share":0,"stable":null,"candidate":{"rev":1,"revision":0,"digest":"` + d + `"}}`))
	f.Add([]byte(`{"v":2}`))
	f.Add([]byte(`{"v":1,"channel":"canary","share":-5,"candidate":{"rev":18446744073709551615,"digest":"` + d + `"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		r, err := store.DecodeRelease(data)
		if err != nil {
			if !errors.Is(err, store.ErrBadControl) {
				t.Fatalf("error not wrapping ErrBadControl: %v", err)
			}
			return
		}
		if r.Share < 0 || r.Share > catalog.FullShare || r.Candidate == nil || !skillstore.ValidDigest(r.Candidate.Digest) ||
			(r.Channel != store.ChannelDraft && r.Channel != store.ChannelCanary) || (r.Stable != nil && r.Stable.Revision == 0) {
			t.Fatalf("accepted out of bounds: %+v", r)
		}
		again, err := store.DecodeRelease(mustJSONF(t, r))
		if err != nil || again.Share != r.Share || *again.Candidate != *r.Candidate {
			t.Fatalf("round trip: %+v -> %+v, %v", r, again, err)
		}
	})
}

func FuzzDecodePin(f *testing.F) {
	d := strings.Repeat("b", 64)
	f.Add([]byte(`{"v":1,"rev":2,"revision":5,"digest":"`+d+`","of":"global"}`), false)
	f.Add([]byte(`{"v":1,"rev":2,"revision":5,"digest":"`+d+`","of":"project"}`), true)
	f.Add([]byte(`{"v":1,"rev":0,"revision":0,"digest":"","of":""}`), true)
	f.Fuzz(func(t *testing.T, data []byte, project bool) {
		sc := skillstore.Global
		if project {
			sc, _ = skillstore.Project("p")
		}
		pn, err := store.DecodePin(sc, data)
		if err != nil {
			if !errors.Is(err, store.ErrBadControl) {
				t.Fatalf("error not wrapping ErrBadControl: %v", err)
			}
			return
		}
		if pn.Rev == 0 || pn.Revision == 0 || !skillstore.ValidDigest(pn.Digest) || (pn.Of == store.PinOfProject && !project) {
			t.Fatalf("accepted out of bounds: %+v", pn)
		}
	})
}

func mustJSONF(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseShare(t *testing.T) {
	for in, want := range map[string]int{"10%": 1000, "10": 1000, "2.5%": 250, "0": 0, "100%": 10000, "0.01%": 1, "99.99": 9999, "7.05%": 705} {
		if got, err := store.ParseShare(in); err != nil || got != want {
			t.Errorf("ParseShare(%q) = %d, %v; want %d", in, got, err, want)
		}
		if f := store.FormatShare(want); f != strings.TrimSuffix(in, "%")+"%" && in != "10" && in != "0" && in != "99.99" {
			t.Errorf("FormatShare(%d) = %q", want, f)
		}
	}
	for _, in := range []string{"", "%", "-1%", "100.01%", "101", "1000", "2.555%", "1e2", "ten", "5.", ".5", "5%%", "0x10", "+5"} {
		if _, err := store.ParseShare(in); !errors.Is(err, store.ErrBadShare) {
			t.Errorf("ParseShare(%q) = %v, want ErrBadShare", in, err)
		}
	}
}

// An index writer cannot grow what every member keeps of releases and pins
// past the store's bound on skills: pins over it are ignored, with a
// warning, and room made by an unpin is used by the next pin written.
func TestPinsBoundedByMaxSkills(t *testing.T) {
	srv, pb, root, dir, _ := startPDF(t)
	ctx := context.Background()
	writeSkill(t, root, "pdf", "PDF two.", "Two.", nil)
	push(t, pb, skillstore.Global, false, dir)
	warned := &warnCount{n: map[string]int{}}
	p := open(t, srv.JS, store.Config{MaxSkills: 3, OnWarning: warned.add})
	waitServed(t, p, "pdf", catalog.Query{}, "PDF two.")
	scope := func(i int) skillstore.Scope {
		sc, err := skillstore.Project(fmt.Sprintf("p%d", i))
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	for i := range 5 {
		if _, err := pb.Pin(ctx, scope(i), "pdf", store.At{Rev: 1}); err != nil {
			t.Fatal(err)
		}
	}
	pinned := func() (n int) {
		for i := range 5 {
			if _, o := served(t, p, "pdf", catalog.Query{Project: fmt.Sprintf("p%d", i)}); o.Channel == catalog.ChannelPin {
				n++
			}
		}
		return n
	}
	eventually(t, "two pins over the bound warned of", func() bool { return warned.get("malformed_entry") >= 2 })
	if n := pinned(); n != 3 {
		t.Fatalf("%d projects pinned; want the bound, 3", n)
	}
	if _, err := pb.Unpin(ctx, scope(0), "pdf"); err != nil {
		t.Fatal(err)
	}
	if _, err := pb.Unpin(ctx, scope(4), "pdf"); err != nil {
		t.Fatal(err)
	}
	if _, err := pb.Pin(ctx, scope(4), "pdf", store.At{Rev: 1}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the pin written after an unpin is held", func() bool {
		_, o := served(t, p, "pdf", catalog.Query{Project: "p4"})
		return o.Channel == catalog.ChannelPin
	})
	if n := pinned(); n != 3 {
		t.Errorf("%d projects pinned after an unpin and a pin; want 3", n)
	}
}
