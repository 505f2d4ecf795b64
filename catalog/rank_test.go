package catalog_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/catalog"
)

// ranked prepares skills for a session under opts with rank, and returns
// the view and its initial catalog text.
func ranked(t testing.TB, skills []catalog.Summary, opts catalog.Options, rank catalog.Ranking) (catalog.View, string) {
	t.Helper()
	if err := opts.Validate(); err != nil {
		t.Fatal(err)
	}
	v := catalog.PrepareRanked(catalog.Snapshot{Skills: skills, Complete: true}, opts, rank)
	d := catalog.DecideView(true, v, catalog.History{})
	if d.Outcome != catalog.OutcomeAppended || d.Digest != v.Digest {
		t.Fatalf("decision %+v does not append the view", d)
	}
	if dig, ok := catalog.Recognize(d.Text); !ok || dig != v.Digest {
		t.Fatalf("the ranked catalog is not recognised as ours (ok %v):\n%s", ok, d.Text)
	}
	return v, d.Text
}

func useOptions(search bool, maxLen, listedMax int) catalog.Options {
	o := catalog.DefaultOptions()
	o.Rank = catalog.RankUse
	o.MaxLength, o.ListedMax = maxLen, listedMax
	o.SkillSearch, o.SearchOffered = search, search
	return o
}

// TestRankUseSearchListing: with search offered and rank use, the listed
// max counts entries with a description, the most used of each source
// first (sources by precedence as before); the rest follow as names
// without a description while the size limit allows; those left out are
// counted by the search notice, and without any left out there is none.
func TestRankUseSearchListing(t *testing.T) {
	skills := shortenSkills()
	rank := catalog.Ranking{"bundled-b": 9, "store-glob": 4, "user-a": 1, "project-b": 2}
	v, text := ranked(t, skills, useOptions(true, 0, 3), rank)
	golden(t, "rank-use-search", text)
	var full, bare []string
	for _, e := range v.Entries {
		if e.Bare {
			bare = append(bare, e.Name)
		} else {
			full = append(full, e.Name)
		}
	}
	// Project skills first (both), then store project (precedence), not
	// the most used bundled skill: use orders only within a source.
	if want := []string{"project-a", "project-b", "store-proj"}; !slices.Equal(full, want) {
		t.Errorf("with descriptions %v, want %v", full, want)
	}
	if len(bare) != 5 || v.Omitted != 0 || strings.Contains(text, "more skills are available") {
		t.Errorf("bare %v, omitted %d:\n%s", bare, v.Omitted, text)
	}
	if !slices.IsSortedFunc(v.Entries, func(a, b catalog.Entry) int { return strings.Compare(a.Name, b.Name) }) {
		t.Error("entries not in name order")
	}

	// One source: the most used keep their descriptions.
	var one []catalog.Summary
	for i := range 8 {
		one = append(one, sized(fmt.Sprintf("skill-%d", i), catalog.SourceStoreGlobal, "Does task number "+fmt.Sprint(i)+"."+detail))
	}
	rank = catalog.Ranking{"skill-6": 50, "skill-2": 7, "skill-4": 7, "skill-0": 1}
	v, text = ranked(t, one, useOptions(true, 0, 2), rank)
	if got := entryForms(v.Entries); got != "skill-0 skill-1 skill-2: skill-3 skill-4 skill-5 skill-6: skill-7" {
		// skill-2 and skill-4 tie at 7: the last name gives way first.
		t.Errorf("entries %q", got)
	}
	// A size limit: names fill only what it leaves; the rest are counted.
	limit := len(inner(t, text)) - 40
	v, text = ranked(t, one, useOptions(true, limit, 2), rank)
	golden(t, "rank-use-search-limited", text)
	if v.Omitted == 0 || !strings.Contains(text, catalog.SearchNotice(v.Omitted)) || len([]rune(inner(t, text))) > limit {
		t.Errorf("omitted %d, limit %d:\n%s", v.Omitted, limit, text)
	}
	if got := entryForms(v.Entries); !strings.Contains(got, "skill-6:") || strings.Contains(got, "skill-7") {
		t.Errorf("the most used lost its description, or the least used stayed: %q", got)
	}
}

// entryForms writes entries as names, "name:" for those with a
// description.
func entryForms(entries []catalog.Entry) string {
	var parts []string
	for _, e := range entries {
		if e.Bare {
			parts = append(parts, e.Name)
		} else {
			parts = append(parts, e.Name+":")
		}
	}
	return strings.Join(parts, " ")
}

// TestRankUseShortened: without search, the size limit's descriptions and
// then entries give way least used first within a source.
func TestRankUseShortened(t *testing.T) {
	var one []catalog.Summary
	for i := range 8 {
		one = append(one, sized(fmt.Sprintf("skill-%d", i), catalog.SourceStoreGlobal, "Does task number "+fmt.Sprint(i)+"."+detail))
	}
	rank := catalog.Ranking{"skill-1": 3, "skill-5": 2}
	full := fullLength(t, one)
	v, text := ranked(t, one, useOptions(false, full-3*len(detail), 0), rank)
	golden(t, "rank-use-shortened", text)
	if got := entryForms(v.Entries); !strings.Contains(got, "skill-1:") || !strings.Contains(got, "skill-5:") || strings.Contains(got, "skill-7:") {
		t.Errorf("entries %q", got)
	}
}

// TestRankNoUseIsName: rank name, no ranking, or a ranking without a
// positive count give every byte of today's catalog and tool description.
func TestRankNoUseIsName(t *testing.T) {
	skills := fleetSkills(120)
	rank := catalog.Ranking{"release-notes-000": 40, "cost-reports-006": 3}
	for _, search := range []bool{false, true} {
		base := useOptions(search, 4000, 10)
		base.Rank = ""
		want := catalog.Prepare(catalog.Snapshot{Skills: skills, Complete: true}, base)
		wantTool := catalog.DescribeTool(catalog.Snapshot{Skills: skills, Complete: true}, base, catalog.DefaultToolDescriptionMax)
		for _, c := range []struct {
			name string
			r    catalog.Rank
			rank catalog.Ranking
		}{
			{"name with ranking", catalog.RankName, rank},
			{"use without ranking", catalog.RankUse, nil},
			{"use with zeros", catalog.RankUse, catalog.Ranking{"release-notes-000": 0, "cost-reports-006": -2}},
		} {
			o := base
			o.Rank = c.r
			got := catalog.PrepareRanked(catalog.Snapshot{Skills: skills, Complete: true}, o, c.rank)
			if got.Text(catalog.UpdateInitial) != want.Text(catalog.UpdateInitial) || got.Digest != want.Digest {
				t.Errorf("search %v, %s: the catalog changed", search, c.name)
			}
			if catalog.DescribeToolRanked(catalog.Snapshot{Skills: skills, Complete: true}, o, catalog.DefaultToolDescriptionMax, c.rank) != wantTool {
				t.Errorf("search %v, %s: the tool description changed", search, c.name)
			}
		}
	}
}

// TestDescribeToolRankUse: the MCP description within the host's budget
// lists the most used with descriptions, then names, then the closing
// lines.
func TestDescribeToolRankUse(t *testing.T) {
	skills := fleetSkills(300)
	rank := catalog.Ranking{}
	for i, s := range skills {
		if i%37 == 5 {
			rank[s.Name] = 1000 - i
		}
	}
	o := useOptions(true, catalog.DefaultMaxLength, 0)
	got := catalog.DescribeToolRanked(catalog.Snapshot{Skills: skills, Complete: true}, o, catalog.DefaultToolDescriptionMax, rank)
	golden(t, "rank-use-tool-description", got)
	if utf16Len(got) > catalog.DefaultToolDescriptionMax || !strings.HasSuffix(got, closing) {
		t.Fatalf("description of %d units:\n%s", utf16Len(got), got)
	}
	before := catalog.DescribeTool(catalog.Snapshot{Skills: skills, Complete: true}, o, catalog.DefaultToolDescriptionMax)
	withDesc := func(s string) int { return strings.Count(s, "`: ") }
	names := strings.Count(got, "\n- `") - withDesc(got)
	if names == 0 || !strings.Contains(got, "more skills are available") {
		t.Errorf("no names without description, or no notice:\n%s", got)
	}
	t.Logf("rank use: %d with description, %d names; by name: %d with description", withDesc(got), names, withDesc(before))
}

// TestRankedEncoding: a recorded ranking reads back as written, and a
// hostile one is refused with what is wrong.
func TestRankedEncoding(t *testing.T) {
	r := catalog.Ranking{"pdf": 12, "docx": 3, "zero": 0, "absent-from-list": 9}
	list := r.For([]catalog.Entry{{Name: "docx"}, {Name: "pdf"}, {Name: "zero"}, {Name: "other"}})
	s := catalog.EncodeRanked(list)
	if s != "docx=3,pdf=12" {
		t.Fatalf("encoded %q", s)
	}
	back, err := catalog.DecodeRanked(s)
	if err != nil || !slices.Equal(back, list) {
		t.Fatalf("decoded %v, %v", back, err)
	}
	if got := catalog.FromRanked(back); got["pdf"] != 12 || got["docx"] != 3 || len(got) != 2 {
		t.Errorf("FromRanked %v", got)
	}
	for _, bad := range []string{"pdf", "pdf=0", "pdf=-1", "pdf=x", "Bad Name=1", "pdf=1,pdf=2", "pdf=1,", "pdf=99999999999999999999"} {
		if _, err := catalog.DecodeRanked(bad); err == nil || !strings.Contains(err.Error(), "catalog rank") {
			t.Errorf("DecodeRanked(%q): %v", bad, err)
		}
	}
	o := catalog.DefaultOptions()
	o.Rank = "popular"
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), `catalog rank is "popular"`) {
		t.Errorf("Validate: %v", err)
	}
}

// TestRankUseProperties: on random fleets and rankings, the ranked search
// listing holds both limits, keeps name order, shows at most the listed
// max with a description, and never lists a less used skill of a source
// with a description while a more used one of it is bare or left out.
func TestRankUseProperties(t *testing.T) {
	r := newRand()
	for range 200 {
		skills := randomSkills(r, 1+r.IntN(60))
		rank := catalog.Ranking{}
		for _, s := range skills {
			if r.IntN(3) == 0 {
				rank[s.Name] = r.IntN(20)
			}
		}
		maxLen := 0
		if r.IntN(2) == 0 {
			maxLen = catalog.MinMaxLength + r.IntN(3000)
		}
		listed := r.IntN(12)
		v, text := ranked(t, skills, useOptions(true, maxLen, listed), rank)
		if maxLen > 0 && len([]rune(inner(t, text))) > maxLen {
			t.Fatalf("over the limit %d:\n%s", maxLen, text)
		}
		n := 0
		for _, e := range v.Entries {
			if !e.Bare {
				n++
			}
		}
		if listed > 0 && n > listed {
			t.Fatalf("%d with descriptions, listed max %d", n, listed)
		}
		if len(v.Entries)+v.Omitted != len(catalog.Entries(skills, catalog.DefaultDescriptionMaxLength)) {
			t.Fatalf("%d shown + %d omitted", len(v.Entries), v.Omitted)
		}
		if !slices.IsSortedFunc(v.Entries, func(a, b catalog.Entry) int { return strings.Compare(a.Name, b.Name) }) {
			t.Fatal("entries not in name order")
		}
		if (v.Omitted > 0) != strings.Contains(text, "more skills are available") {
			t.Fatalf("notice and omitted %d disagree:\n%s", v.Omitted, text)
		}
	}
}

// zipfFleet is a generated fleet of n skills of one source whose loads
// follow a long-tailed (Zipf, exponent z) distribution over a random
// permutation of the names: loads samples of which skill was loaded, and
// the true share of loads of the top listed skills (the best any listing
// of that many can do).
func zipfFleet(n, loads, listed int, z float64) ([]catalog.Summary, []string, float64) {
	r := rand.New(rand.NewPCG(52, 300))
	skills := fleetSkills(n)
	for i := range skills {
		skills[i].Source = catalog.SourceStoreGlobal
	}
	perm := r.Perm(n)
	weights := make([]float64, n)
	total, top := 0.0, 0.0
	for k := range n {
		weights[k] = 1 / math.Pow(float64(k+1), z)
		total += weights[k]
		if k < listed {
			top += weights[k]
		}
	}
	out := make([]string, loads)
	for i := range out {
		x := r.Float64() * total
		k := 0
		for ; k < n-1 && x > weights[k]; k++ {
			x -= weights[k]
		}
		out[i] = skills[perm[k]].Name
	}
	return skills, out, top / total
}

// hitRate is the share of loads whose skill the catalog listed with its
// description.
func hitRate(entries []catalog.Entry, loads []string) float64 {
	listed := map[string]bool{}
	for _, e := range entries {
		if !e.Bare {
			listed[e.Name] = true
		}
	}
	hits := 0
	for _, l := range loads {
		if listed[l] {
			hits++
		}
	}
	return float64(hits) / float64(len(loads))
}

// TestCatalogHitRate measures, on generated fleets of 300 skills with
// long-tailed use, listed max 40 and search offered, the share of loads
// whose skill the catalog listed with its description: ranked by name
// (today) and by the use of an earlier window (rank use), scored on the
// loads of the next window. Rank use must come within 3% of the best any
// listing of 40 can do (the true share of the 40 most used), and reach
// 0.80 wherever that best does.
func TestCatalogHitRate(t *testing.T) {
	for _, z := range []float64{1.0, 1.1, 1.2} {
		skills, loads, best := zipfFleet(300, 20000, 40, z)
		past, next := loads[:10000], loads[10000:]
		rank := catalog.Ranking{}
		for _, l := range past {
			rank[l]++
		}
		byName, _ := ranked(t, skills, useOptions(true, catalog.DefaultMaxLength, 40), nil)
		byUse, _ := ranked(t, skills, useOptions(true, catalog.DefaultMaxLength, 40), rank)
		hName, hUse := hitRate(byName.Entries, next), hitRate(byUse.Entries, next)
		t.Logf("catalog hit rate, 300 skills, Zipf exponent %.1f, listed max 40, search offered: by name %.3f, by use %.3f, best possible %.3f (%d listed as names, %d left out)",
			z, hName, hUse, best, len(byUse.Entries)-40, byUse.Omitted)
		if hUse < 0.97*best || (best >= 0.80 && hUse < 0.80) {
			t.Errorf("Zipf %.1f: hit rate by use %.3f, best possible %.3f", z, hUse, best)
		}
		if hUse <= hName {
			t.Errorf("Zipf %.1f: by use %.3f not above by name %.3f", z, hUse, hName)
		}
	}
}
