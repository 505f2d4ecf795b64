package client

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor"
)

// TestOwnerLayout: a client with WithLayout(events.LayoutOwner), against a
// processor of the same layout, steps, calls, compacts and appends in a
// session "a1.s7", whose events land on ev.a1.s7.<kind>. Its inboxes are
// a1's (WithInboxPrefix "_INBOX.a1"): the owner layout answers only there.
func TestOwnerLayout(t *testing.T) {
	w := newWorld(t)
	w.configure = func(c *processor.Config) { c.Layout = events.LayoutOwner }
	w.startProcessor()
	c, err := New(w.srv.Connect(nats.CustomInboxPrefix("_INBOX.a1")), WithLayout(events.LayoutOwner), WithInboxPrefix("_INBOX.a1"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if c.Layout() != events.LayoutOwner {
		t.Fatalf("Layout() = %v", c.Layout())
	}
	ctx := timeout(t)
	const sid = "a1.s7"
	d, err := c.PreStep(ctx, events.PreStep{Session: sid, Step: "1", Cwd: w.cwd, Tools: tools()})
	if err != nil || d.Outcome != events.OutcomeAppended || d.Session != sid || d.Catalog == nil || d.Catalog.Session != sid {
		t.Fatalf("pre-step: %+v, %v", d, err)
	}
	r, err := c.CallSkill(ctx, events.SkillCall{Session: sid, Call: "c1", Cwd: w.cwd, Args: events.SkillArgs{Name: "a-skill"}})
	if err != nil || r.IsError || r.Session != sid || !strings.Contains(r.Text, "Do the thing.") {
		t.Fatalf("skill call: %+v, %v", r, err)
	}
	seq, err := c.Compact(ctx, events.Compaction{Session: sid, RetainFrom: 1, Keep: CatalogKeep(d)})
	if err != nil {
		t.Fatal(err)
	}
	note, err := c.Append(ctx, sid, "message.user", map[string]string{"text": "hi"})
	if err != nil || note <= seq {
		t.Fatalf("append: %d, %v", note, err)
	}
	d2, err := c.PreStep(ctx, events.PreStep{Session: sid, Step: "2", Cwd: w.cwd, Tools: tools()})
	if err != nil || d2.Outcome != events.OutcomeUnchanged {
		t.Fatalf("second pre-step: %+v, %v", d2, err)
	}

	js, err := jetstream.New(w.srv.Connect())
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, processor.DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []events.Kind{events.KindPreStep, events.KindCatalog, events.KindSkillCall, events.KindToolResult, events.KindCompaction, "message.user"} {
		if _, err := st.GetLastMsgForSubject(ctx, "ev.a1.s7."+string(k)); err != nil {
			t.Errorf("nothing on ev.a1.s7.%s: %v", k, err)
		}
	}
}

// TestLayoutRefusesTheOtherLayoutsIDs: a flat client refuses "a1.s7" and
// an owner-layout one refuses "s7" or three tokens, before anything is
// sent, saying which form the layout wants.
func TestLayoutRefusesTheOtherLayoutsIDs(t *testing.T) {
	w := newWorld(t)
	flat := w.client()
	owner := w.client(WithLayout(events.LayoutOwner))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for _, tc := range []struct {
		name string
		c    *Client
		sid  string
		want string
	}{
		{"flat client, owner id", flat, "a1.s7", "invalid session token"},
		{"owner client, flat id", owner, "s7", "<owner>.<session>"},
		{"owner client, three tokens", owner, "a1.s7.x", "<owner>.<session>"},
		{"owner client, empty owner", owner, ".s7", "<owner>.<session>"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.c.PreStep(ctx, events.PreStep{Session: tc.sid, Step: "1", Tools: tools()})
			if !errors.Is(err, events.ErrBadPayload) || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), `field "session"`) {
				t.Errorf("pre-step: %v", err)
			}
			_, err = tc.c.CallSkill(ctx, events.SkillCall{Session: tc.sid, Call: "c", Args: events.SkillArgs{Name: "x"}})
			if !errors.Is(err, events.ErrBadPayload) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("skill call: %v", err)
			}
			_, err = tc.c.Compact(ctx, events.Compaction{Session: tc.sid, RetainFrom: 1})
			if !errors.Is(err, events.ErrBadPayload) {
				t.Errorf("compact: %v", err)
			}
			_, err = tc.c.Append(ctx, tc.sid, "message.user", "x")
			if !errors.Is(err, events.ErrBadSession) {
				t.Errorf("append: %v", err)
			}
		})
	}
	_, err := flat.Append(ctx, "a1.s7", "message.user", "x")
	if err == nil || !strings.Contains(err.Error(), "owner session layout, which is not set") {
		t.Errorf("a flat client's append of an owner id does not say why: %v", err)
	}
	if _, err := New(w.srv.Connect(), WithLayout(events.Layout(9))); err == nil || !strings.Contains(err.Error(), "unknown session layout") {
		t.Errorf("an unknown layout: %v", err)
	}
}
