package projection

import (
	"context"
	"errors"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/processor/usage"
)

// DefaultUseWindow is how far back Uses counts a skill's loads: a week,
// long enough that a skill used every working day ranks above one used
// once, short enough that what a fleet stopped using gives way.
const DefaultUseWindow = 7 * 24 * time.Hour

// DefaultUseRefresh is how often Uses reads the projection again.
const DefaultUseRefresh = time.Minute

// Uses keeps the loads of every skill over a recent window, read from the
// projection in the background, for a catalog listed by use
// (catalog.RankUse): Ranking never reads anything, so a pre-step pays
// nothing for it. With no projection yet, or none that answers, the
// ranking is empty and a catalog lists by name.
type Uses struct {
	js      jetstream.JetStream
	opts    Options
	window  time.Duration
	refresh time.Duration
	log     *slog.Logger
	now     func() time.Time
	cur     atomic.Pointer[usesRead]
	read    atomic.Uint64 // successful reads, for tests
	// partitions: the projections of that many partitions, summed (0 or
	// 1: the one projection).
	partitions int
}

// usesRead is the ranking of one read and the read's number.
type usesRead struct {
	ranking catalog.Ranking
	version uint64
}

// NewUses returns a Uses over the projection opts names, counting loads
// over window (0: DefaultUseWindow) and reading again every refresh (0:
// DefaultUseRefresh). Run keeps it current.
func NewUses(js jetstream.JetStream, opts Options, window, refresh time.Duration) *Uses {
	if window <= 0 {
		window = DefaultUseWindow
	}
	if refresh <= 0 {
		refresh = DefaultUseRefresh
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Uses{js: js, opts: opts, window: window, refresh: refresh, log: log, now: time.Now}
}

// Ranking returns the loads counted at the last read, by skill name (nil
// before the first read found any). The map is shared: do not modify it.
func (u *Uses) Ranking() catalog.Ranking {
	r, _ := u.VersionedRanking()
	return r
}

// VersionedRanking is Ranking and its version: a number that changes
// whenever the ranking may have (each read), 0 before the first read. A
// pre-step keeps what it ranked for one version (see processor.Ranker).
func (u *Uses) VersionedRanking() (catalog.Ranking, uint64) {
	if r := u.cur.Load(); r != nil {
		return r.ranking, r.version
	}
	return nil, 0
}

// Partitions makes u read the projections of n partitions of its
// options' stream, summed (ReadPartitions); n < 2 reads the one
// projection. It returns u.
func (u *Uses) Partitions(n int) *Uses {
	u.partitions = n
	return u
}

// Reads counts the reads that succeeded.
func (u *Uses) Reads() uint64 { return u.read.Load() }

// Refresh reads the projection once. No projection is no error: the
// ranking is then empty.
func (u *Uses) Refresh(ctx context.Context) error {
	rep, err := ReadPartitions(ctx, u.js, u.opts, u.partitions, u.now().Add(-u.window))
	if errors.Is(err, ErrNoProjection) {
		u.cur.Store(&usesRead{version: u.read.Add(1)})
		return nil
	}
	if err != nil {
		return err
	}
	u.cur.Store(&usesRead{ranking: RankingOf(rep), version: u.read.Add(1)})
	return nil
}

// RankingOf is the loads of every skill of a usage report, by name (the
// row of skills past the report's bound left out).
func RankingOf(rep *usage.Report) catalog.Ranking {
	r := make(catalog.Ranking, len(rep.Skills))
	for _, s := range rep.Skills {
		if s.Name != usage.OtherSkill && s.Loads > 0 {
			r[s.Name] = s.Loads
		}
	}
	return r
}

// Run reads the projection at once and then every refresh until ctx ends;
// a failed read keeps the ranking it had, and is logged.
func (u *Uses) Run(ctx context.Context) error {
	t := time.NewTicker(u.refresh)
	defer t.Stop()
	for {
		if err := u.Refresh(ctx); err != nil && ctx.Err() == nil {
			u.log.Warn("read skill use for the catalog ranking", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}
