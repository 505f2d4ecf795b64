package search_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers/search"
)

var updateRanking = flag.Bool("update", false, "TestRankingUnchanged rewrites testdata/ranking.golden")

// TestRankingUnchanged holds the ranking of the evaluation set's queries
// with the index's default options (bodies not indexed, nothing learned)
// to testdata/ranking.golden: every query's total and its first 20
// matches, as the tool's result shows them. The file was written by the
// ranking as it was before bodies could be indexed; an option that is off
// must leave it byte for byte, and read no body (the skills here have
// bodies: testdata/bodies.json).
func TestRankingUnchanged(t *testing.T) {
	skills := evalSkills(t)
	queries := readJSON[[]evalQuery](t, "testdata/queries.json")
	m := newMemory(skills)
	m.bodies = readJSON[map[string]string](t, "testdata/bodies.json")
	ix, _ := newIndex(t, search.Options{}, m)
	var b strings.Builder
	for _, q := range queries {
		r, err := ix.Search(context.Background(), catalog.At("/w"), q.Query, 20, 0)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&b, "%q %d %s\n", q.Query, r.Total, strings.Join(names(r), " "))
	}
	m.mu.Lock()
	loads := m.loads
	m.mu.Unlock()
	if reads, _ := ix.BodyReads(); loads != 0 || reads != 0 {
		t.Errorf("bodies off: %d loads, %d bodies read; want none", loads, reads)
	}
	const path = "testdata/ranking.golden"
	if *updateRanking {
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := b.String(); got != string(want) {
		gl, wl := strings.Split(got, "\n"), strings.Split(string(want), "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("ranking differs from %s at line %d:\n got %s\nwant %s", path, i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("ranking differs from %s: %d lines, want %d", path, len(gl), len(wl))
	}
}
