package processor

import (
	"context"
	"math"
	"sync"
	"time"
)

// triggerRate bounds how many triggers an instance starts per second
// (Config.MaxTriggerRate): a token bucket holding at most one second's
// worth. Serving several tenants, each tenant's processor has its own, so
// a tenant flooding its sessions with triggers is held to its rate and
// its excess waits in its own stream, while the CPU left serves the
// others. The pull loop asks for no more triggers than there are tokens,
// so none waits long after delivery (its ack wait runs from then).
type triggerRate struct {
	mu     sync.Mutex
	rate   float64 // tokens per second; 0: no bound
	tokens float64
	last   time.Time
	now    func() time.Time
}

func newTriggerRate(perSecond float64) *triggerRate {
	return &triggerRate{rate: perSecond, tokens: perSecond, now: time.Now}
}

// refill adds the tokens earned since the last call; r.mu held.
func (r *triggerRate) refill() {
	now := r.now()
	if !r.last.IsZero() {
		r.tokens = math.Min(r.rate, r.tokens+now.Sub(r.last).Seconds()*r.rate)
	}
	r.last = now
}

// wait returns once at least one token is there, with how many whole
// tokens there are (at most n); without a bound, n at once.
func (r *triggerRate) wait(ctx context.Context, n int) (int, error) {
	if r == nil || r.rate <= 0 {
		return n, nil
	}
	for {
		r.mu.Lock()
		r.refill()
		have, need := r.tokens, 1-r.tokens
		r.mu.Unlock()
		if have >= 1 {
			return min(n, int(have)), nil
		}
		t := time.NewTimer(time.Duration(need / r.rate * float64(time.Second)))
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return 0, ctx.Err()
		}
	}
}

// take spends one token for a trigger started.
func (r *triggerRate) take() {
	if r == nil || r.rate <= 0 {
		return
	}
	r.mu.Lock()
	r.refill()
	r.tokens--
	r.mu.Unlock()
}
