package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
)

// TestServeSIGTERMUnderLoad sends a real SIGTERM to the process while 100
// triggers are in flight. serve must finish what it took, exit 0 and leave
// an intact store; after a restart on the same store every trigger has
// exactly one output in its session log, and a worker retrying a trigger it
// got no answer for is answered with that output.
func TestServeSIGTERMUnderLoad(t *testing.T) {
	const sessions = 50 // a pre-step and a skill call each: 100 triggers
	root := spec4Skills(t)
	data, cwd := t.TempDir(), t.TempDir()
	port := freePort(t)
	// An ack wait far beyond the test's deadlines: a trigger left
	// unacknowledged at shutdown would never come back in time, so draining
	// after the restart proves serve finished, or handed back at once,
	// every trigger it took.
	flags := []string{"--workers", "4", "--ack-wait", "1h"}
	s := startServeAt(t, port, data, root, flags...)

	nc := s.connect(t, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stepInbox, callInbox := nc.NewRespInbox(), nc.NewRespInbox()
	stepReplies, callReplies := make(chan *nats.Msg, 4*sessions), make(chan *nats.Msg, 4*sessions)
	for inbox, ch := range map[string]chan *nats.Msg{stepInbox: stepReplies, callInbox: callReplies} {
		if _, err := nc.ChanSubscribe(inbox, ch); err != nil {
			t.Fatal(err)
		}
	}

	publish := func(sid string, kind events.Kind, v any, inbox, msgID string) {
		t.Helper()
		body, err := events.Encode(events.Msgpack, v)
		if err != nil {
			t.Fatal(err)
		}
		m := nats.NewMsg(events.Subject(events.DefaultPrefix, sid, kind))
		m.Data = body
		m.Header.Set(events.HeaderReplyInbox, inbox)
		m.Header.Set(events.HeaderMsgID, msgID)
		if _, err := js.PublishMsgAsync(m); err != nil {
			t.Fatal(err)
		}
	}
	preStep := func(sid string) events.PreStep {
		return events.PreStep{V: 1, Session: sid, Step: "p", Cwd: cwd, Tools: []events.Tool{{Name: "skill", Owner: "skillstream"}}}
	}
	call := func(sid string) events.SkillCall {
		return events.SkillCall{V: 1, Session: sid, Call: "c", Cwd: cwd, Args: events.SkillArgs{Name: "a-skill"}}
	}
	sid := func(i int) string { return fmt.Sprintf("load-%d", i) }
	for i := range sessions {
		publish(sid(i), events.KindPreStep, preStep(sid(i)), stepInbox, sid(i)+":p:1")
		publish(sid(i), events.KindSkillCall, call(sid(i)), callInbox, sid(i)+":c:1")
	}
	if err := nc.Flush(); err != nil { // the server has every trigger
		t.Fatal(err)
	}
	// Signal once the processor is visibly at work.
	eventually(t, 30*time.Second, "first answer", func() error {
		if len(stepReplies)+len(callReplies) == 0 {
			return fmt.Errorf("no answer yet")
		}
		return nil
	})
	if err := syscall.Kill(os.Getpid(), syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(30 * time.Second):
		t.Fatalf("%d triggers not acknowledged by the stream", js.PublishAsyncPending())
	}
	if code := s.wait(); code != exitOK {
		t.Fatalf("exit %d after SIGTERM:\n%s", code, s.stderr)
	}
	if !strings.Contains(s.stderr.String(), `"signal":"terminated"`) {
		t.Errorf("shutdown not logged with its signal:\n%s", s.stderr)
	}

	// Answers received before the restart: never two for one trigger.
	answered := map[string]string{} // trigger -> output text
	collect := func(before bool) {
		for {
			select {
			case m := <-stepReplies:
				d, err := events.DecodeDecision(events.Msgpack, m.Data)
				if err != nil || d.Catalog == nil {
					t.Fatalf("pre-step answer %+v: %v", d, err)
				}
				key := d.Session + "/step/" + d.Step
				if prev, dup := answered[key]; dup && (before || prev != d.Catalog.Text) {
					t.Errorf("%s answered twice", key)
				}
				answered[key] = d.Catalog.Text
			case m := <-callReplies:
				r, err := events.DecodeToolResult(events.Msgpack, m.Data)
				if err != nil || r.IsError {
					t.Fatalf("call answer %+v: %v", r, err)
				}
				key := r.Session + "/call/" + r.Call
				if prev, dup := answered[key]; dup && (before || prev != r.Text) {
					t.Errorf("%s answered twice", key)
				}
				answered[key] = r.Text
			default:
				return
			}
		}
	}
	collect(true)
	t.Logf("%d of %d triggers answered before the restart", len(answered), 2*sessions)

	// Restart on the same store and port; the worker's connection comes back.
	old := s
	t.Cleanup(func() {
		if t.Failed() {
			for _, l := range strings.Split(old.stderr.String(), "\n") {
				if strings.Contains(l, "WARN") || strings.Contains(l, "ERROR") {
					t.Log("OLD:", l)
				}
			}
		}
	})
	s = startServeAt(t, port, data, root, flags...)
	eventually(t, 60*time.Second, "consumer drained after restart", func() error {
		// Each look has its own deadline: a request lost while the
		// connection comes back must not use up the whole wait.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		c, err := js.Consumer(ctx, "SESSIONS", "skillstream")
		if err != nil {
			return err
		}
		info, err := c.Info(ctx)
		if err != nil {
			return err
		}
		if info.NumPending != 0 || info.NumAckPending != 0 {
			return fmt.Errorf("%d pending, %d awaiting ack", info.NumPending, info.NumAckPending)
		}
		return nil
	})
	collect(false)

	// A worker that got no answer retries, as a new message; it gets the
	// output already appended.
	for i := range sessions {
		if _, ok := answered[sid(i)+"/step/p"]; !ok {
			publish(sid(i), events.KindPreStep, preStep(sid(i)), stepInbox, sid(i)+":p:2")
		}
		if _, ok := answered[sid(i)+"/call/c"]; !ok {
			publish(sid(i), events.KindSkillCall, call(sid(i)), callInbox, sid(i)+":c:2")
		}
	}
	eventually(t, 60*time.Second, "every trigger answered", func() error {
		collect(false)
		if len(answered) != 2*sessions {
			return fmt.Errorf("%d of %d answered", len(answered), 2*sessions)
		}
		return nil
	})

	// Exactly one output per trigger in an intact store.
	outputs, state := streamOutputs(t, js)
	if len(outputs) != 2*sessions {
		t.Errorf("%d triggers have outputs, want %d", len(outputs), 2*sessions)
	}
	for key, n := range outputs {
		if n != 1 {
			t.Errorf("%s has %d outputs, want exactly 1", key, n)
		}
	}
	if state.FirstSeq != 1 || state.Msgs != state.LastSeq || state.NumDeleted != 0 {
		t.Errorf("store not intact: %+v", state)
	}
	for key, text := range answered {
		if text == "" {
			t.Errorf("%s answered with empty text", key)
		}
	}
	nc.Close()
	if code := s.stop(); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, s.stderr)
	}
}
