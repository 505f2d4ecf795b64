package processor

import (
	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/processor/history"
)

// cohort is q for session sid: its Canary names the releases whose
// candidate the session takes (history.InCohort with this processor's
// tenant), so that the session's view, loads and searches all answer the
// same revision of each skill. Without a release anywhere q is unchanged:
// the same cached view as before, at the cost of one Releases call.
func (p *Processor) cohort(sid string, q catalog.Query) catalog.Query {
	return history.InCohort(p.skills, p.cfg.Tenant, sid, q)
}
