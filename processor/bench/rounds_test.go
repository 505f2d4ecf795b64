package bench

import (
	"strings"
	"testing"
	"time"
)

// TestMergePhases: counts, wall time and CPU add up, rates and CPU per
// trigger are those of the sums, latency percentiles are the median of
// the phases', and a report of rounds lists each round.
func TestMergePhases(t *testing.T) {
	phase := func(secs float64, steps int64, cpu time.Duration, p50 float64) *PhaseReport {
		ph := &PhaseReport{Seconds: secs, Complete: true, PreSteps: steps, SkillCalls: steps, Appends: steps / 2,
			Outcomes: map[string]int64{"unchanged": steps}, CPUScope: "child",
			Latency: map[string]Latency{SeriesSkillCall: {N: int(steps), Mean: p50, P50: p50, P90: 2 * p50, P99: 3 * p50, Max: 4 * p50}}}
		ph.PreStepsPerSec = float64(steps) / secs
		ph.SetCPU(cpu)
		return ph
	}
	a, b, c := phase(1, 100, 20*time.Millisecond, 100), phase(3, 300, 90*time.Millisecond, 300), phase(1, 100, 40*time.Millisecond, 200)
	m := MergePhases([]*PhaseReport{a, b, c})
	if m.PreSteps != 500 || m.SkillCalls != 500 || m.Appends != 250 || m.Outcomes["unchanged"] != 500 || m.Seconds != 5 || !m.Complete {
		t.Fatalf("sums: %+v", m)
	}
	if m.PreStepsPerSec != 100 || m.CPUSeconds < 0.1499 || m.CPUSeconds > 0.1501 {
		t.Errorf("rate %v/s, CPU %vs; want 100/s and 0.15s", m.PreStepsPerSec, m.CPUSeconds)
	}
	if got := m.CPUPerTriggerUS; got < 149.9 || got > 150.1 { // 0.15 s over 1,000 triggers
		t.Errorf("CPU per trigger %vµs, want 150", got)
	}
	l := m.Latency[SeriesSkillCall]
	if l.N != 500 || l.P50 != 200 || l.P99 != 600 || l.Max != 1200 || l.Mean != (100*100+300*300+100*200)/500.0 {
		t.Errorf("latency %+v", l)
	}
	// The projector's CPU, when it ran apart, adds up the same way.
	a.SetProjectorCPU(10 * time.Millisecond)
	b.SetProjectorCPU(30 * time.Millisecond)
	mp := MergePhases([]*PhaseReport{a, b})
	if got := mp.ProjectorCPUPerTriggerUS; mp.ProjectorCPUSeconds < 0.0399 || mp.ProjectorCPUSeconds > 0.0401 || got < 49.9 || got > 50.1 {
		t.Errorf("projector apart: %vs, %vµs a trigger; want 0.04s over 800 triggers, 50µs", mp.ProjectorCPUSeconds, got)
	}
	if rd := NewRound(true, c, b); rd.ProjectorCPUUS != b.ProjectorCPUPerTriggerUS {
		t.Errorf("round's projector %vµs, want %v", rd.ProjectorCPUUS, b.ProjectorCPUPerTriggerUS)
	}
	c.Complete = false
	if MergePhases([]*PhaseReport{a, c}).Complete {
		t.Error("a merge with an incomplete phase is complete")
	}
	if MergePhases([]*PhaseReport{a}) != a || MergePhases(nil) != nil {
		t.Error("one phase or none is not returned as is")
	}

	r := &Report{Compared: ComparedProjection, Baseline: m, Processor: m,
		Rounds: []Round{NewRound(true, a, b), NewRound(false, a, c)}}
	r.ComputeRatios()
	out := FormatReport(r)
	for _, want := range []string{"2 rounds, the order alternating", "(2 rounds summed)"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
	if r.Rounds[0].First != "without" || r.Rounds[1].First != "with" {
		t.Errorf("rounds %+v", r.Rounds)
	}
	if r.Rounds[0].CPUPerTrigger != b.CPUPerTriggerUS/a.CPUPerTriggerUS {
		t.Errorf("round ratio %v", r.Rounds[0].CPUPerTrigger)
	}
}
