package processor

import (
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/skillstream/skillstream/events"
)

// Skill calls through a live processor are counted by skill and outcome;
// names past the label limit fold into _other, refused names into _invalid.
func TestSkillLoadMetrics(t *testing.T) {
	e := newEnv(t)
	for _, n := range []string{"alpha", "beta", "gamma"} {
		e.writeSkill(n, "Skill "+n+".")
	}
	e.writeSkill("hidden", "Users only.", "disable-model-invocation: true")
	e.waitSkills("alpha", "beta", "gamma", "hidden")
	p := e.start(func(c *Config, _ *options) { c.SkillLabelLimit = 3 })
	w := e.worker()
	n := 0
	call := func(name string) {
		n++
		r := w.call(events.SkillCall{Session: "m", Call: "c" + strconv.Itoa(n), Cwd: e.cwd, Args: events.SkillArgs{Name: name}})
		if r.Call != "c"+strconv.Itoa(n) {
			t.Fatalf("answer to %s", r.Call)
		}
	}
	for range 3 {
		call("alpha")
	}
	call("beta")
	call("missing")  // no such skill: no label of its own
	call("hidden")   // third name: the last with a label of its own
	call("gamma")    // past the limit
	call("Bad Name") // refused as a name
	call("alpha")

	got := series(t, e.reg, "skillstream_skill_loads_total")
	want := map[string]float64{
		"outcome=ok,skill=alpha":                   4,
		"outcome=ok,skill=beta":                    1,
		"outcome=unknown,skill=_unknown":           1,
		"outcome=not_model_invocable,skill=hidden": 1,
		"outcome=ok,skill=_other":                  1,
		"outcome=invalid_name,skill=_invalid":      1,
	}
	if len(got) != len(want) {
		t.Errorf("series %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("skill_loads_total{%s} = %v, want %v (all: %v)", k, got[k], v, got)
		}
	}
	if n := testutil.ToFloat64(p.m.skills.overflow); n != 1 {
		t.Errorf("skill_labels_overflow_total = %v, want 1", n)
	}
	if _, err := newMetrics(prometheus.NewRegistry()); err != nil {
		t.Fatal(err)
	}
}

// TestMadeUpSkillNames: a worker calling the skill tool with made-up
// names, more of them than there are labels, leaves every real skill its
// own series: the made-up names are counted under _unknown. Before, each
// took a label of its own until the limit, and the real skills loaded
// after were counted under _other.
func TestMadeUpSkillNames(t *testing.T) {
	const limit, madeUp = 10, 50
	e := newEnv(t)
	real := []string{"alpha", "beta", "gamma"}
	for _, n := range real {
		e.writeSkill(n, "Skill "+n+".")
	}
	e.waitSkills(real...)
	p := e.start(func(c *Config, _ *options) { c.SkillLabelLimit = limit })
	w := e.worker()
	n := 0
	call := func(name string) {
		n++
		r := w.call(events.SkillCall{Session: "m", Call: "c" + strconv.Itoa(n), Cwd: e.cwd, Args: events.SkillArgs{Name: name}})
		if r.Call != "c"+strconv.Itoa(n) {
			t.Fatalf("answer to %s", r.Call)
		}
	}
	for i := range madeUp { // the hostile loop
		call("made-up-" + strconv.Itoa(i))
	}
	for _, name := range real {
		call(name)
	}
	got := series(t, e.reg, "skillstream_skill_loads_total")
	visible := 0
	for _, name := range real {
		if got["outcome=ok,skill="+name] == 1 {
			visible++
		}
	}
	t.Logf("after %d made-up names, %d of %d real skills have a series of their own (limit %d): %v", madeUp, visible, len(real), limit, got)
	if visible != len(real) {
		t.Errorf("real skills with a series of their own: %d of %d; series %v", visible, len(real), got)
	}
	if got["outcome=unknown,skill=_unknown"] != madeUp || len(got) != len(real)+1 {
		t.Errorf("want the %d made-up names under _unknown and nothing else; series %v", madeUp, got)
	}
	if n := testutil.ToFloat64(p.m.skills.overflow); n != 0 {
		t.Errorf("skill_labels_overflow_total = %v, want 0", n)
	}
}

func TestSkillLabelFolding(t *testing.T) {
	s := newSkillMetrics(2)
	for _, c := range []struct{ name, want string }{
		{"a", "a"}, {"b", "b"}, {"c", SkillLabelOther}, {"a", "a"}, {"d", SkillLabelOther}, {"b", "b"},
	} {
		if got, _ := s.label(c.name); got != c.want {
			t.Errorf("label(%q) = %q, want %q", c.name, got, c.want)
		}
	}
	s.invocation("a")
	s.invocation("zz")
	reg := prometheus.NewRegistry()
	var err error
	s.register(reg, &err)
	if err != nil {
		t.Fatal(err)
	}
	got := series(t, reg, "skillstream_skill_invocations_total")
	if got["skill=a"] != 1 || got["skill=_other"] != 1 || len(got) != 2 {
		t.Errorf("invocations %v, want a=1 and _other=1", got)
	}
}

func TestSkillLabelLimitConfig(t *testing.T) {
	if got := (Config{}).WithDefaults().SkillLabelLimit; got != DefaultSkillLabelLimit {
		t.Errorf("default limit %d, want %d", got, DefaultSkillLabelLimit)
	}
	c := Config{}.WithDefaults()
	c.SkillLabelLimit = -1
	if err := c.Validate(); err == nil {
		t.Error("a negative skill label limit was accepted")
	}
}
