package store

import (
	"context"
	"fmt"

	"github.com/skillstream/skillstream/events/skillstore"
)

// Pin names one skill of a scope that the provider shows at a revision
// other than its current one: what a candidate "the store, with this skill
// as it was at that revision" sees (eval). At must name a revision.
type Pin struct {
	Scope skillstore.Scope
	Name  string
	At    At
}

func (p Pin) String() string {
	if p.At.Store != 0 {
		return fmt.Sprintf("%s@store:%d in %s", p.Name, p.At.Store, p.Scope)
	}
	return fmt.Sprintf("%s@%d in %s", p.Name, p.At.Rev, p.Scope)
}

// pinned is a Pin resolved: the entry shown in place of the current one,
// or, for a revision that is a removal, none.
type pinned struct {
	e       entry
	removed bool
}

// resolvePins reads each pin's revision from the index's kept history and
// checks the object its record names (its digest and the skill it
// defines), as a load of the index checks a record. It fails, naming the
// pin, for an unknown skill or scope, a revision the history never held
// or no longer keeps, a malformed record and a damaged object; a revision
// that is a removal pins the skill as absent.
func (p *Provider) resolvePins(ctx context.Context, pins []Pin) (map[string]map[string]pinned, error) {
	out := make(map[string]map[string]pinned, len(pins))
	for _, pin := range pins {
		if pin.At == (At{}) {
			return nil, fmt.Errorf("skill %q in %s: pinned to no revision", pin.Name, pin.Scope)
		}
		project := pin.Scope.ProjectID()
		if _, dup := out[project][pin.Name]; dup {
			return nil, fmt.Errorf("skill %q in %s is pinned twice", pin.Name, pin.Scope)
		}
		hist, err := history(ctx, p.kv, pin.Scope, pin.Name)
		if err != nil {
			return nil, err
		}
		var got pinned
		removal := false
		for _, h := range hist {
			if h.Removed && ((pin.At.Store != 0 && h.Revision == pin.At.Store) || (pin.At.Store == 0 && h.Rev == pin.At.Rev)) {
				removal = true
			}
		}
		if removal {
			got.removed = true
		} else {
			h, err := pick(hist, pin.Scope, pin.Name, pin.At)
			if err != nil {
				return nil, err
			}
			if err := p.verify(ctx, h.Record); err != nil {
				return nil, fmt.Errorf("skill %q in %s: revision %d (store revision %d): %w", pin.Name, pin.Scope, h.Rev, h.Revision, err)
			}
			got.e = entry{rec: h.Record, revision: h.Revision, size: h.Record.summaryBytes()}
		}
		if out[project] == nil {
			out[project] = map[string]pinned{}
		}
		out[project][pin.Name] = got
	}
	return out, nil
}
