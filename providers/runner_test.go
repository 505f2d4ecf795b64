package providers

import (
	"runtime"
	"sync"
	"testing"
	"time"
)

// The runner runs every call, concurrently when they overlap (a call that
// blocks does not hold up others), reuses its goroutines, and ends them
// once stopped.
func TestRunner(t *testing.T) {
	before := runtime.NumGoroutine()
	stop := make(chan struct{})
	r := newRunner(stop)

	block := make(chan struct{})
	blocked := make(chan struct{})
	r.run(func() { close(blocked); <-block })
	<-blocked
	var wg sync.WaitGroup
	for range 100 {
		wg.Add(1)
		r.run(wg.Done)
		wg.Wait() // one at a time: an idle goroutine takes the next call
	}
	// Each call but a few finds the previous call's goroutine waiting
	// (a call may come before that goroutine is back waiting: a new one).
	if n := r.started.Load(); n > 50 {
		t.Fatalf("%d goroutines started for 101 calls, 100 of them one after the other", n)
	}
	close(block)

	close(stop)
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines left after stop, %d before", runtime.NumGoroutine(), before)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
