package processor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

// userInvocationOn turns user invocation on.
func userInvocationOn(c *Config, _ *options) {
	c.Catalog = catalog.DefaultOptions()
	c.Catalog.UserInvocation = true
}

// invocations decodes the session's stored skill.invocation events, with
// their sequences.
func (e *env) invocations(sid string) ([]events.SkillInvocation, []uint64) {
	e.t.Helper()
	var out []events.SkillInvocation
	var seqs []uint64
	for _, m := range e.outputs(sid, events.KindInvocation) {
		inv, err := events.DecodeSkillInvocation(events.Msgpack, m.Data)
		if err != nil {
			e.t.Fatal(err)
		}
		out = append(out, inv)
		seqs = append(seqs, m.Sequence)
	}
	return out, seqs
}

// withContent is invs as a reader gets them (value.content filled in).
func withContent(invs []events.SkillInvocation) []events.SkillInvocation {
	out := make([]events.SkillInvocation, len(invs))
	for i, inv := range invs {
		out[i] = inv.WithContent()
	}
	return out
}

func names(invs []events.SkillInvocation) []string {
	var out []string
	for _, i := range invs {
		out = append(out, i.Name)
	}
	return out
}

const userLine = "A user may also invoke a skill directly; its <skill_content> block then appears in this conversation. Follow it, and do not call the `skill` tool again for that skill."

func TestUserInvocation(t *testing.T) {
	e := newEnv(t)
	e.writeSkill("pdf", "Work with PDF files.")
	e.writeSkill("hidden", "Only the user calls this.", "disable-model-invocation: true")
	e.writeSkill("prose", "Not for users.", "user-invocable: false")
	e.waitSkills("hidden", "pdf", "prose")
	p := e.start(userInvocationOn)
	w := e.worker()
	const sid = "invoke"

	ps := events.PreStep{Session: sid, Step: "1", Cwd: e.cwd, Tools: ourTool(), UserText: []string{
		"/pdf fill in the form, then use /hidden",
		"please /prose and /nope but not /x/refs, 5/8 or foo/x",
		"and /pdf again",
	}}
	d := w.preStep(ps)
	e.expect(d, events.OutcomeAppended, 1)
	if !strings.HasSuffix(d.Catalog.Text, "\n"+userLine+"\n</system-reminder>") {
		t.Errorf("catalog without the user invocation line:\n%s", d.Catalog.Text)
	}
	if got := names(d.Invocations); !reflect.DeepEqual(got, []string{"pdf", "hidden"}) {
		t.Fatalf("invocations %v, want [pdf hidden]", got)
	}
	wantIgnored := []events.Ignored{{Name: "prose", Reason: events.IgnoredNotUserInvocable}, {Name: "nope", Reason: events.IgnoredUnknown}}
	if !reflect.DeepEqual(d.Ignored, wantIgnored) {
		t.Errorf("ignored %+v, want %+v", d.Ignored, wantIgnored)
	}

	// The invocation's text and value are the skill tool's.
	r := w.call(events.SkillCall{Session: sid, Call: "c1", Cwd: e.cwd, Args: events.SkillArgs{Name: "pdf"}})
	inv := d.Invocations[0]
	if r.IsError || inv.Text != r.Text || !reflect.DeepEqual(inv.Value, *r.Value) {
		t.Errorf("invocation %+v\ndiffers from the tool result %+v", inv, r)
	}
	if inv.Role != "user" || inv.Step != "1" || inv.Source != (events.InvocationSource{Kind: "skill-invocation", Name: "pdf", Form: "instructions"}) {
		t.Errorf("invocation fields %+v", inv)
	}
	// The model may not load the hidden skill; the user did.
	if r := w.call(events.SkillCall{Session: sid, Call: "c2", Cwd: e.cwd, Args: events.SkillArgs{Name: "hidden"}}); !r.IsError || r.Error.Code != events.CodeNotModelInvocable {
		t.Errorf("tool loads the hidden skill: %+v", r)
	}
	if !strings.Contains(d.Invocations[1].Text, "Instructions of hidden.") {
		t.Errorf("hidden invocation text:\n%s", d.Invocations[1].Text)
	}

	// In the log: the catalog, then the invocations in gesture order,
	// each with the instructions once (in its text); the answer gives the
	// value its content back.
	stored, seqs := e.invocations(sid)
	if !reflect.DeepEqual(withContent(stored), d.Invocations) {
		t.Fatalf("stored %+v\nanswered %+v", stored, d.Invocations)
	}
	for _, inv := range stored {
		if inv.Value.Content != "" {
			t.Errorf("stored invocation of %s carries its instructions twice", inv.Name)
		}
	}
	cats := e.outputs(sid, events.KindCatalog)
	if len(cats) != 1 || !(cats[0].Sequence < seqs[0] && seqs[0] < seqs[1]) {
		t.Fatalf("catalog at %d, invocations at %v", cats[0].Sequence, seqs)
	}

	// A retry of the step appends nothing and answers the same.
	again := w.preStep(ps)
	if !reflect.DeepEqual(again.Invocations, d.Invocations) || !reflect.DeepEqual(again.Ignored, d.Ignored) {
		t.Fatalf("retry answered %+v / %+v", again.Invocations, again.Ignored)
	}
	if stored, _ := e.invocations(sid); len(stored) != 2 {
		t.Fatalf("%d invocations stored after a retry, want 2", len(stored))
	}

	// The next step invokes again; its catalog is unchanged.
	d2 := w.preStep(events.PreStep{Session: sid, Step: "2", Cwd: e.cwd, Tools: ourTool(), UserText: []string{"/pdf"}})
	if d2.Outcome != events.OutcomeUnchanged || len(d2.Invocations) != 1 || d2.Invocations[0].Step != "2" {
		t.Fatalf("step 2: %+v", d2)
	}
	if stored, _ := e.invocations(sid); len(stored) != 3 {
		t.Fatalf("%d invocations stored, want 3", len(stored))
	}
	// Invocations do not confuse the catalog history: step 3 is unchanged.
	if d3 := w.preStep(events.PreStep{Session: sid, Step: "3", Cwd: e.cwd, Tools: ourTool()}); d3.Outcome != events.OutcomeUnchanged || d3.Invocations != nil || d3.Ignored != nil {
		t.Fatalf("step 3: %+v", d3)
	}
	// Each invocation appended counts once per skill (the retry's none).
	for name, want := range map[string]float64{"pdf": 2, "hidden": 1, "prose": 0} {
		if got := testutil.ToFloat64(p.m.skills.invocations.WithLabelValues(name)); got != want {
			t.Errorf("skill_invocations_total{skill=%q} = %v, want %v", name, got, want)
		}
	}
}

func TestUserInvocationDisabled(t *testing.T) {
	e := newEnv(t)
	e.writeSkill("pdf", "Work with PDF files.")
	e.waitSkills("pdf")
	e.start()
	w := e.worker()
	d := w.preStep(events.PreStep{Session: "off", Step: "1", Cwd: e.cwd, Tools: ourTool(), UserText: []string{"/pdf now", "/pdf"}})
	e.expect(d, events.OutcomeAppended, 1)
	if want := []events.Ignored{{Reason: events.IgnoredDisabled}}; !reflect.DeepEqual(d.Ignored, want) || d.Invocations != nil {
		t.Fatalf("ignored %+v, invocations %+v; want one disabled entry", d.Ignored, d.Invocations)
	}
	if strings.Contains(d.Catalog.Text, "invoke a skill directly") {
		t.Errorf("catalog has the user invocation line with the option off")
	}
	if n := len(e.outputs("off", events.KindInvocation)); n != 0 {
		t.Fatalf("%d invocations appended with the option off", n)
	}
	// Without userText nothing is said.
	if d := w.preStep(events.PreStep{Session: "off", Step: "2", Cwd: e.cwd, Tools: ourTool()}); d.Ignored != nil {
		t.Fatalf("ignored %+v without userText", d.Ignored)
	}
}

// A member killed mid-step — after the catalog, or after the first
// invocation — leaves the redelivery to complete the rest, each once, in
// order.
func TestUserInvocationCrashMidStep(t *testing.T) {
	for _, crashAt := range []int32{1, 2} { // the nth append of the step: 1 = the catalog
		t.Run(fmt.Sprintf("after append %d", crashAt), func(t *testing.T) {
			e := newEnv(t)
			e.writeSkill("a-skill", "A.")
			e.writeSkill("b-skill", "B.")
			e.writeSkill("c-skill", "C.")
			e.waitSkills("a-skill", "b-skill", "c-skill")
			sid := fmt.Sprintf("crash-inv-%d", crashAt)
			var appends, crashes atomic.Int32
			e.start(userInvocationOn, func(c *Config, o *options) {
				c.AckWait = 300 * time.Millisecond
				o.hooks.afterAppend = func(s string, _ uint64) error {
					if s == sid && appends.Add(1) == crashAt && crashes.CompareAndSwap(0, 1) {
						return errCrash
					}
					return nil
				}
			})
			w := e.worker()
			d := w.preStep(events.PreStep{Session: sid, Step: "1", Cwd: e.cwd, Tools: ourTool(), UserText: []string{"/c-skill /a-skill /b-skill"}})
			if crashes.Load() != 1 {
				t.Fatal("the hook did not crash")
			}
			e.expect(d, events.OutcomeAppended, 1)
			want := []string{"c-skill", "a-skill", "b-skill"}
			if got := names(d.Invocations); !reflect.DeepEqual(got, want) {
				t.Fatalf("answered %v, want %v", got, want)
			}
			stored, seqs := e.invocations(sid)
			if got := names(stored); !reflect.DeepEqual(got, want) {
				t.Fatalf("stored %v, want %v", got, want)
			}
			if !reflect.DeepEqual(withContent(stored), d.Invocations) {
				t.Fatalf("answer differs from the log")
			}
			if cat := e.outputs(sid, events.KindCatalog); len(cat) != 1 || cat[0].Sequence > seqs[0] {
				t.Fatalf("catalog after the invocations")
			}
		})
	}
}

// Resolution is the tool's: a project skill on disk shadows the store's
// global one of the same name; a store skill gets the base directory under
// the pre-step's resourceDir.
func TestUserInvocationResolvesAsTheTool(t *testing.T) {
	e := newEnv(t)
	if _, _, err := pushGlobal(t, e, "Store body of ", "shared", "s-only"); err != nil {
		t.Fatal(err)
	}
	e.withStore()
	e.writeSkill("shared", "The project's own.")
	e.start(userInvocationOn)
	w := e.worker()
	const sid = "resolve"
	d := w.preStep(events.PreStep{Session: sid, Step: "1", Cwd: e.cwd, Tools: ourTool(), ResourceDir: "/res",
		UserText: []string{"/shared and /s-only"}})
	if got := names(d.Invocations); !reflect.DeepEqual(got, []string{"shared", "s-only"}) {
		t.Fatalf("invocations %v (decision %+v)", got, d)
	}
	for i, name := range []string{"shared", "s-only"} {
		r := w.call(events.SkillCall{Session: sid, Call: "c-" + name, Cwd: e.cwd, Args: events.SkillArgs{Name: name}, ResourceDir: "/res"})
		if r.IsError || r.Text != d.Invocations[i].Text {
			t.Errorf("%s: invocation text\n%s\ntool text\n%s", name, d.Invocations[i].Text, r.Text)
		}
	}
	if !strings.Contains(d.Invocations[0].Text, "Instructions of shared.") || d.Invocations[0].Value.Provider == "store" {
		t.Errorf("the store's global skill won over the project's:\n%s", d.Invocations[0].Text)
	}
	v := d.Invocations[1].Value
	want := "Base directory for this skill: /res/s-only/" + v.Digest[:16]
	if !strings.Contains(d.Invocations[1].Text, want) || v.ResourceBase == nil || v.ResourceBase.Path != "/res/s-only/"+v.Digest[:16] || v.Revision == 0 {
		t.Errorf("store invocation without its materialised base directory %q:\n%s\n%+v", want, d.Invocations[1].Text, v)
	}
}

// Bad userText is rejected with a reason and nothing is appended.
func TestUserInvocationBadInput(t *testing.T) {
	e := newEnv(t)
	e.writeSkill("pdf", "Work with PDF files.")
	e.waitSkills("pdf")
	// Triggers as large as the codec takes, so that userText's own bounds
	// are what refuses them.
	e.start(userInvocationOn, func(c *Config, _ *options) { c.MaxTriggerBytes = events.MaxPayloadSize })
	w := e.worker()
	many := make([]string, 0, MaxGestures+1)
	for i := range MaxGestures + 1 {
		many = append(many, fmt.Sprintf("/n%d", i))
	}
	for i, tc := range []struct {
		raw     []byte
		problem string
	}{
		{[]byte(`{"v":1,"session":"bad-0","step":"1","tools":[],"userText":"/pdf"}`), "userText"},
		{[]byte(`{"v":1,"session":"bad-1","step":"1","tools":[],"userText":["/pdf",7]}`), "userText"},
		{[]byte(`{"v":1,"session":"bad-2","step":"1","tools":[],"userText":["/pdf \u001b[2J"]}`), "control character"},
		{[]byte(`{"v":1,"session":"bad-3","step":"1","tools":[],"userText":["` + strings.Repeat("x", events.MaxUserTextBytes+1) + `"]}`), "limit 262144"},
		{nil, "limit 32"},
	} {
		sid := fmt.Sprintf("bad-%d", i)
		var p published
		if tc.raw != nil {
			p = w.publish(sid, events.KindPreStep, nil, tc.raw, events.HeaderContentType, events.ContentTypeJSON)
		} else {
			p = w.publish(sid, events.KindPreStep, events.PreStep{V: 1, Session: sid, Step: "1", Cwd: e.cwd, Tools: ourTool(), UserText: many}, nil)
		}
		d := w.decision(p)
		if d.Outcome != events.OutcomeRejected || d.Error == nil || !strings.Contains(d.Error.Message, tc.problem) {
			t.Errorf("%s: decision %+v, want rejected mentioning %q", sid, d, tc.problem)
		}
		if log := e.sessionLog(sid); len(log) != 1 {
			t.Errorf("%s: %d events in the session, want only the trigger", sid, len(log))
		}
	}
}

// Invocations are neither catalogs nor heads: with catalog heads on, the
// steps after an invocation are still read through the head, and a later
// replacement catalog goes after the invocations.
func TestUserInvocationWithCatalogHeads(t *testing.T) {
	e := newEnv(t)
	e.writeSkill("a-skill", "A.")
	e.waitSkills("a-skill")
	p := e.start(userInvocationOn, headsOn)
	w := e.worker()
	const sid = "inv-heads"
	step := func(id string, text ...string) events.Decision {
		return w.preStep(events.PreStep{Session: sid, Step: id, Cwd: e.cwd, Tools: ourTool(), UserText: text})
	}
	if d := step("1", "/a-skill"); d.Outcome != events.OutcomeAppended || len(d.Invocations) != 1 {
		t.Fatalf("step 1: %+v", d)
	}
	if d := step("2", "/a-skill again"); d.Outcome != events.OutcomeUnchanged || len(d.Invocations) != 1 {
		t.Fatalf("step 2: %+v", d)
	}
	if d := step("3"); d.Outcome != events.OutcomeUnchanged {
		t.Fatalf("step 3: %+v", d)
	}
	if n := counter(t, p.m.headReads.WithLabelValues(headHit)); n < 2 {
		t.Errorf("head hits %v, want the steps after the invocations read through the head", n)
	}
	e.writeSkill("b-skill", "B.")
	e.waitSkills("a-skill", "b-skill")
	d := step("4", "/b-skill")
	if d.Outcome != events.OutcomeAppended || d.Catalog.Source.Update != "replacement" || len(d.Invocations) != 1 {
		t.Fatalf("step 4: %+v", d)
	}
	_, seqs := e.invocations(sid)
	cats := e.outputs(sid, events.KindCatalog)
	if len(cats) != 2 || len(seqs) != 3 || !(seqs[1] < cats[1].Sequence && cats[1].Sequence < seqs[2]) {
		t.Fatalf("catalogs %d, invocations at %v", len(cats), seqs)
	}
	if d := step("5"); d.Outcome != events.OutcomeUnchanged {
		t.Fatalf("step 5: %+v", d)
	}
}

// A reply too large for one message drops the invocations' copies of the
// content first, then the catalog, then the invocations (all in the log).
func TestShrinkReplyInvocations(t *testing.T) {
	cause := errors.New("too big")
	inv := func(n string) events.SkillInvocation {
		return events.SkillInvocation{Name: n, Text: "t", Value: events.SkillValue{Name: n, Content: "body"}}
	}
	d := events.Decision{V: 1, Outcome: events.OutcomeAppended, Catalog: &events.Catalog{Text: "x"},
		Invocations: []events.SkillInvocation{inv("a"), inv("b")}}
	v, ok := shrinkReply(d, cause)
	got := v.(events.Decision)
	if !ok || got.Invocations[0].Value.Content != "" || got.Invocations[1].Value.Content != "" || got.Catalog == nil || d.Invocations[0].Value.Content != "body" {
		t.Fatalf("first shrink: %+v", got)
	}
	v, ok = shrinkReply(v, cause)
	if got := v.(events.Decision); !ok || got.Catalog != nil || len(got.Invocations) != 2 || got.Error.Code != events.CodeTooLarge {
		t.Fatalf("second shrink: %+v", got)
	}
	v, ok = shrinkReply(v, cause)
	if got := v.(events.Decision); !ok || got.Invocations != nil || got.Error.Code != events.CodeTooLarge || !strings.Contains(got.Error.Message, "invocations") {
		t.Fatalf("third shrink: %+v", got)
	}
	if _, ok := shrinkReply(v, cause); ok {
		t.Error("shrank with nothing left to drop")
	}
}

// An invocation whose text and content together exceed the stream's
// largest message is appended without the copy of the content.
func TestUserInvocationLargeSkill(t *testing.T) {
	e := newEnv(t)
	e.withoutFlaky()
	e.smallStream()
	dir := filepath.Join(e.skillDir, "big")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	body := strings.Repeat("Follow this rule carefully. ", 1500) // 42 KB
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: big\ndescription: Big.\n---\n"+body), 0o644); err != nil {
		t.Fatal(err)
	}
	e.waitSkills("big")
	e.start(userInvocationOn, func(c *Config, _ *options) { c.Catalog.MaxLength, c.Catalog.MaxSkillBytes = 2000, 46<<10 })
	w := e.worker()
	d := w.preStep(events.PreStep{Session: "big", Step: "1", Cwd: e.cwd, Tools: ourTool(), UserText: []string{"/big"}})
	if len(d.Invocations) != 1 || !strings.Contains(d.Invocations[0].Text, strings.TrimSpace(body)) || d.Invocations[0].Value.Content != "" {
		t.Fatalf("decision: outcome %s, %d invocations, error %+v", d.Outcome, len(d.Invocations), d.Error)
	}
	if stored, _ := e.invocations("big"); len(stored) != 1 || stored[0].Text != d.Invocations[0].Text {
		t.Fatalf("stored %d invocations", len(stored))
	}
}

// A skill whose provider fails to load it is ignored as load_failed; the
// other invocations of the step go ahead; fixed, the next step invokes it.
func TestUserInvocationLoadFailed(t *testing.T) {
	e := newEnv(t)
	e.writeSkill("a-skill", "A.")
	e.waitSkills("a-skill")
	e.flaky.offer.Store(true)
	e.flaky.loadBroken.Store(true)
	e.start(userInvocationOn)
	w := e.worker()
	d := w.preStep(events.PreStep{Session: "lf", Step: "1", Cwd: e.cwd, Tools: ourTool(), UserText: []string{"/flaky-skill then /a-skill"}})
	if got := names(d.Invocations); !reflect.DeepEqual(got, []string{"a-skill"}) {
		t.Fatalf("invocations %v", got)
	}
	if want := []events.Ignored{{Name: "flaky-skill", Reason: events.IgnoredLoadFailed}}; !reflect.DeepEqual(d.Ignored, want) {
		t.Fatalf("ignored %+v, want %+v", d.Ignored, want)
	}
	e.flaky.loadBroken.Store(false)
	d = w.preStep(events.PreStep{Session: "lf", Step: "2", Cwd: e.cwd, Tools: ourTool(), UserText: []string{"/flaky-skill"}})
	if len(d.Invocations) != 1 || !strings.Contains(d.Invocations[0].Text, "Resources for this skill: a flaky store") {
		t.Fatalf("step 2: %+v", d)
	}
}
