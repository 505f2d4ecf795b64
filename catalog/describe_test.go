package catalog_test

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/skillstream/skillstream/catalog"
)

// utf16Len is the length of s in UTF-16 code units, as a host counts a
// tool's description (a byte that is not UTF-8 decodes as U+FFFD).
func utf16Len(s string) int { return len(utf16.Encode([]rune(s))) }

// closing is how the initial catalog, and so the tool's description, ends.
const closing = "\n</available_skills>\n\nIf the user names a skill, or the task clearly matches a skill's description, call the `skill` tool with the exact skill name before taking task actions. Load all applicable skills, then follow their full instructions. This catalog contains summaries only; do not infer or follow a skill's instructions until it has been loaded.\n</system-reminder>"

// fleetSkills is a catalog of n skills the size of a real organisation's
// (about 300 make an 88 KB catalog): every source, descriptions of a few
// sentences, some with escapable characters and code points outside the
// Basic Multilingual Plane.
func fleetSkills(n int) []catalog.Summary {
	sources := []string{catalog.SourceStoreGlobal, catalog.SourceCustom, catalog.SourceUser, catalog.SourceBundled,
		catalog.SourceStoreProject, catalog.SourceProject}
	topics := []string{"release notes", "database migrations", "incident reviews", "API design", "frontend tests",
		"on-call handover", "cost reports", "security reviews", "data pipelines", "design docs"}
	out := make([]catalog.Summary, n)
	for i := range out {
		topic := topics[i%len(topics)]
		desc := fmt.Sprintf("Use when working on %s for team %d: explains the house conventions, the checks to run and the review steps, with examples of good and bad outcomes.", topic, i)
		switch i % 7 {
		case 3:
			desc += " Handles <html> & <xml> inputs."
		case 5:
			desc += " Marks finished steps with 🚀 and ✅."
		}
		out[i] = sized(fmt.Sprintf("%s-%03d", strings.ToLower(strings.ReplaceAll(topic, " ", "-")), i), sources[i%len(sources)], desc)
	}
	return out
}

// TestDescribeToolUnderBudget: a catalog that fits is the description the
// MCP front door always gave, byte for byte: the tool's description, a
// blank line and the initial catalog of the prepared view.
func TestDescribeToolUnderBudget(t *testing.T) {
	skills := spec4Skills()
	opts := catalog.DefaultOptions()
	got := catalog.DescribeTool(catalog.Snapshot{Skills: skills, Complete: true}, opts, catalog.DefaultToolDescriptionMax)
	golden(t, "tool-description-small", got)
	v := catalog.Prepare(catalog.Snapshot{Skills: skills, Complete: true}, opts)
	if want := catalog.ToolDescription + "\n\n" + catalog.RenderList(catalog.UpdateInitial, v.Entries, v.Omitted); got != want {
		t.Errorf("description under the budget changed:\n got %q\nwant %q", got, want)
	}
	if got := catalog.DescribeTool(catalog.Snapshot{Complete: true}, opts, catalog.DefaultToolDescriptionMax); got != catalog.ToolDescription {
		t.Errorf("no skills: %q, want the tool's description alone", got)
	}
	// The catalog size limit still applies on its own.
	opts.MaxLength = catalog.MinMaxLength
	v = catalog.Prepare(catalog.Snapshot{Skills: fleetSkills(20), Complete: true}, opts)
	if got, want := catalog.DescribeTool(catalog.Snapshot{Skills: fleetSkills(20), Complete: true}, opts, 0),
		catalog.ToolDescription+"\n\n"+catalog.RenderList(catalog.UpdateInitial, v.Entries, v.Omitted); got != want {
		t.Errorf("catalog size limit without a budget:\n got %q\nwant %q", got, want)
	}
}

// spec4Skills are the skills of the specification's worked example.
func spec4Skills() []catalog.Summary {
	long := strings.Repeat("Long   description ", 5)
	return []catalog.Summary{
		sized("z-skill", catalog.SourceProject, long),
		sized("a-skill", catalog.SourceProject, "Use {{placeholder}} <safely> & carefully."),
		sized("model-only-skill", catalog.SourceUser, "Model-only skill."),
		{Name: "user-only-skill", Description: "User only.", Source: catalog.SourceUser, Invocation: catalog.Invocation{UserInvocable: true}},
	}
}

// TestDescribeToolFleet: 301 skills under the default budget (what Claude
// Code keeps): whole entries only, lowest precedence first, the notice
// and every closing line kept, and the text a catalog whose digest
// Recognize finds.
func TestDescribeToolFleet(t *testing.T) {
	skills := fleetSkills(301)
	got := catalog.DescribeTool(catalog.Snapshot{Skills: skills, Complete: true}, catalog.DefaultOptions(), catalog.DefaultToolDescriptionMax)
	golden(t, "tool-description-301", got)
	if n := utf16Len(got); n > catalog.DefaultToolDescriptionMax {
		t.Errorf("description of %d UTF-16 code units, over %d", n, catalog.DefaultToolDescriptionMax)
	}
	if !strings.HasPrefix(got, catalog.ToolDescription+"\n\n<system-reminder>\n") || !strings.HasSuffix(got, closing) {
		t.Errorf("description lost its opening or closing lines:\n%s", got)
	}
	in := inner(t, got)
	notice := in[strings.LastIndexByte(in, '\n')+1:]
	if !strings.HasPrefix(notice, "(Shortened to fit the catalog size limit: ") {
		t.Fatalf("no notice ends the list:\n%s", in)
	}
	// Project skills are the last to give way.
	if !strings.Contains(in, "- `database-migrations-011`") || strings.Contains(in, "- `api-design-003`") {
		t.Errorf("the order of sacrifice is not the catalog's:\n%s", in)
	}
	if _, ok := catalog.Recognize(got); !ok {
		t.Error("Recognize does not find the catalog in the description")
	}
}

// TestDescribeToolProperties: for every catalog of 0 to 400 skills, under
// the default budget and random ones, the description holds at most the
// budget in UTF-16 code units, starts with the tool's description, ends
// with the catalog's closing lines, lists whole entries as the catalog
// renders them, and holds the notice exactly when something gave way.
func TestDescribeToolProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 2048))
	opts := catalog.DefaultOptions()
	shortened := 0
	for n := 0; n <= 400; n++ {
		var skills []catalog.Summary
		if n%2 == 0 {
			skills = fleetSkills(n)
		} else {
			skills = randomSkills(r, n)
		}
		budget := catalog.DefaultToolDescriptionMax
		if n%3 == 1 {
			budget = catalog.MinToolDescriptionMax + r.IntN(20000)
		}
		snap := catalog.Snapshot{Skills: skills, Complete: true}
		got := catalog.DescribeTool(snap, opts, budget)
		if u := utf16Len(got); u > budget {
			t.Fatalf("%d skills, budget %d: description of %d UTF-16 code units", n, budget, u)
		}
		if !strings.HasPrefix(got, catalog.ToolDescription) {
			t.Fatalf("%d skills: description does not start with the tool's", n)
		}
		full := catalog.Entries(skills, opts.DescriptionMaxLength)
		if len(full) == 0 {
			if got != catalog.ToolDescription {
				t.Fatalf("%d skills, none listed: %q", n, got)
			}
			continue
		}
		if !strings.HasSuffix(got, closing) {
			t.Fatalf("%d skills, budget %d: the closing lines were cut:\n%s", n, budget, got)
		}
		in := inner(t, got)
		lines := strings.Split(in, "\n")
		last := lines[len(lines)-1]
		byName := map[string]catalog.Entry{}
		for _, e := range full {
			byName[e.Name] = e
		}
		whole := 0
		for _, l := range lines {
			if l == last && strings.HasPrefix(l, "(Shortened") {
				continue
			}
			name, _, _ := strings.Cut(strings.TrimPrefix(l, "- `"), "`")
			e, ok := byName[name]
			if !ok || (l != catalog.Line(e) && l != catalog.Line(catalog.Entry{Name: name, Bare: true})) {
				t.Fatalf("%d skills: line %q is not a whole entry", n, l)
			}
			if l == catalog.Line(e) {
				whole++
			}
		}
		gaveWay := whole < len(full)
		if hasNotice := strings.HasPrefix(last, "(Shortened to fit the catalog size limit: "); hasNotice != gaveWay {
			t.Fatalf("%d skills, budget %d: notice %v, but %d of %d entries whole", n, budget, hasNotice, whole, len(full))
		}
		if gaveWay {
			shortened++
		}
		if strings.Count(got, "<available_skills>") != 1 {
			t.Fatalf("%d skills: the description holds the list %d times", n, strings.Count(got, "<available_skills>"))
		}
	}
	if shortened < 300 {
		t.Errorf("only %d of 401 descriptions were shortened: the budget was hardly exercised", shortened)
	}
}
