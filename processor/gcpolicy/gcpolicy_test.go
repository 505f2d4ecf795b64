package gcpolicy

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"testing"
	"time"
)

func TestGCPercentFor(t *testing.T) {
	cases := []struct {
		live uint64
		want int
	}{
		{0, 400}, {1 << 20, 400}, {16 << 20, 400}, {32 << 20, 200}, {48 << 20, 133},
		{64 << 20, 100}, {1 << 30, 100},
	}
	for _, c := range cases {
		if got := PercentFor(c.live); got != c.want {
			t.Errorf("live %d MiB: GOGC %d, want %d", c.live>>20, got, c.want)
		}
	}
}

func TestGCPolicyLeavesGOGCAlone(t *testing.T) {
	t.Setenv("GOGC", "150")
	prev := debug.SetGCPercent(150)
	defer debug.SetGCPercent(prev)
	desc, stop := Start()
	stop()
	if !strings.Contains(desc, "GOGC=150 (environment)") {
		t.Errorf("described as %q", desc)
	}
	if got := gogc(); got != 150 {
		t.Errorf("GOGC %d after the policy, want the environment's 150", got)
	}
}

func gogc() int {
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	return int(s[0].Value.Uint64())
}

func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// waitGOGC collects until the tuner has set the target the live heap calls
// for, and returns it.
func waitGOGC(t *testing.T, ok func(int) bool) int {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		runtime.GC()
		want := PercentFor(liveHeap())
		got := gogc()
		if got == want && ok(got) {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("GOGC %d, want %d for a live heap of %d MiB", got, want, liveHeap()>>20)
		}
		runtime.Gosched() // the tuner runs in the cleanup goroutine
	}
}

func TestGCPolicyFollowsTheLiveHeap(t *testing.T) {
	t.Setenv("GOGC", "")
	prev := debug.SetGCPercent(100)
	defer debug.SetGCPercent(prev)
	desc, stop := Start()
	defer stop()
	if !strings.Contains(desc, "serve default") {
		t.Errorf("described as %q", desc)
	}
	if got := gogc(); got != Percent {
		t.Fatalf("GOGC %d right after the policy, want %d", got, Percent)
	}
	// A live heap past the headroom brings the target down to 100...
	ballast := make([]byte, 2*Headroom)
	waitGOGC(t, func(p int) bool { return p == 100 })
	runtime.KeepAlive(ballast)
	ballast = nil
	// ... and it goes back up once the heap is small again.
	if got := waitGOGC(t, func(p int) bool { return p > 100 }); got > Percent {
		t.Fatal(fmt.Sprint("GOGC above the policy's ceiling: ", got))
	}
}
