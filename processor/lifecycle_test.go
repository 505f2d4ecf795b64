package processor

import (
	"context"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

// workedExample writes the worked example's skills to disk (escaping,
// capping, user-only and model-only invocation).
func (e *env) workedExample() {
	e.writeSkill("z-skill", strings.Repeat("Long   description ", 5))
	e.writeSkill("a-skill", "Use {{placeholder}} <safely> & carefully.")
	e.writeSkill("model-only-skill", "Model-only skill.", "user-invocable: false")
	e.writeSkill("user-only-skill", "User-only skill.", "disable-model-invocation: true")
	e.waitSkills("a-skill", "model-only-skill", "user-only-skill", "z-skill")
}

// expect checks a decision's outcome and, when a catalog was appended,
// that the reply carries exactly the stored record.
func (e *env) expect(d events.Decision, outcome string, catalogs int) {
	e.t.Helper()
	if d.Outcome != outcome {
		e.t.Fatalf("step %s: outcome %q (error %+v), want %q", d.Step, d.Outcome, d.Error, outcome)
	}
	stored := e.catalogs(d.Session)
	if len(stored) != catalogs {
		e.t.Fatalf("step %s: session %s has %d catalogs, want %d", d.Step, d.Session, len(stored), catalogs)
	}
	switch {
	case outcome == events.OutcomeAppended:
		if d.Catalog == nil {
			e.t.Fatalf("step %s: appended without a catalog in the reply", d.Step)
		}
		if last := stored[len(stored)-1]; !reflect.DeepEqual(last, *d.Catalog) {
			e.t.Fatalf("step %s: reply catalog differs from the stored one:\n%+v\n%+v", d.Step, *d.Catalog, last)
		}
	case d.Catalog != nil:
		e.t.Fatalf("step %s: outcome %s with a catalog", d.Step, outcome)
	}
}

func TestLifecycle(t *testing.T) {
	e := newEnv(t)
	e.cfg.Catalog = catalog.Options{DescriptionMaxLength: 50}
	e.workedExample()
	proc := e.start()
	w := e.worker()
	const sid = "life"
	step := 0
	pre := func(tools []events.Tool) events.Decision {
		step++
		return w.preStep(events.PreStep{Session: sid, Step: "s" + strconv.Itoa(step), Cwd: e.cwd, Tools: tools})
	}

	// First pre-step: the initial catalog, byte-exact with the worked example's golden text.
	d := pre(ourTool())
	e.expect(d, events.OutcomeAppended, 1)
	golden(t, "lifecycle/1-initial.txt", d.Catalog.Text)
	if d.Catalog.Source.Update != string(catalog.UpdateInitial) || d.Catalog.Source.Producer != DefaultToolOwner ||
		d.Catalog.Role != "user" || d.Catalog.Source.Kind != events.SourceKindCatalog {
		t.Fatalf("initial catalog source: %+v", d.Catalog.Source)
	}
	if digest, ok := catalog.Recognize(d.Catalog.Text); !ok || digest != d.Catalog.Source.Digest {
		t.Fatalf("digest %q, recognised %q %v", d.Catalog.Source.Digest, digest, ok)
	}
	wantEntries := []events.Entry{
		{Name: "a-skill", Description: "Use {{placeholder}} <safely> & carefully."},
		{Name: "model-only-skill", Description: "Model-only skill."},
		{Name: "z-skill", Description: "Long description Long description Long descript..."},
	}
	if !reflect.DeepEqual(d.Catalog.Source.Entries, wantEntries) {
		t.Fatalf("entries %+v", d.Catalog.Source.Entries)
	}
	// The stored record carries the trigger's sequence and a Msg-Id derived
	// from session and step, keyed, with nothing of either in clear.
	first := e.outputs(sid, events.KindCatalog)[0]
	trigger := e.outputs(sid, events.KindPreStep)[0]
	if got := first.Header.Get(events.HeaderCausationSeq); got != strconv.FormatUint(trigger.Sequence, 10) {
		t.Fatalf("Causation-Seq %q, want %d", got, trigger.Sequence)
	}
	if got, want := first.Header.Get(events.HeaderMsgID), proc.msgID("life:s1:catalog.append"); got != want || len(got) != 32 ||
		strings.Trim(got, "0123456789abcdef") != "" {
		t.Fatalf("Nats-Msg-Id %q, want %s (the 128-bit HMAC of life:s1:catalog.append in hex, alone)", got, want)
	}

	// Same view again: nothing appended.
	e.expect(pre(ourTool()), events.OutcomeUnchanged, 1)

	// A skill added on disk: the replacement catalog.
	e.writeSkill("b-skill", "Second skill.")
	e.waitSkills("a-skill", "b-skill", "model-only-skill", "user-only-skill", "z-skill")
	d = pre(ourTool())
	e.expect(d, events.OutcomeAppended, 2)
	golden(t, "lifecycle/2-replacement.txt", d.Catalog.Text)
	if d.Catalog.Source.Update != string(catalog.UpdateReplacement) {
		t.Fatalf("update %q", d.Catalog.Source.Update)
	}

	// A body-only edit changes nothing the model sees.
	e.writeSkill("b-skill", "Second skill.", "whenToUse: never")
	e.expect(pre(ourTool()), events.OutcomeUnchanged, 2)

	// Every skill removed: the tombstone, once.
	for _, n := range []string{"a-skill", "b-skill", "model-only-skill", "user-only-skill", "z-skill"} {
		e.removeSkill(n)
	}
	e.waitSkills()
	d = pre(ourTool())
	e.expect(d, events.OutcomeAppended, 3)
	golden(t, "lifecycle/3-tombstone.txt", d.Catalog.Text)
	e.expect(pre(ourTool()), events.OutcomeUnchanged, 3)

	// A skill back: a replacement.
	e.writeSkill("a-skill", "Back again.")
	e.waitSkills("a-skill")
	d = pre(ourTool())
	e.expect(d, events.OutcomeAppended, 4)
	golden(t, "lifecycle/4-back.txt", d.Catalog.Text)

	// The tool hidden after publication: a tombstone, then nothing.
	hidden := []events.Tool{{Name: "bash", Owner: "agent"}}
	d = pre(hidden)
	e.expect(d, events.OutcomeAppended, 5)
	if d.Catalog.Text != e.catalogs(sid)[2].Text {
		t.Fatalf("hidden tool: want the tombstone, got\n%s", d.Catalog.Text)
	}
	if d.Reason != events.ReasonNoSkillTool {
		t.Errorf("tombstone of a hidden tool: reason %q, want %q", d.Reason, events.ReasonNoSkillTool)
	}
	e.expect(pre(hidden), events.OutcomeUnchanged, 5)
	// Shadowed by another owner's skill tool listed first: still empty.
	shadowed := []events.Tool{{Name: catalog.ToolName, Owner: "someone-else"}, {Name: catalog.ToolName, Owner: DefaultToolOwner}}
	d = pre(shadowed)
	e.expect(d, events.OutcomeUnchanged, 5)
	if d.Reason != events.ReasonSkillToolOfOtherOwner {
		t.Errorf("shadowed tool: reason %q, want %q", d.Reason, events.ReasonSkillToolOfOtherOwner)
	}
	// Visible again: the replacement.
	d = pre(ourTool())
	e.expect(d, events.OutcomeAppended, 6)
	if d.Catalog.Text != e.catalogs(sid)[3].Text {
		t.Fatalf("tool back: want the one-skill replacement, got\n%s", d.Catalog.Text)
	}
}

func TestHiddenBeforePublication(t *testing.T) {
	e := newEnv(t)
	e.writeSkill("a-skill", "A skill.")
	e.waitSkills("a-skill")
	e.start()
	w := e.worker()
	for i, c := range []struct {
		tools  []events.Tool
		reason string
	}{
		{nil, events.ReasonNoSkillTool},
		{[]events.Tool{{Name: "bash", Owner: "agent"}}, events.ReasonNoSkillTool},
		{[]events.Tool{{Name: catalog.ToolName, Owner: "someone-else"}, {Name: catalog.ToolName, Owner: DefaultToolOwner}}, events.ReasonSkillToolOfOtherOwner},
	} {
		d := w.preStep(events.PreStep{Session: "hidden", Step: strconv.Itoa(i), Cwd: e.cwd, Tools: c.tools})
		e.expect(d, events.OutcomeEmpty, 0)
		if d.Reason != c.reason {
			t.Errorf("tools %v: reason %q, want %q", c.tools, d.Reason, c.reason)
		}
	}
	// No skills at all, tool visible: empty too.
	d := w.preStep(events.PreStep{Session: "noskills", Step: "1", Tools: ourTool()})
	e.expect(d, events.OutcomeEmpty, 0)
	if d.Reason != events.ReasonNoSkills {
		t.Errorf("no skills: reason %q, want %q", d.Reason, events.ReasonNoSkills)
	}
	// A catalog with skills gives no reason.
	d = w.preStep(events.PreStep{Session: "hidden", Step: "visible", Cwd: e.cwd, Tools: ourTool()})
	e.expect(d, events.OutcomeAppended, 1)
	if d.Reason != "" {
		t.Errorf("catalog with skills: reason %q, want none", d.Reason)
	}
}

// compact appends a context.compact event as a worker would.
func (w *worker) compact(sid string, retainFrom uint64, keep ...uint64) uint64 {
	w.t.Helper()
	c := events.Compaction{V: events.Version, Session: sid, RetainFrom: retainFrom, Keep: keep}
	data, err := events.Encode(events.Msgpack, c)
	if err != nil {
		w.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	ack, err := w.js.PublishMsg(ctx, &nats.Msg{
		Subject: events.Subject(events.DefaultPrefix, sid, events.KindCompaction),
		Header:  nats.Header{events.HeaderContentType: []string{events.ContentTypeMsgpack}},
		Data:    data,
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return ack.Sequence
}

// note appends an event of a kind the processor ignores.
func (w *worker) note(sid, text string) uint64 {
	w.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	ack, err := w.js.Publish(ctx, events.Subject(events.DefaultPrefix, sid, "message.user"), []byte(text))
	if err != nil {
		w.t.Fatal(err)
	}
	return ack.Sequence
}

func TestCompaction(t *testing.T) {
	e := newEnv(t)
	e.writeSkill("a-skill", "A skill.")
	e.waitSkills("a-skill")
	e.start()
	w := e.worker()
	const sid = "compact"
	pre := func(step string) events.Decision {
		return w.preStep(events.PreStep{Session: sid, Step: step, Cwd: e.cwd, Tools: ourTool()})
	}
	d := pre("1")
	e.expect(d, events.OutcomeAppended, 1)
	initial := d.Catalog.Text
	catSeq := e.outputs(sid, events.KindCatalog)[0].Sequence

	// A compaction that keeps everything visible changes nothing.
	w.compact(sid, 1)
	e.expect(pre("2"), events.OutcomeUnchanged, 1)

	// A compaction masking the catalog: re-established as a replacement,
	// though the skills did not change.
	last := w.note(sid, "hello")
	w.compact(sid, last+1)
	d = pre("3")
	e.expect(d, events.OutcomeAppended, 2)
	if d.Catalog.Source.Update != string(catalog.UpdateReplacement) || d.Catalog.Source.Digest != e.catalogs(sid)[0].Source.Digest {
		t.Fatalf("re-established catalog: %+v", d.Catalog.Source)
	}
	if d.Catalog.Text == initial {
		t.Fatal("re-established catalog uses the initial template")
	}
	golden(t, "lifecycle/compaction-replacement.txt", d.Catalog.Text)
	replSeq := e.outputs(sid, events.KindCatalog)[1].Sequence

	// A compaction whose keep list retains the newest catalog: unchanged.
	last = w.note(sid, "more")
	w.compact(sid, last+1, replSeq)
	e.expect(pre("4"), events.OutcomeUnchanged, 2)

	// A compaction that keeps only the first catalog: the newest one is
	// masked, the kept older one is still visible with the same digest.
	last = w.note(sid, "again")
	w.compact(sid, last+1, catSeq)
	e.expect(pre("5"), events.OutcomeUnchanged, 2)

	// A malformed newer compaction is skipped: the previous one counts.
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if _, err := w.js.Publish(ctx, events.Subject(events.DefaultPrefix, sid, events.KindCompaction), []byte{0xc1}); err != nil {
		t.Fatal(err)
	}
	e.expect(pre("6"), events.OutcomeUnchanged, 2)

	// Masking everything again re-establishes it again.
	last = w.note(sid, "later")
	w.compact(sid, last+1)
	e.expect(pre("7"), events.OutcomeAppended, 3)
}

func TestForeignCatalogsAreSkipped(t *testing.T) {
	e := newEnv(t)
	e.writeSkill("a-skill", "A skill.")
	e.waitSkills("a-skill")
	e.start()
	w := e.worker()
	const sid = "foreign"
	d := w.preStep(events.PreStep{Session: sid, Step: "1", Cwd: e.cwd, Tools: ourTool()})
	e.expect(d, events.OutcomeAppended, 1)
	// Another producer's catalog, and a malformed record, on our subject.
	foreign := *d.Catalog
	foreign.Source.Producer = "someone-else"
	foreign.Text = strings.Replace(foreign.Text, "A skill.", "Forged.", 1)
	data, err := events.Encode(events.Msgpack, foreign)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	subject := events.Subject(events.DefaultPrefix, sid, events.KindCatalog)
	for _, b := range [][]byte{data, []byte("not msgpack at all")} {
		if _, err := w.js.Publish(ctx, subject, b); err != nil {
			t.Fatal(err)
		}
	}
	// Our catalog is still the newest recognisable one: unchanged.
	d = w.preStep(events.PreStep{Session: sid, Step: "2", Cwd: e.cwd, Tools: ourTool()})
	if d.Outcome != events.OutcomeUnchanged {
		t.Fatalf("outcome %q, want unchanged", d.Outcome)
	}
}

func TestIncompleteSnapshot(t *testing.T) {
	e := newEnv(t)
	e.writeSkill("a-skill", "A skill.")
	e.writeSkill("b-skill", "B skill.")
	e.waitSkills("a-skill", "b-skill")
	e.start()
	w := e.worker()
	const sid = "flaky"
	pre := func(step string) events.Decision {
		return w.preStep(events.PreStep{Session: sid, Step: step, Cwd: e.cwd, Tools: ourTool()})
	}
	e.expect(pre("1"), events.OutcomeAppended, 1)

	// A provider fails: nothing is appended, the model keeps its catalog,
	// even though a skill went away meanwhile.
	e.flaky.listBroken.Store(true)
	e.removeSkill("b-skill")
	e.expect(pre("2"), events.OutcomeIncomplete, 1)
	e.expect(pre("3"), events.OutcomeIncomplete, 1)
	// A new session under the failure gets nothing either.
	d := w.preStep(events.PreStep{Session: "flaky2", Step: "1", Cwd: e.cwd, Tools: ourTool()})
	e.expect(d, events.OutcomeIncomplete, 0)

	// Recovery: the next complete observation appends the change.
	e.flaky.listBroken.Store(false)
	e.waitSkills("a-skill")
	d = pre("4")
	e.expect(d, events.OutcomeAppended, 2)
	if len(d.Catalog.Source.Entries) != 1 || d.Catalog.Source.Update != string(catalog.UpdateReplacement) {
		t.Fatalf("after recovery: %+v", d.Catalog.Source)
	}
	e.expect(pre("5"), events.OutcomeUnchanged, 2)
	if n := counter(t, e.mustMetrics(t).triggers.WithLabelValues("pre-step", "incomplete")); n != 3 {
		t.Fatalf("incomplete counter %v, want 3", n)
	}
}

// mustMetrics returns the metrics every processor of e shares.
func (e *env) mustMetrics(t testing.TB) *metrics {
	t.Helper()
	m, err := newMetrics(e.reg)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func TestExpiredPreStep(t *testing.T) {
	e := newEnv(t)
	e.writeSkill("a-skill", "A skill.")
	e.waitSkills("a-skill")
	e.start()
	w := e.worker()
	past := time.Now().Add(-time.Minute).UnixMilli()
	d := w.preStep(events.PreStep{Session: "late", Step: "1", Cwd: e.cwd, Tools: ourTool(), DeadlineMs: past})
	e.expect(d, events.OutcomeExpired, 0)
	future := time.Now().Add(time.Hour).UnixMilli()
	d = w.preStep(events.PreStep{Session: "late", Step: "2", Cwd: e.cwd, Tools: ourTool(), DeadlineMs: future})
	e.expect(d, events.OutcomeAppended, 1)
}
