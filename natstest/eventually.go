package natstest

import (
	"testing"
	"time"
)

// Eventually calls cond every 10 ms until it returns nil, and fails the
// test with what and cond's last error once timeout has passed: the
// poll-until-deadline wait that tests use instead of sleeping.
func Eventually(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		err := cond()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still failing after %v: %v", what, timeout, err)
		}
		<-tick.C
	}
}
