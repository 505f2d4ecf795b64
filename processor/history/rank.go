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
// the ranking that counts for snap's skills. The processor and replay
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
	return catalog.PrepareRanked(snap, opts, catalog.FromRanked(used)), catalog.EncodeRanked(used)
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
