package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/bench"
	"github.com/skillstream/skillstream/processor/embedded"
	"github.com/skillstream/skillstream/processor/usage/projection"
)

// benchOptions are the bench command's own flags.
type benchOptions struct {
	sessions    int
	steps       int
	calls       int
	searches    int
	changes     int
	concurrency int
	skillCount  int
	projects    int
	gestures    int
	encoding    string
	duration    time.Duration
	timeout     time.Duration
	mode        string
	noBaseline  bool
	// usageProjection runs the usage projector beside the processor (by
	// default, as serve does; noUsageProjection leaves it out);
	// projectionCost plays the processor phase without it and with it,
	// rounds times each, alternating which goes first.
	usageProjection   bool
	noUsageProjection bool
	projectionGiven   bool // either flag given
	projectionCost    bool
	rounds            int
	// projectorApart runs the projector of the phases with it in a child
	// of its own, its CPU measured apart from the processor's.
	projectorApart bool
	json           bool
	cpuprofile     string
	child          bool // hidden: run as the processor child of a bench
	// scale, when not 0, runs the scale check (benchscale.go) instead of
	// the load phases, at scale skills against skillCount; memberFlags
	// are the serve flags its members take from bench's configuration.
	scale       int
	memberFlags []string
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
--calls skill tool calls and --searches skill searches, and waits for every
answer on a shared reply inbox. --searches turns --skill-search on: the
sessions' tool view then holds the skill_search tool, and the report times
a search's round trip beside a skill call's.
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
a generated folder of --skill-count skills in front of them.

--scale N checks a fleet's skill count instead of running the load phases.
For N skills, then for --skill-count skills, each on an embedded server of
its own: skills push publishes that many generated skills to the skill
store (its own process: wall time and peak memory); a serve member starts
on the store alone (no bundled or user skills, its own process, with its
metrics and MCP listeners and an MCP token), and bench times its start until
it serves and answers a first pre-step, waits until its background check of
the store's objects is done (its CPU quiet), then times the first pre-step
of 20 new sessions (the catalog appended), 200 unchanged pre-steps and 200
skill calls of one session, one at a time, and an MCP host's resources/list
of every skill through the official Go SDK; its peak memory is over its
whole life. The report compares the two sizes, the unchanged pre-step with
its goal of at most 1.25 times the small store's p50. The member takes
bench's other serve settings (catalog limits, --skill-search, stream and
consumer, --workers).`[1:], `
  skillstream bench --user-skills-dir= --no-bundled
  skillstream bench --sessions 1000 --steps 20 --calls 1 --changes 2
  skillstream bench --sessions 1000 --steps 10 --calls 1 --searches 1 --skill-count 500
  skillstream bench --sessions 100000 --steps 2 --concurrency 1000 --no-baseline
  skillstream bench --json > bench.json
  skillstream bench --scale 10000
  skillstream bench --cpuprofile processor.pprof && go tool pprof -top processor.pprof`[1:])
	cmd.group("Load")
	cmd.localInt(&o.sessions, "sessions", 1000, "agent sessions to play")
	cmd.localInt(&o.steps, "steps", 20, "pre-steps per session")
	cmd.localInt(&o.calls, "calls", 0, "skill tool calls after each pre-step")
	cmd.localInt(&o.searches, "searches", 0, "skill searches after each pre-step's calls, each for one area of the generated skills (one in ten matching nothing); turns --skill-search on")
	cmd.cfgBool(&c.SearchLearn, "search-learn", false, "with --searches, the processor's search index learns from the bench's searches followed by loads, as serve --search-learn")
	cmd.localInt(&o.changes, "changes", 0, "catalog changes during the run (each session in flight sees every one)")
	cmd.localInt(&o.concurrency, "concurrency", 0, "sessions in flight at once (default: min(sessions, 1000))")
	cmd.localInt(&o.skillCount, "skill-count", 50, "skills in the generated skills folder (with --scale: in the reference store)")
	cmd.localInt(&o.projects, "projects", 10, "project folders the sessions work in (0: sessions have no cwd)")
	cmd.localInt(&o.gestures, "gestures", 0, "every `N`th pre-step carries a user's message invoking a skill by /name (0: none; invokes with --user-invocation), and the report compares it with a pre-step without")
	cmd.localString(&o.encoding, "encoding", "msgpack", "trigger and answer `encoding`: msgpack or json")
	cmd.localDuration(&o.duration, "duration", 2*time.Minute, "cap on each phase; unfinished sessions are cut off")
	cmd.localDuration(&o.timeout, "timeout", 10*time.Second, "wait this long for an answer before publishing the trigger again (3 attempts)")
	cmd.group("Measurement")
	cmd.localString(&o.mode, "processor", bench.ModeChild, "where the processor runs (`mode`): child (own process, measured), inprocess, or external (already serving --nats-url, not measured; it does not know the generated skills, so use --calls 0)")
	cmd.localBool(&o.noBaseline, "no-baseline", false, "skip the baseline phase")
	cmd.localBool(&o.usageProjection, "usage-projection", true, "run the usage projector beside the processor, as serve does by default (its cost counts in the processor's CPU)")
	cmd.localBool(&o.noUsageProjection, "no-usage-projection", false, "run the processor without the usage projector, as serve --no-usage-projection")
	cmd.localBool(&o.projectionCost, "usage-projection-cost", false, "measure the usage projector's cost in one run: the processor phase without it and the same load with it (starting at that phase's records), --rounds times each, side by side with their ratio, instead of the baseline")
	cmd.localBool(&o.projectorApart, "projector-apart", false, "with --usage-projection-cost: run the projector of the phases with it in a process of its own beside the processor (which then runs without it), and measure its CPU there, from the load's start until it has applied the load's records: the processor's CPU per trigger varies more from phase to phase than the projector costs")
	cmd.localInt(&o.rounds, "rounds", 4, "with --usage-projection-cost: play the pair of phases `N` times, alternating which goes first, and compare their sums (a later phase runs on a longer stream: one pair alone measures the order as much as the projector)")
	cmd.localBool(&o.json, "json", false, "print the report as JSON")
	cmd.localString(&o.cpuprofile, "cpuprofile", "", "write the processor's CPU profile to `file` (this process's to file.bench)")
	cmd.group("Fleet scale")
	cmd.localInt(&o.scale, "scale", 0, "instead of the load phases, check a fleet's skill count: push `N` generated skills to a skill store, start a serve member on it, and time its start, a new session's catalog, unchanged pre-steps, skill calls and an MCP host's resources/list, and its memory, against --skill-count skills in the same run (0: off)")
	cmd.fs.BoolVar(&o.child, "processor-child", false, "") // internal: not in --help
	c.skillFlags(cmd)
	c.natsFlags(cmd)
	c.streamFlags(cmd)
	c.partitionsFlag(cmd)
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
		if o.scale != 0 {
			serve, _ := a.serveCommand()
			if err := o.validateScale(&c, cmd, serve.fs); err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
			defer stop()
			return a.benchScale(ctx, &c, o)
		}
		cmd.fs.Visit(func(f *flag.Flag) {
			o.projectionGiven = o.projectionGiven || f.Name == "usage-projection" || f.Name == "no-usage-projection"
		})
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
	case o.searches < 0:
		return usagef("--searches %d: must not be negative", o.searches)
	case o.changes < 0:
		return usagef("--changes %d: must not be negative", o.changes)
	case o.concurrency < 0:
		return usagef("--concurrency %d: must not be negative", o.concurrency)
	case o.skillCount < 1:
		return usagef("--skill-count %d: want at least 1", o.skillCount)
	case o.projects < 0:
		return usagef("--projects %d: must not be negative", o.projects)
	case o.gestures < 0:
		return usagef("--gestures %d: must not be negative", o.gestures)
	case o.duration <= 0:
		return usagef("--duration %v: want a positive duration", o.duration)
	case o.timeout <= 0:
		return usagef("--timeout %v: want a positive duration", o.timeout)
	}
	if o.concurrency == 0 {
		o.concurrency = min(o.sessions, 1000)
	}
	if o.searches > 0 {
		c.SkillSearch = true // a search workload needs a processor that searches
	}
	c.UsageProjection = o.usageProjection && !o.noUsageProjection
	if o.projectionCost {
		switch {
		case o.projectionGiven:
			return usagef("--usage-projection-cost runs the projector in its second phase only: drop --usage-projection and --no-usage-projection")
		case o.mode == bench.ModeExternal:
			return usagef("--usage-projection-cost needs a processor bench runs (--processor child or inprocess)")
		}
		if c.Partitions > 1 {
			return usagef("--usage-projection-cost measures one stream's projector: drop --partitions")
		}
		c.UsageProjection = false // each pair of phases sets it
		if o.rounds < 1 {
			return usagef("--rounds %d: want at least 1", o.rounds)
		}
		if o.projectorApart && o.mode != bench.ModeChild {
			return usagef("--projector-apart measures processes: it needs --processor child")
		}
		o.noBaseline = true
	} else if o.projectorApart {
		return usagef("--projector-apart goes with --usage-projection-cost")
	}
	if _, err := benchEncoding(o.encoding); err != nil {
		return err
	}
	switch o.mode {
	case bench.ModeChild, bench.ModeInProcess:
	case bench.ModeExternal:
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
	skillsDir, names, summaries, body, err := bench.WriteSkills(work, o.skillCount)
	if err != nil {
		return err
	}
	cwds, err := bench.WriteProjects(work, o.projects)
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
		srv, err := embedded.Start(embedded.Options{Name: "skillstream-bench", Listen: c.Listen, StoreDir: store, Mappings: c.partitionMappings()}, log)
		if err != nil {
			return err
		}
		defer func() {
			srv.Shutdown()
			srv.WaitForShutdown()
		}()
		url = embedded.URL(srv)
	}
	nc, err := benchConnect(c, url, "skillstream bench load", log)
	if err != nil {
		return err
	}
	defer nc.Close()

	pcfg := c.processorConfig()
	report := bench.Report{
		Machine: bench.MachineNow(),
		Workload: bench.Workload{
			Sessions: o.sessions, Steps: o.steps, Calls: o.calls, Searches: o.searches, Changes: o.changes,
			Concurrency: o.concurrency, Skills: o.skillCount, Projects: o.projects,
			Encoding: o.encoding, Processor: o.mode, Workers: pcfg.Workers, Gestures: o.gestures,
			NATS:       map[bool]string{true: "embedded, loopback", false: "--nats-url"}[c.NATSURL == ""],
			Partitions: c.Partitions,
		},
	}
	plan := bench.Plan{
		RunID: "b" + runID, Sessions: o.sessions, Steps: o.steps, Calls: o.calls,
		Searches: o.searches, Queries: bench.Queries(o.skillCount),
		Concurrency: o.concurrency, Enc: enc, Owner: pcfg.ToolOwner, Skills: names, Cwds: cwds,
		Timeout: o.timeout, Tries: 3, Gestures: o.gestures,
	}
	total := int64(o.sessions) * int64(o.steps)

	if !o.noBaseline {
		prefix := bench.BaselinePrefix + "-" + runID
		spec := benchChildSpec{Role: bench.RoleBaseline, Config: *c, URL: url, Baseline: &bench.BaselineSpec{
			Stream: bench.BaselineStream + "_" + runID, Prefix: prefix, Workers: pcfg.Workers, AckWait: pcfg.AckWait,
			Owner: pcfg.ToolOwner, Skills: summaries, Body: body, Catalog: pcfg.Catalog,
		}}
		p := plan
		p.Prefix, p.MarkAppends = prefix, true
		ph, err := a.benchConsumerPhase(ctx, spec, nc, p, o, bench.NewChanges(o.changes, total, nil), log)
		if err != nil {
			return err
		}
		report.Baseline = ph
		if ctx.Err() != nil {
			return a.printBenchReport(&report, o)
		}
	}

	p := plan
	p.Prefix = pcfg.Prefix
	var ph *bench.PhaseReport
	if o.projectionCost {
		if ph, err = a.benchProjectionCost(ctx, &report, nc, c, url, p, o, total, skillsDir, log); err != nil {
			return err
		}
		if ctx.Err() != nil {
			return a.printBenchReport(&report, o)
		}
	} else {
		ph, err = a.benchConsumerPhase(ctx, benchChildSpec{Role: bench.RoleProcessor, Config: *c, URL: url},
			nc, p, o, bench.NewChanges(o.changes, total, bench.ToggleSkill(skillsDir)), log)
		if err != nil {
			return err
		}
		report.Processor = ph
	}
	report.Machine.LoadAfter = bench.LoadAverage()
	report.ComputeRatios()
	if err := a.printBenchReport(&report, o); err != nil {
		return err
	}
	if n := ph.Errors; n > 0 {
		fmt.Fprintf(a.stderr, "skillstream bench: %d triggers failed; see the report\n", n)
		return errReported
	}
	return nil
}

// benchProjectionCost plays the processor phase o.rounds times without
// the usage projector and as many times with it, the order alternating
// from one round to the next (without first, then with first, ...): a
// later phase runs on a longer stream and a warmer server, which alone
// makes a second phase cost some percent more than the first. Each phase
// with the projector starts it at that phase's records. The report's
// columns sum the rounds, and each round is listed; the merged phase
// with the projector is returned.
func (a *app) benchProjectionCost(ctx context.Context, report *bench.Report, nc *nats.Conn, c *Config, url string, p bench.Plan,
	o benchOptions, total int64, skillsDir string, log *slog.Logger) (*bench.PhaseReport, error) {
	report.Compared = bench.ComparedProjection
	var without, with []*bench.PhaseReport
	played := 0
	for i := 0; i < o.rounds && ctx.Err() == nil; i++ {
		withoutFirst := i%2 == 0
		var pair [2]*bench.PhaseReport // without, with
		for _, on := range []bool{!withoutFirst, withoutFirst} {
			side, name := 0, "without"
			if on {
				side, name = 1, "with"
			}
			if played > 0 {
				if err := benchResetStream(ctx, nc, c.Stream); err != nil {
					return nil, err
				}
			}
			cfg := *c
			cfg.UsageProjection = on
			var apart *benchChildSpec
			if on && o.projectorApart { // the processor without it, the projector beside it
				apart = &benchChildSpec{Role: bench.RoleProjector, Config: cfg, URL: url}
				cfg.UsageProjection = false
			}
			pr := p
			pr.RunID = fmt.Sprintf("%s%s%d", p.RunID, name, i)
			if on {
				if err := startProjectionNow(ctx, nc, c); err != nil {
					return nil, err
				}
			}
			po := o
			if o.cpuprofile != "" { // a profile per phase: file.without1, file.with1, ...
				po.cpuprofile = fmt.Sprintf("%s.%s%d", o.cpuprofile, name, i+1)
			}
			ph, err := a.benchConsumerPhase(ctx, benchChildSpec{Role: bench.RoleProcessor, Config: cfg, URL: url, Projector: apart},
				nc, pr, po, bench.NewChanges(o.changes, total, bench.ToggleSkill(skillsDir)), log)
			if err != nil {
				return nil, err
			}
			pair[side] = ph
			played++
			if ctx.Err() != nil {
				break
			}
		}
		if pair[0] != nil {
			without = append(without, pair[0])
		}
		if pair[1] != nil {
			with = append(with, pair[1])
		}
		if pair[0] != nil && pair[1] != nil {
			report.Rounds = append(report.Rounds, bench.NewRound(withoutFirst, pair[0], pair[1]))
		}
	}
	report.Baseline, report.Processor = bench.MergePhases(without), bench.MergePhases(with)
	if len(report.Rounds) < 2 {
		report.Rounds = nil
	}
	if report.Processor == nil { // interrupted before a phase with the projector
		report.Processor, report.Baseline, report.Compared = report.Baseline, nil, ""
	}
	if report.Processor == nil {
		return nil, ctx.Err()
	}
	return report.Processor, nil
}

// benchResetStream empties stream name between two phases and deletes
// its consumers (each phase's processor creates its own again), so that
// every phase starts where the first did: on an empty stream, with no
// consumer of an earlier phase left for the server to keep up to date.
func benchResetStream(ctx context.Context, nc *nats.Conn, name string) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	st, err := js.Stream(ctx, name)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("stream %s: %w", name, err)
	}
	names := st.ConsumerNames(ctx)
	var cons []string
	for n := range names.Name() {
		cons = append(cons, n)
	}
	if err := names.Err(); err != nil {
		return fmt.Errorf("stream %s: list consumers: %w", name, err)
	}
	for _, n := range cons {
		if err := st.DeleteConsumer(ctx, n); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
			return fmt.Errorf("stream %s: delete consumer %s: %w", name, n, err)
		}
	}
	if err := st.Purge(ctx); err != nil {
		return fmt.Errorf("stream %s: purge: %w", name, err)
	}
	return nil
}

// startProjectionNow starts the usage projection of c's stream at the
// present (a new generation with nothing counted), so that a projector
// started next counts only the records appended after it.
func startProjectionNow(ctx context.Context, nc *nats.Conn, c *Config) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	if _, err := projection.Rebuild(ctx, js, c.usageOptions(), time.Now(), nil); err != nil {
		return fmt.Errorf("start the usage projection: %w", err)
	}
	return nil
}

// benchConsumerPhase runs one phase with its consumer (spec.Role) where
// --processor says, and the usage projector apart when spec.Projector
// says so.
func (a *app) benchConsumerPhase(ctx context.Context, spec benchChildSpec, nc *nats.Conn, p bench.Plan, o benchOptions, changes *bench.Changes, log *slog.Logger) (*bench.PhaseReport, error) {
	c := bench.Consumer{Role: spec.Role, Mode: o.mode, CPUProfile: o.cpuprofile}
	if c.CPUProfile != "" {
		if abs, err := filepath.Abs(c.CPUProfile); err == nil {
			c.CPUProfile = abs
		}
		if c.Role == bench.RoleBaseline {
			c.CPUProfile += ".baseline"
		}
	}
	if c.Role == bench.RoleBaseline && c.Mode == bench.ModeExternal {
		c.Mode = bench.ModeChild // the baseline is ours to run
	}
	c.Child = func() (bench.Proc, error) {
		spec.CPUProfile = c.CPUProfile
		return bench.StartChild(spec, spec.Role, a.stderr)
	}
	c.InProcess = func() (bench.Proc, error) {
		if c.Role == bench.RoleProcessor {
			return startBenchInProcess(ctx, &spec.Config, spec.URL, log)
		}
		return startBenchBaseline(ctx, &spec.Config, spec.URL, spec.Baseline, log)
	}
	if apart := spec.Projector; apart != nil {
		c.Projector = func() (bench.Proc, error) {
			spec := *apart
			if c.CPUProfile != "" {
				spec.CPUProfile = c.CPUProfile + ".projector"
			}
			return bench.StartChild(spec, bench.RoleProjector, a.stderr)
		}
		c.Settle = func(ctx context.Context) error { return settleProjection(ctx, nc, &apart.Config) }
	}
	return a.benchPhase(ctx, nc, c, p, o, changes)
}

// benchPhase runs one phase's load with a progress line on stderr.
func (a *app) benchPhase(ctx context.Context, nc *nats.Conn, c bench.Consumer, p bench.Plan, o benchOptions, changes *bench.Changes) (*bench.PhaseReport, error) {
	tty := isTerminal(a.stderr)
	var last int64
	ph, err := bench.Measure(ctx, nc, c, p, o.duration, changes, func(pr bench.Progress) {
		line := fmt.Sprintf("bench %s %5.0fs  pre-steps %d (%d/s)  skill calls %d  searches %d  errors %d  sessions %d/%d",
			c.Role, pr.Elapsed.Seconds(), pr.PreSteps, pr.PreSteps-last, pr.SkillCalls, pr.Searches, pr.Errors, pr.Sessions, pr.Of)
		last = pr.PreSteps
		if tty {
			fmt.Fprint(a.stderr, "\r\x1b[K"+line)
		} else {
			fmt.Fprintln(a.stderr, line)
		}
	})
	if tty {
		fmt.Fprint(a.stderr, "\r\x1b[K")
	}
	return ph, err
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

func (a *app) printBenchReport(r *bench.Report, o benchOptions) error {
	if o.json {
		return printJSON(a.stdout, r)
	}
	_, err := io.WriteString(a.stdout, bench.FormatReport(r))
	return err
}
