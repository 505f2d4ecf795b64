package mcp_test

import (
	"context"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillstream/skillstream/catalog"
	mcpserver "github.com/skillstream/skillstream/processor/mcp"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/providertest"
)

// A host's session is served the revision its cohort takes, as a session
// of the log would be: the tenant and the MCP session id place it in or
// out of a release's canary, and its skill calls load that revision.
func TestSessionCohort(t *testing.T) {
	rp := providertest.NewReleases("store", providertest.Released{Name: "deploy", Share: catalog.FullShare / 2,
		Stable:    &providertest.Revision{Rev: 1, Description: "Deploy the app.", Body: "Stable steps."},
		Candidate: &providertest.Revision{Rev: 2, Description: "Deploy the app.", Body: "Candidate steps."}})
	rel := rp.Releases(catalog.Query{})[0]
	cfg := defaultResync()
	cfg.Tenant = "acme"
	f := newFixture(t, fixtureOpts{config: cfg, more: []providers.Provider{rp}})
	// Skill calls resolve and load through the registry (the listing
	// wants files, which this provider does not serve).
	seen := map[bool]bool{}
	for i := 0; i < 40 && len(seen) < 2; i++ {
		cs, _, _ := f.connect(t, "2025-11-25") // a revision with sessions
		if cs.ID() == "" {
			t.Fatal("the session has no id")
		}
		in := catalog.InCanary("acme", cs.ID(), rel)
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: catalog.ToolName, Arguments: map[string]any{"name": "deploy"}})
		cancel()
		if err != nil || res.IsError {
			t.Fatalf("call: %v %+v", err, res)
		}
		text := res.Content[0].(*sdk.TextContent).Text
		want := "Stable steps."
		if in {
			want = "Candidate steps."
		}
		if !strings.Contains(text, want) {
			t.Fatalf("session %s (in canary %v) loaded:\n%s\nwant %q", cs.ID(), in, text, want)
		}
		seen[in] = true
		cs.Close()
	}
	if len(seen) < 2 {
		t.Fatalf("40 sessions all on one side of a 50%% canary: %v", seen)
	}
	_ = mcpserver.Path
}
