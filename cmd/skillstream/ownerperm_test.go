package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
	"github.com/skillstream/skillstream/processor"
)

// ownerLayoutFile is the NATS server configuration shipped for the owner
// session layout; the test below loads it as it is.
const ownerLayoutFile = "deploy/owner-layout.conf"

// ownerPermServer starts a real NATS server from ownerLayoutFile, with only
// its store folder and port replaced, and returns its URL and the users'
// passwords.
func ownerPermServer(t *testing.T) (string, map[string]string) {
	t.Helper()
	pw := setPasswords(t, map[string]string{
		"processor": "SKILLSTREAM_PROCESSOR_PASSWORD",
		"operator":  "SKILLSTREAM_OPERATOR_PASSWORD",
		"a1":        "SKILLSTREAM_WORKER_A1_PASSWORD",
		"a2":        "SKILLSTREAM_WORKER_A2_PASSWORD",
	})
	return confServer(t, ownerLayoutFile), pw
}

// TestOwnerLayoutPermissions: with the shipped owner-layout permission file
// in a real server and serve --session-layout owner as its processor user,
// each of the workers a1 and a2 steps, calls a skill, searches and
// compacts in a session of its own ("a1.<id>", "a2.<id>"), while a trigger
// of a1 into a session of a2 (ev.a2.<id>.<kind>), or into a flat subject,
// is refused by the server as a permissions violation that a1's
// connection is told of: the session gets nothing, and a1's client
// request times out. a2 likewise cannot reach a1's sessions.
func TestOwnerLayoutPermissions(t *testing.T) {
	natsURL, pw := ownerPermServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	root := spec4Skills(t)
	t.Chdir(t.TempDir())
	logs := runPermittedServe(t, []string{"serve", "--nats-url", natsURL, "--nats-user", "processor", "--nats-password", pw["processor"],
		"--session-layout", "owner", "--no-bundled", "--user-skills-dir=", "--skills-dir", root, "--no-skill-store",
		"--workers", "2", "--skill-search"}, "processor started")
	if !strings.Contains(logs.String(), "session_layout=owner") {
		t.Errorf("serve does not say it runs the owner layout:\n%s", logs)
	}

	worker := func(user string) (*client.Client, *violations) {
		t.Helper()
		v := &violations{}
		c, err := client.Connect(userURL(t, natsURL, user, pw[user]), client.WithInboxPrefix("_INBOX."+user),
			client.WithLayout(events.LayoutOwner), client.WithRetryInterval(time.Second))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		c.Conn().SetErrorHandler(v.handler)
		return c, v
	}
	a1, a1Viol := worker("a1")
	a2, a2Viol := worker("a2")
	tools := []events.Tool{client.SkillTool("skillstream"), client.SkillSearchTool("skillstream")}
	cwd := t.TempDir()

	// Each worker's own session works end to end.
	own := func(c *client.Client, sid string) {
		t.Helper()
		d, err := c.PreStep(ctx, events.PreStep{Session: sid, Step: "1", Cwd: cwd, Tools: tools})
		if err != nil || d.Outcome != events.OutcomeAppended || d.Session != sid || d.Catalog == nil || !strings.Contains(d.Catalog.Text, "a-skill") {
			t.Fatalf("%s pre-step: %+v, %v", sid, d, err)
		}
		if r, err := c.CallSkill(ctx, events.SkillCall{Session: sid, Call: "c1", Cwd: cwd, Args: events.SkillArgs{Name: "a-skill"}}); err != nil || r.IsError || r.Session != sid {
			t.Fatalf("%s skill call: %+v, %v", sid, r, err)
		}
		if r, err := c.SearchSkills(ctx, events.SkillSearch{Session: sid, Call: "s1", Cwd: cwd, Args: events.SearchArgs{Query: "a skill"}}); err != nil || r.Search == nil {
			t.Fatalf("%s search: %+v, %v", sid, r, err)
		}
		if _, err := c.Compact(ctx, events.Compaction{Session: sid, RetainFrom: 1, Keep: client.CatalogKeep(d)}); err != nil {
			t.Fatalf("%s compaction: %v", sid, err)
		}
		if d, err := c.PreStep(ctx, events.PreStep{Session: sid, Step: "2", Cwd: cwd, Tools: tools}); err != nil || d.Outcome != events.OutcomeUnchanged {
			t.Fatalf("%s second pre-step: %+v, %v", sid, d, err)
		}
	}
	a1Session, a2Session := "a1."+randomToken(t), "a2."+randomToken(t)
	own(a1, a1Session)
	own(a2, a2Session)

	// a1 into a2's session, every trigger kind, through the client and
	// by hand; and into a flat session subject.
	victim := "a2." + randomToken(t)
	short, cancelShort := context.WithTimeout(ctx, 3*time.Second)
	defer cancelShort()
	_, err := a1.PreStep(short, events.PreStep{Session: victim, Step: "1", Cwd: cwd, Tools: tools})
	if !errors.Is(err, client.ErrTimeout) && !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a1's pre-step into %s: %v, want no answer", victim, err)
	}
	a1Viol.wait(t, "a1's pre-step into a2's session refused", "ev."+victim+".agent.pre-step")
	ps, _ := events.Encode(events.Msgpack, events.PreStep{V: 1, Session: victim, Step: "2", Tools: tools})
	for _, k := range []events.Kind{events.KindSkillCall, events.KindSkillSearch, events.KindCompaction} {
		subj := events.Subject(events.DefaultPrefix, victim, k)
		if err := a1.Conn().Publish(subj, ps); err != nil {
			t.Fatal(err)
		}
		a1Viol.wait(t, "a1's "+string(k)+" into a2's session refused", subj)
	}
	// Flat-layout subjects are no one's: refused too.
	for _, subj := range []string{"ev." + strings.TrimPrefix(victim, "a2.") + ".agent.pre-step", "ev.a2.agent.pre-step"} {
		if err := a1.Conn().Publish(subj, ps); err != nil {
			t.Fatal(err)
		}
		a1Viol.wait(t, "a1's flat-layout trigger refused", subj)
	}
	// And a2 cannot reach a1's.
	if err := a2.Conn().Publish(events.Subject(events.DefaultPrefix, a1Session, events.KindPreStep), ps); err != nil {
		t.Fatal(err)
	}
	a2Viol.wait(t, "a2's pre-step into a1's session refused", "ev."+a1Session+".agent.pre-step")

	// The operator sees nothing of the victim session in the stream, and
	// a1's and a2's sessions each hold only their own worker's events.
	op, err := nats.Connect(userURL(t, natsURL, "operator", pw["operator"]))
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	ojs, err := jetstream.New(op)
	if err != nil {
		t.Fatal(err)
	}
	st, err := ojs.Stream(ctx, processor.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	if m, err := st.GetLastMsgForSubject(ctx, events.SessionWildcard(events.DefaultPrefix, victim)); !errors.Is(err, jetstream.ErrMsgNotFound) {
		t.Errorf("the victim session holds %v (err %v)", m, err)
	}
	for _, sid := range []string{a1Session, a2Session} {
		m, err := st.GetLastMsgForSubject(ctx, events.Subject(events.DefaultPrefix, sid, events.KindPreStep))
		if err != nil {
			t.Fatalf("%s: %v", sid, err)
		}
		p, err := events.DecodePreStepIn(events.LayoutOwner, events.Msgpack, m.Data)
		if err != nil || p.Session != sid || p.Step != "2" {
			t.Errorf("%s's newest pre-step: %+v, %v", sid, p, err)
		}
	}
	if n := a1.DroppedAnswers() + a2.DroppedAnswers(); n != 0 {
		t.Errorf("%d answers dropped", n)
	}
	// serve keeps the usage projection by default, in the owner layout
	// too, under the shipped permissions; the operator reads it.
	eventually(t, 30*time.Second, "the projection caught up", func() error {
		r, stderr := usageJSON(t, "--nats-url", userURL(t, natsURL, "operator", pw["operator"]), "--session-layout", "owner")
		if r.Projection == nil || r.Projection.LagRecords != 0 || r.Records == 0 || len(r.Skills) == 0 {
			return fmt.Errorf("%d records, %d skills, projection %+v: %s", r.Records, len(r.Skills), r.Projection, stderr)
		}
		return nil
	})
}

// TestOwnerLayoutAnswersOnlyTheOwner: with the shipped owner-layout file in
// a real server and serve --session-layout owner as its processor user,
// worker a1 publishes a pre-step into a session of its own naming an inbox
// of a2 as its Reply-Inbox: the processor refuses it (reason inbox),
// appends nothing, and a2, subscribed to its inboxes, gets no answer. a1's
// pre-step naming its own inbox is answered.
func TestOwnerLayoutAnswersOnlyTheOwner(t *testing.T) {
	natsURL, pw := ownerPermServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	root := spec4Skills(t)
	t.Chdir(t.TempDir())
	metrics := quietAddr(t)
	runPermittedServe(t, []string{"serve", "--nats-url", natsURL, "--nats-user", "processor", "--nats-password", pw["processor"],
		"--session-layout", "owner", "--no-bundled", "--user-skills-dir=", "--skills-dir", root, "--no-skill-store",
		"--workers", "2", "--metrics-listen", metrics}, "processor started")

	a2, err := nats.Connect(userURL(t, natsURL, "a2", pw["a2"]), nats.CustomInboxPrefix("_INBOX.a2"))
	if err != nil {
		t.Fatal(err)
	}
	defer a2.Close()
	stolen, err := a2.SubscribeSync("_INBOX.a2.>")
	if err != nil {
		t.Fatal(err)
	}
	if err := a2.Flush(); err != nil {
		t.Fatal(err)
	}
	a1, err := nats.Connect(userURL(t, natsURL, "a1", pw["a1"]), nats.CustomInboxPrefix("_INBOX.a1"))
	if err != nil {
		t.Fatal(err)
	}
	defer a1.Close()
	js, err := jetstream.New(a1)
	if err != nil {
		t.Fatal(err)
	}
	sid := "a1." + randomToken(t)
	tools := []events.Tool{client.SkillTool("skillstream")}
	data, err := events.Encode(events.Msgpack, events.PreStep{V: 1, Session: sid, Step: "1", Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	m := &nats.Msg{Subject: events.Subject(events.DefaultPrefix, sid, events.KindPreStep), Data: data, Header: nats.Header{
		events.HeaderContentType: []string{events.ContentTypeMsgpack},
		events.HeaderReplyInbox:  []string{"_INBOX.a2.stolen.1"},
	}}
	if _, err := js.PublishMsg(ctx, m); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the trigger naming a2's inbox refused", func() error {
		if n, _, _ := stolen.Pending(); n > 0 {
			msg, _ := stolen.NextMsg(0)
			t.Fatalf("a1's answer was delivered to a2's inbox %s", msg.Subject)
		}
		if body := scrape(t, "http://"+metrics+"/metrics"); !strings.Contains(body, `skillstream_rejects_total{reason="inbox"} 1`) {
			return errors.New("no inbox rejection counted yet")
		}
		return nil
	})

	// a1's own inbox is answered, and the step is new: nothing was
	// appended for the refused trigger.
	c, err := client.Connect(userURL(t, natsURL, "a1", pw["a1"]), client.WithInboxPrefix("_INBOX.a1"),
		client.WithLayout(events.LayoutOwner), client.WithRetryInterval(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if d, err := c.PreStep(ctx, events.PreStep{Session: sid, Step: "1", Tools: tools}); err != nil || d.Outcome != events.OutcomeAppended {
		t.Fatalf("a1's own pre-step: %+v, %v", d, err)
	}
	if n, _, _ := stolen.Pending(); n != 0 {
		t.Fatalf("%d messages reached a2's inbox", n)
	}
}
