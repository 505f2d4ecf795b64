package processor

import (
	"context"
	"sync"

	"github.com/skillstream/skillstream/catalog"
)

// budget is a weighted semaphore of bytes, first come first served. It
// bounds the memory of the triggers in flight, which Workers alone does
// not: each pre-step holds its session's newest catalog (read back at
// every pre-step) and, when it appends, the new one twice encoded, so a
// trigger of a 1,000-skill catalog holds a megabyte where one of 50 skills
// holds tens of kilobytes.
type budget struct {
	mu      sync.Mutex
	size    int64
	free    int64
	waiting []*budgetWaiter // FIFO
}

type budgetWaiter struct {
	n     int64
	ready chan struct{} // closed once the bytes are granted
}

func newBudget(size int64) *budget { return &budget{size: size, free: size} }

// acquire waits until n bytes are free (n is capped at the whole budget, so
// a trigger larger than the budget runs alone) or ctx ends. The returned
// function gives the bytes back.
func (b *budget) acquire(ctx context.Context, n int64) (func(), error) {
	n = min(max(n, 1), b.size)
	b.mu.Lock()
	if len(b.waiting) == 0 && b.free >= n {
		b.free -= n
		b.mu.Unlock()
		return func() { b.release(n) }, nil
	}
	w := &budgetWaiter{n: n, ready: make(chan struct{})}
	b.waiting = append(b.waiting, w)
	b.mu.Unlock()
	select {
	case <-w.ready:
		return func() { b.release(n) }, nil
	case <-ctx.Done():
		b.mu.Lock()
		select {
		case <-w.ready: // granted meanwhile: give it back
			b.mu.Unlock()
			b.release(n)
		default:
			for i, o := range b.waiting {
				if o == w {
					b.waiting = append(b.waiting[:i], b.waiting[i+1:]...)
					break
				}
			}
			b.grant() // the head may have been waiting behind w
			b.mu.Unlock()
		}
		return nil, ctx.Err()
	}
}

func (b *budget) release(n int64) {
	b.mu.Lock()
	b.free += n
	b.grant()
	b.mu.Unlock()
}

// grant hands free bytes to waiters in order. b.mu must be held.
func (b *budget) grant() {
	for len(b.waiting) > 0 && b.free >= b.waiting[0].n {
		w := b.waiting[0]
		b.waiting = b.waiting[1:]
		b.free -= w.n
		close(w.ready)
	}
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
