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
	// SkillLabelUnknown collects calls whose name resolved to no skill of
	// the session's view (unknown, or a provider failing before it could
	// say): only the names of skills that exist get a series, so made-up
	// names cannot take the labels of real ones.
	SkillLabelUnknown = "_unknown"
	// SkillOutcomeOK is the outcome of a successful load; failures carry
	// their error code.
	SkillOutcomeOK = "ok"
)

// skillMetrics count skill loads and invocations by skill name, with the
// number of names bounded: only names that resolved to a skill get a label
// (SkillLabelUnknown collects the others), the first limit of them a label
// of their own, every later one is counted under SkillLabelOther, and
// overflow counts each record so folded, so that a flood of names
// (hostile or not) cannot grow the metrics without bound, nor hide real
// skills under _other unseen.
type skillMetrics struct {
	loads       *prometheus.CounterVec // skill, outcome
	invocations *prometheus.CounterVec // skill
	overflow    prometheus.Counter

	mu     sync.Mutex
	limit  int
	names  map[string]struct{}
	warned bool // the first fold was reported
}

func newSkillMetrics(limit int) *skillMetrics {
	return &skillMetrics{
		loads: newCounterVec("skill_loads_total",
			"Skill tool results appended, by skill and outcome (ok or the error code). Only skills that exist get a label: names that resolved to none are counted as _unknown, refused names as _invalid, skills beyond the label limit as _other.", "skill", "outcome"),
		invocations: newCounterVec("skill_invocations_total",
			"Users' explicit invocations of a skill, by skill (same label limit as skill_loads_total).", "skill"),
		overflow: prometheus.NewCounter(prometheus.CounterOpts{Namespace: "skillstream", Name: "skill_labels_overflow_total",
			Help: "Skill loads and invocations counted under skill=\"_other\" because more distinct skills than --metrics-skill-limit were seen: when it grows, raise the limit."}),
		limit: limit,
		names: map[string]struct{}{},
	}
}

// label is the skill label of name, a skill that exists; first is true
// the first time a name is folded into SkillLabelOther.
func (s *skillMetrics) label(name string) (label string, first bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.names[name]; ok {
		return name, false
	}
	if len(s.names) >= s.limit {
		s.overflow.Inc()
		first, s.warned = !s.warned, true
		return SkillLabelOther, first
	}
	s.names[name] = struct{}{}
	return name, false
}

// result counts an appended tool result answering a call for name;
// resolved says whether name resolved to a skill of the session's view.
// It reports true the first time a skill is counted under _other (the
// label limit reached), for the caller to say so.
func (s *skillMetrics) result(name string, resolved bool, r events.ToolResult) (overflowed bool) {
	outcome := SkillOutcomeOK
	if r.IsError || r.Value == nil {
		outcome = "error"
		if r.Error != nil && r.Error.Code != "" {
			outcome = r.Error.Code
		}
		if outcome == events.CodeInvalidName || outcome == events.CodeBadRequest {
			s.loads.WithLabelValues(SkillLabelInvalid, outcome).Inc()
			return false
		}
		if !resolved || outcome == events.CodeUnknown {
			if !knownOutcome(outcome) {
				outcome = "other"
			}
			s.loads.WithLabelValues(SkillLabelUnknown, outcome).Inc()
			return false
		}
	} else {
		name = r.Value.Name
	}
	if !knownOutcome(outcome) {
		outcome = "other"
	}
	label, first := s.label(name)
	s.loads.WithLabelValues(label, outcome).Inc()
	return first
}

// invocation counts a user's invocation of name (a skill that resolved:
// only those are appended).
func (s *skillMetrics) invocation(name string) {
	label, _ := s.label(name)
	s.invocations.WithLabelValues(label).Inc()
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
	s.overflow = register(reg, s.overflow, err)
}
