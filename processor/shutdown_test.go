package processor

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

// stuck is a Skills whose Snapshot waits until release is closed.
type stuck struct {
	Skills
	release chan struct{}
}

func (s stuck) Snapshot(ctx context.Context, q catalog.Query) (catalog.Snapshot, error) {
	<-s.release
	return s.Skills.Snapshot(ctx, q)
}

// A trigger received but not started when the processor stops is handed
// back at once: the next processor answers it although the ack wait is an
// hour.
func TestStopHandsBackUnstartedTriggers(t *testing.T) {
	e := newEnv(t)
	e.writeSkill("a-skill", "A skill.")
	e.waitSkills("a-skill")
	cfg := e.cfg
	cfg.Workers, cfg.AckWait = 1, time.Hour
	release := make(chan struct{})
	p, err := New(e.srv.Connect(), stuck{e.registry, release}, cfg, WithLogger(quietLogger()), WithRegisterer(e.reg))
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
	second := w.publish("s2", events.KindPreStep, events.PreStep{V: 1, Session: "s2", Step: "1", Cwd: e.cwd, Tools: ourTool()}, nil)
	// The only worker is stuck on the first trigger; the second was
	// delivered and waits for it.
	poll(t, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		c, err := e.js.Consumer(ctx, DefaultStream, DefaultConsumer)
		if err != nil {
			return err
		}
		info, err := c.Info(ctx)
		if err != nil {
			return err
		}
		if info.NumAckPending != 2 {
			return fmt.Errorf("%d triggers delivered, want 2", info.NumAckPending)
		}
		return nil
	})
	cancel()
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
