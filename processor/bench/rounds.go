package bench

import (
	"maps"
	"slices"
	"time"
)

// maxMergedSamples bounds the error samples a merged phase keeps.
const maxMergedSamples = 10

// Round is one round of a comparison played in rounds (bench
// --usage-projection-cost): the CPU per trigger of each side, and which
// side went first. Rounds alternate the order, so that whatever grows
// between the phases of a run (the stream, the server's caches, the
// machine's heat) weighs on both sides alike.
type Round struct {
	First          string  `json:"first"` // "without" or "with"
	WithoutCPUUS   float64 `json:"without_cpu_per_trigger_us"`
	WithCPUUS      float64 `json:"with_cpu_per_trigger_us"`
	CPUPerTrigger  float64 `json:"cpu_per_trigger_ratio"` // with / without
	WithoutPerSec  float64 `json:"without_pre_steps_per_second"`
	WithPerSec     float64 `json:"with_pre_steps_per_second"`
	PreStepsPerSec float64 `json:"pre_steps_per_second_ratio"` // with / without
	// ProjectorCPUUS is the projector's CPU per trigger when it ran apart
	// (--projector-apart); WithCPUUS is then the processor's alone.
	ProjectorCPUUS float64 `json:"projector_cpu_per_trigger_us,omitempty"`
}

// NewRound compares the two phases of one round.
func NewRound(withoutFirst bool, without, with *PhaseReport) Round {
	r := Round{First: "with", WithoutCPUUS: without.CPUPerTriggerUS, WithCPUUS: with.CPUPerTriggerUS,
		WithoutPerSec: without.PreStepsPerSec, WithPerSec: with.PreStepsPerSec, ProjectorCPUUS: with.ProjectorCPUPerTriggerUS}
	if withoutFirst {
		r.First = "without"
	}
	if r.WithoutCPUUS > 0 {
		r.CPUPerTrigger = r.WithCPUUS / r.WithoutCPUUS
	}
	if r.WithoutPerSec > 0 {
		r.PreStepsPerSec = r.WithPerSec / r.WithoutPerSec
	}
	return r
}

// MergePhases sums phases played with the same load into one: counts,
// wall time and CPU add up, and the rates and CPU per trigger are those
// of the sums. A latency's percentiles are the median of the phases'
// (exact percentiles of the union would need every sample kept), its
// mean is weighted by samples and its max is the largest. Memory is the
// largest seen; the processor's own metrics are the last phase's.
func MergePhases(phs []*PhaseReport) *PhaseReport {
	switch len(phs) {
	case 0:
		return nil
	case 1:
		return phs[0]
	}
	m := &PhaseReport{Complete: true, Outcomes: map[string]int64{}, Latency: map[string]Latency{}, CPUScope: phs[0].CPUScope}
	var cpu, projCPU float64
	lat := map[string][]Latency{}
	for _, ph := range phs {
		m.Seconds += ph.Seconds
		m.Complete = m.Complete && ph.Complete
		m.PreSteps += ph.PreSteps
		m.SkillCalls += ph.SkillCalls
		m.Searches += ph.Searches
		m.Appends += ph.Appends
		m.Conflicts += ph.Conflicts
		m.Errors += ph.Errors
		m.Retries += ph.Retries
		for k, n := range ph.Outcomes {
			m.Outcomes[k] += n
		}
		for k, n := range ph.Catalogs {
			if m.Catalogs == nil {
				m.Catalogs = map[string]int64{}
			}
			m.Catalogs[k] += n
		}
		for s, l := range ph.Latency {
			lat[s] = append(lat[s], l)
		}
		cpu += ph.CPUSeconds
		projCPU += ph.ProjectorCPUSeconds
		m.BenchCPUSeconds += ph.BenchCPUSeconds
		m.RSSBytes = max(m.RSSBytes, ph.RSSBytes)
		m.PeakRSSBytes = max(m.PeakRSSBytes, ph.PeakRSSBytes)
		if ph.Processor != nil {
			m.Processor = ph.Processor
		}
		if n := maxMergedSamples - len(m.ErrorSamples); n > 0 {
			m.ErrorSamples = append(m.ErrorSamples, ph.ErrorSamples[:min(len(ph.ErrorSamples), n)]...)
		}
	}
	if m.Seconds > 0 {
		m.PreStepsPerSec = float64(m.PreSteps) / m.Seconds
		m.SkillCallsPerSec = float64(m.SkillCalls) / m.Seconds
		m.SearchesPerSec = float64(m.Searches) / m.Seconds
		m.AppendsPerSec = float64(m.Appends) / m.Seconds
	}
	m.SetCPU(time.Duration(cpu * float64(time.Second)))
	if projCPU > 0 {
		m.SetProjectorCPU(time.Duration(projCPU * float64(time.Second)))
	}
	for _, s := range slices.Sorted(maps.Keys(lat)) {
		m.Latency[s] = mergeLatency(lat[s])
	}
	return m
}

// mergeLatency merges one series' latencies (see MergePhases).
func mergeLatency(ls []Latency) Latency {
	var m Latency
	var sum float64
	for _, l := range ls {
		m.N += l.N
		sum += l.Mean * float64(l.N)
		m.Max = max(m.Max, l.Max)
	}
	if m.N > 0 {
		m.Mean = sum / float64(m.N)
	}
	median := func(get func(Latency) float64) float64 {
		vs := make([]float64, len(ls))
		for i, l := range ls {
			vs[i] = get(l)
		}
		slices.Sort(vs)
		if len(vs)%2 == 1 {
			return vs[len(vs)/2]
		}
		return (vs[len(vs)/2-1] + vs[len(vs)/2]) / 2
	}
	m.P50 = median(func(l Latency) float64 { return l.P50 })
	m.P90 = median(func(l Latency) float64 { return l.P90 })
	m.P99 = median(func(l Latency) float64 { return l.P99 })
	return m
}
