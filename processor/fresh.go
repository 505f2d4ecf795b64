package processor

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Read-your-writes for the skill store: a trigger may name the store index
// revision its worker knows to exist (minStoreRevision, printed by skills
// push). Local skill folders need no such token: the filesystem provider
// applies every change the kernel reported before it answers.

// storeFollower is implemented by skills that follow the skill store's
// ordered index (a *providers.Registry): Revision is the newest revision
// applied (0 without a store), CatchUp waits for one.
type storeFollower interface {
	catchUpper
	Revision() uint64
}

// Results of a wait for a trigger's store revision (the
// store_freshness_wait_seconds label).
const (
	freshReached  = "reached"   // caught up within the wait: decided on it
	freshTimedOut = "timed_out" // not reached in time: answered unavailable
	freshNoStore  = "no_store"  // this member follows no skill store
)

// errStoreBehind reports a trigger whose store revision this member could
// not reach: it is answered unavailable, nothing appended, so that the
// worker can ask again (another member, or this one once caught up).
var errStoreBehind = errors.New("skill store revision not reached")

// answerMargin is the time at most that a wait for the store leaves
// before a trigger's deadline, to decide and answer in.
const answerMargin = 250 * time.Millisecond

// awaitStore returns once this member's skills reflect store revision rev
// (0: at once), waiting at most Config.CatchUpWait, and stopping early
// enough before ctx's deadline (the trigger's) to answer in time.
// Otherwise it returns an error wrapping errStoreBehind that says how far
// the member got.
func (p *Processor) awaitStore(ctx context.Context, kind string, rev uint64) error {
	if rev == 0 {
		return nil
	}
	sf, ok := p.skills.(storeFollower)
	if !ok {
		p.m.freshWaits.WithLabelValues(kind, freshNoStore).Observe(0)
		return fmt.Errorf("%w: the trigger asks for store revision %d, and this member follows no skill store", errStoreBehind, rev)
	}
	have := sf.Revision()
	if have >= rev {
		return nil
	}
	start := p.now()
	p.log.Debug("waiting for the skill store revision a trigger asks for", "kind", kind, "revision", rev, "have", have)
	wait := p.cfg.CatchUpWait
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		wait = min(wait, left-min(answerMargin, left/4))
	}
	var err error
	if wait > 0 {
		cctx, cancel := context.WithTimeout(ctx, wait)
		err = sf.CatchUp(cctx, rev)
		cancel()
	}
	waited := p.now().Sub(start)
	if have = sf.Revision(); err == nil && have >= rev {
		p.m.freshWaits.WithLabelValues(kind, freshReached).Observe(waited.Seconds())
		return nil
	}
	result := freshTimedOut
	if have == 0 && err == nil {
		result = freshNoStore // no Revisioned provider: nothing to wait for
	}
	p.m.freshWaits.WithLabelValues(kind, result).Observe(waited.Seconds())
	if result == freshNoStore {
		return fmt.Errorf("%w: the trigger asks for store revision %d, and this member follows no skill store", errStoreBehind, rev)
	}
	return fmt.Errorf("%w: the trigger asks for store revision %d; this member applied %d and waited %v",
		errStoreBehind, rev, have, waited.Round(time.Millisecond))
}
