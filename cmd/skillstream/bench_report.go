package main

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
)

// formatBenchReport renders the report as a table for people.
func formatBenchReport(r *benchReport) string {
	var b strings.Builder
	w := r.Workload
	fmt.Fprintf(&b, "skillstream bench: %d sessions × %d pre-steps, %d skill calls per step, %d catalog changes, %s, %d skills, %d projects\n",
		w.Sessions, w.Steps, w.Calls, w.Changes, w.Encoding, w.Skills, w.Projects)
	fmt.Fprintf(&b, "%d sessions in flight, %d processor workers, processor %s, NATS %s\n", w.Concurrency, w.Workers, w.Processor, w.NATS)
	m := r.Machine
	fmt.Fprintf(&b, "machine: %d CPUs, %s memory, %s %s; load average %s before, %s after\n\n",
		m.CPUs, benchBytes(m.MemoryBytes), m.GoVersion, m.OSArch, orDash(m.LoadBefore), orDash(m.LoadAfter))

	phases := []*benchPhaseReport{r.Processor}
	head := "\tprocessor"
	if r.Baseline != nil {
		phases = append(phases, r.Baseline)
		head += "\tbaseline\tprocessor/baseline"
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, head+"\t")
	row := func(label string, cell func(*benchPhaseReport) string, ratio string) {
		fmt.Fprint(tw, label)
		for _, ph := range phases {
			if ph == nil {
				fmt.Fprint(tw, "\t-")
				continue
			}
			fmt.Fprint(tw, "\t"+cell(ph))
		}
		if r.Baseline != nil {
			fmt.Fprint(tw, "\t"+ratio)
		}
		fmt.Fprintln(tw, "\t")
	}
	ratio := func(key string) string {
		if v, ok := r.Ratios[key]; ok {
			return fmt.Sprintf("%.2f", v)
		}
		return ""
	}
	row("wall time", func(p *benchPhaseReport) string { return fmt.Sprintf("%.1fs", p.Seconds) }, "")
	row("all sessions done", func(p *benchPhaseReport) string {
		return map[bool]string{true: "yes", false: "NO (capped)"}[p.Complete]
	}, "")
	row("pre-steps", func(p *benchPhaseReport) string { return fmt.Sprint(p.PreSteps) }, "")
	row("pre-steps/s", func(p *benchPhaseReport) string { return fmt.Sprintf("%.0f", p.PreStepsPerSec) }, ratio("pre_steps_per_second"))
	if r.Workload.Calls > 0 {
		row("skill calls", func(p *benchPhaseReport) string { return fmt.Sprint(p.SkillCalls) }, "")
		row("skill calls/s", func(p *benchPhaseReport) string { return fmt.Sprintf("%.0f", p.SkillCallsPerSec) }, ratio("skill_calls_per_second"))
	}
	row("appends/s", func(p *benchPhaseReport) string { return fmt.Sprintf("%.0f", p.AppendsPerSec) }, "")
	for _, s := range benchSeries {
		if _, ok := r.Processor.Latency[s]; !ok {
			continue
		}
		key := strings.ReplaceAll(s, " ", "_")
		for _, q := range []struct {
			name string
			get  func(benchLatency) float64
		}{
			{"p50", func(l benchLatency) float64 { return l.P50 }},
			{"p90", func(l benchLatency) float64 { return l.P90 }},
			{"p99", func(l benchLatency) float64 { return l.P99 }},
			{"max", func(l benchLatency) float64 { return l.Max }},
		} {
			rk := ""
			if q.name != "max" {
				rk = ratio(key + "_" + q.name)
			}
			row(s+" "+q.name, func(p *benchPhaseReport) string {
				l, ok := p.Latency[s]
				if !ok {
					return "-"
				}
				return benchMicros(q.get(l))
			}, rk)
		}
	}
	row("conflicts", func(p *benchPhaseReport) string { return fmt.Sprint(p.Conflicts) }, "")
	row("errors", func(p *benchPhaseReport) string { return fmt.Sprint(p.Errors) }, "")
	row("retries", func(p *benchPhaseReport) string { return fmt.Sprint(p.Retries) }, "")
	row("CPU", func(p *benchPhaseReport) string {
		if p.CPUSeconds == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1fs = %.2f cores", p.CPUSeconds, p.CPUCores)
	}, "")
	row("CPU per trigger", func(p *benchPhaseReport) string {
		if p.CPUPerTriggerUS == 0 {
			return "-"
		}
		return benchMicros(p.CPUPerTriggerUS)
	}, ratio("cpu_per_trigger"))
	row("RSS end / peak", func(p *benchPhaseReport) string {
		if p.PeakRSSBytes == 0 {
			return "-"
		}
		return benchBytes(p.RSSBytes) + " / " + benchBytes(p.PeakRSSBytes)
	}, "")
	tw.Flush()

	fmt.Fprintln(&b)
	fmt.Fprintf(&b, "processor outcomes: %s\n", benchOutcomes(r.Processor.Outcomes))
	for _, ph := range phases {
		name := "processor"
		if ph == r.Baseline {
			name = "baseline"
		}
		fmt.Fprintf(&b, "%s CPU: %s", name, ph.CPUScope)
		if ph.BenchCPUSeconds > 0 {
			fmt.Fprintf(&b, "; this process (load generator, embedded NATS server) used %.1fs meanwhile", ph.BenchCPUSeconds)
		}
		fmt.Fprintln(&b)
	}
	if st := r.Processor.Processor; st != nil {
		var stages []string
		for _, k := range []string{"read", "decide", "append", "total"} {
			if s, ok := st.Stages[k]; ok {
				stages = append(stages, fmt.Sprintf("%s %s (p50 ≤ %s, p99 ≤ %s)", k, benchMicros(s.MeanUS), benchMicros(s.P50US), benchMicros(s.P99US)))
			}
		}
		fmt.Fprintf(&b, "processor stages, mean (histogram bounds): %s\n", strings.Join(stages, ", "))
		fmt.Fprintf(&b, "processor metrics: %.0f conflicts, %.0f redeliveries, %.0f duplicates, %.0f rejects, %.0f transient failures, %.0f dead letters\n",
			st.Conflicts, st.Redeliveries, st.Duplicates, st.Rejects, st.Transient, st.DeadLetters)
	}
	for _, ph := range phases {
		name := "processor"
		if ph == r.Baseline {
			name = "baseline"
		}
		for _, e := range ph.ErrorSamples {
			fmt.Fprintf(&b, "%s error: %s\n", name, e)
		}
	}
	b.WriteString(benchTargets(r))
	return b.String()
}

// benchTargets states where the run lands against issue 7's targets.
func benchTargets(r *benchReport) string {
	var b strings.Builder
	b.WriteString("\ntargets:\n")
	mark := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	if v, ok := r.Ratios["pre-step_unchanged_p50"]; ok {
		fmt.Fprintf(&b, "  unchanged pre-step p50 ≤ 1.5× baseline: %.2f× %s\n", v, mark(v <= 1.5))
	}
	if v, ok := r.Ratios["pre-step_unchanged_p99"]; ok {
		fmt.Fprintf(&b, "  unchanged pre-step p99 ≤ 2× baseline: %.2f× %s\n", v, mark(v <= 2))
	}
	p := r.Processor
	if r.Workload.Concurrency >= 1000 && r.Workload.Calls == 0 {
		fmt.Fprintf(&b, "  ≥ 5000 pre-steps/s with %d sessions in flight: %.0f/s %s\n", r.Workload.Concurrency, p.PreStepsPerSec, mark(p.PreStepsPerSec >= 5000))
	}
	if p.PeakRSSBytes > 0 && r.Workload.Processor == benchModeChild {
		fmt.Fprintf(&b, "  processor peak RSS < 200 MB (%d sessions seen): %s %s\n", r.Workload.Sessions, benchBytes(p.PeakRSSBytes), mark(p.PeakRSSBytes < 200<<20))
	}
	return b.String()
}

func benchOutcomes(m map[string]int64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// benchMicros formats microseconds.
func benchMicros(us float64) string {
	switch {
	case us >= 1e6:
		return fmt.Sprintf("%.2fs", us/1e6)
	case us >= 1e3:
		return fmt.Sprintf("%.2fms", us/1e3)
	default:
		return fmt.Sprintf("%.0fµs", us)
	}
}

func benchBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n > 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return "-"
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
