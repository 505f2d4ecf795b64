package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/providers/store"
)

// revoke changes pb's policy's revocations with f.
func revoke(t testing.TB, pb *store.Publisher, f func(r *store.Revoked)) {
	t.Helper()
	_, _, err := pb.ChangePolicy(context.Background(), func(p *store.TrustPolicy) error {
		if p.Revoked == nil {
			p.Revoked = &store.Revoked{}
		}
		f(p.Revoked)
		return nil
	})
	if err != nil {
		t.Fatalf("ChangePolicy: %v", err)
	}
}

// TestRevocationWhateverRequire: a revoked key or digest is never
// offered, under require off as under signed; the skill's newest revision
// not revoked (and trusted under signed) is offered in its place, or
// none; each is reported as revoked; unrevoking offers it again.
func TestRevocationWhateverRequire(t *testing.T) {
	srv := natstest.Start(t)
	pb := publisher(t, srv.JS, store.Config{})
	kp, pub := newKey(t)
	bad, badPub := newKey(t)
	root := t.TempDir()
	pushSigned(t, pb, skillstore.Global, kp, writeSkill(t, root, "multi", "Multi.", "Body 1.", nil))
	pushSigned(t, pb, skillstore.Global, bad, writeSkill(t, root, "multi", "Multi.", "Body 2.", nil))
	pushSigned(t, pb, skillstore.Global, bad, writeSkill(t, root, "only", "Only.", "Body.", nil))
	cs := push(t, pb, skillstore.Global, false, writeSkill(t, root, "plain", "Plain.", "Body.", nil))
	push(t, pb, skillstore.Global, false, writeSkill(t, root, "other", "Other.", "Body.", nil))
	plainDigest := cs[0].Digest

	w := &warnCount{n: map[string]int{}}
	p := open(t, srv.JS, store.Config{OnWarning: w.add})
	q := catalog.Query{}
	g := func(s string) string { return catalog.SourceStoreGlobal + ":" + s }
	want := []string{g("multi@2"), g("only@1"), g("other@1"), g("plain@1")}
	if got := offered(t, p, q); !slices.Equal(got, want) {
		t.Fatalf("before: offered %v, want %v", got, want)
	}

	// Require off: the revoked key's revisions and the revoked digest are
	// not offered.
	revoke(t, pb, func(r *store.Revoked) { r.Keys = append(r.Keys, badPub); r.Digests = append(r.Digests, plainDigest) })
	want = []string{g("multi@1"), g("other@1")}
	eventually(t, "revocation applied under require off", func() bool {
		got := offered(t, p, q)
		if !slices.Equal(got, want) {
			t.Logf("offered %v", got)
			return false
		}
		return true
	})
	u := map[string]store.Untrusted{}
	for _, x := range p.Untrusted() {
		u[x.Key] = x
	}
	for _, key := range []string{"global.multi", "global.only", "global.plain"} {
		if !u[key].Revoked || !strings.Contains(u[key].Reason, "revoked") {
			t.Errorf("untrusted[%s] = %+v, want revoked", key, u[key])
		}
	}
	if u["global.multi"].Kept == 0 || u["global.only"].Kept != 0 {
		t.Errorf("kept: multi %d (want its first revision), only %d (want none)", u["global.multi"].Kept, u["global.only"].Kept)
	}
	if w.get("revoked") < 3 {
		t.Errorf("revoked warnings %v, want one per skill", w.n)
	}
	var diag bool
	diags, err := p.Diagnostics(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range diags {
		if strings.Contains(d.Path, "global.plain") && strings.Contains(d.Reason, "revoked") {
			diag = true
		}
	}
	if !diag {
		t.Errorf("no revoked diagnostic for plain: %+v", diags)
	}

	// Signed, trusting kp: the revocations still hold; plain and other
	// are unsigned and not offered either.
	setPolicy(t, pb, store.RequireSigned, "", pub)
	pol, _, _ := pb.ReadPolicy(context.Background())
	if !slices.Contains(pol.RevokedKeys(), badPub) {
		t.Fatalf("changing require dropped the revocations: %+v", pol)
	}
	want = []string{g("multi@1")}
	eventually(t, "signed with revocations", func() bool { return slices.Equal(offered(t, p, q), want) })

	// Unrevoke, back to off: everything offered again.
	setPolicy(t, pb, store.RequireOff, "")
	revoke(t, pb, func(r *store.Revoked) { r.Keys, r.Digests = nil, nil })
	want = []string{g("multi@2"), g("only@1"), g("other@1"), g("plain@1")}
	eventually(t, "unrevoked", func() bool { return slices.Equal(offered(t, p, q), want) })
	if pol, _, _ := pb.ReadPolicy(context.Background()); pol.Revoked != nil {
		t.Errorf("empty revocations kept in the policy: %+v", pol.Revoked)
	}
}

// TestRevocationsRejectBadInput: a malformed key or digest, or too many,
// is refused with an error naming it, the store unchanged.
func TestRevocationsRejectBadInput(t *testing.T) {
	srv := natstest.Start(t)
	pb := publisher(t, srv.JS, store.Config{})
	_, pub := newKey(t)
	revoke(t, pb, func(r *store.Revoked) { r.Keys = []string{pub} })
	_, before, _ := pb.ReadPolicy(context.Background())
	for name, f := range map[string]func(r *store.Revoked){
		"bad key":    func(r *store.Revoked) { r.Keys = append(r.Keys, "NOTAKEY") },
		"seed":       func(r *store.Revoked) { r.Keys = append(r.Keys, "SUAXXX") },
		"bad digest": func(r *store.Revoked) { r.Digests = append(r.Digests, strings.Repeat("G", 64)) },
		"too many": func(r *store.Revoked) {
			for i := range store.MaxRevoked + 1 {
				r.Digests = append(r.Digests, fmt.Sprintf("%064x", i))
			}
		},
	} {
		_, _, err := pb.ChangePolicy(context.Background(), func(p *store.TrustPolicy) error { f(p.Revoked); return nil })
		if !errors.Is(err, store.ErrBadPolicy) {
			t.Errorf("%s: %v, want ErrBadPolicy", name, err)
		}
	}
	pol, after, _ := pb.ReadPolicy(context.Background())
	if after != before || !slices.Equal(pol.RevokedKeys(), []string{pub}) {
		t.Errorf("store changed by refused input: revision %d -> %d, %+v", before, after, pol.Revoked)
	}
	for _, data := range []string{
		`{"v":1,"require":"off","keys":[],"revoked":{"digests":["abc"]}}`,
		`{"v":1,"require":"off","keys":[],"revoked":{"keys":["x"]}}`,
	} {
		if _, err := store.DecodePolicy([]byte(data)); !errors.Is(err, store.ErrBadPolicy) {
			t.Errorf("DecodePolicy(%s): %v", data, err)
		}
	}
}

// TestRevocationLibrary: a tenant's revocation of the curator's key
// withholds the library's skills from that tenant only; the library's
// own revocation of a digest withholds it from every tenant. Revoked
// names what is withheld for that reason alone.
func TestRevocationLibrary(t *testing.T) {
	srv := natstest.Start(t)
	curator, curPub := newKey(t)
	libCfg := store.Config{Library: true, Bucket: "LIBRARY", Objects: "LIBRARY"}
	lib := publisher(t, srv.JS, libCfg)
	root := t.TempDir()
	pushSigned(t, lib, skillstore.Global, curator, writeSkill(t, root, "curated", "Curated.", "Body.", nil))
	cs := push(t, lib, skillstore.Global, false, writeSkill(t, root, "loose", "Loose.", "Body.", nil))
	tenants := map[string]*store.Publisher{}
	libs := map[string]*store.Provider{}
	for _, name := range []string{"ACME", "GLOBEX"} {
		cfg := store.Config{Bucket: name, Objects: name}
		tenants[name] = publisher(t, srv.JS, cfg)
		lc := libCfg
		lc.Tenant = open(t, srv.JS, cfg)
		libs[name] = open(t, srv.JS, lc)
	}
	l := catalog.SourceLibrary + ":"
	both := []string{l + "curated@1", l + "loose@1"}
	for name, p := range libs {
		if got := offered(t, p, catalog.Query{}); !slices.Equal(got, both) {
			t.Fatalf("%s before: %v", name, got)
		}
	}
	revoke(t, tenants["ACME"], func(r *store.Revoked) { r.Keys = []string{curPub} })
	eventually(t, "acme's revocation", func() bool {
		return slices.Equal(offered(t, libs["ACME"], catalog.Query{}), []string{l + "loose@1"})
	})
	if got := libs["ACME"].Revoked(catalog.Query{}); !slices.Equal(got, []string{"curated"}) {
		t.Errorf("acme's library Revoked() = %v", got)
	}
	if got := offered(t, libs["GLOBEX"], catalog.Query{}); !slices.Equal(got, both) {
		t.Errorf("globex affected by acme's revocation: %v", got)
	}
	revoke(t, lib, func(r *store.Revoked) { r.Digests = []string{cs[0].Digest} })
	eventually(t, "the library's revocation", func() bool {
		return slices.Equal(offered(t, libs["GLOBEX"], catalog.Query{}), []string{l + "curated@1"}) &&
			len(offered(t, libs["ACME"], catalog.Query{})) == 0
	})
}
