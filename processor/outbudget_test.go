package processor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

// budgetClock is a clock for the output budget that moves only when the
// test moves it: the budget refills with time, and a test must not depend
// on how long its steps take.
type budgetClock struct{ now atomic.Int64 }

func newBudgetClock() *budgetClock {
	c := &budgetClock{}
	c.now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	return c
}

func (c *budgetClock) read() time.Time         { return time.Unix(0, c.now.Load()) }
func (c *budgetClock) advance(d time.Duration) { c.now.Add(int64(d)) }
func (c *budgetClock) hook(_ *Config, o *options) {
	o.hooks.budgetNow = c.read
}

// TestCatalogResendBudget: a worker that compacts its catalog away and
// steps, again and again, has the whole catalog stored again at every
// step, for a trigger of a few hundred bytes. The re-sent catalogs stop at
// the session's budget: beyond it the pre-step is answered incomplete,
// reason over_budget, nothing appended, and the refusal is counted; the
// budget refills with time. Under it nothing changes (the re-sent catalog
// is the replacement it always was), and a catalog with another list (the
// skills changed) is not a re-send and goes out whatever the budget.
func TestCatalogResendBudget(t *testing.T) {
	e := newEnv(t)
	e.writeSkill("a-skill", "A skill.")
	e.waitSkills("a-skill")
	clock := newBudgetClock()
	p := e.start(clock.hook, func(c *Config, _ *options) { c.CatalogResends = 3 })
	w := e.worker()
	const sid = "resend-loop"
	refused := func() float64 { return counter(t, p.m.overBudget.WithLabelValues(budgetCatalogResends)) }

	step := 0
	pre := func() events.Decision {
		step++
		return w.preStep(events.PreStep{Session: sid, Step: fmt.Sprint(step), Cwd: e.cwd, Tools: ourTool()})
	}
	d := pre()
	e.expect(d, events.OutcomeAppended, 1)
	shown := d.CatalogSeq
	loop := func() events.Decision { // compact the catalog away, then step
		w.compact(sid, shown+1)
		return pre()
	}

	// Within the budget: re-sent as replacements, as without one.
	for i := range 3 {
		d := loop()
		e.expect(d, events.OutcomeAppended, 2+i)
		if d.Catalog.Source.Update != string(catalog.UpdateReplacement) || d.Reason != "" {
			t.Fatalf("re-send %d: update %q, reason %q", i+1, d.Catalog.Source.Update, d.Reason)
		}
		shown = d.CatalogSeq
	}
	if got := refused(); got != 0 {
		t.Fatalf("%v refusals within the budget", got)
	}

	// Over it: nothing appended, the worker told why.
	for i := range 5 {
		d := loop()
		e.expect(d, events.OutcomeIncomplete, 4)
		if d.Reason != events.ReasonOverBudget || d.Error != nil || d.CatalogSeq != 0 {
			t.Fatalf("over the budget: reason %q, error %+v, catalogSeq %d", d.Reason, d.Error, d.CatalogSeq)
		}
		if got := refused(); got != float64(i+1) {
			t.Fatalf("%v refusals counted, want %d", got, i+1)
		}
	}

	// A third of a minute later, one more (3 a minute).
	clock.advance(20 * time.Second)
	d = loop()
	e.expect(d, events.OutcomeAppended, 5)
	shown = d.CatalogSeq
	e.expect(loop(), events.OutcomeIncomplete, 5)

	// Another list is not a re-send: it goes out over the budget.
	e.writeSkill("b-skill", "B skill.")
	e.waitSkills("a-skill", "b-skill")
	d = pre()
	e.expect(d, events.OutcomeAppended, 6)
	if !strings.Contains(d.Catalog.Text, "b-skill") {
		t.Fatalf("catalog after the change:\n%s", d.Catalog.Text)
	}
	if got := refused(); got != 6 {
		t.Fatalf("%v refusals counted, want 6", got)
	}

	// Another session has a budget of its own.
	o := w.preStep(events.PreStep{Session: "other", Step: "1", Cwd: e.cwd, Tools: ourTool()})
	e.expect(o, events.OutcomeAppended, 1)
	w.compact("other", o.CatalogSeq+1)
	e.expect(w.preStep(events.PreStep{Session: "other", Step: "2", Cwd: e.cwd, Tools: ourTool()}), events.OutcomeAppended, 2)
}

// TestInvocationBudget: every /name of a large skill appends the skill's
// instructions; the bytes of a session's invocation records per minute
// stop at its budget. Beyond it the name is listed as ignored, reason
// over_budget, and counted; the step's catalog is decided as ever; the
// budget refills with time.
func TestInvocationBudget(t *testing.T) {
	e := newEnv(t)
	dir := filepath.Join(e.skillDir, "big")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	body := strings.Repeat("Follow this rule carefully. ", 700) // about 20 KB
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: big\ndescription: Big.\n---\n"+body), 0o644); err != nil {
		t.Fatal(err)
	}
	e.writeSkill("small", "Small.")
	e.waitSkills("big", "small")
	clock := newBudgetClock()
	p := e.start(userInvocationOn, clock.hook, func(c *Config, _ *options) { c.InvocationBytes = 50_000 })
	w := e.worker()
	const sid = "invoke-loop"
	refused := func() float64 { return counter(t, p.m.overBudget.WithLabelValues(budgetInvocationBytes)) }
	step := 0
	invoke := func(text string) events.Decision {
		step++
		return w.preStep(events.PreStep{Session: sid, Step: fmt.Sprint(step), Cwd: e.cwd, Tools: ourTool(), UserText: []string{text}})
	}
	storedBytes := func() int {
		n := 0
		for _, m := range e.outputs(sid, events.KindInvocation) {
			n += len(m.Data)
		}
		return n
	}

	for i := range 2 {
		d := invoke("/big")
		if len(d.Invocations) != 1 || d.Ignored != nil || !strings.Contains(d.Invocations[0].Text, strings.TrimSpace(body)) {
			t.Fatalf("invocation %d within the budget: %d invocations, ignored %+v", i+1, len(d.Invocations), d.Ignored)
		}
	}
	within := storedBytes()
	if within > 50_000 {
		t.Fatalf("%d invocation bytes stored, over the budget", within)
	}

	// Over it: this name and the ones after it are ignored, nothing
	// appended; the catalog is decided as ever.
	d := invoke("/big then /small")
	want := []events.Ignored{{Name: "big", Reason: events.IgnoredOverBudget}, {Name: "small", Reason: events.IgnoredOverBudget}}
	if len(d.Invocations) != 0 || fmt.Sprint(d.Ignored) != fmt.Sprint(want) || d.Outcome != events.OutcomeUnchanged {
		t.Fatalf("over the budget: outcome %s, %d invocations, ignored %+v", d.Outcome, len(d.Invocations), d.Ignored)
	}
	if got := storedBytes(); got != within {
		t.Fatalf("%d invocation bytes stored over the budget, want %d", got, within)
	}
	if got := refused(); got != 1 {
		t.Fatalf("%v refusals counted, want 1", got)
	}

	// A minute later the budget is back.
	clock.advance(time.Minute)
	if d := invoke("/big"); len(d.Invocations) != 1 || d.Ignored != nil {
		t.Fatalf("after a minute: %d invocations, ignored %+v", len(d.Invocations), d.Ignored)
	}
}

// TestCatalogBytesBudget: a worker that shows and hides the skill tool in
// turn changes the session's list at every step, and each change is a
// full catalog (then a tombstone). The bytes of the catalogs after the
// session's first stop at its budget: beyond it the pre-step is answered
// incomplete, reason over_budget, nothing appended, the refusal counted;
// the budget refills with time.
func TestCatalogBytesBudget(t *testing.T) {
	e := newEnv(t)
	var names []string
	for i := range 20 {
		name := fmt.Sprintf("skill-%02d", i)
		e.writeSkill(name, strings.Repeat(fmt.Sprintf("Does task %d with care. ", i), 10))
		names = append(names, name)
	}
	e.waitSkills(names...)
	clock := newBudgetClock()
	const budget = 20_000
	p := e.start(clock.hook, func(c *Config, _ *options) { c.CatalogBytes = budget })
	w := e.worker()
	const sid = "toggle-loop"
	hidden := []events.Tool{{Name: "bash", Owner: "agent"}}
	step := 0
	pre := func() events.Decision {
		step++
		tools := ourTool()
		if step%2 == 0 {
			tools = hidden
		}
		return w.preStep(events.PreStep{Session: sid, Step: fmt.Sprint(step), Cwd: e.cwd, Tools: tools})
	}
	sentAfterFirst := func() int {
		n := 0
		for i, m := range e.outputs(sid, events.KindCatalog) {
			if i > 0 {
				n += len(m.Data)
			}
		}
		return n
	}
	first := pre()
	e.expect(first, events.OutcomeAppended, 1)
	refusals := 0
	for range 20 {
		d := pre()
		switch d.Outcome {
		case events.OutcomeAppended:
			if refusals > 0 {
				t.Fatalf("step %s appended after a refusal, with the clock standing still", d.Step)
			}
		case events.OutcomeUnchanged: // the model kept the tombstone: hiding it again changes nothing
			if refusals == 0 {
				t.Fatalf("step %s unchanged before any refusal", d.Step)
			}
		case events.OutcomeIncomplete:
			if d.Reason != events.ReasonOverBudget || d.Catalog != nil {
				t.Fatalf("step %s: %+v", d.Step, d)
			}
			refusals++
		default:
			t.Fatalf("step %s: outcome %s", d.Step, d.Outcome)
		}
	}
	if refusals == 0 || step-1-refusals < 2 {
		t.Fatalf("%d of %d changes refused: want the first ones sent and the rest refused", refusals, step-1)
	}
	if n := sentAfterFirst(); n > budget {
		t.Fatalf("%d bytes of catalogs sent after the first, over the budget of %d", n, budget)
	}
	if got := counter(t, p.m.overBudget.WithLabelValues(budgetCatalogBytes)); got != float64(refusals) {
		t.Fatalf("%v refusals counted, want %d", got, refusals)
	}
	clock.advance(time.Minute)
	if (step+1)%2 == 0 { // the next step must show the tool: the catalog is the change
		step++
	}
	if d := pre(); d.Outcome != events.OutcomeAppended {
		t.Fatalf("a minute later: %+v", d)
	}
}

// The buckets: full at first, refilled at their rate per minute up to a
// minute's worth, a part configured NoLimit never refuses, an invocation
// larger than the whole budget goes when the budget is full, and a refund
// gives back what a duplicate did not store.
func TestOutputBudgetBuckets(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	b := newOutputBudget(Config{CatalogResends: 2, CatalogBytes: 1000, InvocationBytes: 100})
	for i := range 2 {
		if !b.catalogAllowed("s", t0) {
			t.Fatalf("re-send %d refused", i+1)
		}
		b.resent("s", t0)
	}
	if b.catalogAllowed("s", t0) || !b.catalogAllowed("other", t0) {
		t.Fatal("the third re-send of s allowed, or another session's refused")
	}
	if !b.catalogAllowed("s", t0.Add(30*time.Second)) {
		t.Fatal("half a minute later, no re-send back")
	}
	if !b.catalogAllowed("s", t0.Add(time.Hour)) {
		t.Fatal("an hour later, none")
	}
	b.resent("s", t0.Add(time.Hour))
	b.resent("s", t0.Add(time.Hour))
	if b.catalogAllowed("s", t0.Add(time.Hour)) {
		t.Fatal("the bucket held more than a minute's worth")
	}

	if !b.catalogBytesAllowed("c", 5000, t0) {
		t.Fatal("a catalog larger than the whole budget refused with the budget full")
	}
	b.catalogSent("c", 5000, t0)
	if b.catalogBytesAllowed("c", 10, t0.Add(4*time.Minute)) || !b.catalogBytesAllowed("c", 10, t0.Add(5*time.Minute)) {
		t.Fatal("the debt of a large catalog is not paid back at the budget's rate")
	}

	if !b.takeInvocation("i", 60, t0) || b.takeInvocation("i", 60, t0) {
		t.Fatal("invocations: want the first 60 bytes taken and the next 60 refused")
	}
	b.refundInvocation("i", 60, t0)
	if !b.takeInvocation("i", 60, t0) {
		t.Fatal("a refund was not given back")
	}
	if !b.takeInvocation("big", 500, t0) {
		t.Fatal("an invocation larger than the budget refused with the budget full")
	}

	free := newOutputBudget(Config{CatalogResends: NoLimit, CatalogBytes: NoLimit, InvocationBytes: NoLimit})
	for range 100 {
		free.resent("s", t0)
		free.catalogSent("s", 1<<20, t0)
		if !free.catalogAllowed("s", t0) || !free.catalogBytesAllowed("s", 1<<20, t0) || !free.takeInvocation("s", 1<<20, t0) {
			t.Fatal("a budget without bounds refused")
		}
	}
}
