package replay

import (
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/history"
)

// budget follows a session's output budget for catalogs as the processor
// keeps it (a token bucket per session, full at first, refilled at its
// rate per minute), from the catalogs the recording holds at their stored
// times: so that a step the processor answered "over budget" (nothing
// appended) is told from a difference. The processor's clock is not in
// the recording: the trigger's stored time stands for it, which can only
// find the bucket emptier than the processor did. Each member of a
// consumer group budgets on its own, and a member may forget a session:
// the recording does not say which member answered, so the budget is
// followed as one member's.
type budget struct {
	resends, bytes float64 // per minute; 0: no bound
	r, b           float64 // levels
	last           time.Time
	newest         string // digest of the newest catalog
}

// newBudget returns the budget the recording says, nil when it says none.
func newBudget(o *events.CatalogOptions) *budget {
	if o == nil || (o.ResendsPerMinute <= 0 && o.CatalogBytesPerMinute <= 0) {
		return nil
	}
	r, b := float64(max(o.ResendsPerMinute, 0)), float64(max(o.CatalogBytesPerMinute, 0))
	return &budget{resends: r, bytes: b, r: r, b: b}
}

// refill brings the levels up to t.
func (g *budget) refill(t time.Time) {
	if g.last.IsZero() {
		g.last = t
	}
	if d := t.Sub(g.last); d > 0 {
		g.r = min(g.resends, g.r+d.Minutes()*g.resends)
		g.b = min(g.bytes, g.b+d.Minutes()*g.bytes)
		g.last = t
	}
}

// spent counts a recorded catalog of ours: a full catalog with the
// newest one's digest is a re-send, every catalog but an initial one
// spends its bytes.
func (g *budget) spent(e Event, c events.Catalog) {
	if g == nil {
		return
	}
	g.refill(e.Time)
	if c.Source.Update != events.UpdateChanges && g.newest != "" && c.Source.Digest == g.newest {
		g.r--
	}
	if c.Source.Update != string(catalog.UpdateInitial) {
		g.b -= float64(len(e.Data))
	}
	g.newest = c.Source.Digest
}

// refuses reports which part of the budget, if any, would have refused
// decision d at time t on the history h: "" when none. The record's size
// is not known before it is encoded; its text, a part of it, stands for
// it.
func (g *budget) refuses(d catalog.Decision, h history.State, t time.Time) string {
	if g == nil || d.Outcome != catalog.OutcomeAppended {
		return ""
	}
	g.refill(t)
	if g.resends > 0 && d.Update != catalog.UpdateChanges && h.Newest != nil && h.Newest.Digest == d.Digest && g.r < 1 {
		return "catalog re-sends"
	}
	if g.bytes > 0 && d.Update != catalog.UpdateInitial && g.b < float64(len(d.Text)) && g.b < g.bytes {
		return "catalog bytes"
	}
	return ""
}
