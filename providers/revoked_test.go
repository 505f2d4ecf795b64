package providers_test

import (
	"context"
	"slices"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers"
)

// revoking is a provider that withholds names as revoked.
type revoking struct {
	static
	revoked []string
}

func (r revoking) Revoked(catalog.Query) []string { return r.revoked }

// TestSnapshotCarriesRevoked: a view names the skills a provider
// withholds as revoked, less those another provider offers under the same
// name; its prepared view carries them too.
func TestSnapshotCarriesRevoked(t *testing.T) {
	store := revoking{static: static{&fake{name: "store"}}, revoked: []string{"gone", "shadowed"}}
	store.set(cand("kept", "Kept.", catalog.SourceStoreGlobal, providers.RankStoreGlobal))
	local := static{&fake{name: "local"}}
	local.set(cand("shadowed", "Local.", catalog.SourceProject, providers.RankProject))
	r := newRegistry(t, []providers.Provider{local, store})
	cwd := t.TempDir()
	if got := snapshot(t, r, cwd).Revoked; !slices.Equal(got, []string{"gone"}) {
		t.Errorf("Snapshot.Revoked = %v, want [gone]", got)
	}
	v, err := r.Prepared(context.Background(), catalog.At(cwd), catalog.Options{})
	if err != nil || !slices.Equal(v.Revoked, []string{"gone"}) {
		t.Errorf("Prepared: Revoked %v, %v", v.Revoked, err)
	}
}
