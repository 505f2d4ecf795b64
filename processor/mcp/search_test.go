package mcp_test

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/natstest"
	mcpserver "github.com/skillstream/skillstream/processor/mcp"
	"github.com/skillstream/skillstream/providers"
)

// searchSkills writes a few skills a search tells apart, and one the
// model may not invoke (never a match).
func searchSkills(t testing.TB, root string) {
	for _, s := range []struct{ name, desc string }{
		{"pdf-forms", "Fill in PDF forms and extract their fields."},
		{"k8s-deploy", "Deploy services to Kubernetes clusters and roll back a bad deploy."},
		{"deploy-preview", "Deploy a preview environment for a pull request."},
	} {
		writeSkill(t, root, s.name, map[string]string{"SKILL.md": skillMD(s.name, s.desc, "Body.")})
	}
	writeSkill(t, root, "git-review", map[string]string{"SKILL.md": skillMD("git-review", `"Review a pull request: <diff> & comments."`, "Body.")})
	writeSkill(t, root, "deploy-secret", map[string]string{"SKILL.md": "---\nname: deploy-secret\ndescription: Deploy secrets, for users only.\ndisable-model-invocation: true\n---\nSecret.\n"})
}

// callText calls tool with args and returns its text and isError.
func callText(t *testing.T, cs *sdk.ClientSession, tool string, args any) (string, bool) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("call %s %v: %v", tool, args, err)
	}
	if len(res.Content) != 1 {
		t.Fatalf("call %s %v: %d contents", tool, args, len(res.Content))
	}
	return res.Content[0].(*sdk.TextContent).Text, res.IsError
}

// TestSearchTool: with search on, tools/list holds skill_search beside
// skill with the catalog's exact definition, and tools/call gives the text
// a session's search gets from the same index over the served registry's
// view (errors as isError); a skill added later is found.
func TestSearchTool(t *testing.T) {
	f := newFixture(t, fixtureOpts{search: true, setup: searchSkills})
	<-f.srv.Complete()
	cs, _, _ := f.connect(t, "2025-11-25")
	tl, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tl.Tools) != 2 || tl.Tools[0].Name != "skill" || tl.Tools[1].Name != catalog.SearchToolName {
		b, _ := json.Marshal(tl)
		t.Fatalf("tools/list: %s", b)
	}
	def := catalog.SearchToolDefinition()
	st := tl.Tools[1]
	if st.Description != def.Description {
		t.Errorf("skill_search description %q, want %q", st.Description, def.Description)
	}
	var gotSchema, wantSchema any
	raw, _ := json.Marshal(st.InputSchema)
	if err := json.Unmarshal(raw, &gotSchema); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(def.Parameters), &wantSchema); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(gotSchema, wantSchema) {
		t.Errorf("skill_search input schema %s, want %s", raw, def.Parameters)
	}
	// Few skills: search is offered, nothing is left out, so the skill
	// tool's description is the catalog unchanged.
	snap, err := f.reg.Snapshot(context.Background(), catalog.Query{})
	if err != nil {
		t.Fatal(err)
	}
	opts := catalog.DefaultOptions()
	opts.SkillSearch, opts.SearchOffered = true, true
	if want := catalog.DescribeTool(snap, opts, catalog.DefaultToolDescriptionMax); tl.Tools[0].Description != want {
		t.Errorf("skill tool description %q, want %q", tl.Tools[0].Description, want)
	}

	var all strings.Builder
	for _, c := range []struct {
		args    any
		isError bool
	}{
		{map[string]any{"query": "fill in a PDF form"}, false},
		{map[string]any{"query": "  deploy  ", "limit": 1}, false},
		{map[string]any{"query": "deploy", "limit": 1, "offset": 1}, false},
		{map[string]any{"query": "pull request review"}, false},
		{map[string]any{"query": "deploy", "offset": 50}, false},
		{map[string]any{"query": "quantum chromodynamics \"lattice\" <&>"}, false},
		{map[string]any{"query": "the and of"}, false},
		{map[string]any{}, true},
		{map[string]any{"query": "   "}, true},
		{map[string]any{"query": 5}, true},
		{map[string]any{"query": []any{"x"}}, true},
		{map[string]any{"query": "deploy", "limit": 0}, true},
		{map[string]any{"query": "deploy", "limit": 2.5}, true},
		{map[string]any{"query": "deploy", "limit": "3"}, true},
		{map[string]any{"query": "deploy", "offset": -1}, true},
		{map[string]any{"query": "deploy", "offset": 100001}, true},
		{map[string]any{"query": "a\u0007b"}, true},
	} {
		text, isError := callText(t, cs, catalog.SearchToolName, c.args)
		if isError != c.isError {
			t.Errorf("search %v: isError %v, text %q", c.args, isError, text)
		}
		// The text a session's search gets: catalog.Search over the same
		// index, the arguments as the processor reads them.
		m := c.args.(map[string]any)
		b, _ := json.Marshal(m)
		var decoded map[string]any
		json.Unmarshal(b, &decoded)
		want := catalog.Search(context.Background(), f.index.Searcher(catalog.Query{}),
			catalog.SearchArgs{Query: decoded["query"], Limit: decoded["limit"], Offset: decoded["offset"]}, opts).Text()
		if text != want {
			t.Errorf("search %v:\n got %q\nwant %q", c.args, text, want)
		}
		if strings.Contains(text, "deploy-secret") {
			t.Errorf("search %v found a skill the model may not invoke: %q", c.args, text)
		}
		fmt.Fprintf(&all, "=== %s (isError %v)\n%s\n", b, isError, text)
	}
	golden(t, "search-tool", all.String())

	// The index follows the registry: a skill written now is found.
	writeSkill(t, f.root, "terraform-plan", map[string]string{"SKILL.md": skillMD("terraform-plan", "Plan Terraform infrastructure changes.", "Body.")})
	natstest.Eventually(t, 20*time.Second, "new skill found", func() error {
		text, _ := callText(t, cs, catalog.SearchToolName, map[string]any{"query": "terraform infrastructure"})
		if !strings.Contains(text, "- `terraform-plan`: ") {
			return &mismatch{text}
		}
		return nil
	})
	if n := metricT(t, f, "skillstream_mcp_requests_total", "tools/call"); n < 18 {
		t.Errorf("requests_total{tools/call} = %v, want at least 18", n)
	}
}

// TestSearchOff: without the option nothing changes: one tool, and a
// call of skill_search is refused as a tool the server does not have.
func TestSearchOff(t *testing.T) {
	f := newFixture(t, fixtureOpts{setup: searchSkills})
	<-f.srv.Complete()
	cs, _, _ := f.connect(t, "2025-11-25")
	tl, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(tl.Tools) != 1 || tl.Tools[0].Name != "skill" {
		t.Fatalf("tools/list: %+v %v", tl, err)
	}
	res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: catalog.SearchToolName, Arguments: map[string]any{"query": "deploy"}})
	if err == nil && !res.IsError {
		t.Errorf("skill_search answered without the option: %+v", res)
	}
}

// TestSearchNeedsIndex: search on without an index is a configuration
// error, not a tool that fails at its first call.
func TestSearchNeedsIndex(t *testing.T) {
	reg := providers.NewRegistry(nil)
	defer reg.Close()
	opts := catalog.DefaultOptions()
	opts.SkillSearch = true
	if _, err := mcpserver.New(reg, mcpserver.Config{Options: opts}); err == nil {
		t.Error("New accepted skill search without an index")
	}
}

// TestSearchToolDescription: with search on, the skill tool's catalog
// lists fewer skills instead of shorter entries and points to
// skill_search, within the description budget; --catalog-listed-max caps
// the entries listed.
func TestSearchToolDescription(t *testing.T) {
	for _, c := range []struct {
		name      string
		listedMax int
		listed    int // entries listed; 0: whatever the budget holds
	}{
		{"budget", 0, 0},
		{"listed-max", 5, 5},
	} {
		t.Run(c.name, func(t *testing.T) {
			opts := catalog.DefaultOptions()
			opts.ListedMax = c.listedMax
			f := newFixture(t, fixtureOpts{search: true, setup: fleet(301), config: mcpserver.Config{Options: opts}})
			<-f.srv.Complete()
			cs, _, _ := f.connect(t, "2025-11-25")
			tl, err := cs.ListTools(context.Background(), nil)
			if err != nil || len(tl.Tools) != 2 {
				t.Fatalf("tools/list: %+v %v", tl, err)
			}
			got := tl.Tools[0].Description
			snap, err := f.reg.Snapshot(context.Background(), catalog.Query{})
			if err != nil || !snap.Complete || len(snap.Skills) != 301 {
				t.Fatalf("snapshot of %d skills, complete %v: %v", len(snap.Skills), snap.Complete, err)
			}
			offered := opts
			offered.SkillSearch, offered.SearchOffered = true, true
			if want := catalog.DescribeTool(snap, offered, catalog.DefaultToolDescriptionMax); got != want {
				t.Errorf("description is not the catalog's offered form:\n got %q\nwant %q", got, want)
			}
			golden(t, "tool-description-301-search-"+c.name, got)
			if units := len(utf16.Encode([]rune(got))); units > catalog.DefaultToolDescriptionMax {
				t.Errorf("description of %d UTF-16 code units, over %d", units, catalog.DefaultToolDescriptionMax)
			}
			listed := strings.Count(got, "\n- `team-")
			if strings.Contains(got, "(Shortened") || !strings.Contains(got, "\n"+catalog.SearchNotice(301-listed)+"\n") {
				t.Errorf("%d listed, no search notice for the %d left out:\n%s", listed, 301-listed, got)
			}
			if c.listed != 0 && listed != c.listed {
				t.Errorf("%d entries listed, want %d", listed, c.listed)
			}
			// Every listed entry keeps its description.
			for _, l := range strings.Split(got, "\n") {
				if strings.HasPrefix(l, "- `team-") && !strings.Contains(l, "`: Use for the on-call runbook") {
					t.Errorf("entry without its description: %q", l)
				}
			}
		})
	}
}
