package processor

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
)

// TestPullWatch walks the watchdog through the outcomes of pull requests:
// what it does after each, and when it has the consumer looked up again.
func TestPullWatch(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	type pull struct {
		began, ended time.Duration
		got          int
		err          error
		down         bool // the connection is down
		want         pullStep
	}
	cases := []struct {
		name  string
		pulls []pull
	}{
		{"answered requests never lead to a look-up", []pull{
			{0, time.Second, 0, nil, false, pullAgain},
			{time.Second, 2 * time.Second, 3, nil, false, pullAgain},
			{10 * time.Second, 11 * time.Second, 0, nil, false, pullAgain},
		}},
		{"a leader change is pulled again at once", []pull{
			{0, 100 * time.Millisecond, 0, jetstream.ErrConsumerLeadershipChanged, false, pullNow},
		}},
		{"silence lasting the bound leads to a look-up, then backs off", []pull{
			{0, time.Second, 0, jetstream.ErrNoHeartbeat, false, pullAgain},
			{time.Second, 2 * time.Second, 0, jetstream.ErrNoHeartbeat, false, pullAgain},
			{4 * time.Second, 5 * time.Second, 0, jetstream.ErrNoHeartbeat, false, pullRelookup},
			// looked up at 5s: the next look-up waits the backoff (5s)
			{5 * time.Second, 6 * time.Second, 0, jetstream.ErrNoHeartbeat, false, pullAgain},
			{9 * time.Second, 10 * time.Second, 0, jetstream.ErrNoHeartbeat, false, pullRelookup},
			// then 10s
			{10 * time.Second, 15 * time.Second, 0, jetstream.ErrNoHeartbeat, false, pullAgain},
			{19 * time.Second, 20 * time.Second, 0, jetstream.ErrNoHeartbeat, false, pullRelookup},
		}},
		{"failures lasting the bound lead to a look-up", []pull{
			{0, 0, 0, nats.ErrNoResponders, false, pullAgain},
			{5 * time.Second, 5 * time.Second, 0, nats.ErrNoResponders, false, pullRelookup},
		}},
		{"an answer in between starts the bound anew", []pull{
			{0, time.Second, 0, jetstream.ErrNoHeartbeat, false, pullAgain},
			{4 * time.Second, 5 * time.Second, 2, jetstream.ErrNoHeartbeat, false, pullAgain},
			{5 * time.Second, 6 * time.Second, 0, jetstream.ErrNoHeartbeat, false, pullAgain},
			{8 * time.Second, 9 * time.Second, 0, jetstream.ErrNoHeartbeat, false, pullAgain},
			{9 * time.Second, 10 * time.Second, 0, jetstream.ErrNoHeartbeat, false, pullRelookup},
		}},
		{"a deleted consumer is looked up at once", []pull{
			{0, 10 * time.Millisecond, 0, jetstream.ErrConsumerDeleted, false, pullRelookup},
		}},
		{"even when the request it ended had delivered triggers", []pull{
			{0, 10 * time.Millisecond, 2, jetstream.ErrConsumerDeleted, false, pullRelookup},
		}},
		{"no look-up while the connection is down, and the bound runs from its return", []pull{
			{0, time.Second, 0, jetstream.ErrNoHeartbeat, true, pullAgain},
			{10 * time.Second, 11 * time.Second, 0, jetstream.ErrNoHeartbeat, true, pullAgain},
			{11 * time.Second, 12 * time.Second, 0, jetstream.ErrNoHeartbeat, false, pullAgain},
			{16 * time.Second, 17 * time.Second, 0, jetstream.ErrNoHeartbeat, false, pullRelookup},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := pullWatch{bound: 5 * time.Second}
			for i, p := range c.pulls {
				got := w.pulled(at(p.began), at(p.ended), p.got, p.err, !p.down)
				if got != p.want {
					t.Fatalf("pull %d: step %d, want %d", i, got, p.want)
				}
				if got == pullRelookup {
					w.lookedUp(at(p.ended))
				}
			}
		})
	}
}

// TestPullResumesAfterConsumerDeleted deletes the consumer under a running
// processor: the member notices that its pull requests fail, creates the
// consumer again (provisioning is on), counts it, and answers the triggers
// published afterwards. Before the watchdog the member went on failing
// pull requests silently and never answered again.
func TestPullResumesAfterConsumerDeleted(t *testing.T) {
	e := newEnv(t)
	e.writeSkill("a-skill", "A skill.")
	p := e.start(func(c *Config, _ *options) { c.PullStallAfter = pullExpiry })
	w := e.worker()
	if d := w.preStep(events.PreStep{Session: "gone-1", Step: "1", Cwd: e.cwd, Tools: ourTool()}); d.Outcome != events.OutcomeAppended {
		t.Fatalf("before: %+v", d)
	}
	for i := range 2 { // and again, once the first deletion was answered
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		err := e.js.DeleteConsumer(ctx, DefaultStream, DefaultConsumer)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		step := fmt.Sprint(i + 2)
		if d := w.preStep(events.PreStep{Session: "gone-1", Step: step, Cwd: e.cwd, Tools: ourTool()}); !answered(d) {
			t.Fatalf("step %s after the consumer was deleted: %+v", step, d)
		}
	}
	if n := counter(t, p.m.pullRestarts.WithLabelValues(restartConsumerGone)); n < 2 {
		t.Errorf("pull_restarts_total{reason=consumer_gone} = %v, want at least 2", n)
	}
}

// TestPullReportsConsumerGoneWithoutProvisioning deletes the consumer of a
// processor whose consumer is the infrastructure's: the member does not
// create it, but counts and reports it, and pulls again once it is back.
func TestPullReportsConsumerGoneWithoutProvisioning(t *testing.T) {
	e := newEnv(t)
	e.writeSkill("a-skill", "A skill.")
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	infra := e.cfg.WithDefaults()
	if _, err := e.js.CreateStream(ctx, infra.streamConfig()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.js.CreateConsumer(ctx, DefaultStream, infra.consumerConfig()); err != nil {
		t.Fatal(err)
	}
	p := e.start(func(c *Config, _ *options) { c.NoProvision = true; c.PullStallAfter = pullExpiry })
	if err := e.js.DeleteConsumer(ctx, DefaultStream, DefaultConsumer); err != nil {
		t.Fatal(err)
	}
	poll(t, func() error {
		if n := counter(t, p.m.pullRestarts.WithLabelValues(restartConsumerGone)); n == 0 {
			return errors.New("the consumer's loss not counted")
		}
		return nil
	})
	if _, err := e.js.Consumer(ctx, DefaultStream, DefaultConsumer); !errors.Is(err, jetstream.ErrConsumerNotFound) {
		t.Fatalf("a member without provisioning created the consumer: %v", err)
	}
	if _, err := e.js.CreateConsumer(ctx, DefaultStream, infra.consumerConfig()); err != nil {
		t.Fatal(err)
	}
	w := e.worker()
	if d := w.preStep(events.PreStep{Session: "infra-1", Step: "1", Cwd: e.cwd, Tools: ourTool()}); d.Outcome != events.OutcomeAppended {
		t.Fatalf("after the consumer came back: %+v", d)
	}
}

// TestPullResumesAfterConsumerLeaderChange makes the consumer's leader step
// down, again and again, under a processor on a 3-node cluster: the pull
// requests the old leader held are gone with its leadership. The member
// pulls again from the new leader (the consumer has a waiting pull request
// again), counts the change, and answers a trigger published after each.
func TestPullResumesAfterConsumerLeaderChange(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test skipped in -short mode")
	}
	c := natstest.StartCluster(t, 3)
	p, _, cwd := clusterProcessor(t, c, Config{Replicas: 3, AckWait: 2 * time.Second, NakDelay: 100 * time.Millisecond, Workers: 4, PullStallAfter: pullExpiry}, 0)
	js, err := jetstream.New(c.Connect(1))
	if err != nil {
		t.Fatal(err)
	}
	wnc := c.Connect(2)
	wjs, err := jetstream.New(wnc)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		waitingPulls(t, js, "start")
		was, now := c.StepDownConsumer(server.DEFAULT_GLOBAL_ACCOUNT, DefaultStream, DefaultConsumer)
		waitingPulls(t, js, fmt.Sprintf("stepdown %d (node %d to node %d)", i+1, was, now))
		ps := events.PreStep{V: 1, Session: "lead-1", Step: fmt.Sprint(i + 1), Cwd: cwd, Tools: ourTool()}
		d, err := askOnce(wnc, wjs, ps, 10*time.Second)
		if err != nil {
			t.Fatalf("stepdown %d: %v", i+1, err)
		}
		if !answered(d) {
			t.Fatalf("stepdown %d: %+v", i+1, d)
		}
	}
	if n := counter(t, p.m.pullRestarts.WithLabelValues(restartLeaderChange)); n == 0 {
		t.Errorf("no leader change counted in pull_restarts_total")
	}
	t.Logf("pull restarts: %v leader_change, %v no_heartbeat, %v failing", counter(t, p.m.pullRestarts.WithLabelValues(restartLeaderChange)),
		counter(t, p.m.pullRestarts.WithLabelValues(restartNoHeartbeat)), counter(t, p.m.pullRestarts.WithLabelValues(restartFailing)))
}

// answered reports whether d answers a pre-step with a catalog, new or
// unchanged.
func answered(d events.Decision) bool {
	return d.Outcome == events.OutcomeAppended || d.Outcome == events.OutcomeUnchanged
}

// askOnce publishes a pre-step once and waits up to wait for its answer.
func askOnce(nc *nats.Conn, js jetstream.JetStream, ps events.PreStep, wait time.Duration) (events.Decision, error) {
	data, err := events.Encode(events.Msgpack, ps)
	if err != nil {
		return events.Decision{}, err
	}
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return events.Decision{}, err
	}
	defer sub.Unsubscribe()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if _, err := js.PublishMsg(ctx, &nats.Msg{
		Subject: events.Subject(events.DefaultPrefix, ps.Session, events.KindPreStep),
		Header:  nats.Header{events.HeaderReplyInbox: []string{inbox}},
		Data:    data,
	}); err != nil {
		return events.Decision{}, fmt.Errorf("publish: %w", err)
	}
	reply, err := sub.NextMsg(wait)
	if err != nil {
		return events.Decision{}, fmt.Errorf("%s/%s: no answer within %v: %w", ps.Session, ps.Step, wait, err)
	}
	return events.DecodeDecision(events.Msgpack, reply.Data)
}

// TestPullSaysWhenEveryWorkerIsBusy holds the only worker in a slow
// provider: the member does not pull meanwhile, by design, and says so
// once the wait passes the stall bound, so that it is not mistaken for a
// member that stopped pulling.
func TestPullSaysWhenEveryWorkerIsBusy(t *testing.T) {
	e := newEnv(t)
	e.flaky.offer.Store(true)
	var logs lockedBuffer
	cfg := e.cfg
	cfg.Workers = 1
	cfg.PullStallAfter = pullExpiry
	p, err := New(e.srv.Connect(), e.registry, cfg, WithLogger(slog.New(slog.NewTextHandler(&logs, nil))), WithRegisterer(e.reg))
	if err != nil {
		t.Fatal(err)
	}
	runUntilCleanup(t, p)
	select {
	case <-p.Ready():
	case <-time.After(waitTimeout):
		t.Fatal("processor not ready")
	}
	e.flaky.delay.Store(int64(5 * time.Second))
	w := e.worker()
	pub := w.publish("busy-1", events.KindPreStep, events.PreStep{V: events.Version, Session: "busy-1", Step: "1", Tools: ourTool()}, nil)
	poll(t, func() error {
		if !strings.Contains(logs.String(), "every worker busy") {
			return errors.New("no word of the busy workers in the log")
		}
		return nil
	})
	e.flaky.delay.Store(0)
	if d := w.decision(pub); !answered(d) {
		t.Fatalf("the held pre-step: %+v", d)
	}
	if n := counter(t, p.m.pullRestarts.WithLabelValues(restartNoHeartbeat)) + counter(t, p.m.pullRestarts.WithLabelValues(restartFailing)); n != 0 {
		t.Errorf("busy workers counted as %v pull restarts", n)
	}
}

// lockedBuffer is a bytes.Buffer safe for a logger and a test at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(b []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(b)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
