package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/processor"
	"github.com/skillstream/skillstream/processor/usage"
	"github.com/skillstream/skillstream/processor/usage/projection"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/providertest"
	"github.com/skillstream/skillstream/providers/search"
)

// releaseRun is a processor of tenant "acme" serving two releases, run
// until the test ends: "deploy" (stable rev 1, candidate rev 2, half of
// the sessions) and "audit" (stable rev 5, a candidate rev 6 the model may
// not load, half of the sessions). It returns the server, a client
// and the two releases.
func releaseRun(t *testing.T) (*natstest.Server, *client.Client, map[string]catalog.Release) {
	t.Helper()
	srv := natstest.Start(t, natstest.WithTCP())
	rp := providertest.NewReleases("store",
		providertest.Released{Name: "deploy", Share: catalog.FullShare / 2,
			Stable:    &providertest.Revision{Rev: 1, Description: "Deploy the app.", Body: "Stable steps."},
			Candidate: &providertest.Revision{Rev: 2, Description: "Deploy the app to production.", Body: "Candidate steps."}},
		providertest.Released{Name: "audit", Share: catalog.FullShare / 2,
			Stable:    &providertest.Revision{Rev: 5, Description: "Audit the code.", Body: "Audit steps."},
			Candidate: &providertest.Revision{Rev: 6, Description: "Audit the code.", Body: "Broken.", UserOnly: true}})
	reg := providers.NewRegistry([]providers.Provider{rp})
	t.Cleanup(func() { reg.Close() })
	ix := search.New(reg, search.Options{})
	t.Cleanup(func() { ix.Close() })
	cfg := processor.Config{Tenant: "acme", Catalog: catalog.DefaultOptions()}
	cfg.Catalog.SkillSearch = true
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	p, err := processor.New(srv.Connect(), reg, cfg, processor.WithLogger(quiet), processor.WithSearcher(ix))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	select {
	case <-p.Ready():
	case err := <-done:
		t.Fatalf("Run: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("processor not ready")
	}
	c, err := client.New(srv.Connect())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	rels := map[string]catalog.Release{}
	for _, r := range rp.Releases(catalog.Query{}) {
		rels[r.Name] = r
	}
	return srv, c, rels
}

// usage NAME compares a release's canary with its stable from what a
// real processor recorded: loads, errors and searches followed by a load,
// a row per revision and channel, the same from the projection as from
// the stream (but the searches, which the projection does not keep).
func TestUsageComparesCanaryAndStable(t *testing.T) {
	srv, c, rels := releaseRun(t)
	url := srv.URL()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tools := []events.Tool{{Name: catalog.ToolName, Owner: processor.DefaultToolOwner}, {Name: catalog.SearchToolName, Owner: processor.DefaultToolOwner}}
	var canary, stable, auditCanary, searched int
	for i := range 24 {
		sid := "u-" + strconv.Itoa(i)
		if _, err := c.PreStep(ctx, events.PreStep{V: 1, Session: sid, Step: "1", Tools: tools}); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 { // a third of the sessions search first
			res, err := c.SearchSkills(ctx, events.SkillSearch{V: 1, Session: sid, Call: "s", Args: events.SearchArgs{Query: "deploy"}})
			if err != nil || res.IsError {
				t.Fatalf("search: %v %+v", err, res.Error)
			}
			// The search answers the session's revision too.
			if in := catalog.InCanary("acme", sid, rels["deploy"]); in != strings.Contains(res.Text, "to production") {
				t.Fatalf("%s: in deploy's canary %v, search shows:\n%s", sid, in, res.Text)
			}
			searched++
		}
		res, err := c.CallSkill(ctx, events.SkillCall{V: 1, Session: sid, Call: "d", Args: events.SkillArgs{Name: "deploy"}})
		if err != nil || res.IsError {
			t.Fatalf("load deploy: %v %+v", err, res.Error)
		}
		if catalog.InCanary("acme", sid, rels["deploy"]) {
			canary++
		} else {
			stable++
		}
		res, err = c.CallSkill(ctx, events.SkillCall{V: 1, Session: sid, Call: "a", Args: events.SkillArgs{Name: "audit"}})
		if err != nil {
			t.Fatal(err)
		}
		if in := catalog.InCanary("acme", sid, rels["audit"]); in != res.IsError {
			t.Fatalf("%s: audit in canary %v, result error %v (%s)", sid, in, res.IsError, res.Text)
		} else if in {
			auditCanary++
		}
	}
	if canary == 0 || stable == 0 || auditCanary == 0 || auditCanary == 24 {
		t.Fatalf("cohorts: %d canary, %d stable, %d in audit's canary: pick other session ids", canary, stable, auditCanary)
	}

	scan := skillUsageJSON(t, "deploy", "--scan", "--nats-url", url)
	want := []usage.ReleaseUsage{{Rev: 1, Channel: "stable", Loads: stable}, {Rev: 2, Channel: "canary", Loads: canary}}
	var foundThenLoaded int
	for i, ru := range scan.Releases {
		foundThenLoaded += ru.FoundThenLoaded
		if i < len(want) {
			want[i].FoundThenLoaded = ru.FoundThenLoaded
		}
	}
	if fmt.Sprint(scan.Releases) != fmt.Sprint(want) || foundThenLoaded != searched {
		t.Errorf("deploy's releases %+v, want %+v with %d found then loaded in all", scan.Releases, want, searched)
	}
	audit := skillUsageJSON(t, "audit", "--scan", "--nats-url", url)
	wantAudit := []usage.ReleaseUsage{{Rev: 5, Channel: "stable", Loads: 24 - auditCanary}, {Rev: 6, Channel: "canary", Errors: auditCanary}}
	if fmt.Sprint(audit.Releases) != fmt.Sprint(wantAudit) {
		t.Errorf("audit's releases %+v, want %+v", audit.Releases, wantAudit)
	}

	// The table: a row per revision and channel.
	code, out, stderr := runMain(t, "usage", "audit", "--scan", "--nats-url", url)
	if code != exitOK {
		t.Fatalf("usage audit: exit %d\n%s", code, stderr)
	}
	for _, row := range [][]string{
		{"5", "stable", strconv.Itoa(24 - auditCanary), "0", "0.0%", "0"},
		{"6", "canary", "0", strconv.Itoa(auditCanary), "100.0%", "0"},
	} {
		if !hasRow(out, row) {
			t.Errorf("usage audit: no row %q in\n%s", row, out)
		}
	}

	// history names a canary load, and not a stable one.
	for i := range 24 {
		sid := "u-" + strconv.Itoa(i)
		code, out, stderr := runMain(t, "history", "--session", sid, "--nats-url", url)
		if code != exitOK {
			t.Fatalf("history %s: exit %d\n%s", sid, code, stderr)
		}
		in := catalog.InCanary("acme", sid, rels["deploy"])
		if got := strings.Contains(out, "deploy: ok (rev 2, canary)"); got != in || strings.Contains(out, "rev 1") || strings.Contains(out, "rev 5") {
			t.Fatalf("history of %s (in deploy's canary %v):\n%s", sid, in, out)
		}
	}

	// The projection counts the same (searches followed by a load aside).
	js, err := jetstream.New(srv.Connect())
	if err != nil {
		t.Fatal(err)
	}
	pj, err := projection.New(js, projection.Options{Stream: processor.DefaultStream, Prefix: events.DefaultPrefix, FlushWait: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithCancel(context.Background())
	pdone := make(chan struct{})
	go func() { defer close(pdone); _ = pj.Run(pctx) }()
	defer func() { pcancel(); <-pdone }()
	caughtUpUsage(t, time.Minute, url)
	for name, scanned := range map[string]usage.SkillUsage{"deploy": scan, "audit": audit} {
		proj := skillUsageJSON(t, name, "--nats-url", url)
		for i := range scanned.Releases {
			scanned.Releases[i].FoundThenLoaded = 0
		}
		if fmt.Sprint(proj.Releases) != fmt.Sprint(scanned.Releases) {
			t.Errorf("%s: projection's releases %+v, the stream's %+v", name, proj.Releases, scanned.Releases)
		}
	}
}

// skillUsageJSON runs usage NAME --json with args.
func skillUsageJSON(t *testing.T, name string, args ...string) usage.SkillUsage {
	t.Helper()
	code, stdout, stderr := runMain(t, append(append([]string{"usage", name}, args...), "--json")...)
	if code != exitOK {
		t.Fatalf("usage %s %q: exit %d\n%s", name, args, code, stderr)
	}
	var row usage.SkillUsage
	if err := json.Unmarshal([]byte(stdout), &row); err != nil {
		t.Fatalf("usage %s: %v\n%s", name, err, stdout)
	}
	if row.Name != name {
		t.Fatalf("usage %s printed the row of %q", name, row.Name)
	}
	return row
}
