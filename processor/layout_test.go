package processor

import (
	"context"
	"errors"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

// ownerEnv is an env whose processors use the owner session layout.
func ownerEnv(t *testing.T) *env {
	e := newEnv(t)
	e.cfg.Layout = events.LayoutOwner
	return e
}

// TestOwnerLayoutSession plays a session of the owner layout, "a1.s7", on
// <prefix>.a1.s7.<kind>: the consumer is filtered to every owner's
// sessions, pre-steps and skill calls are answered and appended under the
// session's subjects with its dotted id in every payload and output id,
// retries append nothing more, and a compaction that masks the catalog
// has it re-established.
func TestOwnerLayoutSession(t *testing.T) {
	e := ownerEnv(t)
	e.writeSkill("a-skill", "A skill.")
	e.writeSkill("b-skill", "B skill.")
	e.waitSkills("a-skill", "b-skill")
	e.start()

	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cons, err := e.js.Consumer(ctx, DefaultStream, DefaultConsumer)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ev.*.*.agent.pre-step", "ev.*.*.tool.call.skill", "ev.*.*.tool.call.skill_search"}
	if got := cons.CachedInfo().Config.FilterSubjects; !reflect.DeepEqual(got, want) {
		t.Fatalf("consumer filters %q, want %q", got, want)
	}

	w := e.worker()
	const sid = "a1.s7"
	pre := func(step string) events.Decision {
		return w.preStep(events.PreStep{Session: sid, Step: step, Cwd: e.cwd, Tools: ourTool()})
	}
	d := pre("1")
	e.expect(d, events.OutcomeAppended, 1)
	if d.Session != sid || d.Catalog.Session != sid || d.Catalog.ID != "a1.s7:1:catalog.append" {
		t.Fatalf("decision names session %q, catalog %q with id %q", d.Session, d.Catalog.Session, d.Catalog.ID)
	}
	cats := e.outputs(sid, events.KindCatalog)
	if len(cats) != 1 || cats[0].Subject != "ev.a1.s7.catalog.append" || d.CatalogSeq != cats[0].Sequence {
		t.Fatalf("catalog stored on %q (seq %d), decision names %d", cats[0].Subject, cats[0].Sequence, d.CatalogSeq)
	}
	// The same step again (a worker that lost the answer): the catalog
	// already appended, nothing new.
	again := pre("1")
	e.expect(again, events.OutcomeAppended, 1)
	if !reflect.DeepEqual(again.Catalog, d.Catalog) {
		t.Fatalf("retry answered another catalog:\n%+v\n%+v", again.Catalog, d.Catalog)
	}
	e.expect(pre("2"), events.OutcomeUnchanged, 1)

	// Skill calls, and a retry of the first after the skill changed.
	r1 := w.call(events.SkillCall{Session: sid, Call: "c1", Cwd: e.cwd, Args: events.SkillArgs{Name: "a-skill"}})
	if r1.IsError || r1.Session != sid || r1.Value == nil || r1.Value.Name != "a-skill" {
		t.Fatalf("skill call answered %+v", r1)
	}
	e.removeSkill("a-skill")
	e.waitSkills("b-skill")
	r1again := w.call(events.SkillCall{Session: sid, Call: "c1", Cwd: e.cwd, Args: events.SkillArgs{Name: "a-skill"}})
	if r1again.Text != r1.Text || r1again.IsError {
		t.Fatalf("retry of c1 answered %+v, want %+v", r1again, r1)
	}
	res := e.outputs(sid, events.KindToolResult)
	if len(res) != 1 || res[0].Subject != "ev.a1.s7.tool.result" {
		t.Fatalf("%d results stored, want 1 on ev.a1.s7.tool.result", len(res))
	}

	// The skill was removed: the next step replaces the catalog.
	d = pre("3")
	e.expect(d, events.OutcomeAppended, 2)
	if d.Catalog.Source.Update != string(catalog.UpdateReplacement) {
		t.Fatalf("update %q after a removal", d.Catalog.Source.Update)
	}

	// A compaction masking the catalog has it re-established; one keeping
	// it changes nothing.
	last := w.note(sid, "hello")
	w.compact(sid, last+1)
	d = pre("4")
	e.expect(d, events.OutcomeAppended, 3)
	w.compact(sid, d.CatalogSeq, d.CatalogSeq)
	e.expect(pre("5"), events.OutcomeUnchanged, 3)

	// Another owner's session of the same id token is another session.
	other := w.preStep(events.PreStep{Session: "a2.s7", Step: "1", Cwd: e.cwd, Tools: ourTool()})
	e.expect(other, events.OutcomeAppended, 1)
	if n := len(e.catalogs(sid)); n != 3 {
		t.Fatalf("session %s has %d catalogs after another owner's step, want 3", sid, n)
	}
}

// TestOwnerLayoutCrashBetweenAppendAndAck: exactly once in the owner
// layout. The first delivery appends and crashes before acknowledging;
// the redelivery answers with what it appended.
func TestOwnerLayoutCrashBetweenAppendAndAck(t *testing.T) {
	e := ownerEnv(t)
	e.writeSkill("a-skill", "A skill.")
	e.waitSkills("a-skill")
	hook, crashes := crashOnce("a1.crash")
	e.start(hook)
	w := e.worker()
	d := w.preStep(events.PreStep{Session: "a1.crash", Step: "1", Cwd: e.cwd, Tools: ourTool()})
	if crashes.Load() != 1 {
		t.Fatal("the hook did not crash")
	}
	e.expect(d, events.OutcomeAppended, 1)
	if got := counter(t, e.mustMetrics(t).duplicates.WithLabelValues("pre-step")); got != 1 {
		t.Fatalf("duplicates %v, want 1", got)
	}
}

// TestOwnerLayoutSearch: a skill search of an owner-layout session is
// answered and recorded under its subjects.
func TestOwnerLayoutSearch(t *testing.T) {
	e := ownerEnv(t)
	e.fleetOnDisk()
	e.start(e.withSearch(0))
	w := e.worker()
	const sid = "team-b.s1"
	r := w.search(events.SkillSearch{Session: sid, Call: "q1", Cwd: e.cwd, Args: events.SearchArgs{Query: "fill a PDF form", Limit: 1}})
	if r.IsError || r.Session != sid || r.Search == nil || len(r.Search.Results) != 1 || r.Search.Results[0].Name != "pdf-forms" {
		t.Fatalf("search answered %+v", r)
	}
	if got := e.storedResults(sid); len(got) != 1 || got[0].Call != "q1" {
		t.Fatalf("stored results %+v", got)
	}
}

// TestOwnerLayoutBadInput: in the owner layout a trigger whose payload
// names a flat id, another session or three tokens is rejected naming
// what was wrong, as is one whose subject has no valid session; a trigger
// of the flat layout is not delivered at all (the consumer's filters do
// not match it). The processor goes on working.
func TestOwnerLayoutBadInput(t *testing.T) {
	e := ownerEnv(t)
	e.writeSkill("a-skill", "A skill.")
	e.waitSkills("a-skill")
	e.start()
	w := e.worker()
	const sid = "a1.s7"
	enc := func(v any) []byte {
		b, err := events.Encode(events.Msgpack, v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	asJSON := []string{events.HeaderContentType, events.ContentTypeJSON}
	m := e.mustMetrics(t)
	for _, c := range []struct {
		name            string
		subject         string // session part of the subject (default sid)
		payload         []byte
		hdr             []string
		reason, mention string
	}{
		{name: "flat id in the payload", payload: enc(events.PreStep{V: 1, Session: "s7", Step: "1", Tools: ourTool()}),
			reason: reasonField, mention: "<owner>.<session>"},
		{name: "three tokens in the payload", payload: enc(events.PreStep{V: 1, Session: "a1.s7.x", Step: "1", Tools: ourTool()}),
			reason: reasonField, mention: "session"},
		{name: "another owner's session in the payload", payload: enc(events.PreStep{V: 1, Session: "a2.s7", Step: "1", Tools: ourTool()}),
			reason: reasonSessionMismatch, mention: `payload session "a2.s7", subject session "a1.s7"`},
		{name: "bad session token in the subject", subject: "a1.bad~sid", payload: []byte(`{"v":1,"session":"a1.bad~sid","step":"1","tools":[]}`),
			hdr: asJSON, reason: reasonSubject, mention: "a1.bad~sid"},
	} {
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
			if d.Session != subj {
				t.Fatalf("rejection addressed to session %q, want %q", d.Session, subj)
			}
			if got := counter(t, m.rejects.WithLabelValues(c.reason)); got != before+1 {
				t.Fatalf("rejects{%s} = %v, want %v", c.reason, got, before+1)
			}
		})
	}
	// A bad skill call is answered with a bad_request result appended to
	// its session, so that the model's call has a result.
	p := w.publish(sid, events.KindSkillCall, nil, enc(events.SkillCall{V: 1, Session: "s7", Call: "c9", Args: events.SkillArgs{Name: "a-skill"}}))
	var r events.ToolResult
	decodeAnswer(t, w.answer(p), &r)
	if !r.IsError || r.Error == nil || r.Error.Code != events.CodeBadRequest || !strings.Contains(r.Error.Message, "<owner>.<session>") {
		t.Fatalf("bad skill call answered %+v", r)
	}
	if got := e.storedResults(sid); len(got) != 1 || got[0].Call != "c9" || got[0].Session != sid {
		t.Fatalf("stored results %+v", got)
	}

	// A flat trigger is in the stream but never delivered.
	flat := w.publish("s7", events.KindPreStep, events.PreStep{V: 1, Session: "s7", Step: "1", Cwd: e.cwd, Tools: ourTool()}, nil)
	e.expect(w.preStep(events.PreStep{Session: sid, Step: "ok", Cwd: e.cwd, Tools: ourTool()}), events.OutcomeAppended, 1)
	e.waitSettled()
	if _, err := flat.reply.NextMsg(200 * time.Millisecond); !errors.Is(err, nats.ErrTimeout) {
		t.Fatalf("a flat trigger was answered: %v", err)
	}
	if n := len(e.outputs("s7", events.KindCatalog)); n != 0 {
		t.Fatalf("%d catalogs appended for a flat trigger", n)
	}
}

// TestLayoutSwitchRefiltersConsumer: a processor started in the owner
// layout on a stream whose consumer a flat one created changes the
// consumer's filters, warning that every member must use the same layout,
// and serves owner sessions; with provisioning off, a consumer of the
// other layout is refused, naming the filters it lacks.
func TestLayoutSwitchRefiltersConsumer(t *testing.T) {
	e := newEnv(t)
	e.writeSkill("a-skill", "A skill.")
	e.waitSkills("a-skill")
	const warning = "the consumer was filtered for the other session layout"
	// A flat processor provisions the stream and consumer.
	_, logs, err := e.prepare(e.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(logs.matching(slog.LevelWarn, warning)); n != 0 {
		t.Fatalf("a new consumer warned of a layout switch")
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	filters := func() []string {
		c, err := e.js.Consumer(ctx, DefaultStream, DefaultConsumer)
		if err != nil {
			t.Fatal(err)
		}
		return c.CachedInfo().Config.FilterSubjects
	}
	if got := filters(); !reflect.DeepEqual(got, events.TriggerFilters("ev")) {
		t.Fatalf("flat filters %q", got)
	}

	cfg := e.cfg
	cfg.Layout, cfg.NoProvision = events.LayoutOwner, true
	_, _, err = e.prepare(cfg)
	if !errors.Is(err, ErrNotProvisioned) || !strings.Contains(err.Error(), `"ev.*.*.agent.pre-step"`) {
		t.Fatalf("owner layout on a flat consumer, provisioning off: %v", err)
	}

	cfg.NoProvision = false
	if _, logs, err = e.prepare(cfg); err != nil {
		t.Fatal(err)
	}
	if w := logs.matching(slog.LevelWarn, warning); len(w) != 1 {
		t.Fatalf("%d warnings of the layout switch, want 1", len(w))
	}
	if got := filters(); !reflect.DeepEqual(got, events.TriggerFiltersIn(events.LayoutOwner, "ev")) {
		t.Fatalf("owner filters %q", got)
	}
	e.cfg.Layout = events.LayoutOwner
	e.start()
	w := e.worker()
	e.expect(w.preStep(events.PreStep{Session: "a1.s1", Step: "1", Cwd: e.cwd, Tools: ourTool()}), events.OutcomeAppended, 1)

	if _, err := New(e.srv.Connect(), e.registry, Config{Layout: events.Layout(7)}); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "session layout") {
		t.Fatalf("an unknown layout: %v", err)
	}
}
