package search_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers/search"
)

// learnSkills are three skills none of whose text holds "friday".
func learnSkills() []catalog.Summary {
	return []catalog.Summary{
		summary("capacity-planning", "Estimate the load a service must hold and the machines it needs.", ""),
		summary("load-testing", "Run load tests against a service and read their results.", ""),
		summary("sales-forecast", "Forecast next quarter's sales from the pipeline.", ""),
	}
}

// TestLearn: a query learned for a skill makes the skill match words its
// text lacks, ranks it first, and changes the version; ForgetLearned
// gives the text's ranking back.
func TestLearn(t *testing.T) {
	ix, _ := newIndex(t, search.Options{}, newMemory(learnSkills()))
	ctx, q := context.Background(), catalog.At("/w")
	r, err := ix.Search(ctx, q, "will our servers hold up on black friday", 8, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Learned != (search.LearnedVersion{}) {
		t.Errorf("version before learning: %+v; want zero", r.Learned)
	}
	before := names(r)
	if err := ix.Learn("capacity-planning", "servers falling over on black friday", time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Fatal(err)
	}
	r, err = ix.Search(ctx, q, "black friday", 8, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(r); !slices.Equal(got, []string{"capacity-planning"}) {
		t.Errorf("after learning, \"black friday\" matches %v; want [capacity-planning]", got)
	}
	// A query sharing only two of its seven words with what was learned
	// does not count it.
	r, err = ix.Search(ctx, q, "forecast next quarter's sales pipeline for black friday", 8, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(r); slices.Contains(got, "capacity-planning") {
		t.Errorf("a query sharing two of seven words with a learned one matches %v; want no capacity-planning", got)
	}
	v, _ := ix.Learned()
	if v.Pairs != 1 || v.Digest == 0 || r.Learned != v {
		t.Errorf("version %+v, result's %+v; want one pair with a digest, the same in both", v, r.Learned)
	}
	ix.ForgetLearned()
	r, err = ix.Search(ctx, q, "will our servers hold up on black friday", 8, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(r); !slices.Equal(got, before) || r.Learned != (search.LearnedVersion{}) {
		t.Errorf("after ForgetLearned: %v version %+v; want %v and zero", got, r.Learned, before)
	}
}

// TestLearnDecay: of two skills learned for the same words, the one
// learned recently goes first; learned the same number of times at the
// same instant, they tie (name order). The same pairs learned in the same
// order give the same version on another index.
func TestLearnDecay(t *testing.T) {
	day := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	learn := func(ix *search.Index, old time.Time) {
		t.Helper()
		for _, p := range []struct {
			skill string
			at    time.Time
		}{{"sales-forecast", old}, {"load-testing", day}} {
			if err := ix.Learn(p.skill, "black friday", p.at); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, c := range []struct {
		old  time.Time
		want []string
	}{
		{day.Add(-90 * 24 * time.Hour), []string{"load-testing", "sales-forecast"}},
		{day, []string{"load-testing", "sales-forecast"}}, // a tie: name order
	} {
		ix, _ := newIndex(t, search.Options{}, newMemory(learnSkills()))
		learn(ix, c.old)
		r, err := ix.Search(context.Background(), catalog.At("/w"), "black friday", 8, 0)
		if err != nil {
			t.Fatal(err)
		}
		if got := names(r); !slices.Equal(got, c.want) {
			t.Errorf("older pair at %v: %v; want %v", c.old, got, c.want)
		}
	}
	// Reversed names: the recent one first whatever its name.
	ix, _ := newIndex(t, search.Options{}, newMemory(learnSkills()))
	for _, p := range []struct {
		skill string
		at    time.Time
	}{{"load-testing", day.Add(-90 * 24 * time.Hour)}, {"sales-forecast", day}} {
		if err := ix.Learn(p.skill, "black friday", p.at); err != nil {
			t.Fatal(err)
		}
	}
	r, err := ix.Search(context.Background(), catalog.At("/w"), "black friday", 8, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := names(r); !slices.Equal(got, []string{"sales-forecast", "load-testing"}) {
		t.Errorf("recent sales-forecast, old load-testing: %v; want sales-forecast first", got)
	}
	a, _ := newIndex(t, search.Options{}, newMemory(learnSkills()))
	b, _ := newIndex(t, search.Options{}, newMemory(learnSkills()))
	learn(a, day)
	learn(b, day)
	va, _ := a.Learned()
	vb, _ := b.Learned()
	if va != vb || va.Pairs != 2 {
		t.Errorf("versions of the same pairs: %+v and %+v; want equal, 2 pairs", va, vb)
	}
}

// TestLearnBad: what Learn refuses, and the bound on pairs.
func TestLearnBad(t *testing.T) {
	ix, _ := newIndex(t, search.Options{MaxLearned: 2}, newMemory(learnSkills()))
	at := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		skill string
		at    time.Time
	}{{"Not A Name", at}, {"", at}, {"capacity-planning", time.Time{}}, {"capacity-planning", time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC)}} {
		if err := ix.Learn(c.skill, "black friday", c.at); !errors.Is(err, search.ErrLearn) {
			t.Errorf("Learn(%q, at %v): %v; want ErrLearn", c.skill, c.at, err)
		}
	}
	if v, _ := ix.Learned(); v.Pairs != 0 {
		t.Errorf("refused pairs counted: %+v", v)
	}
	if err := ix.Learn("capacity-planning", "the and of", at); err != nil {
		t.Errorf("stop words alone: %v", err)
	}
	if err := ix.Learn("capacity-planning", "black friday surge", at); err != nil {
		t.Fatal(err)
	}
	if _, dropped := ix.Learned(); dropped != 1 {
		t.Errorf("three terms under a bound of two pairs: %d left out; want 1", dropped)
	}
}

// BenchmarkLearn is the index update after a load: one query's terms
// learned for one of 10,000 skills, whose corpus is built.
func BenchmarkLearn(b *testing.B) {
	skills := synthetic(b, 10000)
	ix, _ := newIndex(b, search.Options{}, newMemory(skills))
	queries := readJSON[[]evalQuery](b, "testdata/queries.json")
	if _, err := ix.Search(context.Background(), catalog.At("/w"), "warm up", 8, 0); err != nil {
		b.Fatal(err)
	}
	at := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	var took []time.Duration
	i := 0
	for b.Loop() {
		start := time.Now()
		if err := ix.Learn(skills[i*7919%len(skills)].Name, queries[i%len(queries)].Query, at.Add(time.Duration(i)*time.Second)); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
		i++
	}
	reportPercentiles(b, took)
}

// BenchmarkSearchLearned is BenchmarkSearch at 10,000 skills after 10,000
// search-then-load pairs were learned.
func BenchmarkSearchLearned(b *testing.B) {
	skills := synthetic(b, 10000)
	ix, _ := newIndex(b, search.Options{}, newMemory(skills))
	queries := readJSON[[]evalQuery](b, "testdata/queries.json")
	at := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	for i := range 10000 {
		if err := ix.Learn(skills[i*7919%len(skills)].Name, queries[i%len(queries)].Query, at.Add(time.Duration(i)*time.Second)); err != nil {
			b.Fatal(err)
		}
	}
	timeSearches(b, ix, queries)
}

// TestSearchWithRebuilds: on the evaluation set, half of its queries
// learned, every query's whole ranking (every match, in order, and the
// total) is rebuilt exactly by SearchWith, on an index of the same skills
// that learned nothing, from the LearnedTerms the search returned: at
// most one entry per query term, of at most 32 skills each, all of them
// candidates. Terms no search could have returned are refused.
func TestSearchWithRebuilds(t *testing.T) {
	skills := evalSkills(t)
	queries := readJSON[[]evalQuery](t, "testdata/queries.json")
	ix, _ := newIndex(t, search.Options{}, newMemory(skills))
	fresh, _ := newIndex(t, search.Options{}, newMemory(skills))
	ctx, q := context.Background(), catalog.At("/w")
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i, eq := range queries {
		if i%2 == 1 {
			if err := ix.Learn(eq.Expect[0], eq.Query, at.Add(time.Duration(i)*time.Minute)); err != nil {
				t.Fatal(err)
			}
		}
	}
	withTerms, changed, most := 0, 0, 0
	for _, eq := range queries {
		r, err := ix.Search(ctx, q, eq.Query, len(skills), 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.LearnedTerms) == 0 {
			continue
		}
		withTerms++
		pairs := 0
		for _, lt := range r.LearnedTerms {
			pairs += len(lt.Skills)
			if len(lt.Skills) == 0 || len(lt.Skills) > 32 {
				t.Errorf("%q: term %q has %d skills", eq.Query, lt.Term, len(lt.Skills))
			}
		}
		most = max(most, pairs)
		plain, err := fresh.Search(ctx, q, eq.Query, len(skills), 0)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(names(plain), names(r)) {
			changed++
		}
		again, err := fresh.SearchWith(ctx, q, eq.Query, len(skills), 0, r.LearnedTerms)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(names(again), names(r)) || again.Total != r.Total {
			t.Errorf("%q: rebuilt %v (total %d), searched %v (total %d)", eq.Query, names(again), again.Total, names(r), r.Total)
		}
	}
	t.Logf("%d of %d queries ranked with learned terms, %d of them in another order than the text's; at most %d (skill, weight) pairs recorded for one", withTerms, len(queries), changed, most)
	if withTerms == 0 || changed == 0 {
		t.Fatalf("%d queries with learned terms, %d reordered: nothing tested", withTerms, changed)
	}
	bad := []catalog.LearnedTerm{{Term: "friday", Skills: []catalog.LearnedWeight{{Name: "capacity-planning", Weight: 1}}}}
	if _, err := fresh.SearchWith(ctx, q, "black monday", 8, 0, bad); !errors.Is(err, search.ErrLearnedTerms) {
		t.Errorf("a term not of the query: %v", err)
	}
}
