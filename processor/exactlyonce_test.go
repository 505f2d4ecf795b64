package processor

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillstream/skillstream/events"
)

// crashOnce returns a hook that simulates a crash after the first append to
// session sid: the output is durable, the trigger neither answered nor
// acknowledged.
func crashOnce(sid string) (func(*Config, *options), *atomic.Int32) {
	var crashes atomic.Int32
	return func(c *Config, o *options) {
		c.AckWait = 300 * time.Millisecond
		o.hooks.afterAppend = func(s string, seq uint64) error {
			if s == sid && crashes.CompareAndSwap(0, 1) {
				return errCrash
			}
			return nil
		}
	}, &crashes
}

func TestCrashBetweenAppendAndAck(t *testing.T) {
	e := newEnv(t)
	e.writeSkill("a-skill", "A skill.")
	e.waitSkills("a-skill")

	t.Run("pre-step", func(t *testing.T) {
		hook, crashes := crashOnce("crash-pre")
		e.start(hook)
		w := e.worker()
		// The first delivery appends and "crashes"; the redelivery finds the
		// catalog it caused and answers with it.
		d := w.preStep(events.PreStep{Session: "crash-pre", Step: "1", Cwd: e.cwd, Tools: ourTool()})
		if crashes.Load() != 1 {
			t.Fatal("the hook did not crash")
		}
		e.expect(d, events.OutcomeAppended, 1)
		m := e.mustMetrics(t)
		if counter(t, m.redeliveries.WithLabelValues("pre-step")) < 1 || counter(t, m.duplicates.WithLabelValues("pre-step")) != 1 {
			t.Fatalf("redeliveries %v, duplicates %v", counter(t, m.redeliveries.WithLabelValues("pre-step")), counter(t, m.duplicates.WithLabelValues("pre-step")))
		}
	})
}

func TestCrashBetweenAppendAndAckSkillCall(t *testing.T) {
	e := newEnv(t)
	e.writeSkill("a-skill", "A skill.")
	e.waitSkills("a-skill")
	hook, crashes := crashOnce("crash-call")
	e.start(hook)
	w := e.worker()
	r := w.call(events.SkillCall{Session: "crash-call", Call: "c1", Cwd: e.cwd, Args: events.SkillArgs{Name: "a-skill"}})
	if crashes.Load() != 1 {
		t.Fatal("the hook did not crash")
	}
	if r.IsError {
		t.Fatalf("result %+v", r)
	}
	if n := len(e.outputs("crash-call", events.KindToolResult)); n != 1 {
		t.Fatalf("%d results stored, want 1", n)
	}
}

func TestWorkerRetries(t *testing.T) {
	e := newEnv(t)
	e.writeSkill("a-skill", "A skill.")
	e.writeSkill("b-skill", "B skill.")
	e.waitSkills("a-skill", "b-skill")
	e.start()
	w := e.worker()
	const sid = "retry"

	// The same step published again (a worker that lost the answer) is
	// answered with the catalog already appended.
	ps := events.PreStep{Session: sid, Step: "1", Cwd: e.cwd, Tools: ourTool()}
	d1 := w.preStep(ps)
	e.expect(d1, events.OutcomeAppended, 1)
	d2 := w.preStep(ps)
	e.expect(d2, events.OutcomeAppended, 1)
	if !reflect.DeepEqual(d1.Catalog, d2.Catalog) || d1.TriggerSeq == d2.TriggerSeq {
		t.Fatalf("retry answered differently:\n%+v\n%+v", d1, d2)
	}

	// Parallel calls: c1 and c2 both answered, then c1 retried while c2's
	// result is the newest. The retry gets c1's result; nothing is appended.
	r1 := w.call(events.SkillCall{Session: sid, Call: "c1", Cwd: e.cwd, Args: events.SkillArgs{Name: "a-skill"}})
	r2 := w.call(events.SkillCall{Session: sid, Call: "c2", Cwd: e.cwd, Args: events.SkillArgs{Name: "b-skill"}})
	// The skill changes on disk between the call and its retry: the retry
	// still gets the original answer.
	e.removeSkill("a-skill")
	e.waitSkills("b-skill")
	again := w.call(events.SkillCall{Session: sid, Call: "c1", Cwd: e.cwd, Args: events.SkillArgs{Name: "a-skill"}})
	if again.Text != r1.Text || again.Call != "c1" || again.IsError {
		t.Fatalf("retry of c1 answered %+v, want %+v", again, r1)
	}
	again2 := w.call(events.SkillCall{Session: sid, Call: "c2", Cwd: e.cwd, Args: events.SkillArgs{Name: "b-skill"}})
	if again2.Text != r2.Text {
		t.Fatalf("retry of c2 answered %q", again2.Text)
	}
	if n := len(e.outputs(sid, events.KindToolResult)); n != 2 {
		t.Fatalf("%d results stored, want 2", n)
	}
	if got := counter(t, e.mustMetrics(t).duplicates.WithLabelValues("skill-call")); got != 2 {
		t.Fatalf("duplicate counter %v, want 2", got)
	}
}

func TestConcurrentWorkerAppend(t *testing.T) {
	e := newEnv(t)
	e.writeSkill("a-skill", "A skill.")
	e.waitSkills("a-skill")
	w := e.worker()
	const sid = "occ"
	var noted atomic.Uint64
	e.start(func(c *Config, o *options) {
		// Before the first append attempt, the worker appends to the session:
		// the append must be refused and the decision taken again.
		o.hooks.beforeAppend = func(s string, attempt int) error {
			if s == sid && attempt == 1 {
				noted.Store(w.note(sid, "concurrent"))
			}
			return nil
		}
	})
	d := w.preStep(events.PreStep{Session: sid, Step: "1", Cwd: e.cwd, Tools: ourTool()})
	e.expect(d, events.OutcomeAppended, 1)
	if got := counter(t, e.mustMetrics(t).conflicts); got < 1 {
		t.Fatalf("conflict counter %v, want >= 1", got)
	}
	cat := e.outputs(sid, events.KindCatalog)[0]
	if cat.Sequence <= noted.Load() {
		t.Fatalf("catalog at %d, concurrent event at %d", cat.Sequence, noted.Load())
	}
}

// TestConsumerGroup runs two processors on one durable consumer under many
// concurrent sessions. Each session's worker alternates the tool view, so
// every step appends a catalog (initial, tombstone, replacement, ...); a
// worker that gets no answer in time publishes its step again, as the
// protocol says. Every step must be answered and appear exactly once.
func TestConsumerGroup(t *testing.T) {
	sessions, steps := 200, 20
	if testing.Short() {
		sessions, steps = 20, 5
	}
	e := newEnv(t)
	e.withoutFlaky()
	e.writeSkill("a-skill", "A skill.")
	e.waitSkills("a-skill")
	e.start()
	e.start()
	w := e.worker()

	hidden := []events.Tool{{Name: "bash", Owner: "agent"}}
	var retries atomic.Int32
	errs := make(chan error, sessions)
	var wg sync.WaitGroup
	for s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sid := fmt.Sprintf("group-%d", s)
			for step := 1; step <= steps; step++ {
				tools := ourTool()
				if step%2 == 0 {
					tools = hidden
				}
				ps := events.PreStep{V: 1, Session: sid, Step: fmt.Sprint(step), Cwd: e.cwd, Tools: tools}
				// The worker also appends to its session while the step is
				// handled (optimistic concurrency conflicts), and now and then
				// publishes a step twice at once (both copies race).
				noted := make(chan struct{})
				go func() {
					defer close(noted)
					w.note(sid, "user message")
				}()
				twice := (s+step)%7 == 0
				ds, err := w.ask(ps, twice, &retries)
				<-noted
				if err != nil {
					errs <- err
					return
				}
				for _, d := range ds {
					if d.Outcome != events.OutcomeAppended || d.Catalog == nil || d.Catalog.Step != ps.Step {
						errs <- fmt.Errorf("%s step %d: %+v", sid, step, d)
						return
					}
					if !reflect.DeepEqual(d.Catalog, ds[0].Catalog) {
						errs <- fmt.Errorf("%s step %d: two different catalogs answered", sid, step)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for s := range sessions {
		sid := fmt.Sprintf("group-%d", s)
		cats := e.catalogs(sid)
		if len(cats) != steps {
			t.Fatalf("%s: %d catalogs, want %d", sid, len(cats), steps)
		}
		for i, c := range cats {
			if c.Step != fmt.Sprint(i+1) {
				t.Fatalf("%s: catalog %d is for step %s", sid, i, c.Step)
			}
		}
	}
	m := e.mustMetrics(t)
	t.Logf("%d triggers, %d worker retries, %v conflicts, %v duplicates", sessions*steps, retries.Load(),
		counter(t, m.conflicts), counter(t, m.duplicates.WithLabelValues("pre-step")))
}

// ask publishes a pre-step (twice at once if twice is set) and waits for its
// answers, publishing the same step again (a new message) when no answer
// comes in time.
func (w *worker) ask(ps events.PreStep, twice bool, retries *atomic.Int32) ([]events.Decision, error) {
	data, err := events.Encode(events.Msgpack, ps)
	if err != nil {
		return nil, err
	}
	inbox := w.nc.NewInbox()
	sub, err := w.nc.SubscribeSync(inbox)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	copies := 1
	if twice {
		copies = 2
	}
	var out []events.Decision
	for attempt := 1; attempt <= 5 && len(out) < copies; attempt++ {
		if attempt > 1 {
			retries.Add(1)
		}
		for range copies - len(out) {
			m := &nats.Msg{
				Subject: events.Subject(events.DefaultPrefix, ps.Session, events.KindPreStep),
				Header:  nats.Header{events.HeaderReplyInbox: []string{inbox}},
				Data:    data,
			}
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			_, err := w.js.PublishMsg(ctx, m)
			cancel()
			if err != nil {
				return nil, fmt.Errorf("publish %s/%s: %w", ps.Session, ps.Step, err)
			}
		}
		for len(out) < copies {
			reply, err := sub.NextMsg(10 * time.Second)
			if errors.Is(err, nats.ErrTimeout) {
				break
			}
			if err != nil {
				return nil, err
			}
			d, err := events.DecodeDecision(events.Msgpack, reply.Data)
			if err != nil {
				return nil, err
			}
			out = append(out, d)
		}
	}
	if len(out) < copies {
		return nil, fmt.Errorf("%s/%s: %d of %d answers after 5 attempts", ps.Session, ps.Step, len(out), copies)
	}
	return out, nil
}

func TestDeadLetter(t *testing.T) {
	e := newEnv(t)
	e.writeSkill("a-skill", "A skill.")
	e.waitSkills("a-skill")
	var attempts atomic.Int32
	e.start(func(c *Config, o *options) {
		c.MaxDeliver = 3
		// Every append to this session fails, as if the stream were
		// unavailable: retried with a delay, then dead-lettered.
		o.hooks.beforeAppend = func(s string, _ int) error {
			if s == "doomed" {
				attempts.Add(1)
				return errors.New("stream unavailable")
			}
			return nil
		}
	})
	w := e.worker()
	d := w.preStep(events.PreStep{Session: "doomed", Step: "1", Cwd: e.cwd, Tools: ourTool()})
	if d.Outcome != events.OutcomeIncomplete || d.Error == nil || d.Error.Code != codeUnavailable || !strings.Contains(d.Error.Message, "stream unavailable") {
		t.Fatalf("dead letter answered %+v", d)
	}
	e.waitSettled()
	m := e.mustMetrics(t)
	if attempts.Load() != 3 || counter(t, m.deadLetters.WithLabelValues("pre-step")) != 1 ||
		counter(t, m.transient.WithLabelValues("pre-step")) != 2 || counter(t, m.redeliveries.WithLabelValues("pre-step")) != 2 {
		t.Fatalf("attempts %d, dead letters %v, transient %v, redeliveries %v", attempts.Load(),
			counter(t, m.deadLetters.WithLabelValues("pre-step")), counter(t, m.transient.WithLabelValues("pre-step")),
			counter(t, m.redeliveries.WithLabelValues("pre-step")))
	}
	if n := len(e.outputs("doomed", events.KindCatalog)); n != 0 {
		t.Fatalf("%d catalogs", n)
	}
	// Other sessions are unaffected.
	e.expect(w.preStep(events.PreStep{Session: "fine", Step: "1", Cwd: e.cwd, Tools: ourTool()}), events.OutcomeAppended, 1)
}

// TestSlowProvider: a snapshot that takes several ack waits is kept alive
// by progress heartbeats: the trigger is not redelivered meanwhile.
func TestSlowProvider(t *testing.T) {
	e := newEnv(t)
	e.writeSkill("a-skill", "A skill.")
	e.waitSkills("a-skill")
	e.start(func(c *Config, _ *options) { c.AckWait = 300 * time.Millisecond })
	e.flaky.delay.Store(int64(time.Second))
	w := e.worker()
	d := w.preStep(events.PreStep{Session: "slow", Step: "1", Cwd: e.cwd, Tools: ourTool()})
	e.expect(d, events.OutcomeAppended, 1)
	e.waitSettled()
	if got := counter(t, e.mustMetrics(t).redeliveries.WithLabelValues("pre-step")); got != 0 {
		t.Fatalf("%v redeliveries of a slow trigger", got)
	}
}

func TestMetricsExported(t *testing.T) {
	e := newEnv(t)
	e.start()
	w := e.worker()
	w.preStep(events.PreStep{Session: "m", Step: "1", Tools: ourTool()})
	families, err := e.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	have := map[string]bool{}
	for _, f := range families {
		have[f.GetName()] = true
	}
	for _, name := range []string{"skillstream_triggers_total", "skillstream_stage_seconds"} {
		if !have[name] {
			t.Errorf("metric %s not exported (have %v)", name, have)
		}
	}
}
