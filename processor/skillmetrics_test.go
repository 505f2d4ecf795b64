package processor

import (
	"strconv"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

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
	e.start(func(c *Config, _ *options) { c.SkillLabelLimit = 3 })
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
	call("missing")  // third name: the last with a label of its own
	call("gamma")    // past the limit
	call("hidden")   // past the limit, and an error
	call("Bad Name") // refused as a name
	call("alpha")

	got := series(t, e.reg, "skillstream_skill_loads_total")
	want := map[string]float64{
		"outcome=ok,skill=alpha":                   4,
		"outcome=ok,skill=beta":                    1,
		"outcome=unknown,skill=missing":            1,
		"outcome=ok,skill=_other":                  1,
		"outcome=not_model_invocable,skill=_other": 1,
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
	if _, err := newMetrics(prometheus.NewRegistry()); err != nil {
		t.Fatal(err)
	}
}

func TestSkillLabelFolding(t *testing.T) {
	s := newSkillMetrics(2)
	for _, c := range []struct{ name, want string }{
		{"a", "a"}, {"b", "b"}, {"c", SkillLabelOther}, {"a", "a"}, {"d", SkillLabelOther}, {"b", "b"},
	} {
		if got := s.label(c.name); got != c.want {
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
