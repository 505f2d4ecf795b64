package client

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/processor"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
)

// waitTimeout bounds every wait of these tests.
const waitTimeout = 30 * time.Second

// world is a test's NATS server, a project folder with one skill, and the
// registry a processor reads it with.
type world struct {
	t        *testing.T
	srv      *natstest.Server
	cwd      string
	registry *providers.Registry
	// configure, when set, adjusts the processors' configuration.
	configure func(*processor.Config)
	// options are the processors' options beside their logger.
	options []processor.Option
}

func newWorld(t *testing.T, opts ...natstest.Option) *world {
	t.Helper()
	srv := natstest.Start(t, opts...)
	cwd := t.TempDir()
	if err := os.Mkdir(filepath.Join(cwd, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cwd, ".agents", "skills", "a-skill")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	md := "---\nname: a-skill\ndescription: A skill for tests.\n---\n\nDo the thing.\n"
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	fs, err := agentskills.New(agentskills.Config{NoUserDir: true})
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := providers.NewRegistry([]providers.Provider{fs}, providers.WithLogger(quiet))
	t.Cleanup(func() { reg.Close() })
	return &world{t: t, srv: srv, cwd: cwd, registry: reg}
}

// startProcessor runs a processor on its own connection; the returned stop
// ends it and waits until it has stopped.
func (w *world) startProcessor() (stop func()) {
	w.t.Helper()
	nc := w.srv.Connect()
	cfg := processor.Config{AckWait: time.Second, NakDelay: 50 * time.Millisecond, Workers: 4}
	if w.configure != nil {
		w.configure(&cfg)
	}
	opts := append([]processor.Option{processor.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))}, w.options...)
	p, err := processor.New(nc, w.registry, cfg, opts...)
	if err != nil {
		w.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	var once atomic.Bool
	stop = func() {
		if once.Swap(true) {
			return
		}
		cancel()
		if err := <-done; err != nil {
			w.t.Errorf("processor: %v", err)
		}
		nc.Close()
	}
	w.t.Cleanup(stop)
	select {
	case <-p.Ready():
	case err := <-done:
		w.t.Fatalf("processor: %v", err)
	case <-time.After(waitTimeout):
		w.t.Fatal("processor not ready")
	}
	return stop
}

func (w *world) client(opts ...Option) *Client {
	w.t.Helper()
	c, err := New(w.srv.Connect(), opts...)
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { c.Close() })
	return c
}

func tools() []events.Tool {
	return []events.Tool{{Name: "bash", Owner: "agent"}, SkillTool(processor.DefaultToolOwner)}
}

func timeout(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	t.Cleanup(cancel)
	return ctx
}

// stored returns the stored events of kind k of session sid.
func (w *world) stored(sid string, k events.Kind) []*jetstream.RawStreamMsg {
	w.t.Helper()
	ctx := timeout(w.t)
	st, err := w.srv.JS.Stream(ctx, processor.DefaultStream)
	if err != nil {
		w.t.Fatal(err)
	}
	var out []*jetstream.RawStreamMsg
	for seq := uint64(1); ; seq++ {
		m, err := st.GetMsg(ctx, seq, jetstream.WithGetMsgSubject(events.Subject(events.DefaultPrefix, sid, k)))
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return out
		}
		if err != nil {
			w.t.Fatal(err)
		}
		out = append(out, m)
		seq = m.Sequence
	}
}

func TestSession(t *testing.T) {
	for _, enc := range []events.Encoding{events.Msgpack, events.JSON} {
		t.Run(enc.String(), func(t *testing.T) {
			w := newWorld(t)
			w.startProcessor()
			c := w.client(WithEncoding(enc))
			ctx := timeout(t)
			sid := "s-" + enc.String()

			d, err := c.PreStep(ctx, events.PreStep{Session: sid, Step: "1", Cwd: w.cwd, Tools: tools()})
			if err != nil || d.Outcome != events.OutcomeAppended || d.Catalog == nil {
				t.Fatalf("first pre-step: %+v, %v; want appended with a catalog", d, err)
			}
			if !strings.Contains(d.Catalog.Text, "- `a-skill`: A skill for tests.") {
				t.Errorf("catalog text lacks the skill:\n%s", d.Catalog.Text)
			}
			d, err = c.PreStep(ctx, events.PreStep{Session: sid, Step: "2", Cwd: w.cwd, Tools: tools()})
			if err != nil || d.Outcome != events.OutcomeUnchanged {
				t.Fatalf("second pre-step: %+v, %v; want unchanged", d, err)
			}
			// The tool missing from the view: empty, and the answer says why.
			d, err = c.PreStep(ctx, events.PreStep{Session: sid + "-x", Step: "1", Cwd: w.cwd, Tools: []events.Tool{{Name: "skill", Owner: "other"}}})
			if err != nil || d.Outcome != events.OutcomeEmpty || d.Reason != events.ReasonSkillToolOfOtherOwner {
				t.Fatalf("shadowed tool: %+v, %v; want empty with reason %s", d, err, events.ReasonSkillToolOfOtherOwner)
			}

			r, err := c.CallSkill(ctx, events.SkillCall{Session: sid, Call: "c1", Cwd: w.cwd, Args: events.SkillArgs{Name: "a-skill"}})
			if err != nil || r.IsError || r.Value == nil || r.Value.Name != "a-skill" || !strings.Contains(r.Text, "Do the thing.") {
				t.Fatalf("skill call: %+v, %v", r, err)
			}
			// An error for the model is a result, not an error.
			r, err = c.CallSkill(ctx, events.SkillCall{Session: sid, Call: "c2", Cwd: w.cwd, Args: events.SkillArgs{Name: "nope"}})
			if err != nil || !r.IsError || r.Error == nil || r.Error.Code != events.CodeUnknown {
				t.Fatalf("unknown skill: %+v, %v; want an unknown error result and no error", r, err)
			}

			seq, err := c.Compact(ctx, events.Compaction{Session: sid, RetainFrom: 1})
			if err != nil || seq == 0 {
				t.Fatalf("compact: seq %d, %v", seq, err)
			}
			if got := len(w.stored(sid, events.KindCompaction)); got != 1 {
				t.Errorf("%d compactions stored, want 1", got)
			}
			// Triggers are stored in the chosen encoding.
			ms := w.stored(sid, events.KindPreStep)
			if len(ms) != 2 || ms[0].Header.Get(events.HeaderContentType) != enc.ContentType() {
				t.Fatalf("stored pre-steps: %d, content type %q", len(ms), ms[0].Header.Get(events.HeaderContentType))
			}
		})
	}
}

// TestDeadline: the context's deadline becomes deadlineMs; a deadline
// already past is answered "expired" and nothing is appended.
func TestDeadline(t *testing.T) {
	w := newWorld(t)
	w.startProcessor()
	c := w.client()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	want, _ := ctx.Deadline()
	if _, err := c.PreStep(ctx, events.PreStep{Session: "dl", Step: "1", Cwd: w.cwd, Tools: tools()}); err != nil {
		t.Fatal(err)
	}
	m := w.stored("dl", events.KindPreStep)[0]
	ps, err := events.DecodePreStep(events.Msgpack, m.Data)
	if err != nil {
		t.Fatal(err)
	}
	if ps.DeadlineMs != want.UnixMilli() {
		t.Errorf("deadlineMs %d, want %d (the context's deadline)", ps.DeadlineMs, want.UnixMilli())
	}

	past := time.Now().Add(-time.Minute).UnixMilli()
	d, err := c.PreStep(ctx, events.PreStep{Session: "dl2", Step: "1", Cwd: w.cwd, Tools: tools(), DeadlineMs: past})
	if !errors.Is(err, ErrExpired) || d.Outcome != events.OutcomeExpired {
		t.Fatalf("past deadline: %+v, %v; want outcome expired and ErrExpired", d, err)
	}
	r, err := c.CallSkill(ctx, events.SkillCall{Session: "dl2", Call: "c", Args: events.SkillArgs{Name: "a-skill"}, DeadlineMs: past})
	if !errors.Is(err, ErrExpired) || r.Error == nil || r.Error.Code != events.CodeExpired {
		t.Fatalf("past deadline call: %+v, %v; want code expired and ErrExpired", r, err)
	}
	if n := len(w.stored("dl2", events.KindCatalog)) + len(w.stored("dl2", events.KindToolResult)); n != 0 {
		t.Errorf("%d outputs appended for expired triggers, want 0", n)
	}
}

// TestLostAnswer: the first answer is lost; the client publishes the
// trigger again as a new message and the processor answers it with the
// output it already appended.
func TestLostAnswer(t *testing.T) {
	w := newWorld(t)
	w.startProcessor()
	c := w.client(WithRetryInterval(200 * time.Millisecond))
	var answers, dropped atomic.Int64
	c.dropAnswer = func(*nats.Msg) bool {
		// Lose every first answer of a request (odd answers here, since
		// requests run one at a time).
		if answers.Add(1)%2 == 1 {
			dropped.Add(1)
			return true
		}
		return false
	}
	ctx := timeout(t)
	var attempts int
	d, err := c.PreStep(ctx, events.PreStep{Session: "lost", Step: "1", Cwd: w.cwd, Tools: tools()}, Attempts(&attempts))
	if err != nil || d.Outcome != events.OutcomeAppended || d.Catalog == nil {
		t.Fatalf("pre-step: %+v, %v; want the catalog appended by the first attempt", d, err)
	}
	if attempts < 2 || dropped.Load() < 1 {
		t.Fatalf("%d attempts, %d answers dropped; want a retry after a lost answer", attempts, dropped.Load())
	}
	r, err := c.CallSkill(ctx, events.SkillCall{Session: "lost", Call: "c1", Cwd: w.cwd, Args: events.SkillArgs{Name: "a-skill"}}, Attempts(&attempts))
	if err != nil || r.IsError || attempts < 2 {
		t.Fatalf("skill call: %+v, %v after %d attempts", r, err, attempts)
	}
	// Each attempt is its own message with its own Msg-Id; one output each.
	// The Msg-Id is the trigger's random id (the same on its retries) and
	// the attempt, with nothing of the session or step in it.
	triggers := w.stored("lost", events.KindPreStep)
	if len(triggers) < 2 || triggers[0].Header.Get(events.HeaderMsgID) == triggers[1].Header.Get(events.HeaderMsgID) {
		t.Fatalf("%d pre-step messages stored; want one per attempt with distinct Msg-Ids", len(triggers))
	}
	first, second := triggers[0].Header.Get(events.HeaderMsgID), triggers[1].Header.Get(events.HeaderMsgID)
	rnd, n, _ := strings.Cut(first, "-")
	if len(rnd) != 32 || strings.Trim(rnd, "0123456789abcdef") != "" || n != "1" || second != rnd+"-2" {
		t.Fatalf("Msg-Ids %q, %q: want <128 random bits in hex>-1 and the same -2", first, second)
	}
	for _, tr := range w.stored("lost", events.KindSkillCall) {
		if id := tr.Header.Get(events.HeaderMsgID); strings.HasPrefix(id, rnd) || strings.Contains(id, "lost") || len(id) != 34 {
			t.Fatalf("skill call Msg-Id %q: want a trigger id of its own, telling no session or call", id)
		}
	}
	if n := len(w.stored("lost", events.KindCatalog)); n != 1 {
		t.Errorf("%d catalogs appended, want 1", n)
	}
	if n := len(w.stored("lost", events.KindToolResult)); n != 1 {
		t.Errorf("%d tool results appended, want 1", n)
	}
}

// TestTakenMsgID: a message of someone else stored first under a trigger's
// first Msg-Id (the trigger id known in advance, as a guessable one would
// be) is not the request's: the duplicate acknowledgement sends the next
// attempt at once, whose answer is accepted, and only it is stored.
func TestTakenMsgID(t *testing.T) {
	w := newWorld(t)
	w.startProcessor()
	c := w.client(WithRetryInterval(time.Minute))
	c.testTriggerID = "0123456789abcdef0123456789abcdef"
	js, err := jetstream.New(w.srv.Connect())
	if err != nil {
		t.Fatal(err)
	}
	ctx := timeout(t)
	forged, err := js.PublishMsg(ctx, &nats.Msg{Subject: events.Subject(events.DefaultPrefix, "other", events.KindCompaction),
		Data: []byte("{}"), Header: nats.Header{events.HeaderMsgID: []string{c.testTriggerID + "-1"}}})
	if err != nil || forged.Duplicate {
		t.Fatalf("forged message: %+v, %v", forged, err)
	}
	var attempts int
	// Were the duplicate taken for the first attempt, the request would
	// wait a minute for an answer to it, past the test's timeout.
	r, err := c.CallSkill(ctx, events.SkillCall{Session: "taken", Call: "c1", Cwd: w.cwd, Args: events.SkillArgs{Name: "a-skill"}}, Attempts(&attempts))
	if err != nil || r.IsError || attempts != 2 {
		t.Fatalf("call: %+v, %v after %d attempts; want the answer to the second", r, err, attempts)
	}
	triggers := w.stored("taken", events.KindSkillCall)
	if len(triggers) != 1 || triggers[0].Header.Get(events.HeaderMsgID) != c.testTriggerID+"-2" || r.TriggerSeq != triggers[0].Sequence {
		t.Fatalf("%d triggers stored, answer to %d; want the second attempt's only", len(triggers), r.TriggerSeq)
	}
}

// TestProcessorRestart: the processor stops while a request waits; a new
// one starts and the request gets its answer, with one output appended.
func TestProcessorRestart(t *testing.T) {
	w := newWorld(t)
	stop := w.startProcessor()
	c := w.client(WithRetryInterval(300 * time.Millisecond))
	ctx := timeout(t)
	if _, err := c.PreStep(ctx, events.PreStep{Session: "r", Step: "1", Cwd: w.cwd, Tools: tools()}); err != nil {
		t.Fatal(err)
	}
	stop()

	type answer struct {
		r   events.ToolResult
		err error
	}
	got := make(chan answer, 1)
	go func() {
		r, err := c.CallSkill(ctx, events.SkillCall{Session: "r", Call: "c1", Cwd: w.cwd, Args: events.SkillArgs{Name: "a-skill"}})
		got <- answer{r, err}
	}()
	// The call is in the stream with nobody to answer it.
	poll(t, func() error {
		if n := len(w.stored("r", events.KindSkillCall)); n == 0 {
			return errors.New("skill call not stored yet")
		}
		return nil
	})
	w.startProcessor()
	a := <-got
	if a.err != nil || a.r.IsError || a.r.Value == nil || a.r.Value.Name != "a-skill" {
		t.Fatalf("after restart: %+v, %v", a.r, a.err)
	}
	if n := len(w.stored("r", events.KindToolResult)); n != 1 {
		t.Errorf("%d tool results appended, want 1", n)
	}
}

// TestTimeout: without a processor, the request publishes WithMaxAttempts
// times, each a new message, then fails with ErrTimeout; a context that
// ends first fails with ErrTimeout and the context's error.
func TestTimeout(t *testing.T) {
	w := newWorld(t)
	ctx := timeout(t)
	if _, err := w.srv.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"ev.>"}, Duplicates: 2 * time.Minute}); err != nil {
		t.Fatal(err)
	}
	c := w.client(WithRetryInterval(50*time.Millisecond), WithMaxAttempts(3))
	_, err := c.PreStep(ctx, events.PreStep{Session: "t", Step: "1", Tools: tools()})
	if !errors.Is(err, ErrTimeout) {
		t.Fatalf("err %v, want ErrTimeout", err)
	}
	info, err := w.srv.JS.Stream(ctx, "S")
	if err != nil {
		t.Fatal(err)
	}
	if st := info.CachedInfo().State; st.Msgs != 3 {
		t.Errorf("%d messages stored, want 3 (one per attempt)", st.Msgs)
	}

	c2 := w.client(WithRetryInterval(time.Hour))
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	_, err = c2.CallSkill(short, events.SkillCall{Session: "t", Call: "1", Args: events.SkillArgs{Name: "x"}})
	if !errors.Is(err, ErrTimeout) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want ErrTimeout and context.DeadlineExceeded", err)
	}
}

func TestClose(t *testing.T) {
	w := newWorld(t)
	ctx := timeout(t)
	c := w.client()
	errc := make(chan error, 1)
	go func() {
		_, err := c.PreStep(ctx, events.PreStep{Session: "c", Step: "1", Tools: tools()})
		errc <- err
	}()
	poll(t, func() error {
		c.mu.Lock()
		defer c.mu.Unlock()
		if len(c.waiting) == 0 {
			return errors.New("request not waiting yet")
		}
		return nil
	})
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; !errors.Is(err, ErrClosed) {
		t.Fatalf("waiting request: %v, want ErrClosed", err)
	}
	if _, err := c.PreStep(ctx, events.PreStep{Session: "c", Step: "2", Tools: tools()}); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v, want ErrClosed", err)
	}
}

// TestBadInput: a trigger the processor would refuse fails before anything
// is sent, naming the field.
func TestBadInput(t *testing.T) {
	w := newWorld(t)
	c := w.client()
	ctx := timeout(t)
	_, err := c.PreStep(ctx, events.PreStep{Session: "a.b", Step: "1"})
	if !errors.Is(err, events.ErrBadPayload) || !strings.Contains(err.Error(), `"session"`) {
		t.Fatalf("bad session: %v", err)
	}
	_, err = c.CallSkill(ctx, events.SkillCall{Session: "a"})
	if !errors.Is(err, events.ErrBadPayload) || !strings.Contains(err.Error(), `"call"`) {
		t.Fatalf("no call id: %v", err)
	}
	if _, err := New(nil); err == nil {
		t.Fatal("New(nil): no error")
	}
	if _, err := New(w.srv.Conn, WithPrefix("a.*")); !errors.Is(err, events.ErrBadSubject) {
		t.Fatalf("bad prefix: %v", err)
	}
	if _, err := New(w.srv.Conn, WithRetryInterval(0)); err == nil {
		t.Fatal("zero retry interval: no error")
	}
}

// TestAnswerErrors: answers that are not normal outcomes map to typed
// errors; normal ones do not.
func TestAnswerErrors(t *testing.T) {
	rej := events.Decision{Outcome: events.OutcomeRejected, Error: &events.ErrorInfo{Code: events.CodeBadRequest, Message: "bad"}}
	err := decisionError(rej)
	var re *RejectedError
	if !errors.Is(err, ErrRejected) || !errors.As(err, &re) || re.Decision.Outcome != events.OutcomeRejected || re.Message != "bad" {
		t.Errorf("rejected decision: %v", err)
	}
	if err := decisionError(events.Decision{Outcome: events.OutcomeIncomplete, Error: &events.ErrorInfo{Code: CodeUnavailable}}); !errors.Is(err, ErrUnavailable) {
		t.Errorf("unavailable decision: %v", err)
	}
	if err := decisionError(events.Decision{Outcome: events.OutcomeAppended, Error: &events.ErrorInfo{Code: events.CodeTooLarge}}); !errors.Is(err, ErrTooLarge) {
		t.Errorf("too large decision: %v", err)
	}
	for _, o := range []string{events.OutcomeAppended, events.OutcomeUnchanged, events.OutcomeEmpty, events.OutcomeIncomplete} {
		if err := decisionError(events.Decision{Outcome: o}); err != nil {
			t.Errorf("%s: %v, want nil", o, err)
		}
	}
	res := func(code string) events.ToolResult {
		return events.ToolResult{IsError: true, Error: &events.ErrorInfo{Code: code}}
	}
	if err := resultError(res(events.CodeBadRequest)); !errors.Is(err, ErrRejected) || !errors.As(err, &re) || re.Result.Error.Code != events.CodeBadRequest {
		t.Errorf("bad_request result: %v", err)
	}
	if err := resultError(res(CodeUnavailable)); !errors.Is(err, ErrUnavailable) {
		t.Errorf("unavailable result: %v", err)
	}
	for _, code := range []string{events.CodeInvalidName, events.CodeUnknown, events.CodeNotModelInvocable, events.CodeProvider, events.CodeTooLarge} {
		if err := resultError(res(code)); err != nil {
			t.Errorf("%s: %v, want nil (the model sees it)", code, err)
		}
	}
}

// TestMaterializer: a store skill's result is handed to the Materializer
// before CallSkill returns. A hand-written responder plays a processor
// with a skill store (the answer is what such a processor sends).
func TestMaterializer(t *testing.T) {
	w := newWorld(t)
	ctx := timeout(t)
	if _, err := w.srv.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"ev.>"}}); err != nil {
		t.Fatal(err)
	}
	resDir := t.TempDir()
	const digest = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	base := filepath.Join(resDir, "pdf", digest[:16])
	responder := w.srv.Connect()
	oc, err := w.srv.JS.OrderedConsumer(ctx, "S", jetstream.OrderedConsumerConfig{FilterSubjects: []string{"ev.*.tool.call.skill"}})
	if err != nil {
		t.Fatal(err)
	}
	cc, err := oc.Consume(func(m jetstream.Msg) {
		sc, err := events.DecodeSkillCall(events.Msgpack, m.Data())
		if err != nil {
			t.Error(err)
			return
		}
		md, err := m.Metadata()
		if err != nil {
			t.Error(err)
			return
		}
		name, path := "pdf", ""
		if sc.ResourceDir != "" {
			path = filepath.Join(sc.ResourceDir, "pdf", digest[:16])
		}
		switch sc.Call {
		case "elsewhere": // an answer naming a path of its own
			path = filepath.Join(t.TempDir(), "autostart")
		case "bad-name": // a name that is not a skill name
			name, path = "../../x", filepath.Join(sc.ResourceDir, "../../x", digest[:16])
		}
		r := events.ToolResult{V: 1, Session: sc.Session, Call: sc.Call, TriggerSeq: md.Sequence.Stream, Text: "instructions",
			Value: &events.SkillValue{Name: name, Provider: StoreProvider, Content: "instructions", Digest: digest, Revision: 7}}
		if path != "" {
			r.Value.ResourceBase = &events.ResourceBase{Kind: "directory", Path: path}
		}
		data, _ := events.Encode(events.Msgpack, r)
		_ = responder.Publish(m.Headers().Get(events.HeaderReplyInbox), data)
	})
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Stop()

	var calls []string
	c := w.client(WithMaterializer(func(ctx context.Context, r events.ToolResult, dir string) error {
		calls = append(calls, r.Value.Digest+" "+dir)
		if r.Call == "fail" {
			return errors.New("disk full")
		}
		return nil
	}))
	call := func(id, resourceDir string) (events.ToolResult, error) {
		return c.CallSkill(ctx, events.SkillCall{Session: "m", Call: id, Args: events.SkillArgs{Name: "pdf"}, ResourceDir: resourceDir})
	}
	if _, err := call("ok", resDir); err != nil {
		t.Fatal(err)
	}
	if want := digest + " " + base; len(calls) != 1 || calls[0] != want {
		t.Fatalf("materializer calls %q, want [%q]", calls, want)
	}
	if _, err := call("plain", ""); err != nil || len(calls) != 1 {
		t.Fatalf("without resourceDir: %v, %d materializer calls; want none", err, len(calls))
	}
	r, err := call("fail", resDir)
	if !errors.Is(err, ErrMaterialize) || !strings.Contains(err.Error(), "disk full") || r.Value == nil {
		t.Fatalf("failing materializer: %+v, %v", r, err)
	}
	for _, id := range []string{"elsewhere", "bad-name"} {
		r, err := call(id, resDir)
		if !errors.Is(err, ErrMaterialize) || r.Value == nil {
			t.Errorf("answer %s: %+v, %v; want ErrMaterialize", id, r, err)
		}
	}
	if len(calls) != 2 {
		t.Errorf("materializer calls %q: want none for the refused answers", calls)
	}
	bare := w.client()
	if _, err := bare.CallSkill(ctx, events.SkillCall{Session: "m", Call: "x", Args: events.SkillArgs{Name: "pdf"}, ResourceDir: resDir}); !errors.Is(err, ErrMaterialize) {
		t.Fatalf("default materializer without a skill store: %v, want ErrMaterialize", err)
	}
}

// poll calls f every 10ms until it returns nil, failing after waitTimeout.
func poll(t *testing.T, f func() error) {
	t.Helper()
	natstest.Eventually(t, waitTimeout, "gave up", f)
}
