package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
)

// A tenant pins a library skill: the pin, written by the tenant's
// administrator, is kept in the tenant's own store; serve's library
// provider for that tenant follows it and serves the pinned library
// revision (channel pin) to the tenant's sessions through the library's
// canary and promote, while another tenant without the pin gets the
// library's stable; an unpin gives the tenant the library's newest again.
// Bad pins are refused, writing nothing.
func TestTenantPinsLibrarySkill(t *testing.T) {
	natsURL, pw := tenantServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	adminYAML, err := filepath.Abs("deploy/tenants-admin.yaml")
	if err != nil {
		t.Fatal(err)
	}
	as := func(tenant string, want int, args ...string) string {
		t.Helper()
		code, stdout, stderr := runMain(t, append(append([]string{"skills"}, args...), "--nats-url", natsURL, "--tenants", adminYAML, "--tenant", tenant)...)
		t.Logf("$ skillstream skills %s --tenant %s\n%s%s", strings.Join(args, " "), tenant, stdout, stderr)
		if code != want {
			t.Fatalf("skills %v --tenant %s: exit %d, want %d\n%s%s", args, tenant, code, want, stdout, stderr)
		}
		return stdout + stderr
	}
	root := t.TempDir()
	writeFile(t, root, "shared-style/SKILL.md", skillMD("Apply the style.", "name: shared-style", "description: House style one."))
	as("library", 0, "push", root)

	if out := as("acme", 0, "pin", "shared-style@1", "--library", "--scope", "global"); !strings.Contains(out, "pinned library skill shared-style for tenant acme to rev 1 ") {
		t.Errorf("pin: %s", out)
	}
	if out := as("acme", 1, "pin", "shared-style@5", "--library", "--scope", "global"); !strings.Contains(out, "revision 5 is not one the index keeps") {
		t.Errorf("pin of a missing revision: %s", out)
	}
	if out := as("acme", 2, "pin", "shared-style@1", "--library", "--scope", "project/x"); !strings.Contains(out, "--scope global") {
		t.Errorf("pin of a library skill for a project: %s", out)
	}
	if out := as("library", 2, "pin", "shared-style@1", "--library", "--scope", "global"); !strings.Contains(out, "--tenant T") {
		t.Errorf("pin --library for the library itself: %s", out)
	}
	startTenantServe(t, natsURL)
	acme := tenantWorker(t, natsURL, "acme-worker-1", pw["acme-worker-1"])
	globex := tenantWorker(t, natsURL, "globex-worker-1", pw["globex-worker-1"])
	attempt := 0
	serves := func(c *client.Client, who string, rev uint64, channel string) {
		t.Helper()
		eventually(t, 30*time.Second, fmt.Sprintf("%s's sessions on library rev %d (%s)", who, rev, channel), func() error {
			attempt++
			for i := range 12 {
				sid := fmt.Sprintf("%s-lp-%d", who, i)
				r, err := c.CallSkill(ctx, events.SkillCall{Session: sid, Call: fmt.Sprintf("c%d", attempt), Args: events.SkillArgs{Name: "shared-style"}})
				if err != nil {
					return err
				}
				if r.IsError || r.Value == nil || r.Value.Rev != rev || r.Value.Channel != channel {
					return fmt.Errorf("%s: %+v", sid, r.Value)
				}
			}
			return nil
		})
	}
	serves(acme, "acme", 1, catalog.ChannelPin)
	serves(globex, "globex", 1, catalog.ChannelStable)

	// The library releases rev 2 to every session, then promotes it: acme
	// stays pinned throughout, globex takes it.
	writeFile(t, root, "shared-style/SKILL.md", skillMD("Apply the new style.", "name: shared-style", "description: House style two."))
	as("library", 0, "push", root, "--draft")
	as("library", 0, "release", "shared-style", "2", "--canary", "100%")
	serves(globex, "globex", 2, catalog.ChannelCanary)
	serves(acme, "acme", 1, catalog.ChannelPin)
	as("library", 0, "promote", "shared-style")
	serves(globex, "globex", 2, catalog.ChannelStable)
	serves(acme, "acme", 1, catalog.ChannelPin)

	// The pre-step's catalog of a pinned session names the pin too.
	d, err := acme.PreStep(ctx, events.PreStep{Session: "acme-lp-view", Step: "1", Tools: []events.Tool{client.SkillTool("skillstream")}})
	if err != nil {
		t.Fatal(err)
	}
	if desc, channel := describedAs(d, "shared-style"); desc != "House style one." || channel != catalog.ChannelPin {
		t.Errorf("acme's catalog: shared-style %q channel %q, want the pinned rev 1", desc, channel)
	}

	if out := as("acme", 0, "unpin", "shared-style", "--library", "--scope", "global"); !strings.Contains(out, "unpinned library skill shared-style for tenant acme") {
		t.Errorf("unpin: %s", out)
	}
	serves(acme, "acme", 2, catalog.ChannelStable)
	if out := as("acme", 1, "unpin", "shared-style", "--library", "--scope", "global"); !strings.Contains(out, "not pinned") {
		t.Errorf("unpin again: %s", out)
	}
}
