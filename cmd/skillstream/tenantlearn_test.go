package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
	"github.com/skillstream/skillstream/processor/usage/projection"
)

// tenantLoads is how many loads of skill the usage projection of the
// tenant whose administrator is user counts.
func tenantLoads(t testing.TB, ctx context.Context, natsURL, user, password, skill string) (int, error) {
	t.Helper()
	nc, err := nats.Connect(userURL(t, natsURL, user, password))
	if err != nil {
		return 0, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return 0, err
	}
	rep, err := projection.Read(ctx, js, projection.Options{Stream: "SESSIONS", Layout: events.LayoutFlat}, time.Now().Add(-time.Hour))
	if err != nil {
		return 0, err
	}
	for _, s := range rep.Skills {
		if s.Name == skill {
			return s.Loads, nil
		}
	}
	return 0, nil
}

// TestTenantsLearnApart: with the shipped multi-tenant configuration, a
// catalog listed by use and a search that learns, both tenants holding
// the same two skills, one tenant's searches followed by loads teach its
// own search index only (the other's finds nothing for those words and
// learned nothing), and its loads count in its own usage projection only:
// once serve reads them (at its next start), its catalogs list the used
// skill first, with its description, while the other tenant's still list
// by name.
func TestTenantsLearnApart(t *testing.T) {
	natsURL, pw := tenantServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	pushAs(t, ctx, natsURL, "curator", pw["curator"], "LIBRARY", skillDir(t, "shared-style", "Apply the house writing style."))
	for _, admin := range []string{"acme-admin", "globex-admin"} {
		pushAs(t, ctx, natsURL, admin, pw[admin], "SKILLS", skillDir(t, "alpha-notes", "Write alpha notes."))
		pushAs(t, ctx, natsURL, admin, pw[admin], "SKILLS", skillDir(t, "zulu-report", "Write the zulu report."))
	}
	flags := []string{"--skill-search", "--search-learn", "--catalog-rank", "use", "--catalog-listed-max", "1", "--usage-projection"}
	stop := startTenantServeStoppable(t, natsURL, flags...)

	acme := tenantWorker(t, natsURL, "acme-worker-1", pw["acme-worker-1"])
	globex := tenantWorker(t, natsURL, "globex-worker-1", pw["globex-worker-1"])
	tools := []events.Tool{client.SkillTool("skillstream"), client.SkillSearchTool("skillstream")}
	search := func(c *client.Client, sid string) events.ToolResult {
		t.Helper()
		r, err := c.SearchSkills(ctx, events.SkillSearch{Session: sid, Call: "s1", Args: events.SearchArgs{Query: "black friday"}})
		if err != nil || r.IsError || r.Search == nil {
			t.Fatalf("%s: search: %+v %v", sid, r, err)
		}
		return r
	}
	catalogOf := func(c *client.Client, sid string) string {
		t.Helper()
		d, err := c.PreStep(ctx, events.PreStep{Session: sid, Step: "1", Tools: tools})
		if err != nil || d.Outcome != events.OutcomeAppended || d.Catalog == nil {
			t.Fatalf("%s: %+v %v", sid, d, err)
		}
		var forms []string
		for _, e := range d.Catalog.Source.Entries {
			if e.Description != "" {
				forms = append(forms, e.Name+":")
			} else {
				forms = append(forms, e.Name)
			}
		}
		return strings.Join(forms, " ")
	}
	// Before: both tenants list by name, and find nothing for the words.
	for _, w := range []struct {
		c   *client.Client
		sid string
	}{{acme, "acme-before"}, {globex, "globex-before"}} {
		if got := catalogOf(w.c, w.sid); !strings.HasPrefix(got, "alpha-notes:") {
			t.Fatalf("%s: catalog %q, want alpha-notes first with its description", w.sid, got)
		}
		if r := search(w.c, w.sid); len(r.Search.Results) != 0 || r.Search.Learned != "" {
			t.Fatalf("%s: %+v", w.sid, r.Search)
		}
	}
	// Acme's sessions search, then load zulu-report.
	for i := range 3 {
		sid := fmt.Sprintf("acme-%d", i)
		catalogOf(acme, sid)
		search(acme, sid)
		if r, err := acme.CallSkill(ctx, events.SkillCall{Session: sid, Call: "c1", Args: events.SkillArgs{Name: "zulu-report"}}); err != nil || r.IsError {
			t.Fatalf("%s: load: %+v %v", sid, r, err)
		}
	}
	n := 0
	eventually(t, 30*time.Second, "acme's index learns its searches", func() error {
		n++
		r := search(acme, fmt.Sprintf("acme-after-%d", n))
		if len(r.Search.Results) == 0 || r.Search.Results[0].Name != "zulu-report" || r.Search.Learned == "" || len(r.Search.LearnedTerms) == 0 {
			return fmt.Errorf("acme's search: %+v", r.Search)
		}
		return nil
	})
	if r := search(globex, "globex-after"); len(r.Search.Results) != 0 || r.Search.Learned != "" || len(r.Search.LearnedTerms) != 0 {
		t.Errorf("globex's search learned from acme's sessions: %+v", r.Search)
	}
	eventually(t, 30*time.Second, "acme's usage projection counts its loads", func() error {
		if n, err := tenantLoads(t, ctx, natsURL, "acme-admin", pw["acme-admin"], "zulu-report"); err != nil || n != 3 {
			return fmt.Errorf("acme's projection: %d loads of zulu-report, %v", n, err)
		}
		return nil
	})
	if n, err := tenantLoads(t, ctx, natsURL, "globex-admin", pw["globex-admin"], "zulu-report"); err != nil || n != 0 {
		t.Errorf("globex's projection: %d loads of zulu-report, %v", n, err)
	}
	stop()

	// Serve again: it reads each tenant's use at its start.
	startTenantServeStoppable(t, natsURL, flags...)
	acmeList, globexList := catalogOf(acme, "acme-ranked"), catalogOf(globex, "globex-ranked")
	t.Logf("after acme's loads: acme lists %q, globex lists %q", acmeList, globexList)
	if !strings.Contains(acmeList, "zulu-report:") || strings.Contains(acmeList, "alpha-notes:") {
		t.Errorf("acme's catalog %q, want zulu-report with its description and alpha-notes without", acmeList)
	}
	if !strings.HasPrefix(globexList, "alpha-notes:") || strings.Contains(globexList, "zulu-report:") {
		t.Errorf("globex's catalog %q, want by name (alpha-notes with its description)", globexList)
	}
	if r := search(globex, "globex-ranked"); len(r.Search.Results) != 0 || r.Search.Learned != "" {
		t.Errorf("globex's search after the restart: %+v", r.Search)
	}
}

// startTenantServeStoppable is startTenantServe returning a stop that
// ends serve and checks it exited cleanly (also run when the test ends).
func startTenantServeStoppable(t testing.TB, natsURL string, extra ...string) func() {
	t.Helper()
	yaml, err := filepath.Abs(tenantsYAML)
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"serve", "--nats-url", natsURL, "--tenants", yaml,
		"--no-bundled", "--user-skills-dir=", "--workers", "4", "--metrics-listen", quietAddr(t)}, extra...)
	logs := &syncBuffer{}
	sctx, scancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- Main(sctx, args, io.Discard, logs) }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		scancel()
		if code := <-done; code != exitOK {
			t.Errorf("serve exit %d:\n%s", code, logs)
		}
		if strings.Contains(logs.String(), "ermissions") {
			t.Errorf("serve was refused something by the permission file:\n%s", logs)
		}
	}
	t.Cleanup(stop)
	eventually(t, 30*time.Second, "serve serving", func() error {
		if !strings.Contains(logs.String(), "skillstream serving") {
			return fmt.Errorf("not yet serving:\n%s", logs)
		}
		return nil
	})
	return stop
}
