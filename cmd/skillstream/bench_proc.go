package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime/pprof"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor"
)

// Where the processor under test runs.
const (
	benchModeChild     = "child"     // a child process of this binary, on loopback: its own CPU and RSS
	benchModeInProcess = "inprocess" // in this process: CPU and RSS include server and load generator
	benchModeExternal  = "external"  // already running against --nats-url: not measured
)

// benchProcStats is what the processor's own metrics say about a phase.
type benchProcStats struct {
	Conflicts    float64               `json:"conflicts"`
	Redeliveries float64               `json:"redeliveries"`
	Duplicates   float64               `json:"duplicates"`
	Rejects      float64               `json:"rejects"`
	Transient    float64               `json:"transient_failures"`
	DeadLetters  float64               `json:"dead_letters"`
	Failures     float64               `json:"failures,omitempty"`    // baseline: triggers it could not handle
	FirstError   string                `json:"first_error,omitempty"` // baseline: the first of them
	Stages       map[string]benchStage `json:"stages,omitempty"`
	PeakRSS      int64                 `json:"peak_rss_bytes,omitempty"` // whole life of the processor process
	CPU          float64               `json:"cpu_seconds,omitempty"`    // whole life of the processor process
}

// benchStage is the processor's own latency of one handling stage. The
// percentiles are histogram bucket bounds: "at most".
type benchStage struct {
	Count  uint64  `json:"count"`
	MeanUS float64 `json:"mean_us"`
	P50US  float64 `json:"p50_le_us"`
	P99US  float64 `json:"p99_le_us"`
}

// bucketBound returns the upper bound of the bucket holding quantile q.
func bucketBound(h *dto.Histogram, q float64) float64 {
	want := uint64(q*float64(h.GetSampleCount()) + 0.5)
	for _, b := range h.GetBucket() {
		if b.GetCumulativeCount() >= want {
			return b.GetUpperBound() * 1e6
		}
	}
	return 0 // beyond the last bucket
}

// procStatsOf reads the processor's counters from its metrics registry.
func procStatsOf(g prometheus.Gatherer) benchProcStats {
	var s benchProcStats
	mfs, err := g.Gather()
	if err != nil {
		return s
	}
	sum := func(mf *dto.MetricFamily) float64 {
		var t float64
		for _, m := range mf.GetMetric() {
			t += m.GetCounter().GetValue()
		}
		return t
	}
	for _, mf := range mfs {
		switch mf.GetName() {
		case "skillstream_append_conflicts_total":
			s.Conflicts = sum(mf)
		case "skillstream_redeliveries_total":
			s.Redeliveries = sum(mf)
		case "skillstream_duplicate_triggers_total":
			s.Duplicates = sum(mf)
		case "skillstream_rejects_total":
			s.Rejects = sum(mf)
		case "skillstream_transient_failures_total":
			s.Transient = sum(mf)
		case "skillstream_dead_letters_total":
			s.DeadLetters = sum(mf)
		case "skillstream_stage_seconds":
			s.Stages = map[string]benchStage{}
			for _, m := range mf.GetMetric() {
				h := m.GetHistogram()
				stage := ""
				for _, l := range m.GetLabel() {
					if l.GetName() == "stage" {
						stage = l.GetValue()
					}
				}
				if n := h.GetSampleCount(); n > 0 {
					s.Stages[stage] = benchStage{Count: n, MeanUS: h.GetSampleSum() / float64(n) * 1e6,
						P50US: bucketBound(h, 0.5), P99US: bucketBound(h, 0.99)}
				}
			}
		}
	}
	return s
}

// benchProc is the processor under test.
type benchProc interface {
	// usage measures the processor's process now; ok is false when it
	// cannot be measured.
	usage() (u benchUsage, ok bool)
	// stop drains the processor and returns its statistics.
	stop() (benchProcStats, error)
}

// benchInProcess runs the processor in this process.
type benchInProcess struct {
	cancel  context.CancelFunc
	done    chan error
	metrics *prometheus.Registry
	close   func()
}

func startBenchInProcess(ctx context.Context, c *Config, url string, log *slog.Logger) (benchProc, error) {
	reg, err := c.registry(log, true)
	if err != nil {
		return nil, err
	}
	nc, err := benchConnect(c, url, "skillstream bench processor", log)
	if err != nil {
		reg.Close()
		return nil, err
	}
	metrics := prometheus.NewRegistry()
	p, err := processor.New(nc, reg, c.processorConfig(), processor.WithLogger(log), processor.WithRegisterer(metrics))
	if err != nil {
		nc.Close()
		reg.Close()
		return nil, err
	}
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	b := &benchInProcess{cancel: cancel, done: make(chan error, 1), metrics: metrics, close: func() {
		nc.Close()
		reg.Close()
	}}
	go func() { b.done <- p.Run(pctx) }()
	if err := waitBenchProcessor(ctx, nc, time.Minute); err != nil {
		_, _ = b.stop()
		return nil, err
	}
	return b, nil
}

func (b *benchInProcess) usage() (benchUsage, bool) { return selfUsage(), true }

func (b *benchInProcess) stop() (benchProcStats, error) {
	b.cancel()
	err := <-b.done
	b.close()
	s := procStatsOf(b.metrics)
	u := selfUsage()
	s.PeakRSS, s.CPU = u.HWM, u.CPU.Seconds()
	return s, err
}

// Roles of a bench consumer process.
const (
	benchRoleProcessor = "processor"
	benchRoleBaseline  = "baseline"
)

// benchChildSpec is what the parent sends a consumer child on its stdin.
type benchChildSpec struct {
	Role       string             `json:"role"`
	Config     Config             `json:"config"`
	URL        string             `json:"url"`
	CPUProfile string             `json:"cpuprofile,omitempty"`
	Baseline   *benchBaselineSpec `json:"baseline,omitempty"`
}

// benchBaselineSpec describes the baseline consumer.
type benchBaselineSpec struct {
	Stream  string            `json:"stream"`
	Prefix  string            `json:"prefix"`
	Workers int               `json:"workers"`
	AckWait time.Duration     `json:"ack_wait"`
	Owner   string            `json:"owner"`
	Skills  []catalog.Summary `json:"skills"`
	Body    string            `json:"body"`
	Catalog catalog.Options   `json:"catalog"`
}

// benchInProcessBaseline runs the baseline consumer in this process.
type benchInProcessBaseline struct {
	bl     *benchBaseline
	stopFn func()
	nc     *nats.Conn
}

func startBenchInProcessBaseline(ctx context.Context, c *Config, url string, spec *benchBaselineSpec, log *slog.Logger) (benchProc, error) {
	blobs, err := newBenchBlobs(spec.Owner, spec.Skills, spec.Body, spec.Catalog)
	if err != nil {
		return nil, fmt.Errorf("baseline answers: %w", err)
	}
	nc, err := benchConnect(c, url, "skillstream bench baseline", log)
	if err != nil {
		return nil, err
	}
	bl, stop, err := startBenchBaseline(ctx, nc, spec.Stream, spec.Prefix, spec.Workers, spec.AckWait, blobs)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &benchInProcessBaseline{bl: bl, stopFn: stop, nc: nc}, nil
}

func (b *benchInProcessBaseline) usage() (benchUsage, bool) { return selfUsage(), true }

func (b *benchInProcessBaseline) stop() (benchProcStats, error) {
	b.stopFn()
	b.nc.Close()
	s := benchProcStats{Conflicts: float64(b.bl.conflicts.Load()), Failures: float64(b.bl.failures.Load())}
	if err := b.bl.err(); err != nil {
		s.FirstError = err.Error()
	}
	u := selfUsage()
	s.PeakRSS, s.CPU = u.HWM, u.CPU.Seconds()
	return s, nil
}

// benchChild runs a phase's consumer (the processor or the baseline) as
// `skillstream bench --processor-child` in a child process connected over
// loopback: its CPU and memory are then its own, not the server's or the
// load generator's, and both phases cross the same process boundaries.
type benchChild struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

func startBenchChild(spec benchChildSpec, stderr io.Writer) (benchProc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find this program to run the processor: %w", err)
	}
	cmd := exec.Command(exe, "bench", "--processor-child")
	cmd.Stderr = stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start processor process: %w", err)
	}
	b := &benchChild{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	if err := json.NewEncoder(stdin).Encode(spec); err != nil {
		b.kill()
		return nil, fmt.Errorf("configure %s process: %w", spec.Role, err)
	}
	// The child says it is ready in its first line.
	ready := make(chan error, 1)
	go func() {
		line, err := b.out.ReadBytes('\n')
		if err == nil && strings.TrimSpace(string(line)) != benchReady {
			err = fmt.Errorf("unexpected first line %q", line)
		}
		ready <- err
	}()
	timer := time.NewTimer(time.Minute)
	defer timer.Stop()
	select {
	case err := <-ready:
		if err != nil {
			b.kill()
			return nil, fmt.Errorf("%s process did not start: %w", spec.Role, err)
		}
	case <-timer.C:
		b.kill()
		return nil, fmt.Errorf("%s process not ready within a minute", spec.Role)
	}
	return b, nil
}

// benchReady is a consumer child's first line.
const benchReady = "ready"

func (b *benchChild) kill() {
	_ = b.cmd.Process.Kill()
	_ = b.cmd.Wait()
}

func (b *benchChild) usage() (benchUsage, bool) { return pidUsage(b.cmd.Process.Pid) }

func (b *benchChild) stop() (benchProcStats, error) {
	_ = b.stdin.Close() // end of stdin tells the child to drain and stop
	type result struct {
		s   benchProcStats
		err error
	}
	res := make(chan result, 1)
	go func() {
		var r result
		line, err := b.out.ReadBytes('\n')
		if err == nil {
			err = json.Unmarshal(line, &r.s)
		}
		if err != nil {
			r.err = fmt.Errorf("read consumer statistics: %w", err)
		}
		_, _ = io.Copy(io.Discard, b.out)
		if werr := b.cmd.Wait(); werr != nil && r.err == nil {
			r.err = fmt.Errorf("consumer process: %w", werr)
		}
		res <- r
	}()
	timer := time.NewTimer(time.Minute)
	defer timer.Stop()
	select {
	case r := <-res:
		return r.s, r.err
	case <-timer.C:
		_ = b.cmd.Process.Kill()
		r := <-res
		return r.s, errors.Join(errors.New("consumer process did not stop within a minute; killed"), r.err)
	}
}

// runBenchChild is the child's side: read the spec, start the consumer,
// say "ready", run until stdin ends, print its statistics as one JSON line.
func (a *app) runBenchChild(ctx context.Context, stdin io.Reader) error {
	var spec benchChildSpec
	dec := json.NewDecoder(stdin)
	if err := dec.Decode(&spec); err != nil {
		return fmt.Errorf("bench child: read spec: %w", err)
	}
	c := spec.Config
	log := c.newLogger(a.stderr)
	if spec.CPUProfile != "" {
		f, err := os.Create(spec.CPUProfile)
		if err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return fmt.Errorf("cpu profile: %w", err)
		}
		defer pprof.StopCPUProfile()
	}
	var (
		p   benchProc
		err error
	)
	switch spec.Role {
	case benchRoleProcessor:
		_, stopGC := gcPolicy() // the processor child runs as serve does
		defer stopGC()
		p, err = startBenchInProcess(ctx, &c, spec.URL, log)
	case benchRoleBaseline:
		if spec.Baseline == nil {
			return errors.New("bench child: baseline role without its spec")
		}
		p, err = startBenchInProcessBaseline(ctx, &c, spec.URL, spec.Baseline, log)
	default:
		return fmt.Errorf("bench child: unknown role %q", spec.Role)
	}
	if err != nil {
		return err
	}
	if _, err := fmt.Fprintln(a.stdout, benchReady); err != nil {
		_, _ = p.stop()
		return err
	}
	stopped := make(chan struct{})
	var once sync.Once
	go func() {
		_, _ = io.Copy(io.Discard, io.MultiReader(dec.Buffered(), stdin))
		once.Do(func() { close(stopped) })
	}()
	select {
	case <-stopped:
	case <-ctx.Done():
	}
	s, err := p.stop()
	if err != nil {
		return err
	}
	return json.NewEncoder(a.stdout).Encode(s)
}

// benchConnect opens a client connection to url with the configured
// credentials when it is the configured cluster.
func benchConnect(c *Config, url, name string, log *slog.Logger) (*nats.Conn, error) {
	opts := []nats.Option{nats.Name(name), nats.MaxReconnects(-1)}
	if c.NATSURL != "" {
		copts, err := c.connectOptions(log)
		if err != nil {
			return nil, err
		}
		opts = append(copts, nats.Name(name))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", url, err)
	}
	return nc, nil
}

// waitBenchProcessor polls until a processor answers the tool definition
// request (it serves it once its stream and consumer exist).
func waitBenchProcessor(ctx context.Context, nc *nats.Conn, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		rctx, rcancel := context.WithTimeout(ctx, time.Second)
		_, err := nc.RequestWithContext(rctx, events.ToolDefinitionSubject, nil)
		rcancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("processor not ready within %v: %w", timeout, err)
		case <-tick.C:
		}
	}
}
