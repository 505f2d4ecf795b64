package providers

import (
	"fmt"
	"sort"
	"strings"

	"github.com/skillstream/skillstream/catalog"
)

// Ranking and merging: the providers' answers become one view (winners by
// name, the shadowed and rejected candidates, the provider errors).

type listResult struct {
	cands []Candidate
	err   error
}

type ranked struct {
	c    Candidate
	p, k int
}

// merge applies the ranking rules to the providers' answers.
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
		for k, c := range res.cands {
			if c.Provider == "" {
				c.Provider = r.names[i]
			}
			if err := checkCandidate(r.names[i], c); err != nil {
				v.rejected = append(v.rejected, Rejected{Candidate: c, Err: err})
				continue
			}
			all = append(all, ranked{c: c, p: i, k: k})
		}
	}
	// all is in (provider, local) order already; a stable sort by rank
	// gives the full order.
	sort.SliceStable(all, func(a, b int) bool { return all[a].c.Rank < all[b].c.Rank })
	winners := make(map[string]int, len(all))
	var win []ranked
	for _, rc := range all {
		if w, ok := winners[rc.c.Name]; ok {
			v.shadowed = append(v.shadowed, Shadowed{Candidate: rc.c, By: win[w].c})
			continue
		}
		winners[rc.c.Name] = len(win)
		win = append(win, rc)
	}
	sort.Slice(win, func(a, b int) bool { return win[a].c.Name < win[b].c.Name })
	v.skills = make([]catalog.Summary, len(win))
	v.owner = make([]int, len(win))
	for i, w := range win {
		v.skills[i] = w.c.Summary
		v.owner[i] = w.p
	}
	return v
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
