package history

import (
	"fmt"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/catalog"
)

// TestRankRecordsWhatItNeeded: of a tenant that used all of 3,000
// skills, a catalog listed by use records the use of the skills it lists
// and no other, a few hundred bytes where all of them would be tens of
// KB; the recorded ranking prepares the same list again, so the next
// pre-step keeps it (whatever the use since) and a replay rebuilds it.
func TestRankRecordsWhatItNeeded(t *testing.T) {
	const n = 3000
	snap := catalog.Snapshot{Complete: true}
	today := catalog.Ranking{}
	for i := range n {
		name := fmt.Sprintf("skill-%04d", i)
		snap.Skills = append(snap.Skills, catalog.Summary{Name: name, Description: "Does task " + name + " well.", Source: "project",
			Invocation: catalog.Invocation{ModelInvocable: true, UserInvocable: true}})
		today[name] = 1 + (i*7919)%500
	}
	search := catalog.DefaultOptions()
	search.Rank, search.SkillSearch, search.SearchOffered, search.ListedMax, search.MaxLength = catalog.RankUse, true, true, 40, 4000
	size := catalog.DefaultOptions()
	size.Rank, size.MaxLength = catalog.RankUse, 4000
	for name, opts := range map[string]catalog.Options{"search": search, "size limit": size} {
		t.Run(name, func(t *testing.T) {
			v, rec := Rank(snap, opts, "", "", today)
			all := catalog.EncodeRanked(today.For(catalog.Entries(snap.Skills, opts.DescriptionMaxLength)))
			list, err := catalog.DecodeRanked(rec)
			if err != nil {
				t.Fatal(err)
			}
			if len(v.Entries) == 0 || v.Omitted == 0 || len(list) != len(v.Entries) || len(rec) > len(all)/10 {
				t.Fatalf("listed %d, omitted %d; recorded %d skills in %d bytes (all: %d bytes)", len(v.Entries), v.Omitted, len(list), len(rec), len(all))
			}
			listed := map[string]bool{}
			for _, e := range v.Entries {
				listed[e.Name] = true
			}
			for _, r := range list {
				if !listed[r.Name] || r.Uses != today[r.Name] {
					t.Errorf("recorded %+v, not a listed skill's use", r)
				}
			}
			if again := catalog.PrepareRanked(snap, opts, catalog.FromRanked(list)); again.Digest != v.Digest {
				t.Errorf("the recorded ranking prepares another list")
			}
			// The next pre-step, the use having changed, keeps the list.
			moved := catalog.Ranking{}
			for k, u := range today {
				moved[k] = 501 - u
			}
			if kept, krec := Rank(snap, opts, v.Digest, rec, moved); kept.Digest != v.Digest || krec != rec {
				t.Errorf("the list was not kept: %q", strings.SplitN(krec, ",", 3))
			}
		})
	}
}
