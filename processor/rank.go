package processor

import (
	"context"
	"fmt"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/processor/history"
)

// Catalogs listed by use (catalog.RankUse). A session's ranking is taken
// when its first catalog is decided and kept until its skills change:
// every catalog record carries the ranking it was decided with
// (options.catalogRanking), and a pre-step prepares the session's skills
// with the ranking of its newest catalog first. When that gives the list
// the session already has, the ranking is kept (others' use since does not
// move the session's list); when it does not, the session's skills changed,
// and the tenant's current ranking (Ranker) decides, and is recorded. With
// no ranker, or no use in either, the catalog lists by name.

// sessionRankings remembers the ranking of sessions' newest catalogs, read
// from their records, so that a pre-step decodes a record at most once.
type sessionRankings struct {
	c *lru.Cache[string, keptRanking]
}

// keptRanking is the ranking recorded by the catalog at seq.
type keptRanking struct {
	seq  uint64
	text string
}

// sessionRankingsSize bounds the sessions remembered.
const sessionRankingsSize = 4096

func newSessionRankings() *sessionRankings {
	c, _ := lru.New[string, keptRanking](sessionRankingsSize)
	return &sessionRankings{c: c}
}

// keptRanking is the ranking the session's newest catalog was decided
// with ("" for none, or for no catalog).
func (s *preStepPlan) keptRanking() (string, error) {
	n := s.hist.Newest
	if n == nil {
		return "", nil
	}
	if k, ok := s.p.rankings.c.Get(s.t.sid); ok && k.seq == n.Seq {
		return k.text, nil
	}
	text, err := history.RankingOf(*n, s.p.cfg.Layout)
	if err != nil {
		return "", fmt.Errorf("decode catalog %d: %w", n.Seq, err)
	}
	s.p.rankings.c.Add(s.t.sid, keptRanking{seq: n.Seq, text: text})
	return text, nil
}

// rank prepares the pre-step's skills by use when the options ask for it
// (see above), once per preparation: s.prepared becomes the ranked view,
// s.byName keeps the view by name (what other members compare), and
// s.ranking the ranking to record.
func (s *preStepPlan) rank(ctx context.Context) error {
	if s.ranked || s.prepared == nil || !s.prepared.Complete || s.opts.Rank != catalog.RankUse {
		return nil
	}
	s.ranked = true
	var (
		today     catalog.Ranking
		use       uint64
		versioned bool
	)
	switch r := s.p.ranker.(type) {
	case nil:
	case VersionedRanker:
		today, use = r.VersionedRanking()
		versioned = true
	default:
		today = r.Ranking()
	}
	kept, err := s.keptRanking()
	if err != nil {
		// An unreadable record ranks as a new session would.
		s.p.log.Debug("read the ranking of a catalog", "session", s.t.sid, "err", err)
		kept = ""
	}
	switch {
	case s.hist.Newest == nil && len(today) == 0:
		return nil // nothing ranks: by name
	case s.hist.Newest != nil && kept == "" && s.prepared.Digest == s.hist.Newest.Digest:
		// The session's list was decided by name and its skills stay:
		// kept, without taking the snapshot again.
		return nil
	}
	byName := s.prepared
	newest := ""
	if s.hist.Newest != nil {
		newest = s.hist.Newest.Digest
	}
	if d, ok := s.p.skills.(deriver); ok && versioned {
		// Ranked once per snapshot, options, session list and use table:
		// a pre-step whose skills and use did not change costs a lookup.
		x, err := d.Derive(ctx, s.q, rankedViewsKey{}, newRankedViews)
		if err != nil {
			return s.p.deadlineOr(s.ps.DeadlineMs, fmt.Errorf("snapshot skills for %q: %w", truncate(s.ps.Cwd, 300), err))
		}
		rv := x.(*rankedViews)
		if !rv.snap.Complete {
			return nil
		}
		k := rankedKey{opts: s.opts, newest: newest, kept: kept, use: use}
		r, ok := rv.c.Get(k)
		if !ok {
			if s.p.hooks.ranked != nil {
				s.p.hooks.ranked()
			}
			v, ranking := history.Rank(rv.snap, s.opts, newest, kept, today)
			r = &rankedView{view: v, ranking: ranking}
			rv.c.Add(k, r)
		}
		s.prepared, s.byName, s.ranking = &r.view, byName, r.ranking
		return nil
	}
	snap, err := s.p.skills.Snapshot(ctx, s.q)
	if err != nil {
		return s.p.deadlineOr(s.ps.DeadlineMs, fmt.Errorf("snapshot skills for %q: %w", truncate(s.ps.Cwd, 300), err))
	}
	if !snap.Complete {
		return nil
	}
	if s.p.hooks.ranked != nil {
		s.p.hooks.ranked()
	}
	v, ranking := history.Rank(snap, s.opts, newest, kept, today)
	s.prepared, s.byName, s.ranking = &v, byName, ranking
	return nil
}

// deriver is what the processor's skills (a providers.Registry) offer to
// keep a value with each snapshot, built once however many ask.
type deriver interface {
	Derive(ctx context.Context, q catalog.Query, key any, build func(catalog.Snapshot) any) (any, error)
}

// rankedViewsKey is the key of the processor's rankedViews with a
// snapshot.
type rankedViewsKey struct{}

// rankedViews are the views ranked of one snapshot (kept with it, so a
// changed skill, a new snapshot, starts anew), by what else decides them.
type rankedViews struct {
	snap catalog.Snapshot
	c    *lru.Cache[rankedKey, *rankedView]
}

// rankedKey is what a ranked view depends on besides the snapshot: the
// options, the session's newest list and the ranking it recorded, and
// the version of the use table (VersionedRanker).
type rankedKey struct {
	opts   catalog.Options
	newest string
	kept   string
	use    uint64
}

// rankedView is a view ranked, shared by the pre-steps that ask for it
// (read only), and the ranking to record with it.
type rankedView struct {
	view    catalog.View
	ranking string
}

// rankedViewsSize bounds the ranked views kept with one snapshot: the
// distinct lists and options of the sessions of one working directory.
const rankedViewsSize = 64

func newRankedViews(snap catalog.Snapshot) any {
	c, _ := lru.New[rankedKey, *rankedView](rankedViewsSize)
	return &rankedViews{snap: snap, c: c}
}

// viewByName is the pre-step's view by name: what another member, asked
// for its view, compares with.
func (s *preStepPlan) viewByName() *catalog.View {
	if s.byName != nil {
		return s.byName
	}
	return s.prepared
}
