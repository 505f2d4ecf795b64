package history

import (
	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

// Rank prepares snap under opts for a catalog listed by use
// (catalog.RankUse), as a session keeps its ranking: newest is the digest
// of the session's newest catalog ("" when it has none) and kept the
// ranking that catalog recorded (catalog.EncodeRanked; "" for none). When
// kept gives the session's list again, the skills did not change and kept
// stays; otherwise today decides (the tenant's use now). It returns the
// view and the ranking to record with a catalog decided on it: the part of
// the ranking that decided the view (see needed). The processor and replay
// both decide so: a replay given the recorded rankings rebuilds each
// decision.
func Rank(snap catalog.Snapshot, opts catalog.Options, newest, kept string, today catalog.Ranking) (catalog.View, string) {
	if newest != "" {
		if list, err := catalog.DecodeRanked(kept); err == nil {
			if v := catalog.PrepareRanked(snap, opts, catalog.FromRanked(list)); v.Digest == newest {
				return v, kept
			}
		}
	}
	used := today.For(catalog.Entries(snap.Skills, opts.DescriptionMaxLength))
	v := catalog.PrepareRanked(snap, opts, catalog.FromRanked(used))
	return v, catalog.EncodeRanked(needed(snap, opts, v, used))
}

// needed is the part of used that the decision of v needed: the use of
// the skills v lists, when that alone prepares v again (the skills left
// out then count as never used, below every listed one), else all of
// used. So a record carries at most a count for each skill its catalog
// lists, however many skills the tenant used, and a replay or the next
// pre-step (kept) prepares the same list from it.
func needed(snap catalog.Snapshot, opts catalog.Options, v catalog.View, used []catalog.Ranked) []catalog.Ranked {
	if len(used) == 0 || !v.Complete {
		return used
	}
	listed := make(map[string]bool, len(v.Entries))
	for _, e := range v.Entries {
		listed[e.Name] = true
	}
	var small []catalog.Ranked
	for _, r := range used {
		if listed[r.Name] {
			small = append(small, r)
		}
	}
	if len(small) == len(used) {
		return used
	}
	if catalog.PrepareRanked(snap, opts, catalog.FromRanked(small)).Digest != v.Digest {
		return used
	}
	return small
}

// RankingOf is the ranking a catalog record says it was decided with
// ("" for none, or for a record of an older processor).
func RankingOf(c Catalog, l events.Layout) (string, error) {
	cat, err := c.DecodeIn(l)
	if err != nil {
		return "", err
	}
	if o := cat.Source.Options; o != nil {
		return o.Ranking, nil
	}
	return "", nil
}
