package main

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
)

// TestOutputBudgetShippedTenants: with the shipped multi-tenant
// configuration, a worker that compacts its catalog away and steps in a
// loop gets the catalog re-sent only --catalog-resends times; then its
// pre-steps are answered incomplete, reason over_budget, nothing appended,
// and serve's metrics count the refusals under the tenant. The other
// tenant's sessions are not affected.
func TestOutputBudgetShippedTenants(t *testing.T) {
	natsURL, pw := tenantServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	pushAs(t, ctx, natsURL, "acme-admin", pw["acme-admin"], "SKILLS", skillDir(t, "acme-deploy", "Deploy Acme's services."))
	pushAs(t, ctx, natsURL, "globex-admin", pw["globex-admin"], "SKILLS", skillDir(t, "globex-billing", "Run Globex's billing."))
	logs := startTenantServe(t, natsURL, "--catalog-resends", "2")
	acme := tenantWorker(t, natsURL, "acme-worker-1", pw["acme-worker-1"])
	globex := tenantWorker(t, natsURL, "globex-worker-1", pw["globex-worker-1"])
	tools := []events.Tool{client.SkillTool("skillstream")}

	// loop compacts the session's catalog away and steps, until a step is
	// refused (or limit steps), and returns the decisions.
	loop := func(c *client.Client, sid string, limit int) []events.Decision {
		t.Helper()
		d, err := c.PreStep(ctx, events.PreStep{Session: sid, Step: "1", Tools: tools})
		if err != nil || d.Outcome != events.OutcomeAppended {
			t.Fatalf("%s step 1: %+v %v", sid, d, err)
		}
		shown := d.CatalogSeq
		var out []events.Decision
		for step := 2; step <= limit+1; step++ {
			if _, err := c.Compact(ctx, events.Compaction{Session: sid, RetainFrom: shown + 1}); err != nil {
				t.Fatal(err)
			}
			d, err := c.PreStep(ctx, events.PreStep{Session: sid, Step: fmt.Sprint(step), Tools: tools})
			if err != nil {
				t.Fatalf("%s step %d: %v", sid, step, err)
			}
			out = append(out, d)
			if d.Outcome != events.OutcomeAppended {
				break
			}
			shown = d.CatalogSeq
		}
		return out
	}
	ds := loop(acme, "acme-loop", 40)
	last := ds[len(ds)-1]
	if last.Outcome != events.OutcomeIncomplete || last.Reason != events.ReasonOverBudget || last.Catalog != nil {
		t.Fatalf("after %d re-sends: outcome %s, reason %q: the loop was never refused", len(ds)-1, last.Outcome, last.Reason)
	}
	if resent := len(ds) - 1; resent < 2 {
		t.Fatalf("refused after %d re-sends, want at least the 2 allowed", resent)
	}
	// The other tenant's session re-sends its own.
	if ds := loop(globex, "globex-loop", 1); ds[0].Outcome != events.OutcomeAppended {
		t.Errorf("globex's re-send: %+v", ds[0])
	}

	body := []byte(servedMetrics(t, logs.String()))
	if !regexp.MustCompile(`skillstream_budget_refusals_total\{reason="catalog_resends",tenant="acme"\} [1-9]`).Match(body) {
		t.Errorf("metrics do not count acme's refusal:\n%s", grepLines(string(body), "budget_refusals"))
	}
	if !strings.Contains(string(body), `skillstream_budget_refusals_total{reason="catalog_resends",tenant="globex"} 0`) {
		t.Errorf("metrics count refusals for globex:\n%s", grepLines(string(body), "budget_refusals"))
	}
}
