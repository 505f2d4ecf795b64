package processor

import (
	"context"
	"testing"
	"time"
)

// A trigger rate holds a second's worth of tokens, refills at its rate,
// and tells the pull loop how many triggers it may ask for.
func TestTriggerRate(t *testing.T) {
	now := time.Unix(1000, 0)
	r := newTriggerRate(10)
	r.now = func() time.Time { return now }
	ctx := context.Background()
	if n, err := r.wait(ctx, 256); err != nil || n != 10 {
		t.Fatalf("a full bucket: %d %v, want 10", n, err)
	}
	for range 10 {
		r.take()
	}
	now = now.Add(300 * time.Millisecond)
	if n, _ := r.wait(ctx, 256); n != 3 {
		t.Fatalf("after 0.3 s: %d, want 3", n)
	}
	if n, _ := r.wait(ctx, 2); n != 2 {
		t.Fatalf("asking for 2: %d", n)
	}
	now = now.Add(time.Hour)
	if n, _ := r.wait(ctx, 256); n != 10 {
		t.Fatalf("after an hour: %d, want the bucket's 10", n)
	}
	// Empty: wait waits until a token is due, or the context ends.
	for range 10 {
		r.take()
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := r.wait(cctx, 1); err == nil {
		t.Fatal("an empty bucket gave a token")
	}
	now = now.Add(100 * time.Millisecond)
	if n, err := r.wait(ctx, 5); err != nil || n != 1 {
		t.Fatalf("0.1 s later at 10/s: %d %v, want 1", n, err)
	}
	// No bound: whatever is asked.
	var none *triggerRate
	if n, _ := none.wait(ctx, 7); n != 7 {
		t.Fatalf("no bound: %d", n)
	}
	none.take()
}
