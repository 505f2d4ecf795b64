package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/store"
)

// A pinned skill is shown, loaded and read at the revision named, by its
// own number or by store revision, where the scope's skills rank; a
// removal pins it absent; the other skills stay current. Open refuses an
// unknown skill, an unknown revision, one the bounded history dropped and
// a skill pinned twice.
func TestPins(t *testing.T) {
	srv := natstest.Start(t)
	pb := publisher(t, srv.JS, store.Config{History: 3})
	ctx := context.Background()
	root, proj := t.TempDir(), t.TempDir()
	pdf := writeSkill(t, root, "pdf", "PDF one.", "Body one.", nil)
	other := writeSkill(t, root, "other", "Other one.", "O.", nil)
	var v1 store.Change
	for _, c := range push(t, pb, skillstore.Global, false, pdf, other) {
		if c.Name == "pdf" {
			v1 = c // pdf 1
		}
	}
	writeSkill(t, root, "pdf", "PDF two.", "Body two.", nil)
	v2 := push(t, pb, skillstore.Global, false, pdf)[0] // pdf 2
	rm, err := pb.RemoveSkill(ctx, skillstore.Global, "pdf")
	if err != nil { // pdf 3, a removal
		t.Fatal(err)
	}
	writeSkill(t, root, "pdf", "PDF four.", "Body four.", nil)
	push(t, pb, skillstore.Global, false, pdf) // pdf 4: 1 leaves the history (3 kept)
	writeSkill(t, root, "other", "Other two.", "O2.", nil)
	push(t, pb, skillstore.Global, false, other)
	sc, err := skillstore.ParseScope("project/p1")
	if err != nil {
		t.Fatal(err)
	}
	push(t, pb, sc, false, writeSkill(t, proj, "pdf", "Project PDF.", "P.", nil))
	if v1.Rev != 1 || v2.Rev != 2 || rm.Rev != 3 {
		t.Fatalf("revisions %d %d %d, want 1 2 3", v1.Rev, v2.Rev, rm.Rev)
	}

	shown := func(p *store.Provider, q catalog.Query) map[string]string {
		t.Helper()
		cs, err := p.List(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		out := map[string]string{}
		for _, c := range cs {
			out[c.Name+"/"+c.Source+"/"+rankName(c.Rank)] = c.Description
		}
		return out
	}
	global := catalog.Query{}
	for _, at := range []store.At{{Rev: 2}, {Store: v2.Revision}} {
		p := open(t, srv.JS, store.Config{Pins: []store.Pin{{Scope: skillstore.Global, Name: "pdf", At: at}}})
		got := shown(p, global)
		if len(got) != 2 || got["pdf/"+catalog.SourceStoreGlobal+"/global"] != "PDF two." || got["other/"+catalog.SourceStoreGlobal+"/global"] != "Other two." {
			t.Errorf("pinned at %+v: listed %v", at, got)
		}
		sk, err := p.Load(ctx, "pdf", global)
		if err != nil || sk.Description != "PDF two." || !strings.Contains(sk.Content, "Body two.") || sk.Digest != v2.Digest || sk.Revision != v2.Revision {
			t.Errorf("pinned at %+v: loaded %+v, %v", at, sk, err)
		}
		if v := p.Version("pdf", global); v.Digest != v2.Digest {
			t.Errorf("pinned at %+v: version %+v", at, v)
		}
		files, err := p.Files(ctx, "pdf", global, 0, 0)
		if err != nil || len(files) != 1 || !strings.Contains(string(files[0].Data), "PDF two.") {
			t.Errorf("pinned at %+v: files %v, %v", at, files, err)
		}
		// The project's own pdf still wins in its project.
		if got := shown(p, catalog.Query{Project: "p1"}); got["pdf/"+catalog.SourceStoreProject+"/project"] != "Project PDF." {
			t.Errorf("pinned at %+v: project p1 listed %v", at, got)
		}
	}

	// A removal: absent from the list, loads fail as unknown.
	p := open(t, srv.JS, store.Config{Pins: []store.Pin{{Scope: skillstore.Global, Name: "pdf", At: store.At{Rev: 3}}}})
	if got := shown(p, global); len(got) != 1 {
		t.Errorf("pinned at a removal: listed %v", got)
	}
	if _, err := p.Load(ctx, "pdf", global); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("pinned at a removal: load %v", err)
	}
	// A project's pin applies in its project.
	p = open(t, srv.JS, store.Config{Pins: []store.Pin{{Scope: sc, Name: "pdf", At: store.At{Rev: 1}}}})
	if sk, err := p.Load(ctx, "pdf", catalog.Query{Project: "p1"}); err != nil || sk.Description != "Project PDF." {
		t.Errorf("project pin at its current revision: %+v, %v", sk, err)
	}

	for _, c := range []struct {
		pins []store.Pin
		want string
		is   error
	}{
		{[]store.Pin{{Name: "nope", At: store.At{Rev: 1}}}, `skill "nope" in global: skill not found`, catalog.ErrNotFound},
		{[]store.Pin{{Name: "pdf", At: store.At{Rev: 9}}}, `skill "pdf" in global: revision 9 is not one the index keeps (its newest is 4`, store.ErrNotKept},
		{[]store.Pin{{Name: "pdf", At: store.At{Rev: 1}}}, `skill "pdf" in global: revision 1 is not one the index keeps (it keeps revisions 2 to 4, older ones left its history)`, store.ErrNotKept},
		{[]store.Pin{{Name: "pdf", At: store.At{Store: v1.Revision}}}, "is not one of its revisions the index keeps", store.ErrNotKept},
		{[]store.Pin{{Name: "pdf", At: store.At{Rev: 2}}, {Name: "pdf", At: store.At{Rev: 4}}}, `skill "pdf" in global is pinned twice`, nil},
		{[]store.Pin{{Scope: sc, Name: "other", At: store.At{Rev: 1}}}, `skill "other" in project/p1: skill not found`, catalog.ErrNotFound},
	} {
		octx, cancel := context.WithTimeout(ctx, 10*time.Second)
		p, err := store.Open(octx, srv.JS, store.Config{Pins: c.pins})
		cancel()
		if err == nil {
			p.Close()
		}
		if err == nil || !strings.Contains(err.Error(), c.want) || (c.is != nil && !errors.Is(err, c.is)) {
			t.Errorf("pins %+v: %v, want %q", c.pins, err, c.want)
		}
	}
}

func rankName(r int) string {
	switch r {
	case providers.RankStoreGlobal:
		return "global"
	case providers.RankStoreProject:
		return "project"
	}
	return "other"
}
