package processor

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skillstream/skillstream/events"
)

// DefaultSkillLabelLimit is how many distinct skill names get a series of
// their own in the per-skill metrics by default.
const DefaultSkillLabelLimit = 200

// Labels of the per-skill metrics that are not skill names.
const (
	// SkillLabelOther collects every skill named after the limit was
	// reached.
	SkillLabelOther = "_other"
	// SkillLabelInvalid collects calls whose name was refused as a name
	// (invalid_name, bad_request): a worker's garbage gets no series.
	SkillLabelInvalid = "_invalid"
	// SkillOutcomeOK is the outcome of a successful load; failures carry
	// their error code.
	SkillOutcomeOK = "ok"
)

// skillMetrics count skill loads and invocations by skill name, with the
// number of names bounded: the first limit names seen get a label of their
// own, every later one is counted under SkillLabelOther, so that a flood of
// names (hostile or not) cannot grow the metrics without bound.
type skillMetrics struct {
	loads       *prometheus.CounterVec // skill, outcome
	invocations *prometheus.CounterVec // skill

	mu    sync.Mutex
	limit int
	names map[string]struct{}
}

func newSkillMetrics(limit int) *skillMetrics {
	return &skillMetrics{
		loads: newCounterVec("skill_loads_total",
			"Skill tool results appended, by skill and outcome (ok or the error code). Skills beyond the label limit are counted as _other, refused names as _invalid.", "skill", "outcome"),
		invocations: newCounterVec("skill_invocations_total",
			"Users' explicit invocations of a skill, by skill (same label limit as skill_loads_total).", "skill"),
		limit: limit,
		names: map[string]struct{}{},
	}
}

// label is the skill label of name.
func (s *skillMetrics) label(name string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.names[name]; ok {
		return name
	}
	if len(s.names) >= s.limit {
		return SkillLabelOther
	}
	s.names[name] = struct{}{}
	return name
}

// result counts an appended tool result answering a call for name.
func (s *skillMetrics) result(name string, r events.ToolResult) {
	outcome := SkillOutcomeOK
	if r.IsError || r.Value == nil {
		outcome = "error"
		if r.Error != nil && r.Error.Code != "" {
			outcome = r.Error.Code
		}
		if outcome == events.CodeInvalidName || outcome == events.CodeBadRequest {
			s.loads.WithLabelValues(SkillLabelInvalid, outcome).Inc()
			return
		}
	} else {
		name = r.Value.Name
	}
	if !knownOutcome(outcome) {
		outcome = "other"
	}
	s.loads.WithLabelValues(s.label(name), outcome).Inc()
}

// invocation counts a user's invocation of name.
func (s *skillMetrics) invocation(name string) {
	s.invocations.WithLabelValues(s.label(name)).Inc()
}

func knownOutcome(o string) bool {
	switch o {
	case SkillOutcomeOK, events.CodeUnknown, events.CodeNotModelInvocable, events.CodeProvider,
		events.CodeExpired, events.CodeTooLarge, codeUnavailable:
		return true
	}
	return false
}

func (s *skillMetrics) register(reg prometheus.Registerer, err *error) {
	s.loads = register(reg, s.loads, err)
	s.invocations = register(reg, s.invocations, err)
}
