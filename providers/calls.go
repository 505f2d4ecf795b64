package providers

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/skillstream/skillstream/catalog"
)

// Supervised provider calls: every call runs in a goroutine the registry
// owns (runner.go), under the provider timeout; calls abandoned while still running
// are counted per provider, which is not called again past WithMaxStuck.

// listAll runs every provider's List concurrently and waits for all of them,
// for the provider timeout, or for ctx. A cancelled ctx returns its error;
// a deadline marks the providers that did not answer as failed.
func (r *Registry) listAll(ctx context.Context, q catalog.Query) ([]listResult, error) {
	wctx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	calls := make([]*call, len(r.ps))
	for i, p := range r.ps {
		calls[i] = r.start(wctx, i, func(ctx context.Context, c *call) {
			c.cands, c.err = p.List(ctx, q)
		})
	}
	results := make([]listResult, len(r.ps))
	for i, c := range calls {
		if err := r.wait(wctx, i, c); err != nil {
			if cerr := ctx.Err(); cerr != nil && !errors.Is(cerr, context.DeadlineExceeded) {
				for j := i + 1; j < len(calls); j++ {
					r.abandon(j, calls[j])
				}
				return nil, cerr
			}
			results[i].err = err
			continue
		}
		results[i] = listResult{cands: c.cands, err: c.err}
	}
	return results, nil
}

// call is one provider call running in its own goroutine.
type call struct {
	state atomic.Int32 // callRunning, callDone or callAbandoned
	done  chan struct{}
	cands []Candidate
	skill catalog.Skill
	diags []Diagnostic
	err   error
}

const (
	callRunning int32 = iota
	callDone
	callAbandoned
)

// start runs fn in a goroutine the registry owns. The goroutine ends when fn
// returns; fn's context is cancelled when ctx is done, after the provider
// timeout, or when the registry is closed, so a provider that honours its
// context ends promptly. A provider that ignores it keeps its goroutine
// until it returns; at most maxStuck such calls per provider exist, after
// which the provider is not called again until one returns.
func (r *Registry) start(ctx context.Context, i int, fn func(context.Context, *call)) *call {
	c := &call{done: make(chan struct{})}
	r.mu.Lock()
	switch {
	case r.closed:
		r.mu.Unlock()
		c.err = ErrClosed
		c.state.Store(callDone)
		close(c.done)
		return c
	case r.stuck[i] >= r.maxStuck:
		n := r.stuck[i]
		r.mu.Unlock()
		c.err = fmt.Errorf("%w (%d still running)", ErrStuck, n)
		c.state.Store(callDone)
		close(c.done)
		return c
	}
	r.wg.Add(1)
	r.mu.Unlock()
	r.running.Add(1)
	cctx, cancel := context.WithTimeout(ctx, r.timeout)
	stop := context.AfterFunc(r.base, cancel)
	r.calls.run(func() {
		defer r.wg.Done()
		defer r.running.Add(-1)
		defer stop()
		defer cancel()
		func() {
			defer func() {
				if p := recover(); p != nil {
					c.err = fmt.Errorf("provider panicked: %v", p)
				}
			}()
			fn(cctx, c)
		}()
		if !c.state.CompareAndSwap(callRunning, callDone) {
			r.mu.Lock()
			r.stuck[i]--
			r.mu.Unlock()
		}
		close(c.done)
	})
	return c
}

// wait waits for c, for ctx, whichever comes first. It returns nil when c's
// results are available.
func (r *Registry) wait(ctx context.Context, i int, c *call) error {
	select {
	case <-c.done:
		return nil
	case <-ctx.Done():
		if !r.abandon(i, c) {
			<-c.done // finished meanwhile; its goroutine is about to close done
			return nil
		}
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return fmt.Errorf("%w: %w", ErrNoAnswer, ctx.Err())
		}
		return ctx.Err()
	}
}

// abandon marks c as given up; it reports false when c already finished.
func (r *Registry) abandon(i int, c *call) bool {
	if !c.state.CompareAndSwap(callRunning, callAbandoned) {
		return false
	}
	r.mu.Lock()
	r.stuck[i]++
	r.mu.Unlock()
	return true
}
