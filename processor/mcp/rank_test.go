package mcp_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/skillstream/skillstream/catalog"
	mcpserver "github.com/skillstream/skillstream/processor/mcp"
)

// fixedRanking is a Ranker of a fixed use.
type fixedRanking catalog.Ranking

func (f fixedRanking) Ranking() catalog.Ranking { return catalog.Ranking(f) }

// TestToolDescriptionRankUse: with rank use and search, the skill tool's
// description within the host's 2,048 units lists the most used skills
// with their descriptions (however late their names sort), then names
// without a description, then the notice and the closing lines; with
// rank name, or no use, it is as it was.
func TestToolDescriptionRankUse(t *testing.T) {
	use := fixedRanking{}
	for i := 290; i < 301; i++ { // the last names: never listed by name
		use[fmt.Sprintf("team-%03d-runbook", i)] = 1000 - i
	}
	opts := catalog.DefaultOptions()
	opts.Rank = catalog.RankUse
	f := newFixture(t, fixtureOpts{search: true, setup: fleet(301), config: mcpserver.Config{Options: opts, Ranker: use}})
	<-f.srv.Complete()
	cs, _, _ := f.connect(t, "2025-11-25")
	tl, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(tl.Tools) != 2 {
		t.Fatalf("tools/list: %+v %v", tl, err)
	}
	got := tl.Tools[0].Description
	golden(t, "tool-description-301-rank-use", got)
	if units := len(utf16.Encode([]rune(got))); units > catalog.DefaultToolDescriptionMax {
		t.Errorf("description of %d UTF-16 code units, over %d", units, catalog.DefaultToolDescriptionMax)
	}
	if !strings.Contains(got, "\n- `team-290-runbook`: Use for the on-call runbook") {
		t.Errorf("the most used skill is not listed with its description:\n%s", got)
	}
	if !strings.Contains(got, "\n- `team-000-runbook`\n") || !strings.Contains(got, "more skills are available but not listed here") ||
		!strings.HasSuffix(got, "do not infer or follow a skill's instructions until it has been loaded.\n</system-reminder>") {
		t.Errorf("no names without description, notice or closing lines:\n%s", got)
	}
	snap, err := f.reg.Snapshot(context.Background(), catalog.Query{})
	if err != nil || !snap.Complete {
		t.Fatalf("snapshot: %v", err)
	}
	offered := opts
	offered.SkillSearch, offered.SearchOffered = true, true
	if want := catalog.DescribeToolRanked(snap, offered, catalog.DefaultToolDescriptionMax, catalog.Ranking(use)); got != want {
		t.Errorf("description is not the catalog's ranked form")
	}
	offered.Rank = ""
	if catalog.DescribeToolRanked(snap, offered, catalog.DefaultToolDescriptionMax, catalog.Ranking(use)) != catalog.DescribeTool(snap, offered, catalog.DefaultToolDescriptionMax) {
		t.Error("rank name with a ranking changed the description")
	}
}
