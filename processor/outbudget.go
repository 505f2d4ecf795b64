package processor

import (
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/processor/history"
)

// The output budget bounds what one session's triggers make a member
// append, per minute, where an output can be made much larger than the
// trigger asking for it, again and again:
//
//   - Catalogs re-sent (Config.CatalogResends): a full catalog appended
//     with the very list the session's newest catalog already holds,
//     because a compaction masked that catalog (or the chain of change
//     lists it ends). A worker that compacts and steps in a loop would
//     otherwise have the whole catalog stored again at every step: a
//     pre-step of a few hundred bytes for a catalog of 100 KB. The
//     session's first catalog and catalogs with another list (the skills
//     changed, the tool was shown or hidden, the working directory
//     moved) are not counted.
//   - Catalog bytes (Config.CatalogBytes): the bytes of every catalog
//     appended after the session's first, re-sent or not: a worker that
//     shows and hides the skill tool in turn (or moves between two working
//     directories) changes the list at every step, and each change is a
//     full catalog (or a change list).
//   - Invocation bytes (Config.InvocationBytes): the bytes of the
//     skill.invocation records appended, each holding a skill's whole
//     instructions for a /name of a few bytes.
//
// Each is a token bucket per session, full at first, holding at most one
// minute's worth and refilled at that rate. Over it, nothing is appended:
// a pre-step whose catalog is over budget is answered "incomplete" with
// reason over_budget (the model keeps what it was shown; the next step
// within budget sends the catalog), and an invocation over budget is
// listed as ignored with reason over_budget. Neither changes any text the
// model sees. Refusals are counted (budget_refusals_total, by reason).
//
// The state is this member's, in memory: an LRU of the sessions seen
// last (outputBudgetSessions). A session forgotten starts again with a
// full budget, and each member of a consumer group budgets on its own, so
// a session whose triggers are spread over N members gets up to N times
// the budget.

// outputBudgetSessions bounds the sessions whose spending a member
// remembers: about 150 bytes each. A session that is refused is one that
// steps often, so it stays among the recent ones unless more than this
// many other sessions step in between.
const outputBudgetSessions = 1 << 16

// Budget refusal reasons, the label of budget_refusals_total.
const (
	budgetCatalogResends  = "catalog_resends"
	budgetCatalogBytes    = "catalog_bytes"
	budgetInvocationBytes = "invocation_bytes"
)

// outputBudget is the per-session output budget of one member.
type outputBudget struct {
	catalogs     float64 // catalogs re-sent per minute; 0: no bound
	catalogBytes float64 // bytes of catalogs after the first per minute; 0: no bound
	invocations  float64 // invocation bytes per minute; 0: no bound
	sessions     *lru.Cache[string, *spending]
}

// spending is one session's buckets.
type spending struct {
	mu           sync.Mutex
	last         time.Time
	catalogs     float64
	catalogBytes float64
	invocations  float64
}

// newOutputBudget returns the budget of cfg (after WithDefaults); NoLimit
// leaves a part unbounded.
func newOutputBudget(cfg Config) *outputBudget {
	b := &outputBudget{catalogs: max(float64(cfg.CatalogResends), 0), catalogBytes: max(float64(cfg.CatalogBytes), 0),
		invocations: max(float64(cfg.InvocationBytes), 0)}
	b.sessions, _ = lru.New[string, *spending](outputBudgetSessions)
	return b
}

// of returns the session's spending, refilled up to now.
func (b *outputBudget) of(sid string, now time.Time) *spending {
	s, ok := b.sessions.Get(sid)
	if !ok {
		s = &spending{last: now, catalogs: b.catalogs, catalogBytes: b.catalogBytes, invocations: b.invocations}
		if prev, found, _ := b.sessions.PeekOrAdd(sid, s); found {
			s = prev
		}
	}
	s.mu.Lock()
	if d := now.Sub(s.last); d > 0 {
		per := d.Minutes()
		s.catalogs = min(b.catalogs, s.catalogs+per*b.catalogs)
		s.catalogBytes = min(b.catalogBytes, s.catalogBytes+per*b.catalogBytes)
		s.invocations = min(b.invocations, s.invocations+per*b.invocations)
		s.last = now
	}
	return s // locked
}

// catalogAllowed reports whether the session may be sent one more
// catalog it had (a peek: resent spends it once appended).
func (b *outputBudget) catalogAllowed(sid string, now time.Time) bool {
	if b.catalogs == 0 {
		return true
	}
	s := b.of(sid, now)
	defer s.mu.Unlock()
	return s.catalogs >= 1
}

// resent spends one re-sent catalog of the session.
func (b *outputBudget) resent(sid string, now time.Time) {
	if b.catalogs == 0 {
		return
	}
	s := b.of(sid, now)
	s.catalogs--
	s.mu.Unlock()
}

// catalogBytesAllowed reports whether n more bytes of catalogs after its
// first fit in the session's budget (a peek: catalogSent spends them once
// appended). A catalog larger than the whole budget is let through when
// the budget is full, so that no catalog is refused for good.
func (b *outputBudget) catalogBytesAllowed(sid string, n int, now time.Time) bool {
	if b.catalogBytes == 0 {
		return true
	}
	s := b.of(sid, now)
	defer s.mu.Unlock()
	return s.catalogBytes >= float64(n) || s.catalogBytes >= b.catalogBytes
}

// catalogSent spends n bytes of catalogs after its first.
func (b *outputBudget) catalogSent(sid string, n int, now time.Time) {
	if b.catalogBytes == 0 {
		return
	}
	s := b.of(sid, now)
	s.catalogBytes -= float64(n)
	s.mu.Unlock()
}

// takeInvocation spends n bytes of the session's invocation budget and
// reports true, or reports false and spends nothing when they are not
// there. An invocation larger than the whole budget is let through when
// the budget is full, so that no skill is refused for good.
func (b *outputBudget) takeInvocation(sid string, n int, now time.Time) bool {
	if b.invocations == 0 {
		return true
	}
	s := b.of(sid, now)
	defer s.mu.Unlock()
	if s.invocations < float64(n) && s.invocations < b.invocations {
		return false
	}
	s.invocations -= float64(n)
	return true
}

// refundInvocation gives back n bytes taken for an invocation the stream
// already held (a duplicate: nothing was stored).
func (b *outputBudget) refundInvocation(sid string, n int, now time.Time) {
	if b.invocations == 0 {
		return
	}
	s := b.of(sid, now)
	s.invocations = min(b.invocations, s.invocations+float64(n))
	s.mu.Unlock()
}

// resends reports whether decision d, taken on the catalog history st,
// sends again a list the session already had: a full catalog (not a
// change list) whose digest is the newest catalog's, which the model no
// longer sees. Only a compaction makes that: an unchanged visible list is
// not appended at all.
func resends(st history.State, d catalog.Decision) bool {
	return d.Outcome == catalog.OutcomeAppended && d.Update != catalog.UpdateChanges &&
		st.Newest != nil && st.Newest.Digest == d.Digest
}

// budgetNow is the budget's clock: the processor's, or a test's.
func (p *Processor) budgetNow() time.Time {
	if p.hooks.budgetNow != nil {
		return p.hooks.budgetNow()
	}
	return p.now()
}
