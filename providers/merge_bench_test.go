package providers

import (
	"fmt"
	"testing"

	"github.com/skillstream/skillstream/catalog"
)

// BenchmarkMerge1000 is the merge of a new working directory's view: a
// folder provider's 1,000 user skills (in name order) and one project skill.
func BenchmarkMerge1000(b *testing.B) {
	var user []Candidate
	for i := range 1000 {
		user = append(user, Candidate{Summary: catalog.Summary{Name: fmt.Sprintf("skill-%04d", i),
			Description: fmt.Sprintf("Use when the task involves area %d of the project.", i), Invocation: catalog.Invocation{ModelInvocable: true}}, Rank: RankUser})
	}
	project := []Candidate{{Summary: catalog.Summary{Name: "project-skill", Description: "Conventions.", Invocation: catalog.Invocation{ModelInvocable: true}}, Rank: RankProject}}
	r := &Registry{names: []string{"agentskills", "store"}}
	results := []listResult{{cands: append(project, user...)}, {}}
	b.ReportAllocs()
	for b.Loop() {
		if v := r.merge(results); len(v.skills) != 1001 {
			b.Fatal(len(v.skills))
		}
	}
}
