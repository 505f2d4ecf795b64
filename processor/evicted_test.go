package processor

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

// TestEvictedOutputAnswered: a stream at its byte limit discards its
// oldest messages, of any session. A worker that retries a skill call
// whose result was discarded meanwhile publishes the call again; the
// processor's append of the result is refused as a duplicate of the
// result's Msg-Id, which names a message the stream no longer has. The
// retry is answered at once, saying so, delivered once and not retried
// until its deliveries run out; nothing more is appended.
func TestEvictedOutputAnswered(t *testing.T) {
	const maxBytes, filler = 64 << 10, 8 << 10
	e := newEnv(t)
	e.writeSkill("a-skill", "A skill.")
	e.waitSkills("a-skill")
	p := e.start(func(c *Config, _ *options) {
		c.MaxBytes, c.MaxMsgSize = maxBytes, 32<<10
		c.Catalog = catalog.DefaultOptions()
		c.Catalog.MaxLength, c.Catalog.MaxSkillBytes = 1000, 4096
	})
	w := e.worker()
	const sid = "victim"
	call := events.SkillCall{V: events.Version, Session: sid, Call: "c1", Cwd: e.cwd, Args: events.SkillArgs{Name: "a-skill"}}
	if r := w.call(call); r.IsError {
		t.Fatalf("call: %+v", r)
	}
	if n := len(e.outputs(sid, events.KindToolResult)); n != 1 {
		t.Fatalf("%d results stored", n)
	}

	// Other sessions' events push the result out of the stream.
	data := []byte(`{"v":1,"text":"` + strings.Repeat("x", filler) + `"}`)
	for i := 0; len(e.outputs(sid, events.KindToolResult)) > 0; i++ {
		if i > 4*maxBytes/filler {
			t.Fatal("the result was never discarded")
		}
		w.publish(fmt.Sprintf("busy%d", i%5), "message.user", nil, data)
	}

	// The worker's retry of the call.
	r := w.result(w.publish(sid, events.KindSkillCall, call, nil))
	if !r.IsError || r.Error == nil || r.Error.Code != codeUnavailable || !strings.Contains(r.Error.Message, "removed from the session log by the stream's limits") {
		t.Fatalf("retry answered %+v", r)
	}
	label := skillCallKind{}.label()
	poll(t, func() error {
		if got := counter(t, p.m.evicted.WithLabelValues(label)); got != 1 {
			return fmt.Errorf("%v evicted outputs counted, want 1", got)
		}
		return nil
	})
	if got := counter(t, p.m.redeliveries.WithLabelValues(label)); got != 0 {
		t.Errorf("the retry was delivered %v more times, want once only", got)
	}
	if got := counter(t, p.m.deadLetters.WithLabelValues(label)); got != 0 {
		t.Errorf("%v dead letters, want none", got)
	}
	if n := len(e.outputs(sid, events.KindToolResult)); n != 0 {
		t.Errorf("%d results appended for the retry, want none", n)
	}
	// Its deliveries are over: the consumer holds nothing for it.
	poll(t, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		c, err := e.js.Consumer(ctx, DefaultStream, DefaultConsumer)
		if err != nil {
			return err
		}
		info, err := c.Info(ctx)
		if err != nil {
			return err
		}
		if info.NumAckPending != 0 || info.NumPending != 0 {
			return fmt.Errorf("consumer: %d pending, %d awaiting ack", info.NumPending, info.NumAckPending)
		}
		return nil
	})
}
