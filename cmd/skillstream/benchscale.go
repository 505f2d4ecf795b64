package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
	"github.com/skillstream/skillstream/processor/bench"
	"github.com/skillstream/skillstream/processor/embedded"
	mcpserver "github.com/skillstream/skillstream/processor/mcp"
)

// What `bench --scale` samples of each store size.
const (
	scaleFreshSessions = 20  // new sessions whose catalog decision is timed
	scaleSamples       = 200 // unchanged pre-steps, and skill calls, timed
	// scaleStartBound bounds a member's start, scaleSettleBound the wait
	// for its CPU to go quiet after its first answer.
	scaleStartBound  = 2 * time.Minute
	scaleSettleBound = 2 * time.Minute
	scaleStopBound   = 30 * time.Second
)

// scaleNotApplicable are bench's flags --scale has no use for: the load
// phases' and where their NATS server is (--scale starts its own,
// embedded, one per store size, so that nothing is pushed into a real
// store), and skill folders (the member serves the store alone).
var scaleNotApplicable = []string{
	"sessions", "steps", "calls", "searches", "changes", "concurrency", "projects", "gestures", "duration",
	"processor", "no-baseline", "usage-projection", "no-usage-projection", "cpuprofile",
	"data", "nats-url", "nats-user", "nats-password", "nats-token", "nats-nkey", "nats-creds",
	"nats-tls-ca", "nats-tls-cert", "nats-tls-key", "tenants", "tenant",
	"skills-dir", "project-skills-subdir",
}

// scaleOwnFlags are serve's flags the scale check sets itself on the
// member, whatever bench was given.
var scaleOwnFlags = []string{"listen", "server-name", "user-skills-dir", "no-bundled", "log-format", "log-level", "metrics-listen"}

// validateScale checks the flags of a --scale run and works out the flags
// the member takes from bench's configuration.
func (o *benchOptions) validateScale(c *Config, cmd *command, serveFlags *flag.FlagSet) error {
	if o.scale < 1 {
		return usagef("--scale %d: want at least 1 skill (0: off)", o.scale)
	}
	var bad []string
	cmd.fs.Visit(func(f *flag.Flag) {
		for _, n := range scaleNotApplicable {
			if f.Name == n {
				bad = append(bad, "--"+n)
			}
		}
	})
	if len(bad) > 0 {
		return usagef("%s: not used with --scale, which runs no load phases and serves only the skills it pushes to an embedded server of its own", strings.Join(bad, ", "))
	}
	switch {
	case o.skillCount < 1:
		return usagef("--skill-count %d: want at least 1", o.skillCount)
	case o.timeout <= 0:
		return usagef("--timeout %v: want a positive duration", o.timeout)
	}
	if _, err := benchEncoding(o.encoding); err != nil {
		return err
	}
	data, noStore := c.Data, c.NoSkillStore
	c.Data, c.NoSkillStore = "bench", true // bench takes no store flags: the members' are serve's defaults
	err := c.validateServe()
	c.Data, c.NoSkillStore = data, noStore
	if err != nil {
		return err
	}
	o.memberFlags = scaleMemberFlags(cmd, serveFlags)
	return nil
}

// scaleMemberFlags returns bench's settings that serve takes too (catalog
// limits, skill search, stream and consumer, workers...), as serve flags,
// for those that are not their defaults.
func scaleMemberFlags(cmd *command, serveFlags *flag.FlagSet) []string {
	skip := map[string]bool{}
	for _, n := range append(append([]string{}, scaleNotApplicable...), scaleOwnFlags...) {
		skip[n] = true
	}
	var out []string
	for _, g := range cmd.groups {
		for _, name := range g.names {
			f := cmd.fs.Lookup(name)
			if skip[name] || serveFlags.Lookup(name) == nil || f.Value.String() == f.DefValue {
				continue
			}
			out = append(out, "--"+name+"="+f.Value.String())
		}
	}
	return out
}

// lockedWriter serialises writes from the scale check's goroutines and
// its children's output copiers.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// benchScale is `bench --scale`: for the fleet's skill count, then the
// reference count, push that many generated skills to the skill store of
// a fresh embedded server with `skills push`, start a `serve` member on
// it, and measure what a fleet of that size costs.
func (a *app) benchScale(ctx context.Context, c *Config, o benchOptions) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("find this program to run skills push and serve: %w", err)
	}
	work, err := os.MkdirTemp("", "skillstream-bench-")
	if err != nil {
		return fmt.Errorf("bench work folder: %w", err)
	}
	defer os.RemoveAll(work)
	stderr := &lockedWriter{w: a.stderr}
	report := bench.ScaleReport{Machine: bench.MachineNow(), Encoding: o.encoding,
		FreshSessions: scaleFreshSessions, Samples: scaleSamples}
	runID := benchRunID()
	for i, n := range []int{o.scale, o.skillCount} {
		run, err := a.scaleRun(ctx, c, o, scaleEnv{exe: exe, dir: filepath.Join(work, "run"+strconv.Itoa(i+1)),
			runID: runID + strconv.Itoa(i+1), stderr: stderr}, n)
		if err != nil {
			return fmt.Errorf("bench --scale at %d skills: %w", n, err)
		}
		report.Runs = append(report.Runs, run)
	}
	report.Machine.LoadAfter = bench.LoadAverage()
	report.ComputeRatios()
	if o.json {
		err = printJSON(a.stdout, &report)
	} else {
		_, err = io.WriteString(a.stdout, bench.FormatScale(&report))
	}
	if err != nil {
		return err
	}
	for _, run := range report.Runs {
		if len(run.Errors) > 0 {
			fmt.Fprintf(stderr, "skillstream bench: the run at %d skills did not come out as it should; see the report\n", run.Skills)
			return errReported
		}
	}
	return nil
}

// scaleEnv is what one store size's run works with.
type scaleEnv struct {
	exe    string // this program
	dir    string // its work folder
	runID  string
	stderr io.Writer
}

// scaleRun measures one store size.
func (a *app) scaleRun(ctx context.Context, c *Config, o benchOptions, env scaleEnv, n int) (bench.ScaleRun, error) {
	run := bench.ScaleRun{Skills: n}
	progress := func(what string) { fmt.Fprintf(env.stderr, "bench scale %d skills: %s\n", n, what) }
	progress("generating the skills")
	skillsDir, names, _, _, err := bench.WriteSkills(env.dir, n)
	if err != nil {
		return run, err
	}
	log := c.newLogger(env.stderr)
	srv, err := embedded.Start(embedded.Options{Name: "skillstream-bench", Listen: c.Listen, StoreDir: filepath.Join(env.dir, "store")}, log)
	if err != nil {
		return run, err
	}
	defer func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	}()
	url := embedded.URL(srv)

	progress("skills push")
	if run.Push, err = scalePush(ctx, env, url, skillsDir); err != nil {
		return run, err
	}
	if run.Push.Added != n {
		run.Errors = append(run.Errors, fmt.Sprintf("skills push added %d skills, want %d", run.Push.Added, n))
	}

	nc, err := benchConnect(c, url, "skillstream bench scale", log)
	if err != nil {
		return run, err
	}
	defer nc.Close()
	pcfg := c.processorConfig()
	enc, _ := benchEncoding(o.encoding)
	cl, err := client.New(nc, client.WithPrefix(pcfg.Prefix), client.WithEncoding(enc),
		client.WithRetryInterval(o.timeout), client.WithMaxAttempts(3))
	if err != nil {
		return run, err
	}
	defer cl.Close()
	tools := []events.Tool{{Name: "read_file", Owner: "agent"}, client.SkillTool(pcfg.ToolOwner)}
	if c.SkillSearch {
		tools = append(tools, client.SkillSearchTool(pcfg.ToolOwner))
	}
	preStep := func(sid, step string) (events.Decision, time.Duration, error) {
		cctx, cancel := context.WithTimeout(ctx, 3*o.timeout)
		defer cancel()
		start := time.Now()
		d, err := cl.PreStep(cctx, events.PreStep{Session: sid, Step: step, Tools: tools})
		return d, time.Since(start), err
	}
	sid := func(kind string, i int) string { return fmt.Sprintf("x%s-%s%d", env.runID, kind, i) }

	progress("starting a serve member")
	m, err := startScaleMember(env, url, o.memberFlags, levelOf(c.LogLevel))
	if err != nil {
		return run, err
	}
	defer m.stop()
	serving, err := m.waitServing(ctx)
	if err != nil {
		return run, err
	}
	run.Member.ReadySeconds = serving.at.Sub(m.start).Seconds()

	// The first pre-step of a session, at once: the member's start ends
	// with its first catalog.
	d, took, err := preStep(sid("f", 0), "1")
	answered := time.Now()
	if bad := scaleAppended(d, err); bad != "" {
		run.Errors = append(run.Errors, "first pre-step: "+bad)
	} else {
		run.Member.FirstAnswerSeconds = answered.Sub(m.start).Seconds()
		run.Member.FirstCatalogUS = float64(took) / float64(time.Microsecond)
		cs := d.Catalog.Source
		run.Catalog.Listed, run.Catalog.Omitted, run.Catalog.TextBytes = len(cs.Entries), cs.Omitted, len(d.Catalog.Text)
		if got := len(cs.Entries) + cs.Omitted; got != n {
			run.Errors = append(run.Errors, fmt.Sprintf("the catalog counts %d skills (%d listed, %d left out), want %d", got, len(cs.Entries), cs.Omitted, n))
		}
	}
	run.Member.Readyz = m.readyz(ctx, serving.metrics)
	if !run.Member.Readyz {
		run.Errors = append(run.Errors, "/readyz did not answer ready once the member announced it serves")
	}

	// Unchanged pre-steps at once, while the member still checks the
	// store's objects: what a restarted member's sessions see first.
	var early []time.Duration
	for i := 2; i <= scaleEarlySamples+1 && ctx.Err() == nil; i++ {
		d, took, err := preStep(sid("f", 0), strconv.Itoa(i))
		if err == nil && d.Outcome == events.OutcomeUnchanged {
			early = append(early, took)
		}
	}
	run.UnchangedEarly = bench.Summarize(early)

	progress("waiting for the member's background store check")
	if at, ok := m.settle(ctx); ok {
		run.Member.SettledSeconds = at.Sub(m.start).Seconds()
	}

	progress("timing new sessions, unchanged pre-steps and skill calls")
	var samples []time.Duration
	var failed scaleFailures
	for i := 1; i <= scaleFreshSessions && ctx.Err() == nil; i++ {
		d, took, err := preStep(sid("c", i), "1")
		if bad := scaleAppended(d, err); bad != "" {
			failed.add("new session pre-step", bad)
			continue
		}
		samples = append(samples, took)
	}
	run.Catalog.Latency = bench.Summarize(samples)

	session := sid("u", 0)
	if d, _, err := preStep(session, "1"); err != nil || d.Outcome != events.OutcomeAppended {
		failed.add("unchanged session's first pre-step", scaleAppended(d, err))
	}
	samples = nil
	for i := 2; i <= scaleSamples+1 && ctx.Err() == nil; i++ {
		d, took, err := preStep(session, strconv.Itoa(i))
		switch {
		case err != nil:
			failed.add("unchanged pre-step", err.Error())
		case d.Outcome != events.OutcomeUnchanged:
			failed.add("unchanged pre-step", "answered "+d.Outcome)
		default:
			samples = append(samples, took)
		}
	}
	run.Unchanged = bench.Summarize(samples)

	samples = nil
	for i := 1; i <= scaleSamples && ctx.Err() == nil; i++ {
		cctx, cancel := context.WithTimeout(ctx, 3*o.timeout)
		start := time.Now()
		r, err := cl.CallSkill(cctx, events.SkillCall{Session: session, Call: "k" + strconv.Itoa(i), Args: events.SkillArgs{Name: names[0]}})
		took := time.Since(start)
		cancel()
		switch {
		case err != nil:
			failed.add("skill call", err.Error())
		case r.IsError:
			failed.add("skill call", r.Text)
		default:
			samples = append(samples, took)
		}
	}
	run.SkillCall = bench.Summarize(samples)

	progress("MCP resources/list")
	if run.MCP, err = scaleMCP(ctx, serving.mcp, m.token); err != nil {
		failed.add("MCP", err.Error())
	} else if run.MCP.Resources != n {
		failed.add("MCP", fmt.Sprintf("resources/list listed %d skills, want %d", run.MCP.Resources, n))
	}
	if err := ctx.Err(); err != nil {
		return run, err
	}

	run.Member.PeakRSSBytes, run.Member.CPUSeconds, err = m.stop()
	if err != nil {
		failed.add("member", err.Error())
	}
	run.Errors = append(run.Errors, failed.list()...)
	return run, nil
}

// scaleAppended says what is wrong with the answer to a session's first
// pre-step, which must append its catalog; "" when nothing is.
// scaleEarlySamples is how many unchanged pre-steps are timed right after
// a member's first answer.
const scaleEarlySamples = 100

func scaleAppended(d events.Decision, err error) string {
	switch {
	case err != nil:
		return err.Error()
	case d.Outcome != events.OutcomeAppended || d.Catalog == nil:
		return "answered " + d.Outcome + ", want a catalog appended"
	}
	return ""
}

// scaleFailures counts failed samples by what was sampled, keeping the
// first reason of each.
type scaleFailures struct {
	order []string
	count map[string]int
	first map[string]string
}

func (f *scaleFailures) add(what, why string) {
	if f.count == nil {
		f.count, f.first = map[string]int{}, map[string]string{}
	}
	if f.count[what] == 0 {
		f.order = append(f.order, what)
		f.first[what] = why
	}
	f.count[what]++
}

func (f *scaleFailures) list() []string {
	var out []string
	for _, w := range f.order {
		out = append(out, fmt.Sprintf("%s failed %d times, first: %s", w, f.count[w], f.first[w]))
	}
	return out
}

// scaleChildEnv is this process's environment without the SKILLSTREAM_
// variables: a child is configured by its flags alone.
func scaleChildEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, envPrefix) {
			env = append(env, kv)
		}
	}
	return env
}

// scalePush runs `skills push DIR --json` as its own process, exactly as
// an operator or a CI job runs it.
func scalePush(ctx context.Context, env scaleEnv, url, dir string) (bench.ScalePush, error) {
	var p bench.ScalePush
	cmd := exec.CommandContext(ctx, env.exe, "skills", "push", dir, "--nats-url", url, "--json")
	cmd.Env = scaleChildEnv()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, env.stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return p, fmt.Errorf("skills push: %w", err)
	}
	peak := watchPeakRSS(cmd.Process.Pid)
	err := cmd.Wait()
	p.Seconds = time.Since(start).Seconds()
	p.PeakRSSBytes = peak()
	if err != nil {
		return p, fmt.Errorf("skills push: %w", err)
	}
	if p.PeakRSSBytes == 0 {
		p.PeakRSSBytes = maxRSS(cmd.ProcessState)
	}
	var res pushJSON
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		return p, fmt.Errorf("skills push printed no report: %w", err)
	}
	p.Revision = res.Revision
	for _, s := range res.Skills {
		if s.Change == "added" {
			p.Added++
		}
	}
	return p, nil
}

// watchPeakRSS samples the peak resident set of a running child (Linux's
// VmHWM) until it ends; the function returned stops sampling and returns
// the last peak seen (0 when it cannot be read). A child's peak is read
// from /proc rather than from its rusage: on Linux a child started by
// vfork inherits its parent's peak.
func watchPeakRSS(pid int) func() int64 {
	var (
		mu   sync.Mutex
		peak int64
	)
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			if u, ok := bench.PIDUsage(pid); ok && u.HWM > 0 {
				mu.Lock()
				peak = max(peak, u.HWM)
				mu.Unlock()
			}
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() int64 {
		close(stop)
		<-done
		mu.Lock()
		defer mu.Unlock()
		return peak
	}
}

// scaleMember is a `serve` child reading the store of the run's server.
type scaleMember struct {
	cmd      *exec.Cmd
	start    time.Time
	token    string // its MCP bearer token
	serving  chan scaleServing
	logDone  chan struct{} // its stderr ended
	stopped  bool
	stopping atomic.Bool // stop began: its log is no longer forwarded
	rss      int64
	cpu      float64
	err      error

	mu   sync.Mutex
	tail []string // its last log lines, for errors
}

// scaleServing is the member's announcement that it serves.
type scaleServing struct {
	at           time.Time
	metrics, mcp string // URLs of its /metrics and /mcp
}

// startScaleMember starts `serve` on url with the skill store alone, its
// metrics and MCP listeners on free loopback ports and JSON logs, which it
// reads for the line that says it serves. Lines at level or above are
// copied to env.stderr.
func startScaleMember(env scaleEnv, url string, extra []string, level slog.Level) (*scaleMember, error) {
	token := rand.Text()
	tokenFile := filepath.Join(env.dir, "mcp-token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		return nil, err
	}
	args := append([]string{"serve", "--nats-url", url, "--no-bundled", "--user-skills-dir=",
		"--metrics-listen", "127.0.0.1:0", "--mcp-listen", "127.0.0.1:0", "--mcp-token-file", tokenFile,
		"--log-format", "json", "--log-level", "info"}, extra...)
	cmd := exec.Command(env.exe, args...)
	cmd.Env = scaleChildEnv()
	logs, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	m := &scaleMember{cmd: cmd, token: token, serving: make(chan scaleServing, 1), logDone: make(chan struct{})}
	m.start = time.Now()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start serve: %w", err)
	}
	go m.readLog(logs, env.stderr, level)
	return m, nil
}

// readLog reads the member's JSON log until it ends.
func (m *scaleMember) readLog(r io.Reader, w io.Writer, level slog.Level) {
	defer close(m.logDone)
	s := bufio.NewScanner(r)
	s.Buffer(make([]byte, 64<<10), 4<<20)
	announced := false
	for s.Scan() {
		line := s.Text()
		m.mu.Lock()
		m.tail = append(m.tail, line)
		if len(m.tail) > 10 {
			m.tail = m.tail[1:]
		}
		m.mu.Unlock()
		var rec struct {
			Level   string `json:"level"`
			Msg     string `json:"msg"`
			Metrics string `json:"metrics"`
			MCP     string `json:"mcp"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil {
			fmt.Fprintln(w, "member: "+line) // not a log record: a crash, say
			continue
		}
		if rec.Msg == "skillstream serving" && !announced {
			announced = true
			m.serving <- scaleServing{at: time.Now(), metrics: rec.Metrics, mcp: rec.MCP}
		}
		var l slog.Level
		// Once stopped, what the member says of its own stopping (a
		// store read cut short) is not news.
		if l.UnmarshalText([]byte(rec.Level)) == nil && l >= level && !m.stopping.Load() {
			fmt.Fprintln(w, "member: "+line)
		}
	}
	_, _ = io.Copy(io.Discard, r)
}

// waitServing waits for the member to announce that it serves.
func (m *scaleMember) waitServing(ctx context.Context) (scaleServing, error) {
	timer := time.NewTimer(scaleStartBound)
	defer timer.Stop()
	select {
	case s := <-m.serving:
		if s.metrics == "" || s.mcp == "" {
			return s, errors.New("the member announced that it serves without its metrics and MCP addresses")
		}
		return s, nil
	case <-m.logDone:
		m.mu.Lock()
		tail := strings.Join(m.tail, "\n")
		m.mu.Unlock()
		return scaleServing{}, fmt.Errorf("the serve member ended before it served:\n%s", tail)
	case <-timer.C:
		return scaleServing{}, fmt.Errorf("the serve member did not serve within %v", scaleStartBound)
	case <-ctx.Done():
		return scaleServing{}, ctx.Err()
	}
}

// readyz asks the member's /readyz.
func (m *scaleMember) readyz(ctx context.Context, metrics string) bool {
	rctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(rctx, http.MethodGet, strings.TrimSuffix(metrics, "/metrics")+"/readyz", nil)
	if err != nil {
		return false
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode == http.StatusOK && strings.HasPrefix(string(body), "ready")
}

// settle waits until the member's CPU goes quiet (under a tenth of a core
// over half a second): a member that loaded a store checks its objects in
// the background, and the figures after this are those of a member at
// rest. It returns when the quiet began; ok is false when its CPU cannot
// be read or never went quiet.
func (m *scaleMember) settle(ctx context.Context) (at time.Time, ok bool) {
	const (
		tick   = 100 * time.Millisecond
		window = 5 // ticks
		quiet  = 50 * time.Millisecond
	)
	type sample struct {
		at  time.Time
		cpu time.Duration
	}
	var seen []sample
	deadline := time.Now().Add(scaleSettleBound)
	t := time.NewTicker(tick)
	defer t.Stop()
	for time.Now().Before(deadline) {
		u, ok := bench.PIDUsage(m.cmd.Process.Pid)
		if !ok {
			return time.Time{}, false
		}
		seen = append(seen, sample{time.Now(), u.CPU})
		if k := len(seen); k > window && seen[k-1].cpu-seen[k-1-window].cpu <= quiet {
			return seen[k-1-window].at, true
		}
		select {
		case <-ctx.Done():
			return time.Time{}, false
		case <-m.logDone:
			return time.Time{}, false
		case <-t.C:
		}
	}
	return time.Time{}, false
}

// stop interrupts the member, as an operator stops serve, and returns its
// peak RSS and CPU over its whole life. It may be called again.
func (m *scaleMember) stop() (peakRSS int64, cpu float64, err error) {
	if m.stopped {
		return m.rss, m.cpu, m.err
	}
	m.stopped = true
	m.stopping.Store(true)
	if u, ok := bench.PIDUsage(m.cmd.Process.Pid); ok {
		m.rss = u.HWM
	}
	_ = m.cmd.Process.Signal(os.Interrupt)
	timer := time.NewTimer(scaleStopBound)
	defer timer.Stop()
	select {
	case <-m.logDone:
	case <-timer.C:
		_ = m.cmd.Process.Kill()
		m.err = fmt.Errorf("the serve member did not stop within %v; killed", scaleStopBound)
		<-m.logDone
	}
	if werr := m.cmd.Wait(); werr != nil && m.err == nil {
		m.err = fmt.Errorf("serve member: %w", werr)
	}
	if ps := m.cmd.ProcessState; ps != nil {
		if m.rss == 0 {
			m.rss = maxRSS(ps)
		}
		m.cpu = (ps.UserTime() + ps.SystemTime()).Seconds()
	}
	return m.rss, m.cpu, m.err
}

// scaleMCP connects an MCP host to endpoint and lists every skill's
// SKILL.md resource, every page.
func scaleMCP(ctx context.Context, endpoint, token string) (bench.ScaleMCP, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	l, err := mcpserver.ListAsHost(ctx, endpoint, token)
	return bench.ScaleMCP{
		ConnectUS: float64(l.Connect) / float64(time.Microsecond),
		ListUS:    float64(l.List) / float64(time.Microsecond),
		Pages:     l.Pages, Resources: l.Skills,
	}, err
}

// levelOf is --log-level as a slog level (validated already).
func levelOf(s string) slog.Level {
	l, err := parseLevel(s)
	if err != nil {
		return slog.LevelWarn
	}
	return l
}
