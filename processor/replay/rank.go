package replay

import (
	"context"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/processor/history"
)

// ranked is the view of a pre-step of a catalog listed by use, decided as
// the processor decided it: the session's newest catalog's ranking kept
// while it gives the session's list again, else the ranking the step's
// own recorded catalog was decided with (the tenant's use then, as the
// record says). byName is the step's view by name: what a step decided
// without any ranking lists. The note says when today's ranking
// (Options.Ranking) differs from the recorded one, in a replay that is
// not as recorded.
func (r *Replayer) ranked(ctx context.Context, p *pending, h history.State, skills history.Skills, q catalog.Query, opts catalog.Options, byName catalog.View) (catalog.View, string, error) {
	recorded := ""
	if p.output != nil {
		if c, ok := decodeCatalog(r.layout, p.output); ok && c.Source.Options != nil {
			recorded = c.Source.Options.Ranking
		}
	}
	newest, kept := "", ""
	if h.Newest != nil {
		newest = h.Newest.Digest
		kept, _ = history.RankingOf(*h.Newest, r.layout) // unreadable: none, as the processor
	}
	if newest == "" && recorded == "" && r.opts.Ranking == nil {
		return byName, "", nil
	}
	snap, err := skills.Snapshot(ctx, q)
	if err != nil || !snap.Complete {
		return byName, "", err
	}
	list, err := catalog.DecodeRanked(recorded)
	if err != nil {
		return byName, "the recorded catalog's ranking is unreadable (" + err.Error() + "): replayed by name", nil
	}
	v, used := history.Rank(snap, opts, newest, kept, catalog.FromRanked(list))
	note := ""
	if !r.opts.AsRecorded && r.opts.Ranking != nil {
		if now := catalog.EncodeRanked(r.opts.Ranking.For(catalog.Entries(snap.Skills, opts.DescriptionMaxLength))); now != used {
			note = "today's use ranks the skills otherwise than the ranking this catalog was decided with"
		}
	}
	return v, note, nil
}
