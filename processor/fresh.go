package processor

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/skillstream/skillstream/providers"
)

// Read-your-writes for the skill store: a trigger may name the store index
// revision its worker knows to exist (minStoreRevision, printed by skills
// push), and the epoch of the buckets that revision counts in
// (minStoreEpoch, printed beside it). Local skill folders need no such
// token: the filesystem provider applies every change the kernel reported
// before it answers.

// storeFollower is implemented by skills that follow the skill store's
// ordered index (a *providers.Registry): Revision is the newest revision
// applied (0 without a store), CatchUp waits for one.
type storeFollower interface {
	catchUpper
	Revision() uint64
}

// epochFollower is implemented by skills whose store's buckets have an
// epoch (a *providers.Registry): Position is the epoch and revision
// applied, and storeIdentity's Refresh checks the buckets now.
type epochFollower interface {
	storeIdentity
	Position() providers.Position
}

// Results of a wait for a trigger's store revision (the
// store_freshness_wait_seconds label).
const (
	freshReached  = "reached"     // caught up within the wait: decided on it
	freshTimedOut = "timed_out"   // not reached in time: answered unavailable
	freshNoStore  = "no_store"    // this member follows no skill store
	freshUnknown  = "unknown"     // the store's bucket never reached it: answered unavailable at once
	freshEpoch    = "other_epoch" // the store's buckets are of another epoch: answered unavailable at once
)

// errStoreBehind reports a trigger whose store revision this member could
// not reach: it is answered unavailable, nothing appended, so that the
// worker can ask again (another member, or this one once caught up).
var errStoreBehind = errors.New("skill store revision not reached")

// answerMargin is the time at most that a wait for the store leaves
// before a trigger's deadline, to decide and answer in.
const answerMargin = 250 * time.Millisecond

// awaitStore returns once this member's skills reflect store revision rev
// of epoch (rev 0: any revision; epoch "": any epoch, the current one),
// waiting at most Config.CatchUpWait, and stopping early enough before
// ctx's deadline (the trigger's) to answer in time. Otherwise it returns
// an error wrapping errStoreBehind that says how far the member got. A
// store of another epoch is not waited for (see storeEpoch).
func (p *Processor) awaitStore(ctx context.Context, kind, epoch string, rev uint64) error {
	if rev == 0 && epoch == "" {
		return nil
	}
	sf, ok := p.skills.(storeFollower)
	if !ok {
		p.m.freshWaits.WithLabelValues(kind, freshNoStore).Observe(0)
		return fmt.Errorf("%w: the trigger asks for %s, and this member follows no skill store", errStoreBehind, storeToken(epoch, rev))
	}
	wait := p.cfg.CatchUpWait
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		wait = min(wait, left-min(answerMargin, left/4))
	}
	if epoch != "" {
		if err := p.storeEpoch(ctx, kind, epoch, wait); err != nil {
			return err
		}
	}
	have := sf.Revision()
	if have >= rev {
		return nil
	}
	start := p.now()
	p.log.Debug("waiting for the skill store revision a trigger asks for", "kind", kind, "revision", rev, "have", have)
	var err error
	if wait > 0 {
		cctx, cancel := context.WithTimeout(ctx, wait)
		err = sf.CatchUp(cctx, rev)
		cancel()
	}
	waited := p.now().Sub(start)
	if errors.Is(err, providers.ErrUnknownRevision) {
		// No push wrote it to these buckets: a forged token, or one of
		// buckets since recreated. Waiting cannot make it true; answered
		// at once.
		p.m.freshWaits.WithLabelValues(kind, freshUnknown).Observe(waited.Seconds())
		return fmt.Errorf("%w: the trigger asks for store revision %d, which the store's bucket never reached (it is at %d; a revision of buckets since recreated?)",
			errStoreBehind, rev, sf.Revision())
	}
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

// storeToken describes what a trigger asks of the store.
func storeToken(epoch string, rev uint64) string {
	if epoch == "" {
		return fmt.Sprintf("store revision %d", rev)
	}
	return fmt.Sprintf("store epoch %s revision %d", epoch, rev)
}

// storeEpoch returns nil when this member's store is of the epoch a
// trigger names. Revisions count within one epoch of the store's buckets:
// a token of other buckets (recreated since the push) can never be met by
// waiting, so it is answered at once, an error wrapping errStoreBehind
// that names both epochs. Our buckets are checked now first (within
// wait): they may have been recreated a moment ago, and the token be of
// the new ones.
func (p *Processor) storeEpoch(ctx context.Context, kind, epoch string, wait time.Duration) error {
	ef, ok := p.skills.(epochFollower)
	if !ok || ef.Store() == "" {
		p.m.freshWaits.WithLabelValues(kind, freshNoStore).Observe(0)
		return fmt.Errorf("%w: the trigger asks for store epoch %s, and this member follows no skill store", errStoreBehind, epoch)
	}
	if ef.Position().Epoch == epoch {
		return nil
	}
	start := p.now()
	var (
		cur string
		err = context.DeadlineExceeded
	)
	if wait > 0 {
		cctx, cancel := context.WithTimeout(ctx, wait)
		cur, err = ef.Refresh(cctx)
		cancel()
	}
	waited := p.now().Sub(start)
	switch {
	case err == nil && cur == epoch:
		return nil
	case errors.Is(err, context.DeadlineExceeded):
		p.m.freshWaits.WithLabelValues(kind, freshTimedOut).Observe(waited.Seconds())
		return fmt.Errorf("%w: the trigger asks for store epoch %s; this member's store is at epoch %s and could not check its buckets in time: %v",
			errStoreBehind, epoch, epochText(ef.Position().Epoch), err)
	case err != nil: // the buckets are gone, or cannot be read
		p.m.freshWaits.WithLabelValues(kind, freshEpoch).Observe(waited.Seconds())
		return fmt.Errorf("%w: store epoch %s is not this store's (%s, and its buckets cannot be read: %v)",
			errStoreBehind, epoch, epochText(ef.Position().Epoch), err)
	}
	p.m.freshWaits.WithLabelValues(kind, freshEpoch).Observe(waited.Seconds())
	p.log.Debug("a trigger names another epoch of the skill store", "kind", kind, "epoch", epoch, "have", cur)
	return fmt.Errorf("%w: store epoch %s is not this store's (%s): the store's buckets were recreated; push again or drop the token",
		errStoreBehind, epoch, epochText(cur))
}

// epochText shows a store epoch, "none" when there is none (the buckets
// are gone).
func epochText(epoch string) string {
	if epoch == "" {
		return "none"
	}
	return epoch
}
