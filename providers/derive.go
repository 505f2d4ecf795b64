package providers

import (
	"context"
	"sync"

	"github.com/skillstream/skillstream/catalog"
)

// Derive returns the value build makes of q's snapshot, kept with the
// snapshot as Prepared's view is: while no provider announces a change,
// every call after the first returns the value built then, without
// copying the snapshot or calling build again; a change announced means a
// new snapshot, and build is called for it at the first Derive. Callers
// asking at the same time share one call of build. An uncached snapshot
// (a provider that cannot announce changes, an incomplete one) is built
// for at every call.
//
// key tells apart the values of different callers: it must be comparable,
// and a value of an unexported type of the caller's package keeps it
// apart from everyone else's. A snapshot keeps the values of a few keys
// (a new key past that bound drops the others, which are built again when
// asked for). build gets the snapshot with its skills shared: it may keep
// them but must not modify them, and it must not call the registry or
// panic. Errors are Snapshot's.
func (r *Registry) Derive(ctx context.Context, q catalog.Query, key any, build func(catalog.Snapshot) any) (any, error) {
	v, _, err := r.viewAt(ctx, q)
	if err != nil {
		return nil, err
	}
	return v.derive(key, build), nil
}

// derivedValue is what Derive built of a view for one key, once however
// many callers ask at the same time.
type derivedValue struct {
	once sync.Once
	v    any
}

// maxDerived bounds the keys a view keeps derived values for; a process
// uses one or two.
const maxDerived = 8

func (v *view) derive(key any, build func(catalog.Snapshot) any) any {
	v.mu.Lock()
	d, ok := v.derived[key]
	if !ok {
		if v.derived == nil || len(v.derived) >= maxDerived {
			v.derived = make(map[any]*derivedValue)
		}
		d = &derivedValue{}
		v.derived[key] = d
	}
	v.mu.Unlock()
	d.once.Do(func() {
		d.v = build(catalog.Snapshot{Skills: v.skills[:len(v.skills):len(v.skills)], Complete: v.complete,
			Revision: v.pos.Revision, Epoch: v.pos.Epoch, Diagnostics: v.diags})
	})
	return d.v
}
