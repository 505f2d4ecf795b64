package catalog_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/catalog"
)

// thousandSkills is a registry-sized snapshot: 1,000 model-invocable skills
// with descriptions of a few hundred characters, some over the cap.
func thousandSkills() []catalog.Summary {
	s := make([]catalog.Summary, 1000)
	for i := range s {
		s[i] = catalog.Summary{
			Name:        fmt.Sprintf("skill-%04d", 999-i),
			Description: strings.Repeat(fmt.Sprintf("Handles  task %d <safely> & well.\n", i), 1+i%20),
			Invocation:  catalog.Invocation{ModelInvocable: true, UserInvocable: true},
			Provider:    "agentskills",
		}
	}
	return s
}

func BenchmarkRender1000(b *testing.B) {
	skills := thousandSkills()
	b.ReportAllocs()
	for b.Loop() {
		entries := catalog.Entries(skills, catalog.DefaultDescriptionMaxLength)
		_ = catalog.Render(catalog.UpdateInitial, entries)
		_ = catalog.Digest(entries)
	}
}

func BenchmarkDecideUnchanged1000(b *testing.B) {
	snap := catalog.Snapshot{Skills: thousandSkills(), Complete: true}
	opts := catalog.DefaultOptions()
	first := catalog.Decide(true, snap, catalog.History{}, opts)
	d, ok := catalog.Recognize(first.Text)
	if !ok {
		b.Fatal("first catalog not recognised")
	}
	h := catalog.History{Published: true, Visible: true, Digest: d}
	b.ReportAllocs()
	for b.Loop() {
		if catalog.Decide(true, snap, h, opts).Outcome != catalog.OutcomeUnchanged {
			b.Fatal("not unchanged")
		}
	}
}

// BenchmarkDecideViewUnchanged1000 is BenchmarkDecideUnchanged1000 with
// the view prepared once, as the processor does while the registry's
// snapshot stays the same.
func BenchmarkDecideViewUnchanged1000(b *testing.B) {
	snap := catalog.Snapshot{Skills: thousandSkills(), Complete: true}
	v := catalog.Prepare(snap, catalog.DefaultOptions())
	h := catalog.History{Published: true, Visible: true, Digest: v.Digest}
	b.ReportAllocs()
	for b.Loop() {
		if catalog.DecideView(true, v, h).Outcome != catalog.OutcomeUnchanged {
			b.Fatal("not unchanged")
		}
	}
}

func BenchmarkRecognize1000(b *testing.B) {
	text := catalog.Render(catalog.UpdateReplacement, catalog.Entries(thousandSkills(), catalog.DefaultDescriptionMaxLength))
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := catalog.Recognize(text); !ok {
			b.Fatal("not recognised")
		}
	}
}

func BenchmarkExecuteText(b *testing.B) {
	l := lookupOf(skill("a-skill", &catalog.ResourceBase{Kind: catalog.ResourceDirectory, Path: "/repo/.agents/skills/a-skill"},
		strings.Repeat("Follow these steps carefully.\n", 200)))
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		_ = catalog.Execute(ctx, l, "a-skill", catalog.DefaultOptions()).Text()
	}
}

// BenchmarkPrepare1000 is what a new working directory's view costs: its
// 1,000 skills made entries, shortened to the size limit and digested, then
// its initial catalog rendered.
func BenchmarkPrepare1000(b *testing.B) {
	snap := catalog.Snapshot{Skills: thousandSkills(), Complete: true}
	opts := catalog.Options{MaxLength: catalog.DefaultMaxLength, DescriptionMaxLength: catalog.DefaultDescriptionMaxLength}
	b.ReportAllocs()
	for b.Loop() {
		v := catalog.Prepare(snap, opts)
		_ = catalog.Render(catalog.UpdateInitial, v.Entries)
	}
}

// BenchmarkPrepare1000Clean is BenchmarkPrepare1000 with the descriptions
// most skills have: one line of printable ASCII, the skills in name order
// (as a registry's snapshot gives them).
func BenchmarkPrepare1000Clean(b *testing.B) {
	skills := make([]catalog.Summary, 1000)
	for i := range skills {
		skills[i] = catalog.Summary{Name: fmt.Sprintf("skill-%04d", i),
			Description: fmt.Sprintf("Use when the task involves area %d of the benchmark project: builds, tests, reviews and releases of that area.", i),
			Invocation:  catalog.Invocation{ModelInvocable: true, UserInvocable: true}, Provider: "agentskills"}
	}
	snap := catalog.Snapshot{Skills: skills, Complete: true}
	opts := catalog.Options{MaxLength: catalog.DefaultMaxLength, DescriptionMaxLength: catalog.DefaultDescriptionMaxLength}
	b.ReportAllocs()
	for b.Loop() {
		v := catalog.Prepare(snap, opts)
		_ = catalog.Render(catalog.UpdateInitial, v.Entries)
	}
}
