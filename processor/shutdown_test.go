package processor

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

// stuck is a Skills whose Snapshot tells entered (when not nil) that a
// trigger reached it, then waits until release is closed.
type stuck struct {
	Skills
	release chan struct{}
	entered chan struct{}
}

func (s stuck) Snapshot(ctx context.Context, q catalog.Query) (catalog.Snapshot, error) {
	if q.Cwd == "" {
		// The processor's own preparation at start (no working
		// directory): not a trigger, not stuck.
		return s.Skills.Snapshot(ctx, q)
	}
	if s.entered != nil {
		select {
		case s.entered <- struct{}{}:
		default:
		}
	}
	<-s.release
	return s.Skills.Snapshot(ctx, q)
}

// A trigger delivered to a stopping processor (its last pull request is
// still open) is handed back at once, not started: the next processor
// answers it although the ack wait is an hour.
func TestStopHandsBackUnstartedTriggers(t *testing.T) {
	e := newEnv(t)
	e.writeSkill("a-skill", "A skill.")
	e.waitSkills("a-skill")
	cfg := e.cfg
	cfg.Workers, cfg.AckWait = 2, time.Hour
	release, entered := make(chan struct{}), make(chan struct{}, 1)
	p, err := New(e.srv.Connect(), stuck{e.registry, release, entered}, cfg, WithLogger(quietLogger()), WithRegisterer(e.reg))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	<-p.Ready()
	m := e.mustMetrics(t)

	w := e.worker()
	first := w.publish("s1", events.KindPreStep, events.PreStep{V: 1, Session: "s1", Step: "1", Cwd: e.cwd, Tools: ourTool()}, nil)
	// One worker is stuck on the first trigger (started, not just
	// delivered: a delivery still on its way to a worker when the
	// processor stops is handed back too); the processor waits for more on
	// an open pull request for the other.
	select {
	case <-entered:
	case <-time.After(30 * time.Second):
		t.Fatal("the first trigger was not started")
	}
	consumer := func() (*jetstream.ConsumerInfo, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		c, err := e.js.Consumer(ctx, DefaultStream, DefaultConsumer)
		if err != nil {
			return nil, err
		}
		return c.Info(ctx)
	}
	poll(t, func() error {
		info, err := consumer()
		if err != nil {
			return err
		}
		if info.NumAckPending != 1 || info.NumWaiting == 0 {
			return fmt.Errorf("%d delivered, %d pull requests waiting; want 1 and one", info.NumAckPending, info.NumWaiting)
		}
		return nil
	})
	cancel()
	// Sent to the stopping processor's open pull request: handed back.
	second := w.publish("s2", events.KindPreStep, events.PreStep{V: 1, Session: "s2", Step: "1", Cwd: e.cwd, Tools: ourTool()}, nil)
	poll(t, func() error {
		if got := counter(t, m.handedBack); got != 1 {
			return fmt.Errorf("handed back %v, want 1", got)
		}
		return nil
	})
	close(release) // the started trigger finishes
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	e.expect(w.decision(first), events.OutcomeAppended, 1)
	if n := len(e.outputs("s2", events.KindCatalog)); n != 0 {
		t.Fatalf("the stopping processor answered the trigger it had not started (%d catalogs)", n)
	}

	// The next processor answers it without waiting an hour.
	e.start(func(c *Config, _ *options) { c.AckWait = time.Hour })
	d := w.decision(second)
	if d.Outcome != events.OutcomeAppended {
		t.Fatalf("handed-back trigger: %+v", d)
	}
}
