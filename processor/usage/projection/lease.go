package projection

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// errLeaseLost ends a term whose lease another member took, or that could
// not be renewed in time.
var errLeaseLost = errors.New("lease lost")

// leaseValue is the lease key's value.
type leaseValue struct {
	Instance string    `json:"instance"`
	Since    time.Time `json:"since"`
}

// lease is the right to project, held in the bucket's "lease" key. The
// holder rewrites the key every ttl/3 with the revision it wrote last; a
// member that sees the key's revision unchanged for ttl (on its own
// clock: no two clocks are compared) takes it over with that revision,
// so that of two members trying, one succeeds.
type lease struct {
	kv       jetstream.KeyValue
	instance string
	ttl      time.Duration
	rev      uint64
	since    time.Time
}

// acquire waits until this instance holds the lease.
func acquire(ctx context.Context, kv jetstream.KeyValue, instance string, ttl time.Duration) (*lease, error) {
	l := &lease{kv: kv, instance: instance, ttl: ttl, since: time.Now().UTC()}
	var seenRev uint64
	var seenAt time.Time
	for {
		e, err := kv.Get(ctx, leaseKey)
		switch {
		case errors.Is(err, jetstream.ErrKeyNotFound):
			rev, err := kv.Create(ctx, leaseKey, l.value())
			if err == nil {
				l.rev = rev
				return l, nil
			}
			if !conflict(err) {
				return nil, fmt.Errorf("take the lease: %w", err)
			}
		case err != nil:
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("read the lease: %w", err)
		default:
			var v leaseValue
			_ = json.Unmarshal(e.Value(), &v) // an unreadable lease is someone else's
			if e.Revision() != seenRev {
				seenRev, seenAt = e.Revision(), time.Now()
			}
			if v.Instance == instance || time.Since(seenAt) >= ttl {
				rev, err := kv.Update(ctx, leaseKey, l.value(), e.Revision())
				if err == nil {
					l.rev = rev
					return l, nil
				}
				if !conflict(err) {
					return nil, fmt.Errorf("take the lease: %w", err)
				}
			}
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(ttl / 3):
		}
	}
}

// force takes the lease whoever holds it (usage --rebuild): the holder
// finds its next renewal refused and stands by.
func force(ctx context.Context, kv jetstream.KeyValue, instance string, ttl time.Duration) (*lease, error) {
	l := &lease{kv: kv, instance: instance, ttl: ttl, since: time.Now().UTC()}
	rev, err := kv.Put(ctx, leaseKey, l.value())
	if err != nil {
		return nil, fmt.Errorf("take the lease: %w", err)
	}
	l.rev = rev
	return l, nil
}

func (l *lease) value() []byte {
	b, _ := json.Marshal(leaseValue{Instance: l.instance, Since: l.since})
	return b
}

// keep renews the lease until ctx ends; when it cannot (taken over, or
// not renewed for two thirds of ttl, after which another member may take
// it) it cancels ctx with errLeaseLost.
func (l *lease) keep(ctx context.Context, cancel context.CancelCauseFunc) {
	tick := time.NewTicker(l.ttl / 3)
	defer tick.Stop()
	renewed := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		rctx, rcancel := context.WithTimeout(ctx, l.ttl/3)
		rev, err := l.kv.Update(rctx, leaseKey, l.value(), l.rev)
		rcancel()
		switch {
		case err == nil:
			l.rev, renewed = rev, time.Now()
		case conflict(err) || errors.Is(err, jetstream.ErrKeyNotFound):
			cancel(fmt.Errorf("%w: another member took it", errLeaseLost))
			return
		case time.Since(renewed) >= 2*l.ttl/3:
			cancel(fmt.Errorf("%w: not renewed for %v: %w", errLeaseLost, time.Since(renewed).Round(time.Millisecond), err))
			return
		}
	}
}

// release gives the lease up, if this instance still holds it, so that
// another member takes over at once.
func (l *lease) release() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = l.kv.Delete(ctx, leaseKey, jetstream.LastRevision(l.rev))
}
