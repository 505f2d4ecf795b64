package processor

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

// testRanker is a Ranker whose use a test sets.
type testRanker struct {
	r atomic.Pointer[catalog.Ranking]
}

func (t *testRanker) set(r catalog.Ranking) { t.r.Store(&r) }
func (t *testRanker) Ranking() catalog.Ranking {
	if r := t.r.Load(); r != nil {
		return *r
	}
	return nil
}

// withRank turns search on (listed max 1) and ranks catalogs by r's use.
func (e *env) withRank(r Ranker) func(*Config, *options) {
	search := e.withSearch(1)
	return func(c *Config, o *options) {
		search(c, o)
		c.Catalog.Rank = catalog.RankUse
		o.ranker = r
	}
}

// forms writes entries as names, "name:" for those with a description.
func forms(es []events.Entry) string {
	var parts []string
	for _, e := range es {
		if e.Description == "" {
			parts = append(parts, e.Name)
		} else {
			parts = append(parts, e.Name+":")
		}
	}
	return strings.Join(parts, " ")
}

// TestCatalogRankUse: with rank use, a session's catalog lists the
// tenant's most used skill with its description and the others by name;
// the ranking is recorded with it and kept while the session's skills stay
// (others' use does not move it), and taken again when they change. With
// no use known the catalog is the one by name.
func TestCatalogRankUse(t *testing.T) {
	e := newEnv(t)
	e.fleetOnDisk()
	r := &testRanker{}
	e.start(e.withRank(r))
	w := e.worker()

	// No use yet: as by name (one listed, the notice).
	d := w.preStep(events.PreStep{Session: "none", Step: "1", Cwd: e.cwd, Tools: searchTools()})
	e.expect(d, events.OutcomeAppended, 1)
	if got := forms(d.Catalog.Source.Entries); got != "pdf-forms:" || d.Catalog.Source.Omitted != 2 {
		t.Fatalf("catalog without use: %q, omitted %d", got, d.Catalog.Source.Omitted)
	}
	if o := e.catalogs("none")[0].Source.Options; o == nil || o.Rank != "use" || o.Ranking != "" {
		t.Fatalf("recorded options %+v", o)
	}

	r.set(catalog.Ranking{"release-notes": 5, "elsewhere": 7})
	d = w.preStep(events.PreStep{Session: "a", Step: "1", Cwd: e.cwd, Tools: searchTools()})
	e.expect(d, events.OutcomeAppended, 1)
	if got := forms(d.Catalog.Source.Entries); got != "pdf-forms pdf-tables release-notes:" || d.Catalog.Source.Omitted != 0 ||
		strings.Contains(d.Catalog.Text, "more skills are available") {
		t.Fatalf("ranked catalog %q, omitted %d:\n%s", got, d.Catalog.Source.Omitted, d.Catalog.Text)
	}
	if o := e.catalogs("a")[0].Source.Options; o == nil || o.Ranking != "release-notes=5" {
		t.Fatalf("recorded options %+v", o)
	}

	// Others' use moves: session a keeps its list, a new session gets the
	// new ranking.
	r.set(catalog.Ranking{"release-notes": 5, "pdf-tables": 40})
	e.expect(w.preStep(events.PreStep{Session: "a", Step: "2", Cwd: e.cwd, Tools: searchTools()}), events.OutcomeUnchanged, 1)
	d = w.preStep(events.PreStep{Session: "b", Step: "1", Cwd: e.cwd, Tools: searchTools()})
	if got := forms(d.Catalog.Source.Entries); got != "pdf-forms pdf-tables: release-notes" {
		t.Fatalf("new session's catalog %q", got)
	}
	// Session none, by name so far, keeps its list too.
	e.expect(w.preStep(events.PreStep{Session: "none", Step: "2", Cwd: e.cwd, Tools: searchTools()}), events.OutcomeUnchanged, 1)

	// The skills change: session a is ranked again, by today's use.
	e.writeSkill("zeta-docs", "Write docs.")
	e.waitSkills("pdf-forms", "pdf-tables", "release-notes", "zeta-docs")
	d = w.preStep(events.PreStep{Session: "a", Step: "3", Cwd: e.cwd, Tools: searchTools()})
	e.expect(d, events.OutcomeAppended, 2)
	if got := forms(d.Catalog.Source.Entries); got != "pdf-forms pdf-tables: release-notes zeta-docs" {
		t.Fatalf("catalog after the change %q", got)
	}
	if o := e.catalogs("a")[1].Source.Options; o == nil || o.Ranking != "pdf-tables=40,release-notes=5" {
		t.Fatalf("recorded options %+v", o)
	}
}

// TestCatalogHitRateRealSessions measures through real sessions, on 300
// skills whose loads follow a long-tailed (Zipf, exponent 1.2) use and
// with listed max 40 and search offered, the share of recorded loads whose
// skill the session's catalog listed with its description: sessions
// before any use is known (by name, today's choice) and after (by use,
// the use of an earlier window of loads). The figures are logged.
func TestCatalogHitRateRealSessions(t *testing.T) {
	if testing.Short() {
		t.Skip("300 skills and 240 sessions")
	}
	e := newEnv(t)
	const n = 300
	names := make([]string, n)
	for i := range names {
		names[i] = fmt.Sprintf("skill-%03d", i)
		e.writeSkill(names[i], fmt.Sprintf("Use for task %d: what it checks, what it needs and what it produces, with examples.", i))
	}
	e.waitSkills(names...)
	r := &testRanker{}
	search := e.withSearch(40)
	e.start(func(c *Config, o *options) {
		search(c, o)
		c.Catalog.Rank = catalog.RankUse
		o.ranker = r
	})
	w := e.worker()
	rng := rand.New(rand.NewPCG(52, 1))
	perm := rng.Perm(n)
	weights := make([]float64, n)
	total := 0.0
	for k := range weights {
		weights[k] = 1 / math.Pow(float64(k+1), 1.2)
		total += weights[k]
	}
	draw := func() string {
		x := rng.Float64() * total
		k := 0
		for ; k < n-1 && x > weights[k]; k++ {
			x -= weights[k]
		}
		return names[perm[k]]
	}
	play := func(prefix string, sessions int) float64 {
		hits := 0
		for i := range sessions {
			sid := fmt.Sprintf("%s-%d", prefix, i)
			d := w.preStep(events.PreStep{Session: sid, Step: "1", Cwd: e.cwd, Tools: searchTools()})
			if d.Outcome != events.OutcomeAppended {
				t.Fatalf("session %s: %+v", sid, d)
			}
			name := draw()
			if res := w.call(events.SkillCall{Session: sid, Call: "c", Cwd: e.cwd, Args: events.SkillArgs{Name: name}}); res.IsError {
				t.Fatalf("load %s: %+v", name, res)
			}
			// What the model saw, as the log holds it.
			for _, en := range e.catalogs(sid)[0].Source.Entries {
				if en.Name == name && en.Description != "" {
					hits++
				}
			}
		}
		return float64(hits) / float64(sessions)
	}
	byName := play("name", 120)
	past := catalog.Ranking{}
	for range 5000 {
		past[draw()]++
	}
	r.set(past)
	byUse := play("use", 120)
	t.Logf("catalog hit rate of recorded loads, 300 skills, Zipf 1.2, listed max 40, search offered: by name %.3f, by use %.3f", byName, byUse)
	if byUse <= byName {
		t.Errorf("by use %.3f not above by name %.3f", byUse, byName)
	}
}
