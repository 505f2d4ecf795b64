package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
)

// startTenantPins reads the tenant's pins of library skills
// (Config.TenantPins) and follows them until Close; it returns once they
// are read, or with ctx's error.
func (p *Provider) startTenantPins(ctx context.Context) error {
	p.tpDone = make(chan struct{})
	ready := make(chan struct{})
	go p.followTenantPins(ready)
	select {
	case <-ready:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("read the tenant's pins of library skills: %w", ctx.Err())
	}
}

// followTenantPins watches the tenant's "pin.library." keys, again after
// any failure, until the provider closes; ready is closed once the pins
// have been read the first time.
func (p *Provider) followTenantPins(ready chan struct{}) {
	defer close(p.tpDone)
	backoff := 50 * time.Millisecond
	for {
		err := p.watchTenantPins(ready)
		if p.ctx.Err() != nil {
			return
		}
		p.warn(warnWatch, "tenant-pins", "watch of the tenant's pins of library skills ended; watching again", "err", err)
		if !p.pause(backoff) {
			return
		}
		backoff = min(backoff*2, 2*time.Second)
	}
}

// watchTenantPins is one watch of the tenant's pins: every current pin is
// read, then the set replaces what was known (announced as a change), and
// each later change is applied as it lands.
func (p *Provider) watchTenantPins(ready chan struct{}) error {
	w, err := p.cfg.TenantPins.Watch(p.ctx, libPinPrefix+">")
	if err != nil {
		return err
	}
	defer w.Stop()
	initial := map[string]pinState{}
	loaded := false
	for e := range w.Updates() {
		if e == nil {
			p.mu.Lock()
			p.tpins = initial
			p.releases = nil
			p.closeAll()
			p.mu.Unlock()
			loaded = true
			select {
			case <-ready:
			default:
				close(ready)
			}
			continue
		}
		name, ps, ok := p.readTenantPin(e)
		if !loaded {
			if ok {
				initial[name] = ps
			} else {
				delete(initial, name)
			}
			continue
		}
		p.mu.Lock()
		tp := make(map[string]pinState, len(p.tpins)+1)
		for k, v := range p.tpins {
			tp[k] = v
		}
		if ok {
			tp[name] = ps
		} else {
			delete(tp, name)
		}
		p.tpins = tp
		p.releases = nil
		p.closeAll()
		p.mu.Unlock()
	}
	return errors.New("watch ended")
}

// readTenantPin reads one entry of a tenant's pin of a library skill: the
// pinned revision from the library's kept history, checked. ok is false
// for a removed pin and for one that cannot be served (logged: the skill
// is served as if unpinned).
func (p *Provider) readTenantPin(e jetstream.KeyValueEntry) (string, pinState, bool) {
	name := e.Key()[len(libPinPrefix):]
	if !catalog.ValidName(name) {
		p.warn(warnMalformed, e.Key(), "tenant's pin of a library skill under a key that names no skill: ignored", "key", e.Key())
		return name, pinState{}, false
	}
	if e.Operation() != jetstream.KeyValuePut {
		return name, pinState{}, false
	}
	ps, err := DecodePin(skillstore.Global, e.Value())
	if err == nil && ps.Of != PinOfGlobal {
		err = fmt.Errorf("%w: a pin of a library skill is of %q, want global", ErrBadControl, clip(ps.Of))
	}
	if err != nil {
		p.warn(warnMalformed, e.Key(), "tenant's pin of a library skill not written by skillstream (malformed): ignored", "key", e.Key(), "err", err)
		return name, pinState{}, false
	}
	ent, err := p.readAt(p.ctx, skillstore.Global, name, RevRef{Rev: ps.Rev, Revision: ps.Revision, Digest: ps.Digest})
	if err != nil {
		p.warn(warnMalformed, e.Key(), "tenant's pin of a library skill: its revision cannot be read from the library; the pin is ignored", "key", e.Key(), "err", err)
		return name, pinState{}, false
	}
	return name, pinState{pin: ps, e: ent}, true
}

// PinLibrary holds every session of pb's tenant at revision at of the
// library skill name: the pin is written to the tenant's own index
// (LibraryPinKey), the revision read from lib, the library's publisher
// (which may be read-only). It refuses, writing nothing, a revision the
// library's history does not keep or that is a removal (ErrNotKept), and
// a pin changed since it was read (ErrChanged).
func (pb *Publisher) PinLibrary(ctx context.Context, lib *Publisher, name string, at At) (Pinned, error) {
	if err := catalog.CheckName(name); err != nil {
		return Pinned{}, err
	}
	hist, err := lib.History(ctx, skillstore.Global, name)
	if err != nil {
		return Pinned{}, fmt.Errorf("library: %w", err)
	}
	h, err := pick(hist, skillstore.Global, name, at)
	if err != nil {
		return Pinned{}, fmt.Errorf("library: %w", err)
	}
	key := LibraryPinKey(name)
	last := uint64(0)
	if e, err := pb.kv.Get(ctx, key); err == nil {
		last = e.Revision()
	} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
		return Pinned{}, fmt.Errorf("read %s: %w", key, err)
	}
	ps := PinState{V: 1, Rev: h.Rev, Revision: h.Revision, Digest: h.Record.Digest, Of: PinOfGlobal}
	if last == 0 {
		_, err = pb.kv.Create(ctx, key, encodeJSON(ps))
	} else {
		_, err = pb.kv.Update(ctx, key, encodeJSON(ps), last)
	}
	if casLost(err) {
		return Pinned{}, changedErr(fmt.Sprintf("pin of library skill %q", name), "pin")
	}
	if err != nil {
		return Pinned{}, fmt.Errorf("write %s: %w", key, err)
	}
	return Pinned{Scope: skillstore.Global, Pin: ps}, nil
}

// UnpinLibrary removes the tenant's pin of library skill name: its
// sessions get the library's release state or newest revision again. No
// pin is an error wrapping ErrNotPinned.
func (pb *Publisher) UnpinLibrary(ctx context.Context, name string) (Pinned, error) {
	if err := catalog.CheckName(name); err != nil {
		return Pinned{}, err
	}
	key := LibraryPinKey(name)
	e, err := pb.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Pinned{}, fmt.Errorf("library skill %q is %w for this tenant", name, ErrNotPinned)
	}
	if err != nil {
		return Pinned{}, fmt.Errorf("read %s: %w", key, err)
	}
	ps, _ := DecodePin(skillstore.Global, e.Value())
	err = pb.kv.Delete(ctx, key, jetstream.LastRevision(e.Revision()))
	if casLost(err) {
		return Pinned{}, changedErr(fmt.Sprintf("pin of library skill %q", name), "pin")
	}
	if err != nil {
		return Pinned{}, fmt.Errorf("delete %s: %w", key, err)
	}
	return Pinned{Scope: skillstore.Global, Pin: ps}, nil
}
