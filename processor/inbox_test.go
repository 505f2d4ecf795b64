package processor

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
)

func TestCheckInbox(t *testing.T) {
	cfg := Config{}.WithDefaults()
	wide := Config{ReplyPrefixes: []string{"_INBOX.", "replies.team-a"}}.WithDefaults()
	cases := []struct {
		cfg     Config
		subject string
		ok      bool
		why     string
	}{
		{cfg, "_INBOX.abc.def", true, ""},
		{cfg, "_INBOX.x", true, ""},
		{cfg, "_INBOX", true, ""},
		{cfg, "_INBOXES.x", false, "reply prefix"},
		{cfg, "reply", false, "reply prefix"},
		{cfg, "ev.B.tool.result", false, "session stream"},
		{cfg, "ev.B.catalog.append", false, "session stream"},
		{cfg, "ev", false, "session stream"},
		{cfg, "$JS.API.STREAM.DELETE.SESSIONS", false, "API"},
		{cfg, "$KV.store.key", false, "API"},
		{cfg, "$O.store.x", false, "API"},
		{cfg, "$SYS.REQ.SERVER.PING", false, "API"},
		{cfg, "$SRV.PING", false, "API"},
		{cfg, "skillstream.tool.definition", false, "service"},
		{cfg, "_INBOX.*", false, "wildcard"},
		{cfg, "_INBOX.>", false, "wildcard"},
		{cfg, "_INBOX..x", false, "empty token"},
		{cfg, "_INBOX.x.", false, "empty token"},
		{cfg, "_INBOX.a b", false, "space"},
		{cfg, "_INBOX.\r\nPUB", false, "control"},
		{cfg, "_INBOX." + strings.Repeat("x", 1100), false, "1024"},
		{wide, "replies.team-a.42", true, ""},
		{wide, "replies.team-b.42", false, "reply prefix"},
		{wide, "_INBOX.y", true, ""},
		{Config{Prefix: "tenant.ev"}.WithDefaults(), "tenant.ev.s.tool.result", false, "session stream"},
	}
	for _, c := range cases {
		err := c.cfg.checkInbox(c.subject)
		if (err == nil) != c.ok {
			t.Errorf("checkInbox(%q) = %v, want ok %v", c.subject, err, c.ok)
			continue
		}
		if err != nil && (!errors.Is(err, errInbox) || !strings.Contains(err.Error(), c.why)) {
			t.Errorf("checkInbox(%q) = %v, want it to say %q", c.subject, err, c.why)
		}
	}
}

func TestReplyPrefixConfig(t *testing.T) {
	for _, c := range []struct {
		prefixes []string
		prefix   string
		why      string
	}{
		{[]string{"_INBOX.>"}, "", "literal"},
		{[]string{""}, "", "literal"},
		{[]string{"a..b"}, "", "literal"},
		{[]string{"$JS"}, "", "API"},
		{[]string{"ev"}, "", "session stream"},
		{[]string{"ev.team"}, "", "session stream"},
		{[]string{"tenant"}, "tenant.ev", "session stream"},
		{[]string{"skillstream"}, "", "service"},
	} {
		cfg := Config{ReplyPrefixes: c.prefixes, Prefix: c.prefix}.WithDefaults()
		err := cfg.Validate()
		if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), c.why) {
			t.Errorf("reply prefixes %q: %v, want an error saying %q", c.prefixes, err, c.why)
		}
	}
	if err := (Config{ReplyPrefixes: []string{"_INBOX.", "replies"}}).WithDefaults().Validate(); err != nil {
		t.Fatal(err)
	}
}

func FuzzCheckInbox(f *testing.F) {
	for _, s := range []string{"_INBOX.x", "ev.B.tool.result", "$JS.API.x", "_INBOX.>", "_INBOX..x", "skillstream.tool.definition"} {
		f.Add(s)
	}
	cfg := Config{}.WithDefaults()
	f.Fuzz(func(t *testing.T, s string) {
		if cfg.checkInbox(s) != nil {
			return
		}
		if !strings.HasPrefix(s, "_INBOX") || strings.ContainsAny(s, "*> \t\r\n$") || strings.Contains(s, "..") ||
			strings.HasSuffix(s, ".") || under(s, cfg.Prefix) || len(s) > 1024 {
			t.Fatalf("accepted %q", s)
		}
	})
}

// A worker that NATS confines to its own session and to inboxes asks the
// processor to answer on another session's subject: the processor, which
// may append to every session, must not do it for the worker.
func TestReplyInboxConfined(t *testing.T) {
	const pw = "secret"
	e := newEnv(t, natstest.WithUsers(&server.User{
		Username: "worker-a", Password: pw,
		Permissions: &server.Permissions{Publish: &server.SubjectPermission{Allow: []string{"ev.A.>", "_INBOX.>"}}},
	}))
	e.writeSkill("a-skill", "A skill.")
	e.waitSkills("a-skill")
	e.start()
	m := e.mustMetrics(t)

	violations := make(chan error, 16)
	nc := e.srv.Connect(nats.UserInfo("worker-a", pw), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		select {
		case violations <- err:
		default:
		}
	}))
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	// The permissions are real: the worker cannot write to session B itself.
	if err := nc.Publish("ev.B.tool.result", []byte("x")); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-violations:
		if !strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
			t.Fatalf("publish to ev.B: %v", err)
		}
	case <-time.After(waitTimeout):
		t.Fatal("worker-a may publish to ev.B: the test confines nothing")
	}

	publish := func(inbox string) uint64 {
		t.Helper()
		data, err := events.Encode(events.Msgpack, events.PreStep{V: 1, Session: "A", Step: "s-" + inbox, Cwd: e.cwd, Tools: ourTool()})
		if err != nil {
			t.Fatal(err)
		}
		msg := &nats.Msg{Subject: events.Subject(events.DefaultPrefix, "A", events.KindPreStep), Header: nats.Header{}, Data: data}
		msg.Header.Set(events.HeaderReplyInbox, inbox)
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		ack, err := js.PublishMsg(ctx, msg)
		if err != nil {
			t.Fatal(err)
		}
		return ack.Sequence
	}
	before := counter(t, m.rejects.WithLabelValues(reasonInbox))
	for _, inbox := range []string{"ev.B.tool.result", "ev.B.catalog.append", "$JS.API.STREAM.PURGE.SESSIONS"} {
		publish(inbox)
	}
	poll(t, func() error {
		if got := counter(t, m.rejects.WithLabelValues(reasonInbox)); got != before+3 {
			return errors.New("inbox rejections not counted yet")
		}
		return nil
	})
	e.waitSettled()
	if log := e.sessionLog("B"); len(log) != 0 {
		t.Fatalf("session B has %d events, first on %s: the processor answered where the worker may not write", len(log), log[0].Subject)
	}
	if n := len(e.outputs("A", events.KindCatalog)); n != 0 {
		t.Fatalf("%d catalogs appended to A for rejected triggers", n)
	}
	// The stream is still whole, and the same worker is answered on its inbox.
	sub, err := nc.SubscribeSync(nc.NewInbox())
	if err != nil {
		t.Fatal(err)
	}
	seq := publish(sub.Subject)
	reply, err := sub.NextMsg(waitTimeout)
	if err != nil {
		t.Fatalf("no answer on the worker's own inbox: %v", err)
	}
	d, err := events.DecodeDecision(events.Msgpack, reply.Data)
	if err != nil || d.TriggerSeq != seq || d.Outcome != events.OutcomeAppended {
		t.Fatalf("answer %+v, %v", d, err)
	}
}

// TestInboxPrefixConfig: the processor's own inbox prefix is never a
// place answers go, may not overlap a reply prefix, and must be the
// connection's.
func TestInboxPrefixConfig(t *testing.T) {
	own := Config{InboxPrefix: DefaultInboxPrefix + "."}.WithDefaults()
	if err := own.Validate(); err != nil {
		t.Fatalf("default inbox prefix beside the default reply prefix: %v", err)
	}
	for _, subject := range []string{DefaultInboxPrefix, DefaultInboxPrefix + ".abc.1"} {
		if err := own.checkInbox(subject); !errors.Is(err, errInbox) || !strings.Contains(err.Error(), "own inboxes") {
			t.Errorf("checkInbox(%q) = %v, want refused as the processor's own", subject, err)
		}
	}
	if err := own.checkInbox("_INBOX.worker-a.1"); err != nil {
		t.Errorf("a worker's inbox: %v", err)
	}
	for _, c := range []Config{
		{InboxPrefix: "_INBOX.proc"},
		{InboxPrefix: "replies", ReplyPrefixes: []string{"replies.team-a"}},
		{InboxPrefix: "_INBOX.*"},
		{InboxPrefix: "ev.inbox"},
		{InboxPrefix: "$JS.inbox"},
	} {
		if err := c.WithDefaults().Validate(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("inbox prefix %q with reply prefixes %q: %v, want refused", c.InboxPrefix, c.ReplyPrefixes, err)
		}
	}

	srv := natstest.Start(t)
	skills := newEnv(t).registry
	nc := srv.Connect()
	if _, err := New(nc, skills, Config{InboxPrefix: DefaultInboxPrefix}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("a prefix the connection does not use: %v", err)
	}
	pnc := srv.Connect(nats.CustomInboxPrefix(DefaultInboxPrefix))
	p, err := New(pnc, skills, Config{})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Config().InboxPrefix; got != DefaultInboxPrefix {
		t.Errorf("inbox prefix taken from the connection: %q", got)
	}
	onINBOX := srv.Connect(nats.CustomInboxPrefix("_INBOX.processors"))
	if _, err := New(onINBOX, skills, Config{}); !errors.Is(err, ErrInvalidConfig) {
		t.Errorf("a processor connection inboxed under the reply prefix: %v, want refused", err)
	}
}

func TestCheckTriggerInbox(t *testing.T) {
	owner := Config{Layout: events.LayoutOwner}.WithDefaults()
	anyOwner := Config{Layout: events.LayoutOwner, AnyOwnerInbox: true}.WithDefaults()
	two := Config{Layout: events.LayoutOwner, ReplyPrefixes: []string{"_INBOX", "replies"}}.WithDefaults()
	flat := Config{}.WithDefaults()
	for _, c := range []struct {
		cfg          Config
		subject, sid string
		ok           bool
	}{
		{owner, "_INBOX.a1.x.1", "a1.s7", true},
		{owner, "_INBOX.a1.1", "a1.s7", true},
		{owner, "_INBOX.a2.x.1", "a1.s7", false},
		{owner, "_INBOX.a1", "a1.s7", false},
		{owner, "_INBOX.a10.x", "a1.s7", false},
		{owner, "_INBOX.x.1", "a1.s7", false},
		{owner, "_INBOX..x", "", false},
		{owner, "ev.a1.s7.tool.result", "a1.s7", false},
		{two, "replies.a1.9", "a1.s7", true},
		{two, "replies.a2.9", "a1.s7", false},
		{anyOwner, "_INBOX.a2.x.1", "a1.s7", true},
		{anyOwner, "ev.a1.s7.tool.result", "a1.s7", false},
		{flat, "_INBOX.a2.x.1", "a1", true},
	} {
		err := c.cfg.checkTriggerInbox(c.subject, c.sid)
		if (err == nil) != c.ok || (err != nil && !errors.Is(err, errInbox)) {
			t.Errorf("layout %v, any owner %v: checkTriggerInbox(%q, %q) = %v, want ok %v", c.cfg.Layout, c.cfg.AnyOwnerInbox, c.subject, c.sid, err, c.ok)
		}
	}
}

// TestOwnerInboxes: in the owner layout a trigger of a1's session naming
// an inbox of a2 is refused (reason inbox), nothing appended, nothing
// delivered there; the same trigger naming a1's inbox is answered. With
// AnyOwnerInbox, a2's inbox is answered too.
func TestOwnerInboxes(t *testing.T) {
	for _, anyOwner := range []bool{false, true} {
		e := ownerEnv(t)
		e.cfg.AnyOwnerInbox = anyOwner
		e.writeSkill("a-skill", "A skill.")
		e.waitSkills("a-skill")
		e.start()
		m := e.mustMetrics(t)
		w := e.worker()
		other, err := w.nc.SubscribeSync("_INBOX.a2.>")
		if err != nil {
			t.Fatal(err)
		}
		before := counter(t, m.rejects.WithLabelValues(reasonInbox))
		p := w.publish("a1.s7", events.KindPreStep, events.PreStep{V: 1, Session: "a1.s7", Step: "1", Cwd: e.cwd, Tools: ourTool()}, nil,
			events.HeaderReplyInbox, "_INBOX.a2.stolen.1")
		if anyOwner {
			msg, err := other.NextMsg(waitTimeout)
			if err != nil {
				t.Fatalf("any owner's inbox: no answer on a2's inbox: %v", err)
			}
			if d, err := events.DecodeDecisionIn(events.LayoutOwner, events.Msgpack, msg.Data); err != nil || d.TriggerSeq != p.seq {
				t.Fatalf("any owner's inbox: answer %+v, %v", d, err)
			}
			continue
		}
		poll(t, func() error {
			if got := counter(t, m.rejects.WithLabelValues(reasonInbox)); got != before+1 {
				return errors.New("inbox rejection not counted yet")
			}
			return nil
		})
		e.waitSettled()
		if n := len(e.outputs("a1.s7", events.KindCatalog)); n != 0 {
			t.Fatalf("%d catalogs appended for a trigger answering into another owner's inbox", n)
		}
		// a1's own inbox (the test worker's in the owner layout) is answered;
		// anything published to a2's before it would be there by now.
		e.expect(w.preStep(events.PreStep{Session: "a1.s7", Step: "1", Cwd: e.cwd, Tools: ourTool()}), events.OutcomeAppended, 1)
		if n, _, _ := other.Pending(); n != 0 {
			t.Fatalf("%d answers reached a2's inbox", n)
		}
	}
}
