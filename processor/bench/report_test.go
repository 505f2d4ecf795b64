package bench

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// TestReportText renders a report for people: every phase column, the
// ratios and where the targets land.
func TestReportText(t *testing.T) {
	lat := func(p50 float64) map[string]Latency {
		return map[string]Latency{SeriesPreStep: {N: 10, P50: p50, P90: 2 * p50, P99: 3 * p50, Max: 4 * p50},
			SeriesUnchanged: {N: 9, P50: p50, P90: 2 * p50, P99: 3 * p50, Max: 4 * p50}}
	}
	r := &Report{
		Workload: Workload{Sessions: 1000, Steps: 10, Concurrency: 1000, Encoding: "msgpack", Processor: ModeChild, Workers: 32},
		Processor: &PhaseReport{Seconds: 2, Complete: true, PreSteps: 10000, PreStepsPerSec: 5000, Latency: lat(1500), PeakRSSBytes: 50 << 20, RSSBytes: 40 << 20, CPUSeconds: 2, CPUCores: 1,
			Heap: &HeapStats{Mallocs: 1_600_000, Bytes: 320 << 20, GCs: 12, GCPauseSec: 0.0031}},
		Baseline: &PhaseReport{Seconds: 1, Complete: true, PreSteps: 10000, PreStepsPerSec: 10000, Latency: lat(1000)},
	}
	r.ComputeRatios()
	got := FormatReport(r)
	for _, want := range []string{
		"1000 sessions × 10 pre-steps",
		"pre-step unchanged p50",
		"1.50ms", "1.00ms", "1.50",
		"unchanged pre-step p50 ≤ 1.5× baseline: 1.50× met",
		"≥ 5000 pre-steps/s with 1000 sessions in flight: 5000/s met",
		"processor peak RSS < 200 MB (1000 sessions seen): 50.0 MiB met",
		"40.0 MiB / 50.0 MiB",
		"160 objects, 32 KiB", // per trigger: 10,000 pre-steps
		"12 / 3.10ms",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
}

// StatsOf sums the head reads by result, and the report names them only
// when there were any.
func TestStatsOfHeadReads(t *testing.T) {
	reg := prometheus.NewRegistry()
	c := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "skillstream_head_reads_total"}, []string{"result"})
	reg.MustRegister(c)
	c.WithLabelValues("hit").Add(7)
	c.WithLabelValues("stale").Add(2)
	c.WithLabelValues("unsure")
	st := StatsOf(reg)
	if st.HeadReads["hit"] != 7 || st.HeadReads["stale"] != 2 || len(st.HeadReads) != 2 {
		t.Fatalf("head reads %v", st.HeadReads)
	}
	if st := StatsOf(prometheus.NewRegistry()); st.HeadReads != nil {
		t.Fatalf("head reads without the metric: %v", st.HeadReads)
	}
}
