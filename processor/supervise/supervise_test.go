package supervise

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/skillstream/skillstream/natstest"
)

func TestBackoffDelay(t *testing.T) {
	b := Backoff{Min: 100 * time.Millisecond, Max: time.Second}
	for attempt, want := range map[int]time.Duration{1: 100 * time.Millisecond, 2: 200 * time.Millisecond, 4: 800 * time.Millisecond, 5: time.Second, 40: time.Second} {
		for range 50 {
			if d := b.Delay(attempt); d < want/2 || d > want {
				t.Fatalf("attempt %d: %v, want between %v and %v", attempt, d, want/2, want)
			}
		}
	}
	if d := (Backoff{}).Delay(100); d > DefaultBackoffMax || d < DefaultBackoffMax/2 {
		t.Fatalf("default backoff at 100 attempts: %v", d)
	}
}

// serving is a started unit whose readiness and check the test drives.
type serving struct {
	ready  chan struct{}
	checks atomic.Int64
	fail   atomic.Pointer[error]
	stop   chan error
}

func newServing() *serving { return &serving{ready: make(chan struct{}), stop: make(chan error, 1)} }

func (s *serving) Run(ctx context.Context) error {
	select {
	case <-ctx.Done():
		return nil
	case err := <-s.stop:
		return err
	}
}
func (s *serving) Ready() <-chan struct{} { return s.ready }
func (s *serving) Check(context.Context) error {
	s.checks.Add(1)
	if e := s.fail.Load(); e != nil {
		return *e
	}
	return nil
}
func (s *serving) Notes() []string { return []string{"a note"} }

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// A unit that fails is retried and reported while the other serves; once
// its start succeeds it serves, without touching the other.
func TestUnitFailsAlone(t *testing.T) {
	good, late := newServing(), newServing()
	close(good.ready)
	var lateOK atomic.Bool
	var failed atomic.Int64
	reg := prometheus.NewRegistry()
	sup, err := New(Config{Backoff: Backoff{Min: time.Millisecond, Max: 5 * time.Millisecond}, CheckEvery: time.Nanosecond,
		Logger: quiet(), Registerer: reg}, []Unit{
		{Name: "good", Start: func(context.Context) (Serving, error) { return good, nil }},
		{Name: "late", Start: func(context.Context) (Serving, error) {
			if !lateOK.Load() {
				return nil, errors.New("consumer replaced")
			}
			return late, nil
		}, Failed: func(error) { failed.Add(1) }},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- sup.Run(ctx) }()
	natstest.Eventually(t, 10*time.Second, "late retried, good ready", func() error {
		r := sup.Readiness(ctx)
		if failed.Load() < 3 || r.Ready() || !r.Units[0].Ready || r.Units[1].Ready || !strings.Contains(r.Units[1].Why, "consumer replaced") {
			return fmt.Errorf("%d failures, %+v", failed.Load(), r)
		}
		return nil
	})
	if up := testutil.ToFloat64(sup.up.WithLabelValues("late")); up != 0 {
		t.Fatalf("late up %v", up)
	}
	if n := testutil.ToFloat64(sup.failures.WithLabelValues("late")); n < 3 {
		t.Fatalf("late failures %v", n)
	}
	lateOK.Store(true)
	close(late.ready)
	natstest.Eventually(t, 10*time.Second, "late serves", func() error {
		if r := sup.Readiness(ctx); !r.Ready() {
			return fmt.Errorf("%+v", r)
		}
		return nil
	})
	// A stop of a serving unit is a failure too: it is started again.
	late.stop <- errors.New("pull stopped")
	natstest.Eventually(t, 10*time.Second, "late started again", func() error {
		if n := testutil.ToFloat64(sup.failures.WithLabelValues("late")); sup.Readiness(ctx).Ready() && n >= 4 {
			return nil
		}
		return errors.New("not yet")
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// Run ends with the units' reasons once none can ever serve.
func TestNoUnitCanServe(t *testing.T) {
	sup, err := New(Config{Logger: quiet()}, []Unit{
		{Name: "a", Start: func(context.Context) (Serving, error) { return nil, Permanent(errors.New("limits too large")) }},
		{Name: "b", Start: func(context.Context) (Serving, error) { return nil, Permanent(errors.New("no registry")) }},
	})
	if err != nil {
		t.Fatal(err)
	}
	err = sup.Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no tenant can be served: a: limits too large") || !strings.Contains(err.Error(), "b: no registry") {
		t.Fatalf("Run: %v", err)
	}
}

// However many callers ask at once, a unit's check runs at most once per
// CheckEvery, and they all get its answer.
func TestReadinessShared(t *testing.T) {
	s := newServing()
	close(s.ready)
	sup, err := New(Config{CheckEvery: time.Hour, Logger: quiet()}, []Unit{{Start: func(context.Context) (Serving, error) { return s, nil }}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go sup.Run(ctx)
	natstest.Eventually(t, 10*time.Second, "ready", func() error {
		if !sup.Readiness(ctx).Ready() {
			return errors.New("not ready")
		}
		return nil
	})
	before := s.checks.Load()
	var wg sync.WaitGroup
	for range 64 {
		wg.Go(func() {
			for range 50 {
				if r := sup.Readiness(ctx); !r.Ready() || len(r.Units[0].Notes) != 1 {
					t.Errorf("%+v", r)
				}
			}
		})
	}
	wg.Wait()
	if n := s.checks.Load() - before; n != 0 {
		t.Fatalf("%d checks for 3,200 calls within CheckEvery, want the cached answer", n)
	}
}

func TestTransient(t *testing.T) {
	for _, c := range []struct {
		err  error
		want bool
	}{
		{context.DeadlineExceeded, true},
		{fmt.Errorf("skill store: %w", nats.ErrTimeout), true},
		{nats.ErrNoResponders, true},
		{fmt.Errorf("create stream: %w", &jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}), true},
		{fmt.Errorf("create consumer: %w", &jetstream.APIError{Code: 500, ErrorCode: 10012, Description: "can not update push consumer to pull based"}), false},
		{fmt.Errorf("create stream: %w", &jetstream.APIError{Code: 400, ErrorCode: 10065, Description: "subjects overlap with an existing stream"}), false},
		{Permanent(context.DeadlineExceeded), false},
		{errors.New("invalid processor config"), false},
		{nil, false},
	} {
		if got := Transient(c.err); got != c.want {
			t.Errorf("Transient(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

// A serving unit whose check fails is not ready, and its check is still
// asked at most once per CheckEvery.
func TestReadinessCachedWhenCheckFails(t *testing.T) {
	s := newServing()
	close(s.ready)
	gone := errors.New("consumer skillstream on stream SESSIONS: consumer not found")
	s.fail.Store(&gone)
	sup, err := New(Config{CheckEvery: time.Hour, Logger: quiet()}, []Unit{{Start: func(context.Context) (Serving, error) { return s, nil }}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go sup.Run(ctx)
	natstest.Eventually(t, 10*time.Second, "checked", func() error {
		if r := sup.Readiness(ctx); r.Units[0].Why != gone.Error() {
			return fmt.Errorf("%+v", r)
		}
		return nil
	})
	before := s.checks.Load()
	for range 1000 {
		if r := sup.Readiness(ctx); r.Ready() {
			t.Fatal("ready with its consumer gone")
		}
	}
	if n := s.checks.Load() - before; n != 0 {
		t.Fatalf("%d checks for 1,000 calls within CheckEvery", n)
	}
}
