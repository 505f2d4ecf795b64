package main

import (
	"encoding/json"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/bench"
)

// TestBenchSmoke runs a tiny bench end to end (embedded server, processor in
// process, baseline) and checks that every figure of the report was filled.
func TestBenchSmoke(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	code, stdout, stderr := runMain(t, "bench", "--processor", "inprocess",
		"--sessions", "3", "--steps", "2", "--calls", "1", "--changes", "1",
		"--skill-count", "3", "--projects", "1", "--no-bundled", "--user-skills-dir=", "--json")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	var r bench.Report
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, stdout)
	}
	if r.Baseline == nil || r.Processor == nil {
		t.Fatalf("report lacks a phase:\n%s", stdout)
	}
	for name, ph := range map[string]*bench.PhaseReport{"processor": r.Processor, "baseline": r.Baseline} {
		if !ph.Complete || ph.PreSteps != 6 || ph.SkillCalls != 6 || ph.Errors != 0 {
			t.Errorf("%s: complete %v, %d pre-steps, %d skill calls, %d errors; want all 6 + 6 answered without error (%v)",
				name, ph.Complete, ph.PreSteps, ph.SkillCalls, ph.Errors, ph.ErrorSamples)
		}
		// Every session's first pre-step appends its catalog, every skill
		// call its result.
		if ph.Appends < 3+6 {
			t.Errorf("%s: %d appends, want at least 9", name, ph.Appends)
		}
		if ph.PreStepsPerSec <= 0 || ph.SkillCallsPerSec <= 0 || ph.AppendsPerSec <= 0 || ph.Seconds <= 0 {
			t.Errorf("%s: rates not filled: %+v", name, ph)
		}
		for _, s := range []string{bench.SeriesPreStep, bench.SeriesAppended, bench.SeriesSkillCall} {
			l := ph.Latency[s]
			if l.N == 0 || l.P50 <= 0 || l.P99 < l.P50 || l.Max < l.P99 {
				t.Errorf("%s: latency %q = %+v", name, s, l)
			}
		}
		if ph.CPUSeconds <= 0 || ph.CPUScope == "" {
			t.Errorf("%s: CPU not measured: %v s (%q)", name, ph.CPUSeconds, ph.CPUScope)
		}
	}
	if got := r.Processor.Outcomes[events.OutcomeAppended]; got < 3 {
		t.Errorf("processor appended %d catalogs, want one per session at least; outcomes %v", got, r.Processor.Outcomes)
	}
	if r.Processor.Outcomes["tool ok"] != 6 {
		t.Errorf("skill calls answered ok: %d, want 6; outcomes %v", r.Processor.Outcomes["tool ok"], r.Processor.Outcomes)
	}
	if r.Processor.Processor == nil || r.Processor.Processor.Stages["total"].Count == 0 {
		t.Errorf("processor metrics not read: %+v", r.Processor.Processor)
	}
	if _, err := os.Stat("/proc/self/status"); err == nil && r.Processor.PeakRSSBytes <= 0 {
		t.Errorf("peak RSS not measured")
	}
	if r.Ratios["pre-step_p50"] <= 0 || r.Ratios["skill_call_p99"] <= 0 {
		t.Errorf("ratios missing: %v", r.Ratios)
	}
	if r.Machine.CPUs <= 0 {
		t.Errorf("machine not described: %+v", r.Machine)
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("bench left %d entries in its temporary folder", len(left))
	}
}

func TestBenchUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--sessions", "0"}, "--sessions 0: want at least 1"},
		{[]string{"--encoding", "xml"}, `--encoding "xml": want msgpack or json`},
		{[]string{"--processor", "elsewhere"}, `--processor "elsewhere": want child, inprocess or external`},
		{[]string{"--processor", "external"}, "--processor external needs --nats-url"},
		{[]string{"--duration", "0s"}, "--duration 0s: want a positive duration"},
		{[]string{"--catalog-description-max-length", "2"}, "greater than or equal to 3"},
		{[]string{"extra"}, `bench takes no arguments, got "extra"`},
	}
	for _, tt := range tests {
		code, _, stderr := runMain(t, append([]string{"bench"}, tt.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tt.want) {
			t.Errorf("bench %q: exit %d, stderr %q; want exit %d naming %q", tt.args, code, stderr, exitUsage, tt.want)
		}
	}
}

// With --gestures and --user-invocation, every other pre-step invokes a
// skill; the report compares such a pre-step with one without.
func TestBenchGestures(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	code, stdout, stderr := runMain(t, "bench", "--processor", "inprocess", "--no-baseline",
		"--sessions", "3", "--steps", "4", "--gestures", "2", "--user-invocation",
		"--skill-count", "3", "--projects", "1", "--no-bundled", "--user-skills-dir=")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"invocation 6", "pre-step unchanged + invocation p50", "user invocation: an unchanged pre-step with one invocation took p50 "} {
		if !strings.Contains(stdout, want) {
			t.Errorf("report lacks %q:\n%s", want, stdout)
		}
	}
}

// TestBenchSearches: --searches plays skill searches after each step's
// calls against a processor it turns search on for, and the baseline; the
// report counts them, times them as their own series and rates them
// against the baseline.
func TestBenchSearches(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	code, stdout, stderr := runMain(t, "bench", "--processor", "inprocess",
		"--sessions", "3", "--steps", "2", "--calls", "1", "--searches", "2",
		"--skill-count", "12", "--projects", "1", "--no-bundled", "--user-skills-dir=", "--json")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	var r bench.Report
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, stdout)
	}
	if r.Workload.Searches != 2 || r.Baseline == nil || r.Processor == nil {
		t.Fatalf("workload %+v, phases %v %v", r.Workload, r.Baseline != nil, r.Processor != nil)
	}
	for name, ph := range map[string]*bench.PhaseReport{"processor": r.Processor, "baseline": r.Baseline} {
		if !ph.Complete || ph.Searches != 12 || ph.SkillCalls != 6 || ph.Errors != 0 || ph.SearchesPerSec <= 0 {
			t.Errorf("%s: complete %v, %d searches, %d calls, %d errors, %v searches/s (%v)",
				name, ph.Complete, ph.Searches, ph.SkillCalls, ph.Errors, ph.SearchesPerSec, ph.ErrorSamples)
		}
		if l := ph.Latency[bench.SeriesSkillSearch]; l.N != 12 || l.P50 <= 0 || l.P99 < l.P50 {
			t.Errorf("%s: search latency %+v", name, l)
		}
	}
	if n := r.Processor.Outcomes["search found"] + r.Processor.Outcomes["search nothing"]; n != 12 || r.Processor.Outcomes["search found"] == 0 {
		t.Errorf("search outcomes %v", r.Processor.Outcomes)
	}
	if r.Ratios["skill_search_p50"] <= 0 || r.Ratios["skill_searches_per_second"] <= 0 {
		t.Errorf("search ratios missing: %v", r.Ratios)
	}
	code, _, stderr = runMain(t, "bench", "--searches", "-1")
	if code != exitUsage || !strings.Contains(stderr, "--searches -1: must not be negative") {
		t.Errorf("--searches -1: exit %d, %s", code, stderr)
	}
}

// TestBenchScale runs the scale check end to end at a small size: skills
// push and serve run as child processes (this test binary, running the
// program: see TestMain), and every figure of the report is filled and
// every count is right. Timings are not judged.
func TestBenchScale(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Setenv(benchExecMain, "1")
	t.Setenv("SKILLSTREAM_NO_SKILL_STORE", "true") // the children are configured by their flags alone
	code, stdout, stderr := runMain(t, "bench", "--scale", "200", "--skill-count", "20", "--json")
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	var r bench.ScaleReport
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, stdout)
	}
	if len(r.Runs) != 2 || r.Runs[0].Skills != 200 || r.Runs[1].Skills != 20 {
		t.Fatalf("runs: %+v", r.Runs)
	}
	if r.FreshSessions <= 0 || r.Samples <= 0 || r.Encoding != "msgpack" || r.Machine.CPUs <= 0 {
		t.Errorf("report header: %d fresh sessions, %d samples, encoding %q, machine %+v", r.FreshSessions, r.Samples, r.Encoding, r.Machine)
	}
	linux := false
	if _, err := os.Stat("/proc/self/status"); err == nil {
		linux = true
	}
	for _, run := range r.Runs {
		n := run.Skills
		if len(run.Errors) > 0 {
			t.Errorf("%d skills: errors %q", n, run.Errors)
		}
		if run.Push.Added != n || run.Push.Revision < uint64(n) || run.Push.Seconds <= 0 {
			t.Errorf("%d skills: push %+v", n, run.Push)
		}
		m := run.Member
		if m.ReadySeconds <= 0 || m.FirstAnswerSeconds < m.ReadySeconds || m.FirstCatalogUS <= 0 || !m.Readyz || m.CPUSeconds <= 0 {
			t.Errorf("%d skills: member %+v", n, m)
		}
		if linux && (m.PeakRSSBytes <= 0 || run.Push.PeakRSSBytes <= 0 || m.SettledSeconds < m.FirstAnswerSeconds) {
			t.Errorf("%d skills: memory or settling not measured: member %+v, push %+v", n, m, run.Push)
		}
		if c := run.Catalog; c.Listed+c.Omitted != n || c.Listed == 0 || c.TextBytes == 0 || c.Latency.N != r.FreshSessions {
			t.Errorf("%d skills: catalog %+v", n, c)
		}
		if l := run.UnchangedEarly; l.N == 0 || l.P50 <= 0 || l.Max < l.P50 {
			t.Errorf("%d skills: unchanged pre-steps from the first answer %+v", n, l)
		}
		for name, l := range map[string]bench.Latency{"unchanged": run.Unchanged, "skill call": run.SkillCall} {
			if l.N != r.Samples || l.P50 <= 0 || l.Max < l.P50 {
				t.Errorf("%d skills: %s latency %+v", n, name, l)
			}
		}
		if run.MCP.Resources != n || run.MCP.Pages < 1 || run.MCP.ListUS <= 0 || run.MCP.ConnectUS <= 0 {
			t.Errorf("%d skills: MCP %+v", n, run.MCP)
		}
	}
	if r.Ratios["unchanged_p50"] <= 0 || r.Ratios["unchanged_early_p50"] <= 0 || r.Ratios["skill_call_p50"] <= 0 || r.GoalUnchanged != bench.ScaleGoalUnchanged {
		t.Errorf("ratios %v, goal %v", r.Ratios, r.GoalUnchanged)
	}
	table := bench.FormatScale(&r)
	for _, want := range []string{"200 skills", "20 skills", "push (skills push, wall)", "member start → first pre-step answered",
		"unchanged pre-step p50", "skill call p50", "MCP resources/list, every page", "member peak RSS", "unchanged pre-step p50 at 200 skills: ",
		"unchanged p50, from the first answer", "unchanged pre-step p50 at 200 skills from the member's first answer, while it checks the store: "} {
		if !strings.Contains(table, want) {
			t.Errorf("table lacks %q:\n%s", want, table)
		}
	}
	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("bench --scale left %d entries in its temporary folder", len(left))
	}
}

func TestBenchScaleUsageErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--scale", "-5"}, "--scale -5: want at least 1 skill (0: off)"},
		{[]string{"--scale", "many"}, `invalid value "many" for flag -scale`},
		{[]string{"--scale", "100", "--sessions", "10", "--processor", "inprocess"}, "--processor, --sessions: not used with --scale"},
		{[]string{"--scale", "100", "--nats-url", "nats://127.0.0.1:4222"}, "--nats-url: not used with --scale"},
		{[]string{"--scale", "100", "--skills-dir", "/tmp"}, "--skills-dir: not used with --scale"},
		{[]string{"--scale", "100", "--skill-count", "0"}, "--skill-count 0: want at least 1"},
		{[]string{"--scale", "100", "--encoding", "xml"}, `--encoding "xml": want msgpack or json`},
		{[]string{"--scale", "100", "--catalog-max-length", "5"}, "--catalog-max-length 5: must be 0 or at least"},
	}
	for _, tt := range tests {
		code, _, stderr := runMain(t, append([]string{"bench"}, tt.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tt.want) {
			t.Errorf("bench %q: exit %d, stderr %q; want exit %d naming %q", tt.args, code, stderr, exitUsage, tt.want)
		}
	}
}

// The member takes bench's serve settings that are not their defaults,
// and never those the scale check sets itself or has no use for.
func TestBenchScaleMemberFlags(t *testing.T) {
	a := &app{stdout: io.Discard, stderr: io.Discard, lookupEnv: envMap(map[string]string{"SKILLSTREAM_WORKERS": "7"})}
	cmd, _ := a.benchCommand()
	if _, err := cmd.parse([]string{"--scale", "10", "--skill-search", "--catalog-listed-max", "40",
		"--log-level", "debug", "--user-skills-dir=/x", "--listen", "127.0.0.1:0"}, a.lookupEnv); err != nil {
		t.Fatal(err)
	}
	serve, _ := a.serveCommand()
	got := strings.Join(scaleMemberFlags(cmd, serve.fs), " ")
	if want := "--skill-search=true --catalog-listed-max=40 --workers=7"; got != want {
		t.Errorf("member flags %q, want %q", got, want)
	}
}

// benchReport runs bench with args and --json, and returns its report
// and what it printed.
func benchReport(t *testing.T, args []string) (bench.Report, string) {
	t.Helper()
	code, stdout, stderr := runMain(t, append(args, "--json")...)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	var r bench.Report
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, stdout)
	}
	return r, stdout
}

// TestBenchUsageProjectionCost plays the same load without and then with
// the usage projector in one run and sets them side by side.
func TestBenchUsageProjectionCost(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	args := []string{"bench", "--processor", "inprocess", "--sessions", "3", "--steps", "2", "--calls", "1",
		"--skill-count", "3", "--projects", "1", "--no-bundled", "--user-skills-dir=", "--usage-projection-cost", "--rounds", "2"}
	r, stdout := benchReport(t, args)
	if r.Compared != bench.ComparedProjection || r.Baseline == nil || r.Processor == nil {
		t.Fatalf("not a comparison of the projector: compared %q\n%s", r.Compared, stdout)
	}
	for name, ph := range map[string]*bench.PhaseReport{"with": r.Processor, "without": r.Baseline} {
		if !ph.Complete || ph.PreSteps != 12 || ph.SkillCalls != 12 || ph.Errors != 0 { // two rounds of 6
			t.Errorf("%s the projector: complete %v, %d pre-steps, %d calls, %d errors (%v)", name, ph.Complete, ph.PreSteps, ph.SkillCalls, ph.Errors, ph.ErrorSamples)
		}
	}
	if r.Ratios["pre_steps_per_second"] <= 0 {
		t.Errorf("ratios missing: %v", r.Ratios)
	}
	// The rounds alternate which phase goes first.
	if len(r.Rounds) != 2 || r.Rounds[0].First != "without" || r.Rounds[1].First != "with" ||
		r.Rounds[0].CPUPerTrigger <= 0 || r.Rounds[1].PreStepsPerSec <= 0 {
		t.Errorf("rounds %+v", r.Rounds)
	}
	code, stdout, _ := runMain(t, args...)
	if code != exitOK || !strings.Contains(stdout, "with projector") || !strings.Contains(stdout, "with/without") ||
		!strings.Contains(stdout, "2 rounds, the order alternating") ||
		!strings.Contains(stdout, "CPU per trigger with the usage projector ≤ 1.05× without (2 rounds summed)") {
		t.Errorf("exit %d, table:\n%s", code, stdout)
	}
	for _, bad := range [][]string{{"--usage-projection"}, {"--processor", "external", "--nats-url", "nats://127.0.0.1:1"}, {"--rounds", "0"}} {
		code, _, stderr := runMain(t, append(append([]string{}, args...), bad...)...)
		if code != exitUsage || !strings.Contains(stderr, bad[0]) {
			t.Errorf("%v: exit %d, %s", bad, code, stderr)
		}
	}
}

// TestBenchUsageProjectorApart: with --projector-apart the phases with the
// projector run it as a process of its own beside the processor child,
// whose CPU is measured apart; the report gives it per trigger and the
// ratio of the same phases' CPU with it and without it. The flag needs
// --usage-projection-cost and processes to measure.
func TestBenchUsageProjectorApart(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	t.Setenv(benchExecMain, "1") // the children are this test binary running the program
	args := []string{"bench", "--processor", "child", "--sessions", "40", "--steps", "3", "--calls", "1",
		"--skill-count", "3", "--projects", "1", "--no-bundled", "--user-skills-dir=", "--usage-projection-cost", "--rounds", "2", "--projector-apart"}
	r, stdout := benchReport(t, args)
	if r.Compared != bench.ComparedProjection || r.Baseline == nil || r.Processor == nil || len(r.Rounds) != 2 {
		t.Fatalf("not a comparison of the projector in two rounds:\n%s", stdout)
	}
	for name, ph := range map[string]*bench.PhaseReport{"with": r.Processor, "without": r.Baseline} {
		if !ph.Complete || ph.PreSteps != 240 || ph.Errors != 0 || len(ph.ErrorSamples) > 0 {
			t.Errorf("%s the projector: complete %v, %d pre-steps, %d errors %v", name, ph.Complete, ph.PreSteps, ph.Errors, ph.ErrorSamples)
		}
	}
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("no /proc: processes' CPU not measured here")
	}
	// The projector process did the work of the load (it caught up before
	// it was measured), so its CPU is there; the processor's is its own.
	p := r.Processor
	if p.ProjectorCPUSeconds <= 0 || p.ProjectorCPUPerTriggerUS <= 0 || p.CPUSeconds <= 0 {
		t.Fatalf("projector CPU %vs (%vµs a trigger), processor %vs", p.ProjectorCPUSeconds, p.ProjectorCPUPerTriggerUS, p.CPUSeconds)
	}
	if r.Baseline.ProjectorCPUSeconds != 0 {
		t.Errorf("the phases without the projector ran one: %vs", r.Baseline.ProjectorCPUSeconds)
	}
	want := (p.CPUSeconds + p.ProjectorCPUSeconds) / p.CPUSeconds
	if got := r.Ratios["cpu_with_projector_apart"]; got != want {
		t.Errorf("ratio with the projector apart %v, want %v", got, want)
	}
	code, stdout, _ := runMain(t, args...)
	for _, s := range []string{"projector apart, per trigger", "usage projector apart: its own process",
		"CPU per trigger with the usage projector (apart, the same phases' processor and projector) ≤ 1.05× without (2 rounds summed)",
		"(processor+projector)/processor"} {
		if code != exitOK || !strings.Contains(stdout, s) {
			t.Errorf("exit %d, no %q in:\n%s", code, s, stdout)
		}
	}
	for _, bad := range []struct{ drop, add, want string }{
		{"--usage-projection-cost", "", "--projector-apart goes with --usage-projection-cost"},
		{"", "--processor=inprocess", "--projector-apart measures processes"},
	} {
		var a []string
		for _, s := range args {
			if s != bad.drop {
				a = append(a, s)
			}
		}
		if bad.add != "" {
			a = append(a, bad.add)
		}
		code, _, stderr := runMain(t, a...)
		if code != exitUsage || !strings.Contains(stderr, bad.want) {
			t.Errorf("%v: exit %d, %s", a, code, stderr)
		}
	}
}

// TestBenchPartitions: bench --partitions 4 maps the sessions on its
// embedded server, runs a processor per partition, answers every trigger,
// and reports each partition's stream's triggers (in JSON and per second
// in the text).
func TestBenchPartitions(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	args := []string{"bench", "--processor", "inprocess", "--no-baseline", "--partitions", "4",
		"--sessions", "8", "--steps", "2", "--calls", "1", "--skill-count", "3", "--projects", "1", "--no-bundled", "--user-skills-dir="}
	code, stdout, stderr := runMain(t, append(args, "--json")...)
	if code != exitOK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	var r bench.Report
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatalf("report is not JSON: %v\n%s", err, stdout)
	}
	if r.Workload.Partitions != 4 || r.Processor == nil || r.Processor.Errors != 0 || r.Processor.PreSteps != 16 || r.Processor.Processor == nil {
		t.Fatalf("report: %+v", r)
	}
	var sum float64
	for k := range 4 {
		n := r.Processor.Processor.PartitionTriggers[strconv.Itoa(k)]
		if n == 0 {
			t.Errorf("partition %d handled no trigger: %v", k, r.Processor.Processor.PartitionTriggers)
		}
		sum += n
	}
	if sum != 32 {
		t.Errorf("partitions handled %v triggers in all, want 32: %v", sum, r.Processor.Processor.PartitionTriggers)
	}
	code, stdout, stderr = runMain(t, args...)
	if code != exitOK || !strings.Contains(stdout, "sessions spread over 4 partition streams") || !strings.Contains(stdout, "processor triggers per partition's stream: 0 ") {
		t.Errorf("exit %d, text report without the partitions:\n%s\n%s", code, stdout, stderr)
	}
}
