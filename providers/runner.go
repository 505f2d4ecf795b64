package providers

import (
	"sync/atomic"
	"time"
)

// runner runs supervised provider calls on goroutines it keeps for a while
// once they are done: a provider call (parsing, walking folders) grows its
// goroutine's stack, and a goroutine started for every call would grow it
// again each time. A call is handed to an idle goroutine when one is
// waiting, and starts a new one otherwise, so calls never queue behind one
// another (a stuck provider holds only its own goroutine).
type runner struct {
	started atomic.Int64 // goroutines started, for tests

	idle chan func()     // unbuffered: a send succeeds only when a goroutine waits
	stop <-chan struct{} // closed when the registry closes: idle goroutines end
}

// runnerIdle is how long a goroutine waits for another call before it ends.
const runnerIdle = 10 * time.Second

func newRunner(stop <-chan struct{}) *runner { return &runner{idle: make(chan func()), stop: stop} }

// run runs fn on a goroutine of r's.
func (r *runner) run(fn func()) {
	select {
	case r.idle <- fn:
	default:
		r.started.Add(1)
		go r.loop(fn)
	}
}

func (r *runner) loop(fn func()) {
	t := time.NewTimer(runnerIdle)
	defer t.Stop()
	for {
		fn()
		t.Reset(runnerIdle)
		select {
		case fn = <-r.idle:
		case <-t.C:
			return
		case <-r.stop:
			return
		}
	}
}
