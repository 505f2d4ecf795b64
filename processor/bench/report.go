package bench

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/skillstream/skillstream/catalog"
)

// FormatReport renders the report as a table for people.
func FormatReport(r *Report) string {
	var b strings.Builder
	w := r.Workload
	searches := ""
	if w.Searches > 0 {
		searches = fmt.Sprintf(", %d skill searches", w.Searches)
	}
	fmt.Fprintf(&b, "skillstream bench: %d sessions × %d pre-steps, %d skill calls%s per step, %d catalog changes, %s, %d skills, %d projects\n",
		w.Sessions, w.Steps, w.Calls, searches, w.Changes, w.Encoding, w.Skills, w.Projects)
	fmt.Fprintf(&b, "%d sessions in flight, %d processor workers, processor %s, NATS %s\n", w.Concurrency, w.Workers, w.Processor, w.NATS)
	if w.Partitions > 1 {
		fmt.Fprintf(&b, "sessions spread over %d partition streams, a processor (%d workers) on each\n", w.Partitions, w.Workers)
	}
	m := r.Machine
	fmt.Fprintf(&b, "machine: %d CPUs, %s memory, %s %s; load average %s before, %s after\n\n",
		m.CPUs, benchBytes(m.MemoryBytes), m.GoVersion, m.OSArch, orDash(m.LoadBefore), orDash(m.LoadAfter))

	phases := []*PhaseReport{r.Processor}
	head := "\tprocessor"
	if r.Compared == ComparedProjection {
		head = "\twith projector"
	}
	if r.Baseline != nil {
		phases = append(phases, r.Baseline)
		if r.Compared == ComparedProjection {
			head += "\twithout\twith/without"
		} else {
			head += "\tbaseline\tprocessor/baseline"
		}
	}
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, head+"\t")
	row := func(label string, cell func(*PhaseReport) string, ratio string) {
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
	row("wall time", func(p *PhaseReport) string { return fmt.Sprintf("%.1fs", p.Seconds) }, "")
	row("all sessions done", func(p *PhaseReport) string {
		return map[bool]string{true: "yes", false: "NO (capped)"}[p.Complete]
	}, "")
	row("pre-steps", func(p *PhaseReport) string { return fmt.Sprint(p.PreSteps) }, "")
	row("pre-steps/s", func(p *PhaseReport) string { return fmt.Sprintf("%.0f", p.PreStepsPerSec) }, ratio("pre_steps_per_second"))
	if r.Workload.Calls > 0 {
		row("skill calls", func(p *PhaseReport) string { return fmt.Sprint(p.SkillCalls) }, "")
		row("skill calls/s", func(p *PhaseReport) string { return fmt.Sprintf("%.0f", p.SkillCallsPerSec) }, ratio("skill_calls_per_second"))
	}
	if r.Workload.Searches > 0 {
		row("skill searches", func(p *PhaseReport) string { return fmt.Sprint(p.Searches) }, "")
		row("skill searches/s", func(p *PhaseReport) string { return fmt.Sprintf("%.0f", p.SearchesPerSec) }, ratio("skill_searches_per_second"))
	}
	row("appends/s", func(p *PhaseReport) string { return fmt.Sprintf("%.0f", p.AppendsPerSec) }, "")
	for _, s := range Series {
		if _, ok := r.Processor.Latency[s]; !ok {
			continue
		}
		key := strings.ReplaceAll(s, " ", "_")
		for _, q := range []struct {
			name string
			get  func(Latency) float64
		}{
			{"p50", func(l Latency) float64 { return l.P50 }},
			{"p90", func(l Latency) float64 { return l.P90 }},
			{"p99", func(l Latency) float64 { return l.P99 }},
			{"max", func(l Latency) float64 { return l.Max }},
		} {
			rk := ""
			if q.name != "max" {
				rk = ratio(key + "_" + q.name)
			}
			row(s+" "+q.name, func(p *PhaseReport) string {
				l, ok := p.Latency[s]
				if !ok {
					return "-"
				}
				return benchMicros(q.get(l))
			}, rk)
		}
	}
	row("conflicts", func(p *PhaseReport) string { return fmt.Sprint(p.Conflicts) }, "")
	row("errors", func(p *PhaseReport) string { return fmt.Sprint(p.Errors) }, "")
	row("retries", func(p *PhaseReport) string { return fmt.Sprint(p.Retries) }, "")
	row("CPU", func(p *PhaseReport) string {
		if p.CPUSeconds == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1fs = %.2f cores", p.CPUSeconds, p.CPUCores)
	}, "")
	row("CPU per trigger", func(p *PhaseReport) string {
		if p.CPUPerTriggerUS == 0 {
			return "-"
		}
		return benchMicros(p.CPUPerTriggerUS)
	}, ratio("cpu_per_trigger"))
	if r.Processor.ProjectorCPUSeconds > 0 {
		row("projector apart, per trigger", func(p *PhaseReport) string {
			if p.ProjectorCPUSeconds == 0 {
				return "-"
			}
			return benchMicros(p.ProjectorCPUPerTriggerUS)
		}, "")
	}
	row("allocations per trigger", func(p *PhaseReport) string {
		h, n := p.heap()
		if h == nil || n == 0 {
			return "-"
		}
		return fmt.Sprintf("%.0f objects, %s", float64(h.Mallocs)/float64(n), benchBytes(int64(h.Bytes/uint64(n))))
	}, "")
	row("GC cycles / pauses", func(p *PhaseReport) string {
		h, _ := p.heap()
		if h == nil {
			return "-"
		}
		return fmt.Sprintf("%d / %s", h.GCs, benchMicros(h.GCPauseSec*1e6))
	}, "")
	row("RSS end / peak", func(p *PhaseReport) string {
		if p.PeakRSSBytes == 0 {
			return "-"
		}
		return benchBytes(p.RSSBytes) + " / " + benchBytes(p.PeakRSSBytes)
	}, "")
	tw.Flush()

	fmt.Fprintln(&b)
	b.WriteString(roundLines(r))
	fmt.Fprintf(&b, "processor outcomes: %s\n", benchOutcomes(r.Processor.Outcomes))
	if len(r.Processor.Catalogs) > 0 {
		fmt.Fprintf(&b, "processor catalog text appended: %s\n", benchCatalogs(r.Processor.Catalogs))
	}
	for _, ph := range phases {
		fmt.Fprintf(&b, "%s CPU: %s", r.phaseName(ph), ph.CPUScope)
		if ph.BenchCPUSeconds > 0 {
			fmt.Fprintf(&b, "; this process (load generator, embedded NATS server) used %.1fs meanwhile", ph.BenchCPUSeconds)
		}
		fmt.Fprintln(&b)
	}
	if p := r.Processor; p.ProjectorCPUSeconds > 0 {
		fmt.Fprintf(&b, "usage projector apart: its own process beside the processor (which ran without it) used %.2fs CPU, %s per trigger, from the load's start until it had applied the load's records\n",
			p.ProjectorCPUSeconds, benchMicros(p.ProjectorCPUPerTriggerUS))
	}
	if st := r.Processor.Processor; st != nil {
		var stages []string
		for _, k := range []string{"read", "decide", "append", "total"} {
			if s, ok := st.Stages[k]; ok {
				stages = append(stages, fmt.Sprintf("%s %s (p50 ≤ %s, p99 ≤ %s)", k, benchMicros(s.MeanUS), benchMicros(s.P50US), benchMicros(s.P99US)))
			}
		}
		fmt.Fprintf(&b, "processor stages, mean (histogram bounds): %s\n", strings.Join(stages, ", "))
		fmt.Fprintf(&b, "processor metrics: %.0f conflicts, %.0f redeliveries, %.0f duplicates, %.0f rejects, %.0f transient failures, %.0f dead letters",
			st.Conflicts, st.Redeliveries, st.Duplicates, st.Rejects, st.Transient, st.DeadLetters)
		if len(st.HeadReads) > 0 {
			fmt.Fprintf(&b, "; catalog head reads: %.0f hit, %.0f stale, %.0f unsure", st.HeadReads["hit"], st.HeadReads["stale"], st.HeadReads["unsure"])
		}
		fmt.Fprintln(&b)
		b.WriteString(partitionRates(r.Processor))
	}
	for _, ph := range phases {
		for _, e := range ph.ErrorSamples {
			fmt.Fprintf(&b, "%s error: %s\n", r.phaseName(ph), e)
		}
	}
	b.WriteString(invocationCost(r))
	b.WriteString(searchCost(r))
	b.WriteString(benchTargets(r))
	return b.String()
}

// partitionRates is the line of the triggers each partition's stream
// carried per second of the processor phase (bench --partitions); "" with
// one stream.
func partitionRates(ph *PhaseReport) string {
	st := ph.Processor
	if st == nil || len(st.PartitionTriggers) < 2 || ph.Seconds <= 0 {
		return ""
	}
	keys := make([]int, 0, len(st.PartitionTriggers))
	for k := range st.PartitionTriggers {
		n, err := strconv.Atoi(k)
		if err != nil {
			continue
		}
		keys = append(keys, n)
	}
	slices.Sort(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%d %.0f/s", k, st.PartitionTriggers[strconv.Itoa(k)]/ph.Seconds))
	}
	return fmt.Sprintf("processor triggers per partition's stream: %s\n", strings.Join(parts, ", "))
}

// invocationCost compares, in the processor phase, an unchanged pre-step
// with one user invocation against one without.
func invocationCost(r *Report) string {
	with, ok1 := r.Processor.Latency[SeriesInvoked]
	without, ok2 := r.Processor.Latency[SeriesUnchanged]
	if !ok1 || !ok2 {
		return ""
	}
	return fmt.Sprintf("\nuser invocation: an unchanged pre-step with one invocation took p50 %s, p99 %s (%d samples); without, p50 %s, p99 %s (%d samples): +%s at p50\n",
		benchMicros(with.P50), benchMicros(with.P99), with.N, benchMicros(without.P50), benchMicros(without.P99), without.N,
		benchMicros(with.P50-without.P50))
}

// searchCost compares, in the processor phase, a skill search's round
// trip with a skill call's.
func searchCost(r *Report) string {
	search, ok1 := r.Processor.Latency[SeriesSkillSearch]
	call, ok2 := r.Processor.Latency[SeriesSkillCall]
	if !ok1 || !ok2 || call.P50 == 0 {
		return ""
	}
	return fmt.Sprintf("\nskill search: a search took p50 %s, p99 %s (%d samples); a skill call p50 %s, p99 %s (%d samples): %.2f× at p50\n",
		benchMicros(search.P50), benchMicros(search.P99), search.N, benchMicros(call.P50), benchMicros(call.P99), call.N,
		search.P50/call.P50)
}

// benchTargets states where the run lands against issue 7's targets.
// phaseName names phase ph of r in the report's lines.
func (r *Report) phaseName(ph *PhaseReport) string {
	switch {
	case ph == r.Baseline && r.Compared == ComparedProjection:
		return "without projector"
	case ph == r.Baseline:
		return "baseline"
	case r.Compared == ComparedProjection:
		return "with projector"
	}
	return "processor"
}

func benchTargets(r *Report) string {
	var b strings.Builder
	b.WriteString("\ntargets:\n")
	mark := func(ok bool) string {
		if ok {
			return "met"
		}
		return "MISSED"
	}
	if r.Compared == ComparedProjection {
		if v, ok := r.Ratios["cpu_per_trigger"]; ok {
			over := ""
			if n := len(r.Rounds); n > 1 {
				over = fmt.Sprintf(" (%d rounds summed)", n)
			}
			if apart, ok := r.Ratios["cpu_with_projector_apart"]; ok {
				// The processor ran without the projector in both columns.
				fmt.Fprintf(&b, "  CPU per trigger with the usage projector (apart, the same phases' processor and projector) ≤ 1.05× without%s: %.3f× %s\n", over, apart, mark(apart <= 1.05))
				fmt.Fprintf(&b, "  (the processor alone, in the phases with the projector apart against those without it: %.2f×, the same work measured twice)\n", v)
			} else {
				fmt.Fprintf(&b, "  CPU per trigger with the usage projector ≤ 1.05× without%s: %.2f× %s\n", over, v, mark(v <= 1.05))
			}
		}
	} else {
		if v, ok := r.Ratios["pre-step_unchanged_p50"]; ok {
			fmt.Fprintf(&b, "  unchanged pre-step p50 ≤ 1.5× baseline: %.2f× %s\n", v, mark(v <= 1.5))
		}
		if v, ok := r.Ratios["pre-step_unchanged_p99"]; ok {
			fmt.Fprintf(&b, "  unchanged pre-step p99 ≤ 2× baseline: %.2f× %s\n", v, mark(v <= 2))
		}
	}
	p := r.Processor
	if r.Workload.Concurrency >= 1000 && r.Workload.Calls == 0 {
		fmt.Fprintf(&b, "  ≥ 5000 pre-steps/s with %d sessions in flight: %.0f/s %s\n", r.Workload.Concurrency, p.PreStepsPerSec, mark(p.PreStepsPerSec >= 5000))
	}
	if p.PeakRSSBytes > 0 && r.Workload.Processor == ModeChild {
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

// WriteSkills generates n skills under work/skills and returns the
// folder, their names, their summaries and a skill body.
func WriteSkills(work string, n int) (string, []string, []catalog.Summary, string, error) {
	dir := filepath.Join(work, "skills")
	var names []string
	var sums []catalog.Summary
	var body string
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("bench-skill-%04d", i)
		desc := fmt.Sprintf("Use when the task involves area %d of the benchmark project: builds, tests, reviews and releases of that area.", i)
		md := SkillMD(name, desc)
		if err := os.MkdirAll(filepath.Join(dir, name), 0o755); err != nil {
			return "", nil, nil, "", fmt.Errorf("generate skills: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, name, "SKILL.md"), []byte(md), 0o644); err != nil {
			return "", nil, nil, "", fmt.Errorf("generate skills: %w", err)
		}
		names = append(names, name)
		sums = append(sums, catalog.Summary{Name: name, Description: desc, Invocation: catalog.Invocation{ModelInvocable: true, UserInvocable: true}})
		body = md[strings.Index(md, "\n---\n")+5:]
	}
	return dir, names, sums, body, nil
}

// WriteProjects creates n project folders (each a repository root with
// one project skill) and returns their paths.
func WriteProjects(work string, n int) ([]string, error) {
	var cwds []string
	for i := 1; i <= n; i++ {
		root := filepath.Join(work, "projects", fmt.Sprintf("p%03d", i))
		name := fmt.Sprintf("project-%03d-conventions", i)
		skill := filepath.Join(root, ".agents", "skills", name)
		if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
			return nil, fmt.Errorf("generate projects: %w", err)
		}
		if err := os.MkdirAll(skill, 0o755); err != nil {
			return nil, fmt.Errorf("generate projects: %w", err)
		}
		md := SkillMD(name, fmt.Sprintf("Conventions of project %d: layout, naming and commit style.", i))
		if err := os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte(md), 0o644); err != nil {
			return nil, fmt.Errorf("generate projects: %w", err)
		}
		cwds = append(cwds, root)
	}
	return cwds, nil
}

// Report is the whole result; --json prints it as is.
type Report struct {
	Machine  Machine  `json:"machine"`
	Workload Workload `json:"workload"`
	// Baseline is the phase Processor is compared with: the baseline
	// consumer, or what Compared says.
	Baseline  *PhaseReport       `json:"baseline,omitempty"`
	Processor *PhaseReport       `json:"processor"`
	Ratios    map[string]float64 `json:"ratios,omitempty"` // processor / baseline
	// Compared, when set, says that Baseline is not the baseline consumer
	// (ComparedProjection: the processor without the usage projector,
	// Processor the processor with it).
	Compared string `json:"compared,omitempty"`
	// Rounds, when the comparison was played in rounds, are each round's
	// figures; Baseline and Processor then sum the rounds (MergePhases).
	Rounds []Round `json:"rounds,omitempty"`
}

// ComparedProjection is Report.Compared of bench --usage-projection-cost.
const ComparedProjection = "usage-projection"

type Machine struct {
	CPUs        int    `json:"cpus"`
	MemoryBytes int64  `json:"memory_bytes"`
	GoVersion   string `json:"go"`
	OSArch      string `json:"os_arch"`
	LoadBefore  string `json:"load_average_before"`
	LoadAfter   string `json:"load_average_after"`
}

func MachineNow() Machine {
	return Machine{CPUs: runtime.NumCPU(), MemoryBytes: MemTotal(), GoVersion: runtime.Version(),
		OSArch: runtime.GOOS + "/" + runtime.GOARCH, LoadBefore: LoadAverage()}
}

type Workload struct {
	Sessions    int    `json:"sessions"`
	Steps       int    `json:"steps"`
	Calls       int    `json:"calls_per_step"`
	Changes     int    `json:"changes"`
	Concurrency int    `json:"concurrency"`
	Skills      int    `json:"skills"`
	Projects    int    `json:"projects"`
	Encoding    string `json:"encoding"`
	Processor   string `json:"processor"`
	Workers     int    `json:"workers"`
	NATS        string `json:"nats"`
	// Gestures: every Gestures-th pre-step invokes a skill by /name.
	Gestures int `json:"gestures_every,omitempty"`
	// Partitions is how many streams the sessions were spread over (bench
	// --partitions; 0: one).
	Partitions int `json:"partitions,omitempty"`
	// Searches: skill searches after each pre-step.
	Searches int `json:"searches_per_step,omitempty"`
}

// PhaseReport is one phase's result.
type PhaseReport struct {
	Seconds          float64            `json:"seconds"`
	Complete         bool               `json:"complete"` // every session finished before --duration
	PreSteps         int64              `json:"pre_steps"`
	SkillCalls       int64              `json:"skill_calls"`
	Searches         int64              `json:"skill_searches,omitempty"`
	Appends          int64              `json:"appends"`
	PreStepsPerSec   float64            `json:"pre_steps_per_second"`
	SkillCallsPerSec float64            `json:"skill_calls_per_second"`
	SearchesPerSec   float64            `json:"skill_searches_per_second,omitempty"`
	AppendsPerSec    float64            `json:"appends_per_second"`
	Conflicts        int64              `json:"conflicts"`
	Errors           int64              `json:"errors"`
	Retries          int64              `json:"retries"`
	Outcomes         map[string]int64   `json:"outcomes"`
	Catalogs         map[string]int64   `json:"catalog_text_bytes,omitempty"` // catalog text appended, by form
	Latency          map[string]Latency `json:"latency"`
	CPUScope         string             `json:"cpu_scope"`
	CPUSeconds       float64            `json:"cpu_seconds"`
	CPUCores         float64            `json:"cpu_cores"`          // CPU seconds per second of the phase
	CPUPerTriggerUS  float64            `json:"cpu_per_trigger_us"` // CPU per answered trigger
	BenchCPUSeconds  float64            `json:"bench_cpu_seconds"`  // child mode: server and load generator
	// ProjectorCPUSeconds is the usage projector's CPU when it ran in a
	// process of its own (bench --projector-apart), not counted in
	// CPUSeconds; ProjectorCPUPerTriggerUS is that per answered trigger.
	ProjectorCPUSeconds      float64    `json:"projector_cpu_seconds,omitempty"`
	ProjectorCPUPerTriggerUS float64    `json:"projector_cpu_per_trigger_us,omitempty"`
	RSSBytes                 int64      `json:"rss_bytes,omitempty"` // at the end of the load
	PeakRSSBytes             int64      `json:"peak_rss_bytes,omitempty"`
	Processor                *ProcStats `json:"processor_metrics,omitempty"`
	// Heap is what the phase's consumer child (the processor or the
	// baseline) allocated while it served the load.
	Heap         *HeapStats `json:"heap,omitempty"`
	ErrorSamples []string   `json:"error_samples,omitempty"`
}

// heap is what the phase's consumer child allocated, and the triggers it
// answered (nil without a child's figures).
func (ph *PhaseReport) heap() (*HeapStats, int64) {
	if ph.Heap == nil {
		return nil, 0
	}
	return ph.Heap, int64(ph.PreSteps + ph.SkillCalls + ph.Searches)
}

func (ph *PhaseReport) SetCPU(d time.Duration) {
	ph.CPUSeconds = d.Seconds()
	if ph.Seconds > 0 {
		ph.CPUCores = ph.CPUSeconds / ph.Seconds
	}
	if n := ph.PreSteps + ph.SkillCalls + ph.Searches; n > 0 {
		ph.CPUPerTriggerUS = ph.CPUSeconds / float64(n) * 1e6
	}
}

// SetProjectorCPU sets the CPU of a usage projector run in its own
// process during the phase (after the triggers are counted).
func (ph *PhaseReport) SetProjectorCPU(d time.Duration) {
	ph.ProjectorCPUSeconds = d.Seconds()
	if n := ph.PreSteps + ph.SkillCalls + ph.Searches; n > 0 {
		ph.ProjectorCPUPerTriggerUS = ph.ProjectorCPUSeconds / float64(n) * 1e6
	}
}

// ComputeRatios fills processor/baseline ratios of latency and throughput.
func (r *Report) ComputeRatios() {
	if r.Baseline == nil || r.Processor == nil {
		return
	}
	r.Ratios = map[string]float64{}
	for _, s := range Series {
		p, okp := r.Processor.Latency[s]
		b, okb := r.Baseline.Latency[s]
		if !okp || !okb || b.P50 == 0 {
			continue
		}
		key := strings.ReplaceAll(s, " ", "_")
		r.Ratios[key+"_p50"] = p.P50 / b.P50
		r.Ratios[key+"_p90"] = p.P90 / b.P90
		r.Ratios[key+"_p99"] = p.P99 / b.P99
	}
	if r.Baseline.PreStepsPerSec > 0 {
		r.Ratios["pre_steps_per_second"] = r.Processor.PreStepsPerSec / r.Baseline.PreStepsPerSec
	}
	if r.Baseline.CPUPerTriggerUS > 0 && r.Processor.CPUPerTriggerUS > 0 {
		r.Ratios["cpu_per_trigger"] = r.Processor.CPUPerTriggerUS / r.Baseline.CPUPerTriggerUS
	}
	if p := r.Processor; p.ProjectorCPUSeconds > 0 && p.CPUSeconds > 0 {
		// The projector apart: its CPU against the processor's in the
		// same phases, which ran the same load at the same time.
		r.Ratios["cpu_with_projector_apart"] = (p.CPUSeconds + p.ProjectorCPUSeconds) / p.CPUSeconds
	}
	if r.Baseline.SkillCallsPerSec > 0 {
		r.Ratios["skill_calls_per_second"] = r.Processor.SkillCallsPerSec / r.Baseline.SkillCallsPerSec
	}
	if r.Baseline.SearchesPerSec > 0 {
		r.Ratios["skill_searches_per_second"] = r.Processor.SearchesPerSec / r.Baseline.SearchesPerSec
	}
}

// benchCatalogs is the catalog text appended by form, in bytes, and the
// total.
func benchCatalogs(m map[string]int64) string {
	var total int64
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		total += m[k]
		parts = append(parts, fmt.Sprintf("%s %s", k, benchBytes(m[k])))
	}
	return fmt.Sprintf("%s in all (%s)", benchBytes(total), strings.Join(parts, ", "))
}

// roundLines lists the rounds of a comparison played in rounds.
func roundLines(r *Report) string {
	if len(r.Rounds) < 2 {
		return ""
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%d rounds, the order alternating; the columns above sum them (latency percentiles: the rounds' median):\n", len(r.Rounds))
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	apart := r.Processor != nil && r.Processor.ProjectorCPUSeconds > 0
	if apart {
		fmt.Fprintln(tw, "\tround\tfirst\tCPU per trigger without\twith (processor)\twith/without\tprojector apart\t(processor+projector)/processor\tpre-steps/s without\twith\twith/without\t")
	} else {
		fmt.Fprintln(tw, "\tround\tfirst\tCPU per trigger without\twith\twith/without\tpre-steps/s without\twith\twith/without\t")
	}
	for i, rd := range r.Rounds {
		if apart {
			share := 0.0
			if rd.WithCPUUS > 0 {
				share = (rd.WithCPUUS + rd.ProjectorCPUUS) / rd.WithCPUUS
			}
			fmt.Fprintf(tw, "\t%d\t%s\t%s\t%s\t%.2f\t%s\t%.3f\t%.0f\t%.0f\t%.2f\t\n", i+1, rd.First, benchMicros(rd.WithoutCPUUS), benchMicros(rd.WithCPUUS),
				rd.CPUPerTrigger, benchMicros(rd.ProjectorCPUUS), share, rd.WithoutPerSec, rd.WithPerSec, rd.PreStepsPerSec)
			continue
		}
		fmt.Fprintf(tw, "\t%d\t%s\t%s\t%s\t%.2f\t%.0f\t%.0f\t%.2f\t\n", i+1, rd.First, benchMicros(rd.WithoutCPUUS), benchMicros(rd.WithCPUUS),
			rd.CPUPerTrigger, rd.WithoutPerSec, rd.WithPerSec, rd.PreStepsPerSec)
	}
	tw.Flush()
	b.WriteString("\n")
	return b.String()
}
