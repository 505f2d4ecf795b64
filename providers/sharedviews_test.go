package providers_test

import (
	"context"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers"
)

// diagnosing is a fake whose diagnostics name the working directory.
type diagnosing struct{ *fake }

func (d diagnosing) Diagnostics(_ context.Context, q catalog.Query) ([]providers.Diagnostic, error) {
	return []providers.Diagnostic{{Source: catalog.SourceProject, Path: q.Cwd, Reason: "skipped in " + q.Cwd}}, nil
}

// TestPreparedViewsSharedByContent: views of the same skills under the
// same options share one preparation (their entries are the same
// memory), whether two working directories see them or one view is
// collected again (a provider that cannot announce changes); each keeps
// its own diagnostics. Other options, or a skill whose description,
// source or invocation differs, are prepared on their own.
func TestPreparedViewsSharedByContent(t *testing.T) {
	ctx := context.Background()
	skills := []providers.Candidate{cand("a-skill", "A.", "user", providers.RankUser), cand("b-skill", "B.", "user", providers.RankUser)}
	f := diagnosing{&fake{name: "f", cands: skills}}
	r := providers.NewRegistry([]providers.Provider{f})
	defer r.Close()
	opts := catalog.DefaultOptions()
	prep := func(cwd string, o catalog.Options) catalog.View {
		t.Helper()
		v, err := r.Prepared(ctx, catalog.At(cwd), o)
		if err != nil || !v.Complete || len(v.Entries) == 0 {
			t.Fatalf("Prepared(%s) = %+v, %v", cwd, v, err)
		}
		return v
	}
	same := func(a, b catalog.View) bool { return &a.Entries[0] == &b.Entries[0] }

	x, y, again := prep("/x", opts), prep("/y", opts), prep("/x", opts)
	if !same(x, y) || !same(x, again) {
		t.Error("views of the same skills were prepared each on its own")
	}
	if len(x.Diagnostics) != 1 || x.Diagnostics[0].Path != "/x" || len(y.Diagnostics) != 1 || y.Diagnostics[0].Path != "/y" {
		t.Errorf("diagnostics not the view's own: %+v, %+v", x.Diagnostics, y.Diagnostics)
	}
	other := opts
	other.UserInvocation = !opts.UserInvocation
	if same(prep("/x", other), x) {
		t.Error("a view prepared under other options shared the first one's")
	}
	for what, c := range map[string]providers.Candidate{
		"description": cand("a-skill", "A, changed.", "user", providers.RankUser),
		"source":      cand("a-skill", "A.", "project", providers.RankUser),
		"invocation": func() providers.Candidate {
			c := cand("a-skill", "A.", "user", providers.RankUser)
			c.Invocation.UserInvocable = false
			return c
		}(),
	} {
		f.set(c, skills[1])
		if v := prep("/x", opts); same(v, x) {
			t.Errorf("a skill of another %s shared the view prepared before", what)
		}
	}
	f.set(skills...)
	if !same(prep("/z", opts), x) {
		t.Error("the first skills again were not given the view kept")
	}
}
