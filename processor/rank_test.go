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

// testRanker is a VersionedRanker whose use a test sets.
type testRanker struct {
	r atomic.Pointer[versionedRanking]
	n atomic.Uint64
}

type versionedRanking struct {
	r catalog.Ranking
	v uint64
}

func (t *testRanker) set(r catalog.Ranking) { t.r.Store(&versionedRanking{r, t.n.Add(1)}) }
func (t *testRanker) Ranking() catalog.Ranking {
	r, _ := t.VersionedRanking()
	return r
}
func (t *testRanker) VersionedRanking() (catalog.Ranking, uint64) {
	if r := t.r.Load(); r != nil {
		return r.r, r.v
	}
	return nil, 0
}

// plainRanker is a Ranker without a version: the processor ranks again
// at every pre-step.
type plainRanker struct{ t *testRanker }

func (p plainRanker) Ranking() catalog.Ranking { return p.t.Ranking() }

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
// no use known the catalog is the one by name. So with a ranker that
// says its version (the ranked views kept per snapshot and version) and
// with one that does not (ranked at every pre-step).
func TestCatalogRankUse(t *testing.T) {
	t.Run("versioned", func(t *testing.T) { testCatalogRankUse(t, false) })
	t.Run("plain", func(t *testing.T) { testCatalogRankUse(t, true) })
}

func testCatalogRankUse(t *testing.T, plain bool) {
	e := newEnv(t)
	e.fleetOnDisk()
	r := &testRanker{}
	var ranker Ranker = r
	if plain {
		ranker = plainRanker{r}
	}
	e.start(e.withRank(ranker))
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

// TestRankedViewKept: with a ranker that says its version, a snapshot is
// ranked once per session list and use version: unchanged pre-steps, and
// new sessions of the same skills and use, rank nothing; new use or a
// changed skill ranks once more. A ranker without a version ranks at
// every pre-step.
func TestRankedViewKept(t *testing.T) {
	for _, plain := range []bool{false, true} {
		t.Run(fmt.Sprintf("plain=%v", plain), func(t *testing.T) {
			e := newEnv(t)
			e.withoutFlaky()
			e.fleetOnDisk()
			e.waitSkills("pdf-forms", "pdf-tables", "release-notes")
			r := &testRanker{}
			r.set(catalog.Ranking{"release-notes": 5})
			var ranker Ranker = r
			if plain {
				ranker = plainRanker{r}
			}
			var ranks atomic.Int64
			rank := e.withRank(ranker)
			e.start(func(c *Config, o *options) {
				rank(c, o)
				o.hooks.ranked = func() { ranks.Add(1) }
			})
			w := e.worker()
			step := func(sid, step, want string) {
				t.Helper()
				d := w.preStep(events.PreStep{Session: sid, Step: step, Cwd: e.cwd, Tools: searchTools()})
				if d.Outcome != want {
					t.Fatalf("%s %s: %+v, want %s", sid, step, d, want)
				}
			}
			step("a", "1", events.OutcomeAppended)
			step("b", "1", events.OutcomeAppended)
			for i := range 5 {
				step("a", fmt.Sprint(i+2), events.OutcomeUnchanged)
			}
			n := ranks.Load()
			switch {
			case plain && n != 7:
				t.Errorf("without a version: ranked %d times in 7 pre-steps", n)
			case !plain && n != 2:
				// Once for a new session, once for a's kept list.
				t.Errorf("with a version: ranked %d times in 7 pre-steps, want 2", n)
			}
			if plain {
				return
			}
			r.set(catalog.Ranking{"pdf-tables": 9})
			step("a", "10", events.OutcomeUnchanged)
			step("a", "11", events.OutcomeUnchanged)
			if got := ranks.Load() - n; got != 1 {
				t.Errorf("after new use: ranked %d times, want 1", got)
			}
			e.writeSkill("zeta-docs", "Write docs.")
			e.waitSkills("pdf-forms", "pdf-tables", "release-notes", "zeta-docs")
			n = ranks.Load()
			step("a", "12", events.OutcomeAppended)
			step("a", "13", events.OutcomeUnchanged)
			if got := ranks.Load() - n; got < 1 || got > 2 {
				t.Errorf("after a changed skill: ranked %d times, want 1 or 2", got)
			}
		})
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

// BenchmarkPreStepRanked measures a pre-step whose catalog is unchanged,
// end to end, over 2,000 skills with search offered (listed max 40): by
// name; by use with a ranker that says its version (the ranked view kept
// with the snapshot); by use with one that does not (ranked at every
// pre-step, as before views were kept):
//
//	go test -run XXX -bench PreStepRanked -benchtime 300x ./processor
func BenchmarkPreStepRanked(b *testing.B) {
	const n = 2000
	for _, c := range []struct {
		name   string
		rank   catalog.Rank
		ranker func(*testRanker) Ranker
	}{
		{"name", catalog.RankName, nil},
		{"use-kept", catalog.RankUse, func(r *testRanker) Ranker { return r }},
		{"use-every-step", catalog.RankUse, func(r *testRanker) Ranker { return plainRanker{r} }},
	} {
		b.Run(c.name, func(b *testing.B) {
			e := newEnv(b)
			e.withoutFlaky()
			names := make([]string, n)
			use := catalog.Ranking{}
			for i := range names {
				names[i] = fmt.Sprintf("skill-%04d", i)
				e.writeSkill(names[i], fmt.Sprintf("Use for task %d: what it checks, what it needs and what it produces.", i))
				use[names[i]] = 1 + (i*7919)%500
			}
			e.waitSkills(names...)
			r := &testRanker{}
			r.set(use)
			search := e.withSearch(40)
			e.start(func(cfg *Config, o *options) {
				search(cfg, o)
				cfg.Catalog.Rank = c.rank
				if c.ranker != nil {
					o.ranker = c.ranker(r)
				}
			})
			w := e.worker()
			if d := w.preStep(events.PreStep{Session: "s", Step: "0", Cwd: e.cwd, Tools: searchTools()}); d.Outcome != events.OutcomeAppended {
				b.Fatalf("first step: %+v", d)
			}
			b.ResetTimer()
			for i := range b.N {
				if d := w.preStep(events.PreStep{Session: "s", Step: fmt.Sprint(i + 1), Cwd: e.cwd, Tools: searchTools()}); d.Outcome != events.OutcomeUnchanged {
					b.Fatalf("step %d: %+v", i+1, d)
				}
			}
		})
	}
}
