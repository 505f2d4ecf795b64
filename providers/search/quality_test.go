package search_test

import (
	"context"
	"flag"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers/search"
)

var showMisses = flag.Bool("search.misses", false, "TestSearchQuality logs the queries whose expected skill is not first")

// scores are the quality measures of a ranking over the evaluation set.
type scores struct {
	hit1, hit5, mrr float64
}

// measure ranks every query with rank (the names in rank order) and
// scores the position of the first expected name.
func measure(t *testing.T, label string, queries []evalQuery, rank func(q string) []string) scores {
	t.Helper()
	var s scores
	for _, q := range queries {
		got := rank(q.Query)
		pos := slices.IndexFunc(got, func(n string) bool { return slices.Contains(q.Expect, n) })
		if pos == 0 {
			s.hit1++
		}
		if pos >= 0 && pos < 5 {
			s.hit5++
		}
		if pos >= 0 {
			s.mrr += 1 / float64(pos+1)
		}
		if *showMisses && pos != 0 {
			t.Logf("%s: %q: expected %v at %d; got %v", label, q.Query, q.Expect, pos+1, got[:min(5, len(got))])
		}
	}
	n := float64(len(queries))
	return scores{s.hit1 / n, s.hit5 / n, s.mrr / n}
}

// TestSearchQuality measures the index's ranking on the evaluation set
// (testdata) against the floor: plain BM25 over the name and description
// with no stemming and no stop words. The index must beat it on hit@5 and
// mean reciprocal rank.
func TestSearchQuality(t *testing.T) {
	skills := evalSkills(t)
	queries := readJSON[[]evalQuery](t, "testdata/queries.json")
	if len(skills) < 150 || len(queries) < 100 {
		t.Fatalf("evaluation set of %d skills and %d queries; want at least 150 and 100", len(skills), len(queries))
	}
	ix, _ := newIndex(t, search.Options{}, newMemory(skills))
	got := measure(t, "index", queries, func(q string) []string {
		r, err := ix.Search(context.Background(), catalog.At("/w"), q, len(skills), 0)
		if err != nil {
			t.Fatal(err)
		}
		return names(r)
	})
	floor := newFloor(skills)
	base := measure(t, "floor", queries, floor.rank)
	t.Logf("%d skills, %d queries", len(skills), len(queries))
	t.Logf("index: hit@1 %.3f  hit@5 %.3f  MRR %.3f", got.hit1, got.hit5, got.mrr)
	t.Logf("floor: hit@1 %.3f  hit@5 %.3f  MRR %.3f", base.hit1, base.hit5, base.mrr)
	if got.hit5 <= base.hit5 || got.mrr <= base.mrr {
		t.Errorf("the index does not beat plain BM25 over name and description: hit@5 %.3f vs %.3f, MRR %.3f vs %.3f",
			got.hit5, base.hit5, got.mrr, base.mrr)
	}
}

// floor is plain BM25 (k1 1.2, b 0.75) over "name description", words
// lower-cased and split at anything but letters and digits, nothing
// stemmed or left out.
type floor struct {
	names []string
	docs  []map[string]int
	lens  []int
	df    map[string]int
	avg   float64
}

func floorWords(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

func newFloor(skills []catalog.Summary) *floor {
	f := &floor{df: make(map[string]int)}
	total := 0
	for _, s := range skills {
		ws := floorWords(s.Name + " " + s.Description)
		tf := make(map[string]int)
		for _, w := range ws {
			tf[w]++
		}
		for w := range tf {
			f.df[w]++
		}
		f.names = append(f.names, s.Name)
		f.docs = append(f.docs, tf)
		f.lens = append(f.lens, len(ws))
		total += len(ws)
	}
	f.avg = float64(total) / float64(len(skills))
	return f
}

func (f *floor) rank(q string) []string {
	const k1, b = 1.2, 0.75
	n := float64(len(f.docs))
	score := make([]float64, len(f.docs))
	seen := make(map[string]bool)
	for _, w := range floorWords(q) {
		if seen[w] || f.df[w] == 0 {
			continue
		}
		seen[w] = true
		df := float64(f.df[w])
		idf := math.Log(1 + (n-df+0.5)/(df+0.5))
		for i, tf := range f.docs {
			if c := float64(tf[w]); c > 0 {
				score[i] += idf * c * (k1 + 1) / (c + k1*(1-b+b*float64(f.lens[i])/f.avg))
			}
		}
	}
	var idx []int
	for i, s := range score {
		if s > 0 {
			idx = append(idx, i)
		}
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		switch {
		case score[a] > score[b]:
			return -1
		case score[a] < score[b]:
			return 1
		}
		return strings.Compare(f.names[a], f.names[b])
	})
	out := make([]string, len(idx))
	for i, j := range idx {
		out[i] = f.names[j]
	}
	return out
}

// TestLearnedQuality measures what learned terms bring on the evaluation
// set. Half of its queries (the odd ones) are "used": each is learned as a
// search followed by the load of its first expected skill. The used half
// is then measured (the queries the index learned from, asked again) and
// the held-out half (queries it never saw). Learning must lift the whole
// set to hit@5 0.80 at least, must lower neither half's hit@5 nor MRR nor
// push any held-out query out of the top 5, and ForgetLearned must give
// today's ranking back exactly.
func TestLearnedQuality(t *testing.T) {
	skills := evalSkills(t)
	queries := readJSON[[]evalQuery](t, "testdata/queries.json")
	var used, held []evalQuery
	for i, q := range queries {
		if i%2 == 1 {
			used = append(used, q)
		} else {
			held = append(held, q)
		}
	}
	ix, _ := newIndex(t, search.Options{}, newMemory(skills))
	rank := func(q string) []string {
		r, err := ix.Search(context.Background(), catalog.At("/w"), q, len(skills), 0)
		if err != nil {
			t.Fatal(err)
		}
		return names(r)
	}
	all0 := measure(t, "before", queries, rank)
	used0 := measure(t, "before, used half", used, rank)
	held0 := measure(t, "before, held-out half", held, rank)
	before := make(map[string][]string)
	for _, q := range queries {
		before[q.Query] = rank(q.Query)
	}

	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i, q := range used {
		if err := ix.Learn(q.Expect[0], q.Query, at.Add(time.Duration(i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	all1 := measure(t, "learned", queries, rank)
	used1 := measure(t, "learned, used half", used, rank)
	held1 := measure(t, "learned, held-out half", held, rank)
	ver, _ := ix.Learned()
	t.Logf("learned %d pairs (digest %x)", ver.Pairs, ver.Digest)
	t.Logf("all      before: hit@1 %.3f  hit@5 %.3f  MRR %.3f; learned: hit@1 %.3f  hit@5 %.3f  MRR %.3f", all0.hit1, all0.hit5, all0.mrr, all1.hit1, all1.hit5, all1.mrr)
	t.Logf("used     before: hit@1 %.3f  hit@5 %.3f  MRR %.3f; learned: hit@1 %.3f  hit@5 %.3f  MRR %.3f", used0.hit1, used0.hit5, used0.mrr, used1.hit1, used1.hit5, used1.mrr)
	t.Logf("held-out before: hit@1 %.3f  hit@5 %.3f  MRR %.3f; learned: hit@1 %.3f  hit@5 %.3f  MRR %.3f", held0.hit1, held0.hit5, held0.mrr, held1.hit1, held1.hit5, held1.mrr)
	worse := 0
	for _, q := range held {
		got := rank(q.Query)
		pos := func(ns []string) int {
			p := slices.IndexFunc(ns, func(n string) bool { return slices.Contains(q.Expect, n) })
			if p < 0 {
				return len(skills)
			}
			return p
		}
		if b, a := pos(before[q.Query]), pos(got); a > b && b < 5 && a >= 5 {
			worse++
			t.Logf("held-out query fell out of the top 5: %q: %v from %d to %d", q.Query, q.Expect, b+1, a+1)
		}
	}
	t.Logf("held-out queries that fell out of the top 5: %d of %d", worse, len(held))
	if used1.hit5 < 0.80 {
		t.Errorf("used half: hit@5 %.3f with learned terms; want at least 0.80", used1.hit5)
	}
	if all1.hit5 < 0.80 || used1.hit5 < used0.hit5 || used1.mrr < used0.mrr {
		t.Errorf("learning: all hit@5 %.3f (want 0.80), used hit@5 %.3f→%.3f MRR %.3f→%.3f",
			all1.hit5, used0.hit5, used1.hit5, used0.mrr, used1.mrr)
	}
	if held1.hit5 < held0.hit5 || held1.mrr < held0.mrr || worse > 0 {
		t.Errorf("held-out half: hit@5 %.3f→%.3f, MRR %.3f→%.3f, %d queries fell out of the top 5", held0.hit5, held1.hit5, held0.mrr, held1.mrr, worse)
	}

	ix.ForgetLearned()
	if v, _ := ix.Learned(); v != (search.LearnedVersion{}) {
		t.Errorf("version after ForgetLearned: %+v; want zero", v)
	}
	for _, q := range queries {
		if got := rank(q.Query); !slices.Equal(got, before[q.Query]) {
			t.Fatalf("after ForgetLearned, %q ranks %v; before learning %v", q.Query, got[:min(5, len(got))], before[q.Query][:min(5, len(before[q.Query]))])
		}
	}
}
