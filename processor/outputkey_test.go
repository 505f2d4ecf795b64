package processor

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
)

// TestOutputIDsCannotBeTaken: output Msg-Ids carry an HMAC under the
// stream's key, which the first processor adds and every later one reads.
// A record appended under the plain id of another session's next output
// changes nothing; and even a record appended under the keyed id (the key
// leaked) is not taken for the output: the processor appends the real one
// under another id, answers from it, and counts the event.
func TestOutputIDsCannotBeTaken(t *testing.T) {
	e := newEnv(t)
	e.writeSkill("a-skill", "A skill.")
	e.waitSkills("a-skill")
	p := e.start()
	ctx := context.Background()
	st, err := e.js.Stream(ctx, DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	key := st.CachedInfo().Config.Metadata[OutputKeyMetadata]
	if len(key) != 64 {
		t.Fatalf("stream metadata %v: want a 64-hex-digit %s", st.CachedInfo().Config.Metadata, OutputKeyMetadata)
	}
	if p2 := e.start(); string(p2.idKey) != string(p.idKey) {
		t.Fatal("a second member uses another output key")
	}
	w := e.worker()
	squat := func(owner, id string) {
		t.Helper()
		c := events.Compaction{V: 1, Session: owner, RetainFrom: 1}
		w.publish(owner, events.KindCompaction, c, nil, events.HeaderMsgID, id)
	}
	for i, c := range []struct {
		name string
		id   func(sid, ref string, k events.Kind) string
	}{
		{"plain id", outputID},
		{"keyed id", func(sid, ref string, k events.Kind) string { return p.msgID(outputID(sid, ref, k)) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			victim := "victim-" + string(rune('a'+i))
			squat("squatter", c.id(victim, "1", events.KindCatalog))
			squat("squatter", c.id(victim, "c1", events.KindToolResult))
			d := w.preStep(events.PreStep{Session: victim, Step: "1", Cwd: e.cwd, Tools: ourTool()})
			e.expect(d, events.OutcomeAppended, 1)
			if d.Catalog == nil || d.Catalog.Session != victim || !strings.Contains(d.Catalog.Text, "a-skill") {
				t.Fatalf("answer %+v: want the victim's own catalog", d.Catalog)
			}
			cats := e.outputs(victim, events.KindCatalog)
			if len(cats) != 1 || cats[0].Sequence != d.CatalogSeq {
				t.Fatalf("victim's log holds %d catalogs; answered with %d", len(cats), d.CatalogSeq)
			}
			r := w.call(events.SkillCall{Session: victim, Call: "c1", Cwd: e.cwd, Args: events.SkillArgs{Name: "a-skill"}})
			if r.IsError || r.Session != victim || r.Call != "c1" || !strings.Contains(r.Text, "a-skill") {
				t.Fatalf("result %+v: want the victim's own result", r)
			}
			if n := len(e.outputs(victim, events.KindToolResult)); n != 1 {
				t.Fatalf("victim's log holds %d results, want 1", n)
			}
			// A retry of the same step and call is answered from the log.
			if d2 := w.preStep(events.PreStep{Session: victim, Step: "1", Cwd: e.cwd, Tools: ourTool()}); d2.CatalogSeq != d.CatalogSeq {
				t.Fatalf("retry answered with catalog %d, want %d", d2.CatalogSeq, d.CatalogSeq)
			}
			if r2 := w.call(events.SkillCall{Session: victim, Call: "c1", Cwd: e.cwd, Args: events.SkillArgs{Name: "a-skill"}}); r2.Text != r.Text {
				t.Fatalf("retried call answered %q", r2.Text)
			}
			e.expect(d, events.OutcomeAppended, 1)
			if n := len(e.outputs(victim, events.KindToolResult)); n != 1 {
				t.Fatalf("after retries the victim's log holds %d results, want 1", n)
			}
		})
	}
	if got := counter(t, e.mustMetrics(t).idsTaken); got != 2 {
		t.Errorf("output_ids_taken_total %v, want 2 (the keyed squats)", got)
	}
}

// TestOutputIDsUpgrade: a stream written by an older version holds outputs
// under the older Msg-Id form, "<session>:<call>:<kind>/<HMAC>". After the
// upgrade, the retry of a call answered before it (its result no longer the
// session's newest, so that only the Msg-Id finds it) is answered with that
// result, and nothing is appended, not even the probe that found it.
func TestOutputIDsUpgrade(t *testing.T) {
	e := newEnv(t)
	e.writeSkill("a-skill", "A skill.")
	e.waitSkills("a-skill")
	stop := e.startStoppable()
	ctx := context.Background()
	st, err := e.js.Stream(ctx, DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	md := st.CachedInfo().Config.Metadata
	if md[OutputIDsMetadata] != "0" {
		t.Fatalf("a new stream's %s is %q, want 0", OutputIDsMetadata, md[OutputIDsMetadata])
	}
	key, ok := parseOutputKey(md)
	if !ok {
		t.Fatalf("stream metadata %v: no output key", md)
	}
	older := (&Processor{idKey: key}).legacyMsgID(outputID("upgraded", "c1", events.KindToolResult))

	// As an older version answered call c1, then c2 after it.
	const sid = "upgraded"
	w := e.worker()
	before := events.ToolResult{V: events.Version, Session: sid, Call: "c1", Text: "answered before the upgrade"}
	w.publish(sid, events.KindToolResult, before, nil, events.HeaderMsgID, older)
	if r := w.call(events.SkillCall{Session: sid, Call: "c2", Cwd: e.cwd, Args: events.SkillArgs{Name: "a-skill"}}); r.IsError {
		t.Fatalf("call c2: %+v", r)
	}
	stop()
	// The stream as an older version left it: keyed, without the mark.
	cfg := st.CachedInfo().Config
	delete(cfg.Metadata, OutputIDsMetadata)
	if _, err := e.js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}

	p := e.start()
	if p.legacyUntil.IsZero() {
		t.Fatal("an upgraded member does not look for older Msg-Ids")
	}
	if r := w.call(events.SkillCall{Session: sid, Call: "c1", Cwd: e.cwd, Args: events.SkillArgs{Name: "a-skill"}}); r.Text != before.Text {
		t.Fatalf("retried call c1 answered %q, want the answer from before the upgrade", r.Text)
	}
	if n := len(e.outputs(sid, events.KindToolResult)); n != 2 {
		t.Fatalf("the session holds %d results, want 2 (c1's from before the upgrade, c2's)", n)
	}
	if n := len(e.sessionLog(sid)); n != 4 {
		t.Fatalf("the session holds %d records, want 4 (two results, two triggers): the probe was stored?", n)
	}
	// Later calls are appended under the new form.
	if r := w.call(events.SkillCall{Session: sid, Call: "c3", Cwd: e.cwd, Args: events.SkillArgs{Name: "a-skill"}}); r.IsError {
		t.Fatalf("call c3: %+v", r)
	}
	res := e.outputs(sid, events.KindToolResult)
	if got := res[len(res)-1].Header.Get(events.HeaderMsgID); got != p.msgID(outputID(sid, "c3", events.KindToolResult)) || strings.Contains(got, sid) {
		t.Fatalf("c3's Msg-Id %q", got)
	}
}

// TestLegacyDuplicateProbe: the probe for an output's older Msg-Id finds
// the record stored under it and nothing else, on a single server and on a
// replicated stream of a 3-node cluster (whose servers check expectations
// in another order), as often as it is asked, and stores nothing.
func TestLegacyDuplicateProbe(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test skipped in -short mode")
	}
	for _, replicas := range []int{1, 3} {
		t.Run(fmt.Sprintf("R%d", replicas), func(t *testing.T) {
			var nc *nats.Conn
			if replicas == 1 {
				nc = natstest.Start(t).Connect()
			} else {
				nc = natstest.StartCluster(t, replicas).Connect(0)
			}
			js, err := jetstream.New(nc)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			defer cancel()
			st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "PROBE", Subjects: []string{"ev.>"}, Replicas: replicas, Duplicates: 2 * time.Minute})
			if err != nil {
				t.Fatal(err)
			}
			p := &Processor{js: js, cfg: Config{}.WithDefaults(), idKey: []byte("0123456789abcdef0123456789abcdef"),
				now: time.Now, legacyUntil: time.Now().Add(time.Hour), replicated: replicas > 1}
			subject := events.Subject(events.DefaultPrefix, "s", events.KindToolResult)
			oid := outputID("s", "c1", events.KindToolResult)
			ack, err := js.PublishMsg(ctx, &nats.Msg{Subject: subject, Data: []byte("old"),
				Header: nats.Header{events.HeaderMsgID: []string{p.legacyMsgID(oid)}}})
			if err != nil {
				t.Fatal(err)
			}
			for range 3 {
				if seq, err := p.legacyDuplicate(ctx, subject, oid); err != nil || seq != ack.Sequence {
					t.Fatalf("probe of a stored older id: %d, %v; want %d", seq, err, ack.Sequence)
				}
				if seq, err := p.legacyDuplicate(ctx, subject, outputID("s", "c2", events.KindToolResult)); err != nil || seq != 0 {
					t.Fatalf("probe of an absent older id: %d, %v; want 0", seq, err)
				}
			}
			info, err := st.Info(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if info.State.Msgs != 1 {
				t.Fatalf("the stream holds %d messages after the probes, want 1", info.State.Msgs)
			}
			// Once the window is over, no probe.
			p.legacyUntil = time.Now().Add(-time.Second)
			if seq, err := p.legacyDuplicate(ctx, subject, oid); err != nil || seq != 0 {
				t.Fatalf("probe after the window: %d, %v", seq, err)
			}
		})
	}
}

// TestOutputIDsWithoutKey: with provisioning off and a stream without the
// key, output Msg-Ids are a hash without a key: still 128 bits in hex,
// nothing of the session in them.
func TestOutputIDsWithoutKey(t *testing.T) {
	e := newEnv(t)
	e.writeSkill("a-skill", "A skill.")
	e.waitSkills("a-skill")
	stop := e.startStoppable()
	stop()
	ctx := context.Background()
	st, err := e.js.Stream(ctx, DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	cfg := st.CachedInfo().Config
	delete(cfg.Metadata, OutputKeyMetadata)
	delete(cfg.Metadata, OutputIDsMetadata)
	if _, err := e.js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	p := e.start(func(c *Config, _ *options) { c.NoProvision = true })
	if p.idKey != nil {
		t.Fatal("an output key out of nowhere")
	}
	const sid = "keyless-session"
	w := e.worker()
	if r := w.call(events.SkillCall{Session: sid, Call: "c1", Cwd: e.cwd, Args: events.SkillArgs{Name: "a-skill"}}); r.IsError {
		t.Fatalf("call: %+v", r)
	}
	res := e.outputs(sid, events.KindToolResult)
	if len(res) != 1 {
		t.Fatalf("%d results", len(res))
	}
	got := res[0].Header.Get(events.HeaderMsgID)
	if got != p.msgID(outputID(sid, "c1", events.KindToolResult)) || len(got) != 32 || strings.Trim(got, "0123456789abcdef") != "" {
		t.Fatalf("Msg-Id %q: want the unkeyed hash, 32 hex digits", got)
	}
}
