package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
)

// Consumer says where a phase's consumer (the processor under test or the
// baseline) runs and how to start it there. The caller builds the
// consumer; Measure runs it.
type Consumer struct {
	Role string // RoleProcessor or RoleBaseline
	Mode string // ModeChild, ModeInProcess or ModeExternal
	// CPUProfile, when set, is where the consumer's CPU profile goes; with
	// ModeChild this process writes its own share to CPUProfile+".bench".
	CPUProfile string
	// Child starts the consumer as a child process, InProcess in this
	// process; with ModeExternal neither is called and the processor must
	// already serve on the phase's connection.
	Child     func() (Proc, error)
	InProcess func() (Proc, error)
	// Projector, when set, starts the usage projector in a process of its
	// own beside the consumer (bench --usage-projection-cost
	// --projector-apart): its CPU from the load's start until Settle
	// returns is the phase's ProjectorCPUSeconds, measured apart from the
	// processor's. Settle waits until it has applied what the load
	// appended.
	Projector func() (Proc, error)
	Settle    func(ctx context.Context) error
}

// Measure starts the phase's consumer where c says, plays the load of p
// against it on nc for at most duration (tick reports progress), measures
// the consumer's CPU and memory during the load, and stops it.
func Measure(ctx context.Context, nc *nats.Conn, c Consumer, p Plan, duration time.Duration, changes *Changes, tick func(Progress)) (*PhaseReport, error) {
	var (
		proc Proc
		err  error
	)
	switch c.Mode {
	case ModeChild:
		proc, err = c.Child()
	case ModeInProcess:
		proc, err = c.InProcess()
	default: // an external processor
		err = WaitProcessor(ctx, nc, time.Minute)
	}
	if err != nil {
		return nil, err
	}
	var proj Proc
	if c.Projector != nil {
		if proj, err = c.Projector(); err != nil {
			if proc != nil {
				_, _ = proc.Stop()
			}
			return nil, fmt.Errorf("usage projector process: %w", err)
		}
	}
	stopAll := func() {
		if proj != nil {
			_, _ = proj.Stop()
		}
		if proc != nil {
			_, _ = proc.Stop()
		}
	}
	stopProfile := func() {}
	if c.CPUProfile != "" && (c.Mode == ModeChild || c.Mode == ModeInProcess) {
		path := c.CPUProfile
		if c.Mode == ModeChild {
			path += ".bench" // this process's share: NATS server and load generator
		}
		if stopProfile, err = StartCPUProfile(path); err != nil {
			stopAll()
			return nil, err
		}
	}

	self0 := SelfUsage()
	var pu0, ju0 Usage
	measured, projMeasured := false, false
	if proc != nil {
		pu0, measured = proc.Measure()
	}
	if proj != nil {
		ju0, projMeasured = proj.Measure()
	}
	ph, err := RunPhase(ctx, nc, p, duration, changes, tick)
	if err != nil {
		stopProfile()
		stopAll()
		return nil, err
	}
	var pu1 Usage
	if measured {
		pu1, measured = proc.Measure()
	}
	self1 := SelfUsage()
	stopProfile()
	if measured {
		ph.SetCPU(pu1.CPU - pu0.CPU)
		ph.RSSBytes, ph.PeakRSSBytes = pu1.RSS, pu1.HWM
	}
	if proj != nil {
		// The projector's work on this load ends once it has applied the
		// load's records (it writes them every few seconds): measured then.
		if c.Settle != nil {
			if err := c.Settle(ctx); err != nil {
				ph.ErrorSamples = append(ph.ErrorSamples, "usage projector: "+err.Error())
			}
		}
		var ju1 Usage
		if projMeasured {
			ju1, projMeasured = proj.Measure()
		}
		if projMeasured {
			ph.SetProjectorCPU(ju1.CPU - ju0.CPU)
		}
		st, err := proj.Stop()
		if err != nil {
			ph.ErrorSamples = append(ph.ErrorSamples, "usage projector: "+err.Error())
		}
		if st.FirstError != "" {
			ph.ErrorSamples = append(ph.ErrorSamples, "usage projector: "+st.FirstError)
		}
	}
	switch c.Mode {
	case ModeChild:
		ph.CPUScope = c.Role + " process (child, loopback)"
		ph.BenchCPUSeconds = (self1.CPU - self0.CPU).Seconds()
	case ModeInProcess:
		ph.CPUScope = "whole process: NATS server, load generator and " + c.Role
	default:
		ph.CPUScope = "not measured (external processor)"
	}
	if proc != nil {
		st, err := proc.Stop()
		if err != nil {
			ph.ErrorSamples = append(ph.ErrorSamples, c.Role+": "+err.Error())
		}
		if st.FirstError != "" {
			ph.ErrorSamples = append(ph.ErrorSamples, c.Role+": "+st.FirstError)
		}
		ph.Conflicts = int64(st.Conflicts)
		if ph.PeakRSSBytes == 0 {
			ph.PeakRSSBytes = st.PeakRSS
		}
		if c.Role == RoleProcessor {
			ph.Processor = &st
		}
		ph.Heap = st.Heap
	}
	return ph, nil
}

// StartCPUProfile writes this process's CPU profile to path until stop is
// called.
func StartCPUProfile(path string) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("cpu profile: %w", err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }, nil
}

// Serve is a consumer child's side once p runs: say Ready on stdout, run
// until stdin (what is left of it after the spec, which dec read) ends or
// ctx does, stop p and print its statistics as one JSON line.
func Serve(ctx context.Context, p Proc, dec *json.Decoder, stdin io.Reader, stdout io.Writer) error {
	var m0 runtime.MemStats
	runtime.ReadMemStats(&m0)
	if _, err := fmt.Fprintln(stdout, Ready); err != nil {
		_, _ = p.Stop()
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
	heap := heapSince(&m0) // the phase's, before stopping adds its own
	s, err := p.Stop()
	if err != nil {
		return err
	}
	s.Heap = heap
	return json.NewEncoder(stdout).Encode(s)
}
