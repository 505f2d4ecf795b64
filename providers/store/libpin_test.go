package store_test

import (
	"context"
	"errors"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/providers/store"
)

// A tenant's pin of a library skill lives in the tenant's index: the
// tenant's own store ignores it without a warning, and a library provider
// following that index (TenantPins) serves the pinned library revision
// (channel pin, no canary for it), announces pins and unpins as changes,
// and serves the skill unpinned, with a warning, when the pin is
// malformed. A pin of a revision the library does not keep is refused.
func TestTenantPinOfLibrarySkill(t *testing.T) {
	srv := natstest.Start(t)
	ctx := context.Background()
	libCfg := store.Config{Bucket: "LIB", Objects: "LIB"}
	lib := publisher(t, srv.JS, libCfg)
	tenant := publisher(t, srv.JS, store.Config{})
	root := t.TempDir()
	pdf := writeSkill(t, root, "pdf", "PDF one.", "Body one.", nil)
	v1 := push(t, lib, skillstore.Global, false, pdf)[0]
	writeSkill(t, root, "pdf", "PDF two.", "Body two.", nil)
	l2, err := store.ReadSkill(pdf, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lib.PushWith(ctx, skillstore.Global, []store.Local{l2}, store.PushOptions{Draft: true}); err != nil {
		t.Fatal(err)
	}
	if _, err := lib.Release(ctx, skillstore.Global, "pdf", 2, catalog.FullShare, "curator"); err != nil {
		t.Fatal(err)
	}
	if _, err := tenant.PinLibrary(ctx, lib, "pdf", store.At{Rev: 9}); !errors.Is(err, store.ErrNotKept) {
		t.Errorf("pin of a revision the library does not keep: %v", err)
	}
	if _, err := tenant.PinLibrary(ctx, lib, "pdf", store.At{Rev: 1}); err != nil {
		t.Fatal(err)
	}
	kv, err := srv.JS.KeyValue(ctx, skillstore.DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	own := open(t, srv.JS, store.Config{})
	cfg := libCfg
	cfg.Library, cfg.TenantPins = true, kv
	lp := open(t, srv.JS, cfg)

	canary := catalog.Query{Canary: "pdf"} // a session that would take the candidate
	served := func(want uint64, channel string) bool {
		sk, err := lp.Load(ctx, "pdf", canary)
		cs, lerr := lp.List(ctx, canary)
		return err == nil && lerr == nil && len(cs) == 1 && sk.Origin.Rev == want && sk.Origin.Channel == channel &&
			cs[0].Origin.Rev == want && cs[0].Origin.Channel == channel
	}
	if !served(v1.Rev, catalog.ChannelPin) {
		sk, err := lp.Load(ctx, "pdf", canary)
		t.Fatalf("pinned at Open: %+v %v", sk.Origin, err)
	}
	if rels := lp.Releases(canary); len(rels) != 0 {
		t.Errorf("a pinned library skill has no canary for the tenant: %+v", rels)
	}
	changed := lp.Changes(canary)
	if _, err := tenant.UnpinLibrary(ctx, "pdf"); err != nil {
		t.Fatal(err)
	}
	<-changed
	eventually(t, "the library's candidate once unpinned", func() bool { return served(2, catalog.ChannelCanary) })
	if rels := lp.Releases(canary); len(rels) != 1 {
		t.Errorf("unpinned: releases %+v", rels)
	}
	// A pin written by hand that skillstream would not write: ignored, warned.
	if _, err := kv.Put(ctx, "pin.library.pdf", []byte(`{"v":1,"rev":1}`)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a warning about the malformed pin", func() bool { return lp.Warnings()["malformed_entry"] > 0 })
	if !served(2, catalog.ChannelCanary) {
		t.Error("a malformed pin changed what the library serves")
	}
	if w := own.Warnings(); len(w) != 0 {
		t.Errorf("the tenant's own store warned about the library's pin keys: %v", w)
	}
	if _, err := tenant.UnpinLibrary(ctx, "nothing"); !errors.Is(err, store.ErrNotPinned) {
		t.Errorf("unpin of an unpinned skill: %v", err)
	}
}
