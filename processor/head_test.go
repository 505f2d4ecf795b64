package processor

import (
	"context"
	"strconv"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/skillstream/skillstream/events"
)

// headsOn gives every catalog a head, however small.
func headsOn(_ *Config, o *options) { o.headMin = 1 }

// headReads reads the head_reads_total series of result.
func headReads(p *Processor, result string) float64 {
	return testutil.ToFloat64(p.m.headReads.WithLabelValues(result))
}

// headEnv is a test's world with one skill, a-skill, on disk.
func headEnv(t *testing.T) *env {
	t.Helper()
	e := newEnv(t)
	e.writeSkill("a-skill", "Does A.")
	e.waitSkills("a-skill")
	return e
}

// headSession is a session of one test: its worker and pre-steps.
type headSession struct {
	e   *env
	w   *worker
	sid string
}

func (s headSession) step(step string) events.Decision {
	s.e.t.Helper()
	return s.w.preStep(events.PreStep{Session: s.sid, Step: step, Cwd: s.e.cwd, Tools: ourTool()})
}

// want publishes pre-step step and checks its outcome and, for an
// appended catalog, its update kind.
func (s headSession) want(step, outcome, update string) {
	s.e.t.Helper()
	d := s.step(step)
	if d.Outcome != outcome {
		s.e.t.Fatalf("step %s: outcome %s (%s), want %s", step, d.Outcome, d.Reason, outcome)
	}
	if update != "" && (d.Catalog == nil || d.Catalog.Source.Update != update) {
		s.e.t.Fatalf("step %s: catalog %+v, want a %s", step, d.Catalog, update)
	}
}

// A catalog with a head is appended just after it, names it, and the head
// names the catalog; the next pre-steps read the head, not the catalog,
// and decide what a full read decides.
func TestHeadReadSparesTheCatalog(t *testing.T) {
	e := headEnv(t)
	p := e.start(headsOn)
	s := headSession{e: e, w: e.worker(), sid: "s1"}
	s.want("1", events.OutcomeAppended, "initial")

	log := e.sessionLog("s1")
	if len(log) != 3 {
		t.Fatalf("session holds %d events, want pre-step, head, catalog", len(log))
	}
	head, cat := log[1], log[2]
	if head.Subject != events.Subject(events.DefaultPrefix, "s1", events.KindCatalogHead) || cat.Subject != events.Subject(events.DefaultPrefix, "s1", events.KindCatalog) {
		t.Fatalf("subjects %s, %s", head.Subject, cat.Subject)
	}
	if got := cat.Header.Get(events.HeaderCatalogHead); got != strconv.FormatUint(head.Sequence, 10) {
		t.Fatalf("catalog names head %q, want %d", got, head.Sequence)
	}
	h, err := events.DecodeCatalogHead(events.Msgpack, head.Data)
	if err != nil {
		t.Fatal(err)
	}
	c := e.catalogs("s1")[0]
	if h.Session != "s1" || h.Step != c.Step || h.Digest != c.Source.Digest || c.Source.View == nil || h.View != *c.Source.View {
		t.Fatalf("head %+v does not name catalog %+v", h, c.Source)
	}
	if got := head.Header.Get(events.HeaderCausationSeq); got != log[0].Header.Get("Nats-Sequence") && got != strconv.FormatUint(log[0].Sequence, 10) {
		t.Fatalf("head answers trigger %s, want %d", got, log[0].Sequence)
	}

	for i := 2; i <= 4; i++ {
		s.want(strconv.Itoa(i), events.OutcomeUnchanged, "")
	}
	if hit, stale := headReads(p, headHit), headReads(p, headStale); hit != 3 || stale != 0 {
		t.Fatalf("head reads: %v hits, %v stale; want 3 hits", hit, stale)
	}
	// A change of skills is seen through the head read.
	e.writeSkill("b-skill", "Does B.")
	e.waitSkills("a-skill", "b-skill")
	s.want("5", events.OutcomeAppended, "replacement")
	s.want("6", events.OutcomeUnchanged, "")
	if n := len(e.catalogs("s1")); n != 2 {
		t.Fatalf("%d catalogs, want 2", n)
	}
	if hit := headReads(p, headHit); hit != 5 {
		t.Fatalf("%v head hits, want 5", hit)
	}
}

// Catalogs below the size limit get no head, and the session is read as
// before.
func TestSmallCatalogHasNoHead(t *testing.T) {
	e := headEnv(t)
	p := e.start()
	s := headSession{e: e, w: e.worker(), sid: "s1"}
	s.want("1", events.OutcomeAppended, "initial")
	s.want("2", events.OutcomeUnchanged, "")
	if n := len(e.outputs("s1", events.KindCatalogHead)); n != 0 {
		t.Fatalf("%d heads for a small catalog", n)
	}
	if c := e.outputs("s1", events.KindCatalog)[0]; c.Header.Get(events.HeaderCatalogHead) != "" {
		t.Fatal("a small catalog names a head")
	}
	if hit := headReads(p, headHit); hit != 0 {
		t.Fatalf("%v head hits", hit)
	}
}

// A member that did not append the catalog learns its head from its first
// full read, then reads the head.
func TestHeadLearnedFromFullRead(t *testing.T) {
	e := headEnv(t)
	tu := newTurns(2)
	tu.only.Store(0)
	// A member whose turn it is not hands the trigger back (a nak, a
	// delivery used up): deliveries must not run out before the other
	// member's turn comes.
	turn := func(i int) func(*Config, *options) {
		return func(c *Config, o *options) { c.MaxDeliver = 1000; o.hooks.take = tu.hook(i) }
	}
	a := e.start(headsOn, turn(0))
	e.start(headsOn, turn(1))
	s := headSession{e: e, w: e.worker(), sid: "s1"}
	s.want("1", events.OutcomeAppended, "initial")
	tu.only.Store(1)
	s.want("2", events.OutcomeUnchanged, "") // full read: learns
	s.want("3", events.OutcomeUnchanged, "") // head read
	// The members share one registry here, so the counters are shared.
	if hit := headReads(a, headHit); hit != 1 {
		t.Fatalf("%v head hits, want 1 (the second member's second pre-step)", hit)
	}
}

// Whatever happened to the catalog since it was remembered, the head read
// notices it and the pre-step decides on a full read: exactly what a
// member without heads decides.
func TestHeadReadNoticesChanges(t *testing.T) {
	for _, c := range []struct {
		name string
		// change alters session s1 after its catalog (appended at cat,
		// head at head) was remembered and read through its head once.
		change  func(t *testing.T, e *env, st jetstream.Stream, head, cat uint64)
		outcome string
		update  string
		// The head reads over pre-steps 2 to 5: hits and stale ones.
		hits, stale float64
	}{
		{"catalog deleted", func(t *testing.T, e *env, st jetstream.Stream, _, cat uint64) {
			if err := st.DeleteMsg(context.Background(), cat); err != nil {
				t.Fatal(err)
			}
		}, events.OutcomeAppended, "initial", 3, 1},
		{"head deleted", func(t *testing.T, e *env, st jetstream.Stream, head, _ uint64) {
			if err := st.DeleteMsg(context.Background(), head); err != nil {
				t.Fatal(err)
			}
		}, events.OutcomeUnchanged, "", 1, 1},
		{"both deleted", func(t *testing.T, e *env, st jetstream.Stream, head, cat uint64) {
			for _, seq := range []uint64{head, cat} {
				if err := st.DeleteMsg(context.Background(), seq); err != nil {
					t.Fatal(err)
				}
			}
		}, events.OutcomeAppended, "initial", 3, 1},
		{"session purged", func(t *testing.T, e *env, st jetstream.Stream, _, _ uint64) {
			if err := st.Purge(context.Background(), jetstream.WithPurgeSubject(events.SessionWildcard(events.DefaultPrefix, "s1"))); err != nil {
				t.Fatal(err)
			}
		}, events.OutcomeAppended, "initial", 3, 1},
		{"head forged after the catalog", func(t *testing.T, e *env, st jetstream.Stream, head, _ uint64) {
			m, err := st.GetMsg(context.Background(), head)
			if err != nil {
				t.Fatal(err)
			}
			publishRaw(t, e, events.Subject(events.DefaultPrefix, "s1", events.KindCatalogHead), m.Data, m.Header)
		}, events.OutcomeUnchanged, "", 1, 1},
		{"garbage on catalog.>", func(t *testing.T, e *env, _ jetstream.Stream, _, _ uint64) {
			publishRaw(t, e, events.DefaultPrefix+".s1.catalog.x", []byte{0xc1, 0xff}, nil)
		}, events.OutcomeUnchanged, "", 1, 1},
		{"masking compaction", func(t *testing.T, e *env, _ jetstream.Stream, _, cat uint64) {
			w := e.worker()
			w.publish("s1", events.KindCompaction, events.Compaction{V: 1, Session: "s1", RetainFrom: cat + 1}, nil)
		}, events.OutcomeAppended, "replacement", 4, 0},
		{"compaction keeping it", func(t *testing.T, e *env, _ jetstream.Stream, _, cat uint64) {
			w := e.worker()
			w.publish("s1", events.KindCompaction, events.Compaction{V: 1, Session: "s1", RetainFrom: cat + 1, Keep: []uint64{cat}}, nil)
		}, events.OutcomeUnchanged, "", 4, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := headEnv(t)
			p := e.start(headsOn)
			s := headSession{e: e, w: e.worker(), sid: "s1"}
			s.want("1", events.OutcomeAppended, "initial")
			s.want("2", events.OutcomeUnchanged, "")
			if hit := headReads(p, headHit); hit != 1 {
				t.Fatalf("%v head hits before the change, want 1", hit)
			}
			st, err := e.js.Stream(context.Background(), DefaultStream)
			if err != nil {
				t.Fatal(err)
			}
			heads, cats := e.outputs("s1", events.KindCatalogHead), e.outputs("s1", events.KindCatalog)
			c.change(t, e, st, heads[0].Sequence, cats[0].Sequence)
			s.want("3", c.outcome, c.update)
			s.want("4", events.OutcomeUnchanged, "")
			s.want("5", events.OutcomeUnchanged, "")
			if hit, stale := headReads(p, headHit), headReads(p, headStale); hit != c.hits || stale != c.stale {
				t.Fatalf("head reads: %v hits, %v stale; want %v, %v", hit, stale, c.hits, c.stale)
			}
		})
	}
}

// publishRaw appends data with headers h on subject, as a worker may.
func publishRaw(t *testing.T, e *env, subject string, data []byte, h nats.Header) {
	t.Helper()
	m := &nats.Msg{Subject: subject, Data: data, Header: nats.Header{}}
	for _, k := range []string{events.HeaderContentType, events.HeaderCausationSeq} {
		if v := h.Get(k); v != "" {
			m.Header.Set(k, v)
		}
	}
	if _, err := e.js.PublishMsg(context.Background(), m); err != nil {
		t.Fatal(err)
	}
}

// A worker's retry of the step that appended the catalog is answered with
// that catalog, read in full: the head is never used for an answer.
func TestHeadNotUsedForRetries(t *testing.T) {
	e := headEnv(t)
	p := e.start(headsOn)
	s := headSession{e: e, w: e.worker(), sid: "s1"}
	first := s.step("1")
	again := s.step("1")
	if again.Outcome != events.OutcomeAppended || again.Catalog == nil || again.Catalog.Text != first.Catalog.Text {
		t.Fatalf("retry answered %+v", again)
	}
	if n := len(e.catalogs("s1")); n != 1 {
		t.Fatalf("%d catalogs after a retry", n)
	}
	if hit := headReads(p, headHit) + headReads(p, headStale) + headReads(p, headUnsure); hit != 0 {
		t.Fatalf("%v head reads for a retry", hit)
	}
}

// A catalog copied by a worker with a bogus Catalog-Head-Seq header (not a
// number, zero, itself, beyond the stream, another session's head, the real
// head of the original) is never read through a head: every pre-step
// decides on a full read, and nothing more is appended.
func TestForgedHeadHeader(t *testing.T) {
	e := headEnv(t)
	p := e.start(headsOn)
	other := headSession{e: e, w: e.worker(), sid: "other"}
	other.want("1", events.OutcomeAppended, "initial")
	otherHead := e.outputs("other", events.KindCatalogHead)[0].Sequence
	for i, bogus := range []string{"abc", "0", "self", "99999999", strconv.FormatUint(otherHead, 10), "real"} {
		sid := "s" + strconv.Itoa(i)
		s := headSession{e: e, w: e.worker(), sid: sid}
		s.want("1", events.OutcomeAppended, "initial")
		orig := e.outputs(sid, events.KindCatalog)[0]
		switch bogus {
		case "self":
			bogus = strconv.FormatUint(orig.Sequence+1, 10) // the copy's own sequence
		case "real":
			bogus = orig.Header.Get(events.HeaderCatalogHead)
		}
		h := nats.Header{}
		h.Set(events.HeaderContentType, events.ContentTypeMsgpack)
		h.Set(events.HeaderCausationSeq, orig.Header.Get(events.HeaderCausationSeq))
		m := &nats.Msg{Subject: orig.Subject, Data: orig.Data, Header: h}
		m.Header.Set(events.HeaderCatalogHead, bogus)
		if _, err := e.js.PublishMsg(context.Background(), m); err != nil {
			t.Fatal(err)
		}
		before := headReads(p, headHit)
		for step := 2; step <= 4; step++ {
			s.want(strconv.Itoa(step), events.OutcomeUnchanged, "")
		}
		if hit := headReads(p, headHit); hit != before {
			t.Errorf("header %q: %v pre-steps read through a head", bogus, hit-before)
		}
		if n := len(e.catalogs(sid)); n != 2 {
			t.Errorf("header %q: %d catalogs, want the original and the copy", bogus, n)
		}
	}
}
