package processor

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/processor/history"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/providertest"
)

// BenchmarkPreStepSkills is the part of a pre-step that releases touch:
// the session's query (its cohort) and the skills prepared for it, from
// a registry of 1,000 store skills whose view is cached. "before" takes
// the prepared view as a pre-step did before cohorts; "none" goes through
// the cohort with no release anywhere (one Releases call: the same view);
// "canary-1" with one skill in a 10% canary and "canary-100" with 100 of
// the 1,000 skills each in a 10% canary, over 1,000 sessions. Each
// session hashes its place in every release; sessions of one cohort share
// a cached view. One canary makes two cohorts; a hundred independent ones
// make nearly one per session, and each is a view of its own to list and
// prepare (the registry keeps a bounded number): milliseconds a pre-step.
//
//	go test ./processor -run XXX -bench PreStepSkills -benchmem
func BenchmarkPreStepSkills(b *testing.B) {
	for _, tc := range []struct {
		name     string
		canaries int
		cohort   bool
	}{{"before", 0, false}, {"none", 0, true}, {"canary-1", 1, true}, {"canary-100", 100, true}} {
		b.Run(tc.name, func(b *testing.B) {
			var skills []providertest.Released
			for i := range 1000 {
				s := providertest.Released{Name: fmt.Sprintf("skill-%04d", i),
					Stable: &providertest.Revision{Rev: 1, Description: "Does task " + strconv.Itoa(i) + ".", Body: "Body."}}
				if i < tc.canaries {
					s.Candidate = &providertest.Revision{Rev: 2, Description: "Does task " + strconv.Itoa(i) + " better.", Body: "Body 2."}
					s.Share = catalog.FullShare / 10
				}
				skills = append(skills, s)
			}
			reg := providers.NewRegistry([]providers.Provider{providertest.NewReleases("store", skills...)})
			b.Cleanup(func() { reg.Close() })
			p := &Processor{skills: reg, cfg: Config{Tenant: "acme"}}
			ctx := context.Background()
			opts := catalog.DefaultOptions()
			sessions := make([]string, 1000)
			for i := range sessions {
				sessions[i] = "session-" + strconv.Itoa(i)
			}
			q := catalog.Query{Cwd: "/work/app"}
			i := 0
			b.ReportAllocs()
			for b.Loop() {
				sq := q
				if tc.cohort {
					sq = p.cohort(sessions[i%len(sessions)], q)
				}
				i++
				v, err := history.Prepare(ctx, reg, sq, opts)
				if err != nil || !v.Complete {
					b.Fatal(err)
				}
			}
		})
	}
}
