package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

// benchOptions are the bench command's own flags.
type benchOptions struct {
	sessions    int
	steps       int
	calls       int
	changes     int
	concurrency int
	skillCount  int
	projects    int
	encoding    string
	duration    time.Duration
	timeout     time.Duration
	mode        string
	noBaseline  bool
	json        bool
	cpuprofile  string
	child       bool // hidden: run as the processor child of a bench
}

func (a *app) benchCommand() (*command, runFunc) {
	var (
		c Config
		o benchOptions
	)
	cmd := newCommand("bench", "skillstream bench [flags]", `
Measure the processor under load, next to the floor it cannot beat. bench
plays --sessions agent sessions (--concurrency at a time) through the real
wire protocol: each session appends --steps pre-steps, each followed by
--calls skill tool calls, and waits for every answer on a shared reply inbox.
--changes times during the run a skill is added to or removed from the
generated skills folder, so sessions in flight get replacement catalogs.

Two phases run on the same NATS server with the same load: the baseline, a
minimal hand-written consumer doing only the JetStream work each trigger
implies (delivery, the Direct Get reads, one append where an output is due,
one core NATS reply, the ack), then the processor. The report gives
throughput, end-to-end latency (p50/p90/p99/max), appends, conflicts,
errors, the processor's CPU and memory, and processor/baseline ratios.

By default bench starts an embedded NATS server on loopback with its store in
a temporary folder, and runs the processor in a child process so that its
CPU and memory are its own. Every phase stops by itself after --duration.
The skill flags configure the processor as they configure serve; bench adds
a generated folder of --skill-count skills in front of them.`[1:], `
  skillstream bench --user-skills-dir= --no-bundled
  skillstream bench --sessions 1000 --steps 20 --calls 1 --changes 2
  skillstream bench --sessions 100000 --steps 2 --concurrency 1000 --no-baseline
  skillstream bench --json > bench.json
  skillstream bench --cpuprofile processor.pprof && go tool pprof -top processor.pprof`[1:])
	cmd.group("Load")
	cmd.localInt(&o.sessions, "sessions", 1000, "agent sessions to play")
	cmd.localInt(&o.steps, "steps", 20, "pre-steps per session")
	cmd.localInt(&o.calls, "calls", 0, "skill tool calls after each pre-step")
	cmd.localInt(&o.changes, "changes", 0, "catalog changes during the run (each session in flight sees every one)")
	cmd.localInt(&o.concurrency, "concurrency", 0, "sessions in flight at once (default: min(sessions, 1000))")
	cmd.localInt(&o.skillCount, "skill-count", 50, "skills in the generated skills folder")
	cmd.localInt(&o.projects, "projects", 10, "project folders the sessions work in (0: sessions have no cwd)")
	cmd.localString(&o.encoding, "encoding", "msgpack", "trigger and answer `encoding`: msgpack or json")
	cmd.localDuration(&o.duration, "duration", 2*time.Minute, "cap on each phase; unfinished sessions are cut off")
	cmd.localDuration(&o.timeout, "timeout", 10*time.Second, "wait this long for an answer before publishing the trigger again (3 attempts)")
	cmd.group("Measurement")
	cmd.localString(&o.mode, "processor", benchModeChild, "where the processor runs (`mode`): child (own process, measured), inprocess, or external (already serving --nats-url, not measured; it does not know the generated skills, so use --calls 0)")
	cmd.localBool(&o.noBaseline, "no-baseline", false, "skip the baseline phase")
	cmd.localBool(&o.json, "json", false, "print the report as JSON")
	cmd.localString(&o.cpuprofile, "cpuprofile", "", "write the processor's CPU profile to `file` (this process's to file.bench)")
	cmd.fs.BoolVar(&o.child, "processor-child", false, "") // internal: not in --help
	c.skillFlags(cmd)
	c.natsFlags(cmd)
	c.streamFlags(cmd)
	c.opsFlags(cmd, false)
	// bench's own defaults for shared flags: a random loopback port, a
	// temporary store, and quiet logs.
	benchDefault(cmd, "listen", "127.0.0.1:0", &c.Listen)
	benchDefault(cmd, "data", "", &c.Data)
	cmd.fs.Lookup("data").Usage = "JetStream store `directory` of the embedded server (default: a temporary folder, removed afterwards)"
	benchDefault(cmd, "log-level", "warn", &c.LogLevel)
	// Where bench sends its load is never taken from the environment that
	// configures serve: a bench must not write into a production store or
	// cluster by accident.
	for _, name := range []string{"listen", "data", "nats-url"} {
		delete(cmd.env, name)
	}
	return cmd, func(ctx context.Context, args []string) error {
		if o.child {
			signal.Ignore(os.Interrupt) // the parent stops the child by closing its stdin
			return a.runBenchChild(ctx, os.Stdin)
		}
		if len(args) > 0 {
			return usagef("bench takes no arguments, got %q", args[0])
		}
		if err := o.validate(&c); err != nil {
			return err
		}
		ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
		return a.bench(ctx, &c, o)
	}
}

// benchDefault changes the default of a shared flag for bench.
func benchDefault(cmd *command, name, def string, p *string) {
	cmd.fs.Lookup(name).DefValue = def
	*p = def
}

func (o *benchOptions) validate(c *Config) error {
	switch {
	case o.sessions < 1:
		return usagef("--sessions %d: want at least 1", o.sessions)
	case o.steps < 1:
		return usagef("--steps %d: want at least 1", o.steps)
	case o.calls < 0:
		return usagef("--calls %d: must not be negative", o.calls)
	case o.changes < 0:
		return usagef("--changes %d: must not be negative", o.changes)
	case o.concurrency < 0:
		return usagef("--concurrency %d: must not be negative", o.concurrency)
	case o.skillCount < 1:
		return usagef("--skill-count %d: want at least 1", o.skillCount)
	case o.projects < 0:
		return usagef("--projects %d: must not be negative", o.projects)
	case o.duration <= 0:
		return usagef("--duration %v: want a positive duration", o.duration)
	case o.timeout <= 0:
		return usagef("--timeout %v: want a positive duration", o.timeout)
	}
	if o.concurrency == 0 {
		o.concurrency = min(o.sessions, 1000)
	}
	if _, err := benchEncoding(o.encoding); err != nil {
		return err
	}
	switch o.mode {
	case benchModeChild, benchModeInProcess:
	case benchModeExternal:
		if c.NATSURL == "" {
			return usagef("--processor external needs --nats-url: the processor must already serve that cluster")
		}
	default:
		return usagef("--processor %q: want child, inprocess or external", o.mode)
	}
	data := c.Data
	if data == "" {
		c.Data = "bench" // checked by validateServe; replaced by a temporary folder
	}
	noStore := c.NoSkillStore
	c.NoSkillStore = true // the bench's processor serves skill folders only
	err := c.validateServe()
	c.Data, c.NoSkillStore = data, noStore
	return err
}

func benchEncoding(s string) (events.Encoding, error) {
	switch s {
	case "msgpack":
		return events.Msgpack, nil
	case "json":
		return events.JSON, nil
	}
	return 0, usagef("--encoding %q: want msgpack or json", s)
}

// bench runs the baseline and processor phases and prints the report.
func (a *app) bench(ctx context.Context, c *Config, o benchOptions) error {
	log := c.newLogger(a.stderr)
	enc, _ := benchEncoding(o.encoding)
	runID := benchRunID()

	work, err := os.MkdirTemp("", "skillstream-bench-")
	if err != nil {
		return fmt.Errorf("bench work folder: %w", err)
	}
	defer os.RemoveAll(work)
	skillsDir, names, summaries, body, err := writeBenchSkills(work, o.skillCount)
	if err != nil {
		return err
	}
	cwds, err := writeBenchProjects(work, o.projects)
	if err != nil {
		return err
	}
	c.SkillsDirs = append([]string{skillsDir}, c.SkillsDirs...)

	// NATS: embedded on loopback unless --nats-url.
	url := c.NATSURL
	if url == "" {
		store := c.Data
		if store == "" {
			store = filepath.Join(work, "store")
		}
		srv, err := startEmbedded(embeddedOptions{name: "skillstream-bench", listen: c.Listen, storeDir: store}, log)
		if err != nil {
			return err
		}
		defer func() {
			srv.Shutdown()
			srv.WaitForShutdown()
		}()
		url = listenURL(srv)
	}
	nc, err := benchConnect(c, url, "skillstream bench load", log)
	if err != nil {
		return err
	}
	defer nc.Close()
	cl, err := newBenchClient(nc, o.timeout, 3, 2*o.concurrency+256)
	if err != nil {
		return err
	}
	defer cl.close()

	pcfg := c.processorConfig()
	report := benchReport{
		Machine: benchMachineNow(),
		Workload: benchWorkload{
			Sessions: o.sessions, Steps: o.steps, Calls: o.calls, Changes: o.changes,
			Concurrency: o.concurrency, Skills: o.skillCount, Projects: o.projects,
			Encoding: o.encoding, Processor: o.mode, Workers: pcfg.Workers,
			NATS: map[bool]string{true: "embedded, loopback", false: "--nats-url"}[c.NATSURL == ""],
		},
	}
	plan := benchPlan{
		runID: "b" + runID, sessions: o.sessions, steps: o.steps, calls: o.calls,
		concurrency: o.concurrency, enc: enc, owner: pcfg.ToolOwner, skills: names, cwds: cwds,
	}
	total := int64(o.sessions) * int64(o.steps)

	if !o.noBaseline {
		prefix := benchBaselinePrefix + "-" + runID
		spec := benchChildSpec{Role: benchRoleBaseline, Config: *c, URL: url, Baseline: &benchBaselineSpec{
			Stream: benchBaselineStream + "_" + runID, Prefix: prefix, Workers: pcfg.Workers, AckWait: pcfg.AckWait,
			Owner: pcfg.ToolOwner, Skills: summaries, Body: body, Catalog: pcfg.Catalog,
		}}
		p := plan
		p.prefix, p.markAppends = prefix, true
		ph, err := a.benchConsumerPhase(ctx, spec, cl, p, o, newBenchChanges(o.changes, total, nil), log)
		if err != nil {
			return err
		}
		report.Baseline = ph
		if ctx.Err() != nil {
			return a.printBenchReport(&report, o)
		}
	}

	p := plan
	p.prefix = pcfg.Prefix
	ph, err := a.benchConsumerPhase(ctx, benchChildSpec{Role: benchRoleProcessor, Config: *c, URL: url},
		cl, p, o, newBenchChanges(o.changes, total, toggleSkill(skillsDir)), log)
	if err != nil {
		return err
	}
	report.Processor = ph
	report.Machine.LoadAfter = loadAverage()
	report.ratios()
	if err := a.printBenchReport(&report, o); err != nil {
		return err
	}
	if n := ph.Errors; n > 0 {
		fmt.Fprintf(a.stderr, "skillstream bench: %d triggers failed; see the report\n", n)
		return errReported
	}
	return nil
}

// benchConsumerPhase starts a phase's consumer (spec.Role) where --processor
// says, plays the load against it, measures the consumer's CPU and memory
// during the load, and stops it.
func (a *app) benchConsumerPhase(ctx context.Context, spec benchChildSpec, cl *benchClient, p benchPlan, o benchOptions, changes *benchChanges, log *slog.Logger) (*benchPhaseReport, error) {
	role := spec.Role
	profile := o.cpuprofile
	if profile != "" {
		if abs, err := filepath.Abs(profile); err == nil {
			profile = abs
		}
		if role == benchRoleBaseline {
			profile += ".baseline"
		}
	}
	mode := o.mode
	if role == benchRoleBaseline && mode == benchModeExternal {
		mode = benchModeChild // the baseline is ours to run
	}
	var (
		proc benchProc
		err  error
	)
	switch {
	case mode == benchModeChild:
		spec.CPUProfile = profile
		proc, err = startBenchChild(spec, a.stderr)
	case mode == benchModeInProcess && role == benchRoleProcessor:
		proc, err = startBenchInProcess(ctx, &spec.Config, spec.URL, log)
	case mode == benchModeInProcess:
		proc, err = startBenchInProcessBaseline(ctx, &spec.Config, spec.URL, spec.Baseline, log)
	default: // an external processor
		err = waitBenchProcessor(ctx, cl.nc, time.Minute)
	}
	if err != nil {
		return nil, err
	}
	stopProfile := func() {}
	if profile != "" && (mode == benchModeChild || mode == benchModeInProcess) {
		path := profile
		if mode == benchModeChild {
			path += ".bench" // this process's share: NATS server and load generator
		}
		f, err := os.Create(path)
		if err != nil {
			_, _ = proc.stop()
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			f.Close()
			_, _ = proc.stop()
			return nil, fmt.Errorf("cpu profile: %w", err)
		}
		stopProfile = func() { pprof.StopCPUProfile(); f.Close() }
	}

	self0 := selfUsage()
	var pu0 benchUsage
	measured := false
	if proc != nil {
		pu0, measured = proc.usage()
	}
	ph := a.benchPhase(ctx, role, cl, p, o, changes)
	var pu1 benchUsage
	if measured {
		pu1, measured = proc.usage()
	}
	self1 := selfUsage()
	stopProfile()
	if measured {
		ph.setCPU(pu1.CPU - pu0.CPU)
		ph.RSSBytes, ph.PeakRSSBytes = pu1.RSS, pu1.HWM
	}
	switch mode {
	case benchModeChild:
		ph.CPUScope = role + " process (child, loopback)"
		ph.BenchCPUSeconds = (self1.CPU - self0.CPU).Seconds()
	case benchModeInProcess:
		ph.CPUScope = "whole process: NATS server, load generator and " + role
	default:
		ph.CPUScope = "not measured (external processor)"
	}
	if proc != nil {
		st, err := proc.stop()
		if err != nil {
			ph.ErrorSamples = append(ph.ErrorSamples, role+": "+err.Error())
		}
		if st.FirstError != "" {
			ph.ErrorSamples = append(ph.ErrorSamples, role+": "+st.FirstError)
		}
		ph.Conflicts = int64(st.Conflicts)
		if ph.PeakRSSBytes == 0 {
			ph.PeakRSSBytes = st.PeakRSS
		}
		if role == benchRoleProcessor {
			ph.Processor = &st
		}
	}
	return ph, nil
}

// benchPhase runs one phase's load with a progress line on stderr.
func (a *app) benchPhase(ctx context.Context, name string, cl *benchClient, p benchPlan, o benchOptions, changes *benchChanges) *benchPhaseReport {
	pctx, cancel := context.WithTimeout(ctx, o.duration)
	defer cancel()
	cnt := newBenchCounters()
	samples := newBenchSamples()
	start := time.Now()
	done := make(chan struct{})
	progressDone := make(chan struct{})
	go func() {
		defer close(progressDone)
		a.benchProgress(name, start, cnt, int64(p.sessions), done)
	}()
	runBenchLoad(pctx, cl, p, cnt, samples, changes)
	elapsed := time.Since(start)
	close(done)
	<-progressDone

	ph := &benchPhaseReport{
		Seconds:    elapsed.Seconds(),
		Complete:   cnt.sessions.Load() == int64(p.sessions),
		PreSteps:   cnt.preSteps.Load(),
		SkillCalls: cnt.calls.Load(),
		Appends:    cnt.appends.Load(),
		Errors:     cnt.errors.Load(),
		Retries:    cnt.retries.Load(),
		Outcomes:   cnt.outcomes,
		Latency:    samples.summaries(),
	}
	ph.ErrorSamples = cnt.firstErr
	if changes.err != nil {
		ph.ErrorSamples = append(ph.ErrorSamples, changes.err.Error())
	}
	secs := elapsed.Seconds()
	ph.PreStepsPerSec = float64(ph.PreSteps) / secs
	ph.SkillCallsPerSec = float64(ph.SkillCalls) / secs
	ph.AppendsPerSec = float64(ph.Appends) / secs
	return ph
}

// benchProgress prints a progress line every second until done: rewritten
// in place on a terminal, one line per second otherwise.
func (a *app) benchProgress(name string, start time.Time, cnt *benchCounters, sessions int64, done <-chan struct{}) {
	tty := isTerminal(a.stderr)
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var last int64
	for {
		select {
		case <-done:
			if tty {
				fmt.Fprint(a.stderr, "\r\x1b[K")
			}
			return
		case <-tick.C:
		}
		n := cnt.preSteps.Load()
		line := fmt.Sprintf("bench %s %5.0fs  pre-steps %d (%d/s)  skill calls %d  errors %d  sessions %d/%d",
			name, time.Since(start).Seconds(), n, n-last, cnt.calls.Load(), cnt.errors.Load(), cnt.sessions.Load(), sessions)
		last = n
		if tty {
			fmt.Fprint(a.stderr, "\r\x1b[K"+line)
		} else {
			fmt.Fprintln(a.stderr, line)
		}
	}
}

// isTerminal reports whether w is a character device.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func benchRunID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// writeBenchSkills generates n skills under work/skills and returns the
// folder, their names, their summaries and a skill body.
func writeBenchSkills(work string, n int) (string, []string, []catalog.Summary, string, error) {
	dir := filepath.Join(work, "skills")
	var names []string
	var sums []catalog.Summary
	var body string
	for i := 1; i <= n; i++ {
		name := fmt.Sprintf("bench-skill-%04d", i)
		desc := fmt.Sprintf("Use when the task involves area %d of the benchmark project: builds, tests, reviews and releases of that area.", i)
		md := benchSkillMD(name, desc)
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

// writeBenchProjects creates n project folders (each a repository root with
// one project skill) and returns their paths.
func writeBenchProjects(work string, n int) ([]string, error) {
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
		md := benchSkillMD(name, fmt.Sprintf("Conventions of project %d: layout, naming and commit style.", i))
		if err := os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte(md), 0o644); err != nil {
			return nil, fmt.Errorf("generate projects: %w", err)
		}
		cwds = append(cwds, root)
	}
	return cwds, nil
}

// benchReport is the whole result; --json prints it as is.
type benchReport struct {
	Machine   benchMachine       `json:"machine"`
	Workload  benchWorkload      `json:"workload"`
	Baseline  *benchPhaseReport  `json:"baseline,omitempty"`
	Processor *benchPhaseReport  `json:"processor"`
	Ratios    map[string]float64 `json:"ratios,omitempty"` // processor / baseline
}

type benchMachine struct {
	CPUs        int    `json:"cpus"`
	MemoryBytes int64  `json:"memory_bytes"`
	GoVersion   string `json:"go"`
	OSArch      string `json:"os_arch"`
	LoadBefore  string `json:"load_average_before"`
	LoadAfter   string `json:"load_average_after"`
}

func benchMachineNow() benchMachine {
	return benchMachine{CPUs: runtime.NumCPU(), MemoryBytes: memTotal(), GoVersion: runtime.Version(),
		OSArch: runtime.GOOS + "/" + runtime.GOARCH, LoadBefore: loadAverage()}
}

type benchWorkload struct {
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
}

// benchPhaseReport is one phase's result.
type benchPhaseReport struct {
	Seconds          float64                 `json:"seconds"`
	Complete         bool                    `json:"complete"` // every session finished before --duration
	PreSteps         int64                   `json:"pre_steps"`
	SkillCalls       int64                   `json:"skill_calls"`
	Appends          int64                   `json:"appends"`
	PreStepsPerSec   float64                 `json:"pre_steps_per_second"`
	SkillCallsPerSec float64                 `json:"skill_calls_per_second"`
	AppendsPerSec    float64                 `json:"appends_per_second"`
	Conflicts        int64                   `json:"conflicts"`
	Errors           int64                   `json:"errors"`
	Retries          int64                   `json:"retries"`
	Outcomes         map[string]int64        `json:"outcomes"`
	Latency          map[string]benchLatency `json:"latency"`
	CPUScope         string                  `json:"cpu_scope"`
	CPUSeconds       float64                 `json:"cpu_seconds"`
	CPUCores         float64                 `json:"cpu_cores"`           // CPU seconds per second of the phase
	CPUPerTriggerUS  float64                 `json:"cpu_per_trigger_us"`  // CPU per answered trigger
	BenchCPUSeconds  float64                 `json:"bench_cpu_seconds"`   // child mode: server and load generator
	RSSBytes         int64                   `json:"rss_bytes,omitempty"` // at the end of the load
	PeakRSSBytes     int64                   `json:"peak_rss_bytes,omitempty"`
	Processor        *benchProcStats         `json:"processor_metrics,omitempty"`
	ErrorSamples     []string                `json:"error_samples,omitempty"`
}

func (ph *benchPhaseReport) setCPU(d time.Duration) {
	ph.CPUSeconds = d.Seconds()
	if ph.Seconds > 0 {
		ph.CPUCores = ph.CPUSeconds / ph.Seconds
	}
	if n := ph.PreSteps + ph.SkillCalls; n > 0 {
		ph.CPUPerTriggerUS = ph.CPUSeconds / float64(n) * 1e6
	}
}

// ratios fills processor/baseline ratios of latency and throughput.
func (r *benchReport) ratios() {
	if r.Baseline == nil || r.Processor == nil {
		return
	}
	r.Ratios = map[string]float64{}
	for _, s := range benchSeries {
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
	if r.Baseline.SkillCallsPerSec > 0 {
		r.Ratios["skill_calls_per_second"] = r.Processor.SkillCallsPerSec / r.Baseline.SkillCallsPerSec
	}
}

func (a *app) printBenchReport(r *benchReport, o benchOptions) error {
	if o.json {
		return printJSON(a.stdout, r)
	}
	_, err := io.WriteString(a.stdout, formatBenchReport(r))
	return err
}
