package catalog

import (
	"fmt"
	"math"
	"testing"
)

func TestInCanaryIsDeterministicAndKeepsSessionsAsShareGrows(t *testing.T) {
	r := Release{Name: "pdf", Candidate: "d1", Share: 1000}
	in10 := map[string]bool{}
	for i := range 1000 {
		s := fmt.Sprintf("s-%d", i)
		a, b := InCanary("t", s, r), InCanary("t", s, r)
		if a != b {
			t.Fatalf("session %s: %v then %v", s, a, b)
		}
		in10[s] = a
	}
	wider := r
	wider.Share = 2500
	for s, in := range in10 {
		if in && !InCanary("t", s, wider) {
			t.Fatalf("session %s left the canary when its share grew", s)
		}
	}
}

func TestInCanaryCountWithinBinomialMargin(t *testing.T) {
	const n, p = 1000, 0.10
	margin := 3 * math.Sqrt(n*p*(1-p)) // about 28.5
	for _, tenant := range []string{"", "acme", "globex"} {
		for _, cand := range []string{"a", "b", "c"} {
			got := 0
			for i := range n {
				if InCanary(tenant, fmt.Sprintf("sess-%04d", i), Release{Name: "pdf", Candidate: cand, Share: 1000}) {
					got++
				}
			}
			if math.Abs(float64(got)-n*p) > margin {
				t.Errorf("tenant %q candidate %q: %d of %d sessions in a 10%% canary (margin ±%.0f)", tenant, cand, got, n, margin)
			}
		}
	}
}

func TestInCanaryEdgesAndInputsMatter(t *testing.T) {
	if InCanary("t", "s", Release{Name: "x", Candidate: "c", Share: 0}) {
		t.Fatal("share 0 took a session")
	}
	if !InCanary("t", "s", Release{Name: "x", Candidate: "c", Share: FullShare}) {
		t.Fatal("share 100% left a session out")
	}
	// Each input moves the place: over many sessions the cohorts differ.
	base := Release{Name: "x", Candidate: "c", Share: 5000}
	diff := func(f func(i int) (bool, bool)) int {
		d := 0
		for i := range 200 {
			a, b := f(i)
			if a != b {
				d++
			}
		}
		return d
	}
	s := func(i int) string { return fmt.Sprintf("s%d", i) }
	for what, f := range map[string]func(i int) (bool, bool){
		"tenant": func(i int) (bool, bool) { return InCanary("t1", s(i), base), InCanary("t2", s(i), base) },
		"skill": func(i int) (bool, bool) {
			r := base
			r.Name = "y"
			return InCanary("t", s(i), base), InCanary("t", s(i), r)
		},
		"candidate": func(i int) (bool, bool) {
			r := base
			r.Candidate = "d"
			return InCanary("t", s(i), base), InCanary("t", s(i), r)
		},
	} {
		if diff(f) == 0 {
			t.Errorf("the %s does not change any session's cohort", what)
		}
	}
}

func TestCohortNamesSortedAndParsed(t *testing.T) {
	rels := []Release{{Name: "zeta", Candidate: "c", Share: FullShare}, {Name: "alpha", Candidate: "c", Share: FullShare}, {Name: "mid", Candidate: "c", Share: 0}}
	got := Cohort("t", "s", rels)
	if got != "alpha,zeta" {
		t.Fatalf("Cohort = %q", got)
	}
	if !TakesCandidate(got, "zeta") || !TakesCandidate(got, "alpha") || TakesCandidate(got, "mid") || TakesCandidate(got, "alph") {
		t.Fatalf("TakesCandidate wrong on %q", got)
	}
	if n := CanaryNames(got); len(n) != 2 || CanaryNames("") != nil {
		t.Fatalf("CanaryNames = %q", n)
	}
	if Cohort("t", "s", nil) != "" {
		t.Fatal("no releases gave a cohort")
	}
}

// However many releases are in progress, a tenant's sessions fall into at
// most CohortBuckets cohorts (so at most that many views of their skills),
// while each release still takes its share of them.
func TestCohortsAreBounded(t *testing.T) {
	var rels []Release
	for i := range 100 {
		rels = append(rels, Release{Name: fmt.Sprintf("skill-%03d", i), Candidate: "c", Share: 1000})
	}
	cohorts := map[string]bool{}
	taken := make([]int, len(rels))
	const n = 5000
	for i := range n {
		s := fmt.Sprintf("sess-%d", i)
		cohorts[Cohort("acme", s, rels)] = true
		for j, r := range rels {
			if InCanary("acme", s, r) {
				taken[j]++
			}
		}
	}
	if len(cohorts) > CohortBuckets {
		t.Fatalf("%d distinct cohorts over %d sessions and 100 releases; want at most %d", len(cohorts), n, CohortBuckets)
	}
	margin := 3 * math.Sqrt(n*0.1*0.9)
	differ := false
	for j, got := range taken {
		if math.Abs(float64(got)-n*0.1) > margin+float64(n)/CohortBuckets {
			t.Errorf("release %d took %d of %d sessions; want about %d", j, got, n, n/10)
		}
		if j > 0 && got != taken[0] {
			differ = true
		}
	}
	// Different releases take different sessions: the same groups for all
	// would make every count equal.
	same := 0
	for i := range 200 {
		s := fmt.Sprintf("sess-%d", i)
		if InCanary("acme", s, rels[0]) == InCanary("acme", s, rels[1]) {
			same++
		}
	}
	if same == 200 && !differ {
		t.Error("two releases took exactly the same sessions")
	}
}
