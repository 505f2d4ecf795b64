package bench

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
	"runtime"
	"strconv"
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
	ModeChild     = "child"     // a child process of this binary, on loopback: its own CPU and RSS
	ModeInProcess = "inprocess" // in this process: CPU and RSS include server and load generator
	ModeExternal  = "external"  // already running against --nats-url: not measured
)

// ProcStats is what the processor's own metrics say about a phase.
type ProcStats struct {
	Conflicts    float64          `json:"conflicts"`
	Redeliveries float64          `json:"redeliveries"`
	Duplicates   float64          `json:"duplicates"`
	Rejects      float64          `json:"rejects"`
	Transient    float64          `json:"transient_failures"`
	DeadLetters  float64          `json:"dead_letters"`
	Failures     float64          `json:"failures,omitempty"`    // baseline: triggers it could not handle
	FirstError   string           `json:"first_error,omitempty"` // baseline: the first of them
	Stages       map[string]Stage `json:"stages,omitempty"`
	// HeadReads counts pre-steps that checked a large catalog through its
	// head, by result (hit, stale, unsure).
	HeadReads map[string]float64 `json:"head_reads,omitempty"`
	// PartitionTriggers counts the triggers handled per partition, by
	// partition number, with partitioned sessions (bench --partitions).
	PartitionTriggers map[string]float64 `json:"partition_triggers,omitempty"`
	PeakRSS           int64              `json:"peak_rss_bytes,omitempty"` // whole life of the processor process
	CPU               float64            `json:"cpu_seconds,omitempty"`    // whole life of the processor process
	// Heap is what the consumer child allocated while it served the
	// phase (from its Ready line to its stop), from the Go runtime.
	Heap *HeapStats `json:"heap,omitempty"`
}

// HeapStats are a child's allocations and garbage collections over a
// phase.
type HeapStats struct {
	Mallocs    uint64  `json:"mallocs"`     // objects allocated
	Bytes      uint64  `json:"bytes"`       // bytes allocated
	GCs        uint32  `json:"gcs"`         // collections finished
	GCPauseSec float64 `json:"gc_pause_s"`  // stop-the-world pauses, summed
	GCCPUFrac  float64 `json:"gc_cpu_frac"` // the share of the child's CPU the collector took, over its life
}

// heapSince is what this process allocated and collected since m0.
func heapSince(m0 *runtime.MemStats) *HeapStats {
	var m1 runtime.MemStats
	runtime.ReadMemStats(&m1)
	return &HeapStats{Mallocs: m1.Mallocs - m0.Mallocs, Bytes: m1.TotalAlloc - m0.TotalAlloc, GCs: m1.NumGC - m0.NumGC,
		GCPauseSec: float64(m1.PauseTotalNs-m0.PauseTotalNs) / 1e9, GCCPUFrac: m1.GCCPUFraction}
}

// Stage is the processor's own latency of one handling stage. The
// percentiles are histogram bucket bounds: "at most".
type Stage struct {
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

// StatsOf reads the processor's counters from its metrics registry.
func StatsOf(g prometheus.Gatherer) ProcStats {
	var s ProcStats
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
		case "skillstream_triggers_total":
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "partition" {
						if s.PartitionTriggers == nil {
							s.PartitionTriggers = map[string]float64{}
						}
						s.PartitionTriggers[l.GetValue()] += m.GetCounter().GetValue()
					}
				}
			}
		case "skillstream_head_reads_total":
			for _, m := range mf.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "result" && m.GetCounter().GetValue() > 0 {
						if s.HeadReads == nil {
							s.HeadReads = map[string]float64{}
						}
						s.HeadReads[l.GetValue()] += m.GetCounter().GetValue()
					}
				}
			}
		case "skillstream_stage_seconds":
			s.Stages = map[string]Stage{}
			for _, m := range mf.GetMetric() {
				h := m.GetHistogram()
				stage := ""
				for _, l := range m.GetLabel() {
					if l.GetName() == "stage" {
						stage = l.GetValue()
					}
				}
				if n := h.GetSampleCount(); n > 0 {
					s.Stages[stage] = Stage{Count: n, MeanUS: h.GetSampleSum() / float64(n) * 1e6,
						P50US: bucketBound(h, 0.5), P99US: bucketBound(h, 0.99)}
				}
			}
		}
	}
	return s
}

// Proc is the processor under test.
type Proc interface {
	// Measure measures the processor's process now; ok is false when it
	// cannot be measured.
	Measure() (u Usage, ok bool)
	// Stop drains the processor and returns its statistics.
	Stop() (ProcStats, error)
}

// inProcess runs the processor in this process.
type inProcess struct {
	cancel  context.CancelFunc
	done    chan error
	metrics *prometheus.Registry
	close   func()
}

// StartProcessor runs a processor over skills on nc in this process, with
// opts (the search index, say), and waits until it serves and is ready (its
// skills listed and the catalog without a project prepared, as /readyz
// reports: a load started before measures the member's start-up as well,
// tens of milliseconds at a thousand skills); Stop ends it, then calls
// closeFn (which closes what the caller opened for it, nc included).
func StartProcessor(ctx context.Context, nc *nats.Conn, skills processor.Skills, cfg processor.Config, log *slog.Logger, closeFn func(), opts ...processor.Option) (Proc, error) {
	return StartPartitions(ctx, nc, skills, []processor.Config{cfg}, log, closeFn, opts...)
}

// StartPartitions is StartProcessor for partitioned sessions: a processor
// per configuration (one per partition, processor.Config.Partition), all
// on nc and skills, their metrics in one registry, each labelled with its
// partition (its index in cfgs) when there are several.
func StartPartitions(ctx context.Context, nc *nats.Conn, skills processor.Skills, cfgs []processor.Config, log *slog.Logger, closeFn func(), opts ...processor.Option) (Proc, error) {
	metrics := prometheus.NewRegistry()
	ps := make([]*processor.Processor, len(cfgs))
	for k, cfg := range cfgs {
		var reg prometheus.Registerer = metrics
		if len(cfgs) > 1 {
			reg = prometheus.WrapRegistererWith(prometheus.Labels{"partition": strconv.Itoa(k)}, metrics)
		}
		p, err := processor.New(nc, skills, cfg, append([]processor.Option{processor.WithLogger(log), processor.WithRegisterer(reg)}, opts...)...)
		if err != nil {
			closeFn()
			return nil, err
		}
		ps[k] = p
	}
	pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	b := &inProcess{cancel: cancel, done: make(chan error, 1), metrics: metrics, close: closeFn}
	errs := make(chan error, len(ps))
	for _, p := range ps {
		go func() {
			err := p.Run(pctx)
			if err != nil {
				cancel() // one failed: the others stop too
			}
			errs <- err
		}()
	}
	go func() {
		var first error
		for range ps {
			if err := <-errs; err != nil && first == nil {
				first = err
			}
		}
		b.done <- first
	}()
	if err := WaitProcessor(ctx, nc, time.Minute); err != nil {
		_, _ = b.Stop()
		return nil, err
	}
	for _, p := range ps {
		select {
		case <-p.Ready():
		case err := <-b.done: // stopped before it was ready
			b.done <- err
			_, _ = b.Stop()
			if err == nil {
				err = errors.New("processor stopped before it was ready")
			}
			return nil, err
		case <-ctx.Done():
			_, _ = b.Stop()
			return nil, ctx.Err()
		}
	}
	return b, nil
}

func (b *inProcess) Measure() (Usage, bool) { return SelfUsage(), true }

func (b *inProcess) Stop() (ProcStats, error) {
	b.cancel()
	err := <-b.done
	b.close()
	s := StatsOf(b.metrics)
	u := SelfUsage()
	s.PeakRSS, s.CPU = u.HWM, u.CPU.Seconds()
	return s, err
}

// Roles of a bench consumer process.
const (
	RoleProcessor = "processor"
	RoleBaseline  = "baseline"
	// RoleProjector is the usage projector alone, beside a processor
	// (bench --projector-apart).
	RoleProjector = "projector"
)

// runner runs one component (the usage projector apart) in this process.
type runner struct {
	cancel context.CancelFunc
	done   chan error
	close  func()
}

// StartRunner runs run in this process until Stop, which ends its
// context, waits for it to return and then calls closeFn.
func StartRunner(ctx context.Context, run func(context.Context) error, closeFn func()) Proc {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &runner{cancel: cancel, done: make(chan error, 1), close: closeFn}
	go func() { r.done <- run(rctx) }()
	return r
}

func (r *runner) Measure() (Usage, bool) { return SelfUsage(), true }

func (r *runner) Stop() (ProcStats, error) {
	r.cancel()
	err := <-r.done
	r.close()
	u := SelfUsage()
	return ProcStats{PeakRSS: u.HWM, CPU: u.CPU.Seconds()}, err
}

// BaselineSpec describes the baseline consumer.
type BaselineSpec struct {
	Stream  string            `json:"stream"`
	Prefix  string            `json:"prefix"`
	Workers int               `json:"workers"`
	AckWait time.Duration     `json:"ack_wait"`
	Owner   string            `json:"owner"`
	Skills  []catalog.Summary `json:"skills"`
	Body    string            `json:"body"`
	Catalog catalog.Options   `json:"catalog"`
}

// inProcessBaseline runs the baseline consumer in this process.
type inProcessBaseline struct {
	bl     *benchBaseline
	stopFn func()
	nc     *nats.Conn
}

// StartBaseline runs the baseline consumer on nc in this process; Stop
// ends it and closes nc.
func StartBaseline(ctx context.Context, nc *nats.Conn, spec *BaselineSpec) (Proc, error) {
	blobs, err := newBenchBlobs(spec.Owner, spec.Skills, spec.Body, spec.Catalog)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("baseline answers: %w", err)
	}
	bl, stop, err := startBenchBaseline(ctx, nc, spec.Stream, spec.Prefix, spec.Workers, spec.AckWait, blobs)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &inProcessBaseline{bl: bl, stopFn: stop, nc: nc}, nil
}

func (b *inProcessBaseline) Measure() (Usage, bool) { return SelfUsage(), true }

func (b *inProcessBaseline) Stop() (ProcStats, error) {
	b.stopFn()
	b.nc.Close()
	s := ProcStats{Conflicts: float64(b.bl.conflicts.Load()), Failures: float64(b.bl.failures.Load())}
	if err := b.bl.err(); err != nil {
		s.FirstError = err.Error()
	}
	u := SelfUsage()
	s.PeakRSS, s.CPU = u.HWM, u.CPU.Seconds()
	return s, nil
}

// Child runs a phase's consumer (the processor or the baseline) as
// `skillstream bench --processor-child` in a child process connected over
// loopback: its CPU and memory are then its own, not the server's or the
// load generator's, and both phases cross the same process boundaries.
type Child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	out   *bufio.Reader
}

// StartChild starts `<this program> bench --processor-child`, sends it spec
// as one JSON line on its stdin and waits for its Ready line. role names the
// consumer in errors. Stop closes its stdin and reads its ProcStats.
func StartChild(spec any, role string, stderr io.Writer) (Proc, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("find this program to run the processor: %w", err)
	}
	cmd := exec.Command(exe, "bench", "--processor-child")
	cmd.Stderr = stderr
	if _, ok := stderr.(*os.File); !ok && stderr != nil {
		// Copied in by a goroutine of each child: two children at once
		// (the processor and the usage projector apart) take turns.
		cmd.Stderr = lockedWriter{stderr}
	}
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
	b := &Child{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	if err := json.NewEncoder(stdin).Encode(spec); err != nil {
		b.kill()
		return nil, fmt.Errorf("configure %s process: %w", role, err)
	}
	// The child says it is ready in its first line.
	ready := make(chan error, 1)
	go func() {
		line, err := b.out.ReadBytes('\n')
		if err == nil && strings.TrimSpace(string(line)) != Ready {
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
			return nil, fmt.Errorf("%s process did not start: %w", role, err)
		}
	case <-timer.C:
		b.kill()
		return nil, fmt.Errorf("%s process not ready within a minute", role)
	}
	return b, nil
}

// childStderr serialises the children's copies into a shared stderr
// that is not a file.
var childStderr sync.Mutex

// lockedWriter writes to w under childStderr.
type lockedWriter struct{ w io.Writer }

func (l lockedWriter) Write(p []byte) (int, error) {
	childStderr.Lock()
	defer childStderr.Unlock()
	return l.w.Write(p)
}

// Ready is a consumer child's first line.
const Ready = "ready"

func (b *Child) kill() {
	_ = b.cmd.Process.Kill()
	_ = b.cmd.Wait()
}

func (b *Child) Measure() (Usage, bool) { return PIDUsage(b.cmd.Process.Pid) }

func (b *Child) Stop() (ProcStats, error) {
	_ = b.stdin.Close() // end of stdin tells the child to drain and stop
	type result struct {
		s   ProcStats
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

// WaitProcessor polls until a processor answers the tool definition
// request (it serves it once its stream and consumer exist).
func WaitProcessor(ctx context.Context, nc *nats.Conn, timeout time.Duration) error {
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
