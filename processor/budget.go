package processor

import (
	"context"

	"golang.org/x/sync/semaphore"

	"github.com/skillstream/skillstream/catalog"
)

// budget is a weighted semaphore of bytes, first come first served. It
// bounds the memory of the triggers in flight, which Workers alone does
// not: each pre-step holds its session's newest catalog (read back at
// every pre-step) and, when it appends, the new one twice encoded, so a
// trigger of a 1,000-skill catalog holds a megabyte where one of 50 skills
// holds tens of kilobytes. The semaphore is golang.org/x/sync's Weighted,
// which serves waiters in order: a large request is not starved by small
// ones arriving after it.
type budget struct {
	size int64
	sem  *semaphore.Weighted
}

func newBudget(size int64) *budget {
	return &budget{size: size, sem: semaphore.NewWeighted(size)}
}

// acquire waits until n bytes are free (n is capped at the whole budget, so
// a trigger larger than the budget runs alone) or ctx ends. The returned
// function gives the bytes back.
func (b *budget) acquire(ctx context.Context, n int64) (func(), error) {
	n = min(max(n, 1), b.size)
	if err := b.sem.Acquire(ctx, n); err != nil {
		return nil, err
	}
	return func() { b.sem.Release(n) }, nil
}

// preStepBytes estimates what a pre-step holds in memory: the session's
// catalog as stored (text and entries, about twice the entry lines) read
// back, and when it appends the new one encoded for the stream and for the
// answer; taken from the catalog the skills give now, the one the session
// most likely shows. A pre-step of a hidden tool holds little.
func preStepBytes(v *catalog.View) int64 {
	const base = 8 << 10
	if v == nil {
		return base
	}
	var lines int64
	for _, e := range v.Entries {
		lines += int64(len(e.Name) + len(e.Description) + 16)
	}
	return base + 4*lines
}
