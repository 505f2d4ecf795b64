package search_test

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/search"
)

// BenchmarkSearch searches n skills with the evaluation queries, one per
// operation, the index built and the registry's view cached (the state
// between two changes). It reports the median and 99th percentile of one
// search. The "bodies" runs index the skills' bodies too.
func BenchmarkSearch(b *testing.B) {
	queries := readJSON[[]evalQuery](b, "testdata/queries.json")
	for _, n := range []int{100, 1000, 10000, -10000} {
		name, bodies := fmt.Sprint(n), n < 0
		if bodies {
			n = -n
			name = fmt.Sprint(n, "-bodies")
		}
		b.Run(name, func(b *testing.B) {
			skills := synthetic(b, n)
			m := newMemory(skills)
			if bodies {
				m.bodies = syntheticBodies(b, skills)
			}
			ix, _ := newIndex(b, search.Options{Bodies: bodies}, m)
			ctx := context.Background()
			q := catalog.At("/w")
			if _, err := ix.Search(ctx, q, "warm up", 8, 0); err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			timeSearches(b, ix, queries)
		})
	}
}

// timeSearches runs the queries in turn, one search an operation, and
// reports the median and 99th percentile of one search.
func timeSearches(b *testing.B, ix *search.Index, queries []evalQuery) {
	ctx, q := context.Background(), catalog.At("/w")
	var took []time.Duration
	i := 0
	for b.Loop() {
		start := time.Now()
		if _, err := ix.Search(ctx, q, queries[i%len(queries)].Query, 8, 0); err != nil {
			b.Fatal(err)
		}
		took = append(took, time.Since(start))
		i++
	}
	reportPercentiles(b, took)
}

// BenchmarkReindexOneChange changes one skill's description among 10,000
// and searches: the registry collects its view again (the provider
// announced the change), the index analyses the changed skill and builds
// the postings of the new view. BenchmarkCollectOneChange is the
// registry's part alone, for comparison.
func BenchmarkReindexOneChange(b *testing.B) {
	benchmarkChange(b, true, false, false)
}

func BenchmarkCollectOneChange(b *testing.B) {
	benchmarkChange(b, false, false, false)
}

// BenchmarkReindexOneChangeBodies is BenchmarkReindexOneChange with the
// bodies indexed (Options.Bodies): the new view's bodies are read again,
// all of them (from memory here), the changed skill analysed with its
// body, the postings built.
func BenchmarkReindexOneChangeBodies(b *testing.B) {
	benchmarkChange(b, true, true, false)
}

// BenchmarkReindexOneChangeBodiesQuick is BenchmarkReindexOneChangeBodies
// with a provider that answers loads from memory in the caller's
// goroutine (a providers.QuickLoader, as the skills folders' provider is
// when its files are watched and unchanged), not through the registry's
// supervised call.
func BenchmarkReindexOneChangeBodiesQuick(b *testing.B) {
	benchmarkChange(b, true, true, true)
}

// benchmarkChange changes one skill among 10,000 per operation, and
// searches (or collects the registry's view), with the bodies indexed or
// not, through a provider that loads quickly (QuickLoader) or not.
func benchmarkChange(b *testing.B, searching, bodies, quickLoads bool) {
	skills := synthetic(b, 10000)
	m := newMemory(slices.Clone(skills))
	if bodies {
		m.bodies = syntheticBodies(b, skills)
	}
	var p providers.Provider = m
	if quickLoads {
		p = quickMemory{m}
	}
	ix, reg := newIndex(b, search.Options{Bodies: bodies}, p)
	ctx := context.Background()
	q := catalog.At("/w")
	if _, err := ix.Search(ctx, q, "warm up", 8, 0); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		j := i * 7919 % len(skills)
		s := skills[j]
		s.Description = fmt.Sprintf("%s (revision %d)", s.Description, i)
		m.set(j, s)
		if searching {
			if _, err := ix.Search(ctx, q, "terraform plan review", 8, 0); err != nil {
				b.Fatal(err)
			}
		} else if _, err := reg.Snapshot(ctx, q); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

func reportPercentiles(b *testing.B, took []time.Duration) {
	b.Helper()
	if len(took) == 0 {
		return
	}
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds()), "p99-ns")
}

// TestMemory logs the heap the index holds for 10,000 skills: its
// analyses, its term dict and one corpus, beside the registry's own view
// of them; and the same with the skills' bodies indexed (Options.Bodies:
// the bodies as indexed, kept with the view, and their terms). It asserts
// nothing.
func TestMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("builds 10,000 skills")
	}
	skills := synthetic(t, 10000)
	for _, bodies := range []bool{false, true} {
		m := newMemory(skills)
		if bodies {
			m.bodies = syntheticBodies(t, skills)
		}
		ix, reg := newIndex(t, search.Options{Bodies: bodies}, m)
		ctx := context.Background()
		q := catalog.At("/w")
		heap := func() uint64 {
			var ms runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&ms)
			return ms.HeapAlloc
		}
		if _, err := reg.Snapshot(ctx, q); err != nil {
			t.Fatal(err)
		}
		before := heap()
		start := time.Now()
		if _, err := ix.Search(ctx, q, "terraform plan review", 8, 0); err != nil {
			t.Fatal(err)
		}
		built := time.Since(start)
		after := heap()
		t.Logf("10,000 skills, bodies %v: index heap %.1f MiB (%d bytes a skill), first search (everything read, analysed and built) %v",
			bodies, float64(after-before)/(1<<20), (after-before)/10000, built)
		runtime.KeepAlive(ix)
	}
}
