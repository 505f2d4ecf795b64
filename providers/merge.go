package providers

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/skillstream/skillstream/catalog"
)

// Ranking and merging: the providers' answers become one view (winners by
// name, the shadowed and rejected candidates, the provider errors).

type listResult struct {
	cands []Candidate
	err   error
}

// ranked is one valid candidate: results[p].cands[k], of rank rank.
type ranked struct {
	p, k int32
	rank int
}

// merge applies the ranking rules to the providers' answers. Candidates
// are referred to by their place in results, not copied, until the
// winners are: a view of a thousand skills is merged for each new working
// directory.
func (r *Registry) merge(results []listResult) *view {
	v := &view{complete: true}
	n := 0
	for _, res := range results {
		n += len(res.cands)
	}
	all := make([]ranked, 0, n)
	for i, res := range results {
		if res.err != nil {
			// Whatever the provider could still list stays available
			// (for loading); the snapshot is incomplete.
			v.complete = false
			v.errs = append(v.errs, ProviderError{Provider: r.names[i], Err: res.err})
		}
		for k := range res.cands {
			c := &res.cands[k] // the provider's: read, never written
			if err := checkCandidate(r.names[i], *c); err != nil {
				v.rejected = append(v.rejected, Rejected{Candidate: r.named(i, c), Err: err})
				continue
			}
			all = append(all, ranked{p: int32(i), k: int32(k), rank: c.Rank})
		}
	}
	cand := func(rc ranked) *Candidate { return &results[rc.p].cands[rc.k] }
	copyOf := func(rc ranked) Candidate { return r.named(int(rc.p), cand(rc)) }
	// all is in (provider, local) order already; a stable sort by rank
	// gives the full order.
	byRank := func(a, b ranked) int { return cmp.Compare(a.rank, b.rank) }
	if !slices.IsSortedFunc(all, byRank) {
		slices.SortStableFunc(all, byRank)
	}
	winners := make(map[string]int, len(all))
	win := make([]ranked, 0, len(all))
	for _, rc := range all {
		c := cand(rc)
		if w, ok := winners[c.Name]; ok {
			v.shadowed = append(v.shadowed, Shadowed{Candidate: copyOf(rc), By: copyOf(win[w])})
			continue
		}
		winners[c.Name] = len(win)
		win = append(win, rc)
	}
	byName := func(a, b ranked) int { return strings.Compare(cand(a).Name, cand(b).Name) }
	if !slices.IsSortedFunc(win, byName) {
		slices.SortFunc(win, byName)
	}
	v.skills = make([]catalog.Summary, len(win))
	v.owner = make([]int, len(win))
	for i, w := range win {
		v.skills[i] = copyOf(w).Summary
		v.owner[i] = int(w.p)
	}
	return v
}

// named is a copy of provider i's candidate c, named after the provider
// when it does not name one.
func (r *Registry) named(i int, c *Candidate) Candidate {
	out := *c
	if out.Provider == "" {
		out.Provider = r.names[i]
	}
	return out
}

func checkCandidate(provider string, c Candidate) error {
	if !catalog.ValidName(c.Name) {
		return fmt.Errorf("%w from provider %q: name %q is outside the skill name grammar", ErrInvalidCandidate, provider, c.Name)
	}
	if strings.TrimSpace(c.Description) == "" {
		return fmt.Errorf("%w from provider %q: skill %q has an empty description", ErrInvalidCandidate, provider, c.Name)
	}
	return nil
}
