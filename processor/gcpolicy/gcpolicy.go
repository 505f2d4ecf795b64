// Package gcpolicy tunes the Go garbage collector of a process that
// serves triggers: serve and bench's processor child start it, so that
// bench measures what serve runs.
package gcpolicy

import (
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
)

// The garbage collector policy of a serving process (Start).
const (
	// Percent is the GC target while the live heap is small.
	Percent = 400
	// Headroom caps how far the heap may grow above the live heap
	// before a collection, once that is less than Percent allows.
	Headroom = 64 << 20
)

// PercentFor is the GC target for a live heap of live bytes:
// Percent, lowered so that the heap grows at most Headroom
// above the live heap, and never below the runtime's default of 100.
// 400 up to 16 MiB live, 200 at 32 MiB, 100 from 64 MiB on.
func PercentFor(live uint64) int {
	if live == 0 {
		return Percent
	}
	return int(min(max(Headroom*100/live, 100), Percent))
}

// Start sets the garbage collector target of a process that serves
// triggers, unless GOGC is set in the environment, and describes the
// policy in force for the logs. stop ends the tuning (the target stays
// where it is); serve stops it when it returns.
//
// Why: the processor's live heap is small (a few MiB: the registry's
// snapshots and the memos of recent catalogs) while every trigger leaves
// decoded payloads, encoded answers and NATS messages behind. At the
// runtime's default GOGC=100 the heap target stays near its 4 MiB floor and
// the collector runs all the time: in `skillstream bench` (50 skills) it
// took about a fifth of the processor's CPU, and GOGC=400 cut the CPU per
// trigger from 158 to 95 µs for a peak RSS of 25 -> 36 MiB. A fixed 400
// lets the heap reach five times the live heap, though: with 1,000 skills
// the peak RSS went from 87 to 190-198 MiB. So the target is retuned after
// every collection (PercentFor): 400 while the live heap is under 16 MiB,
// then at most 64 MiB of growth above it, down to the default 100. A soft
// memory limit (GOMEMLIMIT) is not set: with a live heap above a fixed
// limit the collector would run continuously. Operators who want another
// trade set GOGC (this then does nothing) or GOMEMLIMIT (honoured by the
// runtime as usual).
//
// serve and bench's processor child call it, so that bench measures what
// serve runs.
func Start() (describe string, stop func()) {
	if v := os.Getenv("GOGC"); v != "" {
		return "GOGC=" + v + " (environment)", func() {}
	}
	t := &gcTuner{sample: []metrics.Sample{{Name: "/gc/heap/live:bytes"}}}
	t.last.Store(Percent)
	debug.SetGCPercent(Percent)
	t.arm()
	return fmt.Sprintf("GOGC=%d while the live heap is under %d MiB, then at most %d MiB of growth above it (serve default)",
		Percent, Headroom/(Percent/100)>>20, Headroom>>20), func() { t.stopped.Store(true) }
}

// gcTuner retunes the GC target after each collection: a cleanup attached
// to an unreachable sentinel runs once the collector has found it, and
// arms the next one.
type gcTuner struct {
	stopped atomic.Bool
	last    atomic.Int64
	sample  []metrics.Sample // only one sentinel is armed at a time
}

type gcSentinel struct{ _ *byte } // has a pointer: never a tiny allocation

func (t *gcTuner) arm() {
	runtime.AddCleanup(new(gcSentinel), (*gcTuner).collected, t)
}

func (t *gcTuner) collected() {
	if t.stopped.Load() {
		return
	}
	metrics.Read(t.sample)
	if t.sample[0].Value.Kind() == metrics.KindUint64 {
		if pct := PercentFor(t.sample[0].Value.Uint64()); int64(pct) != t.last.Load() {
			debug.SetGCPercent(pct)
			t.last.Store(int64(pct))
		}
	}
	t.arm()
}
