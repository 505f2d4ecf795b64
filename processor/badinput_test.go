package processor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
)

func TestBadPreSteps(t *testing.T) {
	e := newEnv(t, natstest.WithMaxPayload(8<<20))
	e.writeSkill("a-skill", "A skill.")
	e.waitSkills("a-skill")
	// A stream that takes messages of any size, so that one of 2 MiB
	// reaches the processor.
	e.start(func(c *Config, _ *options) { c.MaxMsgSize = NoLimit })
	w := e.worker()
	const sid = "bad"
	enc := func(v any) []byte {
		b, err := events.Encode(events.Msgpack, v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	huge := []byte(`{"v":1,"session":"bad","step":"huge","tools":[],"cwd":"` + strings.Repeat("x", 2<<20) + `"}`)
	asJSON := []string{events.HeaderContentType, events.ContentTypeJSON}
	cases := []struct {
		name    string
		subject string // session token of the subject (default sid)
		payload []byte
		hdr     []string
		reason  string
		mention string // the error names what was wrong
	}{
		{name: "undecodable bytes", payload: []byte{0xc1, 0xff, 0x00}, reason: reasonUndecodable, mention: "msgpack"},
		{name: "truncated map", payload: []byte{0x85, 0xa1, 'v'}, reason: reasonUndecodable},
		{name: "json wrong types", payload: []byte(`{"v":1,"session":"bad","step":5,"tools":"none"}`),
			hdr: []string{events.HeaderContentType, events.ContentTypeJSON}, reason: reasonField, mention: "step"},
		{name: "missing session", payload: enc(map[string]any{"v": 1, "step": "1", "tools": []any{}}), reason: reasonField, mention: "session"},
		{name: "session differs from subject", payload: enc(events.PreStep{V: 1, Session: "other", Step: "1", Tools: ourTool()}),
			reason: reasonSessionMismatch, mention: "other"},
		{name: "version 2", payload: enc(events.PreStep{V: 2, Session: sid, Step: "1", Tools: ourTool()}), reason: reasonVersion, mention: "2"},
		{name: "project outside the grammar", payload: enc(events.PreStep{V: 1, Session: sid, Step: "1", Tools: ourTool(), Project: "team one/../x"}),
			reason: reasonField, mention: "project"},
		{name: "relative resourceDir", payload: enc(events.PreStep{V: 1, Session: sid, Step: "1", Tools: ourTool(), ResourceDir: "res/skills"}),
			reason: reasonField, mention: "resourceDir"},
		{name: "2 MiB payload", payload: huge, hdr: asJSON, reason: reasonTooLarge, mention: "too large"},
		{name: "payload over the trigger bound", payload: enc(events.PreStep{V: 1, Session: sid, Step: "big", Tools: ourTool(),
			UserText: []string{strings.Repeat("x", DefaultMaxTriggerBytes)}}), reason: reasonTooLarge, mention: "over the processor's limit of 65536"},
		{name: "unknown content type", payload: enc(events.PreStep{V: 1, Session: sid, Step: "1", Tools: ourTool()}),
			hdr: []string{events.HeaderContentType, "text/plain"}, reason: reasonEncoding, mention: "text/plain"},
		// Answered in JSON so that the test can read an answer whose session
		// is no valid session token.
		{name: "bad session token", subject: "bad~sid", payload: []byte(`{"v":1,"session":"bad~sid","step":"1","tools":[]}`),
			hdr: asJSON, reason: reasonSubject, mention: "bad~sid"},
	}
	m := e.mustMetrics(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			subj := sid
			if c.subject != "" {
				subj = c.subject
			}
			before := counter(t, m.rejects.WithLabelValues(c.reason))
			p := w.publish(subj, events.KindPreStep, nil, c.payload, c.hdr...)
			var d events.Decision
			decodeAnswer(t, w.answer(p), &d)
			if d.Outcome != events.OutcomeRejected || d.Error == nil || d.Error.Code != events.CodeBadRequest || d.TriggerSeq != p.seq {
				t.Fatalf("answer %+v", d)
			}
			if !strings.Contains(d.Error.Message, c.mention) {
				t.Fatalf("error %q does not mention %q", d.Error.Message, c.mention)
			}
			if got := counter(t, m.rejects.WithLabelValues(c.reason)); got != before+1 {
				t.Fatalf("rejects{%s} = %v, want %v", c.reason, got, before+1)
			}
		})
	}
	// A bad Reply-Inbox cannot be answered, but is rejected all the same.
	before := counter(t, m.rejects.WithLabelValues(reasonInbox))
	w.publish(sid, events.KindPreStep, events.PreStep{V: 1, Session: sid, Step: "x", Tools: ourTool()}, nil, events.HeaderReplyInbox, "bad inbox.*")
	poll(t, func() error {
		if got := counter(t, m.rejects.WithLabelValues(reasonInbox)); got != before+1 {
			return fmt.Errorf("rejects{inbox} = %v", got)
		}
		return nil
	})

	// Nothing but the triggers was appended; nothing is redelivered.
	if n := len(e.outputs(sid, events.KindCatalog)); n != 0 {
		t.Fatalf("%d catalogs appended for bad input", n)
	}
	e.waitSettled()
	if got := counter(t, m.redeliveries.WithLabelValues("pre-step")); got != 0 {
		t.Fatalf("%v redeliveries of bad input", got)
	}
	if got := counter(t, m.panics); got != 0 {
		t.Fatalf("%v panics", got)
	}
	// The same processor still works.
	d := w.preStep(events.PreStep{Session: sid, Step: "ok", Cwd: e.cwd, Tools: ourTool()})
	e.expect(d, events.OutcomeAppended, 1)
}

// waitSettled waits until the consumer has acknowledged (or terminated)
// every trigger published so far and has none pending. Its pending count
// alone is not enough: the server updates it after a publication, so right
// after one it may still say 0.
func (e *env) waitSettled() {
	e.t.Helper()
	var last uint64 // the newest trigger's sequence
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	st, err := e.js.Stream(ctx, DefaultStream)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, filter := range events.TriggerFiltersIn(e.cfg.Layout, events.DefaultPrefix) {
		m, err := st.GetLastMsgForSubject(ctx, filter)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			e.t.Fatal(err)
		}
		last = max(last, m.Sequence)
	}
	poll(e.t, func() error {
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
		if info.AckFloor.Stream < last || info.NumPending != 0 || info.NumAckPending != 0 {
			return fmt.Errorf("consumer acknowledged up to %d of %d, has %d pending, %d unacknowledged",
				info.AckFloor.Stream, last, info.NumPending, info.NumAckPending)
		}
		return nil
	})
}

func TestBadSkillCalls(t *testing.T) {
	e := newEnv(t)
	e.writeSkill("a-skill", "A skill.")
	e.waitSkills("a-skill")
	e.start()
	w := e.worker()
	const sid = "badcall"
	enc := func(v any) []byte {
		b, err := events.Encode(events.Msgpack, v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	cases := []struct {
		name     string
		payload  []byte
		hdr      []string
		call     string // readable call id: a bad_request result is appended
		reason   string
		appended bool
	}{
		{name: "undecodable msgpack", payload: []byte("\xde\xad\xbe\xef"), reason: reasonUndecodable},
		{name: "undecodable json", payload: []byte(`{"v":1,"call":`), hdr: []string{events.HeaderContentType, events.ContentTypeJSON}, reason: reasonUndecodable},
		{name: "version 2", payload: enc(events.SkillCall{V: 2, Session: sid, Call: "v2", Args: events.SkillArgs{Name: "a-skill"}}),
			call: "v2", reason: reasonVersion, appended: true},
		{name: "missing name", payload: enc(map[string]any{"v": 1, "session": sid, "call": "noname", "args": map[string]any{}}),
			call: "noname", reason: reasonField, appended: true},
		{name: "session differs", payload: enc(events.SkillCall{V: 1, Session: "other", Call: "elsewhere", Args: events.SkillArgs{Name: "a-skill"}}),
			call: "elsewhere", reason: reasonSessionMismatch, appended: true},
	}
	m := e.mustMetrics(t)
	results := 0
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := counter(t, m.rejects.WithLabelValues(c.reason))
			p := w.publish(sid, events.KindSkillCall, nil, c.payload, c.hdr...)
			var r events.ToolResult
			decodeAnswer(t, w.answer(p), &r)
			if r.TriggerSeq != p.seq {
				t.Fatalf("answer to trigger %d, want %d", r.TriggerSeq, p.seq)
			}
			if !r.IsError || r.Error == nil || r.Error.Code != events.CodeBadRequest || r.Call != c.call || !strings.HasPrefix(r.Text, "Error: ") {
				t.Fatalf("answer %+v", r)
			}
			if c.appended {
				results++
			}
			stored := e.outputs(sid, events.KindToolResult)
			if len(stored) != results {
				t.Fatalf("%d results stored, want %d", len(stored), results)
			}
			if c.appended {
				got, err := events.DecodeToolResult(events.Msgpack, stored[len(stored)-1].Data)
				if err != nil {
					t.Fatal(err)
				}
				if got.Call != c.call || got.Error == nil || got.Error.Code != events.CodeBadRequest {
					t.Fatalf("stored %+v", got)
				}
			}
			if got := counter(t, m.rejects.WithLabelValues(c.reason)); got != before+1 {
				t.Fatalf("rejects{%s} = %v, want %v", c.reason, got, before+1)
			}
		})
	}
	e.waitSettled()
	r := w.call(events.SkillCall{Session: sid, Call: "good", Cwd: e.cwd, Args: events.SkillArgs{Name: "a-skill"}})
	if r.IsError {
		t.Fatalf("valid call after bad ones: %+v", r)
	}
}

// panicky is a Skills whose Snapshot panics: the processor must survive it.
type panicky struct{ Skills }

func (panicky) Snapshot(ctx context.Context, q catalog.Query) (catalog.Snapshot, error) {
	panic("provider bug")
}

func TestPanicIsContained(t *testing.T) {
	e := newEnv(t)
	e.writeSkill("a-skill", "A skill.")
	e.waitSkills("a-skill")
	p, err := New(e.srv.Connect(), panicky{e.registry}, e.cfg, WithLogger(quietLogger()), WithRegisterer(e.reg))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	<-p.Ready()
	w := e.worker()
	pub := w.publish("boom", events.KindPreStep, events.PreStep{V: 1, Session: "boom", Step: "1", Cwd: e.cwd, Tools: ourTool()}, nil)
	d := w.decision(pub)
	if d.Outcome != events.OutcomeIncomplete || d.Error == nil || !strings.Contains(d.Error.Message, "provider bug") {
		t.Fatalf("answer to a panicking trigger: %+v", d)
	}
	e.waitSettled()
	if got := counter(t, e.mustMetrics(t).panics); got != 1 {
		t.Fatalf("panics %v, want 1", got)
	}
	// Tool calls still work on the same processor.
	r := w.call(events.SkillCall{Session: "boom", Call: "c", Cwd: e.cwd, Args: events.SkillArgs{Name: "a-skill"}})
	if r.IsError {
		t.Fatalf("%+v", r)
	}
}

func TestReplyInboxHeaderOnly(t *testing.T) {
	e := newEnv(t)
	e.start()
	w := e.worker()
	// Without Reply-Inbox nothing is sent, and the trigger is still handled.
	data, err := events.Encode(events.Msgpack, events.PreStep{V: 1, Session: "quiet", Step: "1", Tools: ourTool()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if _, err := w.js.PublishMsg(ctx, &nats.Msg{Subject: "ev.quiet.agent.pre-step", Data: data}); err != nil {
		t.Fatal(err)
	}
	e.waitSettled()
	if got := counter(t, e.mustMetrics(t).triggers.WithLabelValues("pre-step", events.OutcomeEmpty)); got != 1 {
		t.Fatalf("empty outcomes %v, want 1", got)
	}
}

// decodeAnswer decodes an answer with the events decoders, which accept answers
// to unreadable triggers (a rejected Decision or a bad_request ToolResult
// without a readable session or call id) and nothing less.
func decodeAnswer(t testing.TB, m *nats.Msg, v any) {
	t.Helper()
	enc, err := events.EncodingOf(m.Header.Get(events.HeaderContentType))
	if err != nil {
		t.Fatal(err)
	}
	switch v := v.(type) {
	case *events.Decision:
		*v, err = events.DecodeDecision(enc, m.Data)
	case *events.ToolResult:
		*v, err = events.DecodeToolResult(enc, m.Data)
	default:
		t.Fatalf("decodeAnswer: unexpected type %T", v)
	}
	if err != nil {
		t.Fatalf("decode answer: %v", err)
	}
}

// FuzzTrigger feeds arbitrary payloads to a live processor as pre-steps and
// skill calls: every one must be answered, nothing may panic, and a payload
// that does not decode must be rejected.
func FuzzTrigger(f *testing.F) {
	mp := func(v any) []byte {
		b, err := events.Encode(events.Msgpack, v)
		if err != nil {
			f.Fatal(err)
		}
		return b
	}
	f.Add(false, false, mp(events.PreStep{V: 1, Session: "fz", Step: "1", Tools: ourTool()}))
	f.Add(false, true, []byte(`{"v":1,"session":"fz","step":"2","tools":[{"name":"skill","owner":"skillstream"}]}`))
	f.Add(false, false, []byte{0x81, 0xa1, 'v', 0x02})
	f.Add(false, true, []byte(`{"v":1,"session":"fz","step":"3","tools":[],"deadlineMs":1}`))
	f.Add(true, false, mp(events.SkillCall{V: 1, Session: "fz", Call: "c1", Args: events.SkillArgs{Name: "a-skill"}}))
	f.Add(true, true, []byte(`{"v":1,"session":"fz","call":"c2","args":{"name":"../../etc/passwd"}}`))
	f.Add(true, false, []byte{0xdf, 0xff, 0xff, 0xff, 0xff})
	f.Add(true, true, []byte(`[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]`))

	e := newEnv(f)
	e.writeSkill("a-skill", "A skill.")
	e.waitSkills("a-skill")
	e.start()
	w := e.worker()
	m := e.mustMetrics(f)
	f.Fuzz(func(t *testing.T, call, asJSON bool, data []byte) {
		kind := events.KindPreStep
		if call {
			kind = events.KindSkillCall
		}
		ct := events.ContentTypeMsgpack
		if asJSON {
			ct = events.ContentTypeJSON
		}
		ww := *w
		ww.t = t
		p := ww.publish("fz", kind, nil, data, events.HeaderContentType, ct)
		msg := ww.answer(p)
		if call {
			var r events.ToolResult
			decodeAnswer(t, msg, &r)
			if r.TriggerSeq != p.seq || (r.IsError && !strings.HasPrefix(r.Text, "Error: ")) {
				t.Fatalf("answer %+v", r)
			}
		} else {
			var d events.Decision
			decodeAnswer(t, msg, &d)
			if d.TriggerSeq != p.seq || d.Outcome == "" {
				t.Fatalf("answer %+v", d)
			}
			if _, err := events.DecodePreStep(events.Msgpack, data); err != nil && !asJSON && d.Outcome != events.OutcomeRejected {
				t.Fatalf("undecodable pre-step answered %+v", d)
			}
		}
		if got := counter(t, m.panics); got != 0 {
			t.Fatalf("%v panics", got)
		}
	})
}
