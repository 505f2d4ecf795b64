package main

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
	"github.com/skillstream/skillstream/events/skillstore"
)

// describedAs is the description the catalog of d gives skill name, and
// its origin's channel.
func describedAs(d events.Decision, name string) (string, string) {
	if d.Catalog == nil {
		return "", ""
	}
	desc, channel := "", ""
	for _, e := range d.Catalog.Source.Entries {
		if e.Name == name {
			desc = e.Description
		}
	}
	for _, o := range d.Catalog.Source.Origins {
		if o.Name == name {
			channel = o.Channel
		}
	}
	return desc, channel
}

// A library skill has releases too: the curator pushes a draft to the
// library, releases it to half of the sessions and promotes it with the
// skills commands (--tenant library), and a tenant's sessions take the
// library's candidate exactly as the cohort function places them, the
// others its stable, until the promote gives every session the candidate.
func TestLibraryRelease(t *testing.T) {
	natsURL, pw := tenantServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	adminYAML, err := filepath.Abs("deploy/tenants-admin.yaml")
	if err != nil {
		t.Fatal(err)
	}
	lib := func(args ...string) string {
		t.Helper()
		code, stdout, stderr := runMain(t, append(append([]string{"skills"}, args...), "--nats-url", natsURL, "--tenants", adminYAML, "--tenant", "library")...)
		t.Logf("$ skillstream skills %s --tenant library\n%s%s", strings.Join(args, " "), stdout, stderr)
		if code != exitOK {
			t.Fatalf("skills %v --tenant library: exit %d\n%s%s", args, code, stdout, stderr)
		}
		return stdout
	}
	root := t.TempDir()
	writeFile(t, root, "shared-style/SKILL.md", skillMD("Apply the style.", "name: shared-style", "description: Stable house style."))
	lib("push", root)
	writeFile(t, root, "shared-style/SKILL.md", skillMD("Apply the new style.", "name: shared-style", "description: Candidate house style."))
	if out := lib("push", root, "--draft"); !strings.Contains(out, "(draft: offered to no session") {
		t.Fatalf("draft push to the library: %s", out)
	}
	lib("release", "shared-style", "2", "--canary", "50%")
	st, err := publisherAs(t, ctx, natsURL, "curator", pw["curator"], "LIBRARY").Status(ctx, skillstore.Global, "shared-style")
	if err != nil || st.Candidate == nil {
		t.Fatalf("library status: %+v %v", st, err)
	}
	rel := catalog.Release{Name: "shared-style", Candidate: st.Candidate.Digest, Share: 5000}
	startTenantServe(t, natsURL)

	acme := tenantWorker(t, natsURL, "acme-worker-1", pw["acme-worker-1"])
	tools := []events.Tool{client.SkillTool("skillstream")}
	canary, stable := 0, 0
	for i := range 20 {
		sid := "lib-rel-" + strconv.Itoa(i)
		d, err := acme.PreStep(ctx, events.PreStep{Session: sid, Step: "1", Tools: tools})
		if err != nil || d.Outcome != events.OutcomeAppended {
			t.Fatalf("%s: %+v %v", sid, d, err)
		}
		desc, channel := describedAs(d, "shared-style")
		want, wantChannel := "Stable house style.", catalog.ChannelStable
		if catalog.InCanary("acme", sid, rel) {
			want, wantChannel = "Candidate house style.", catalog.ChannelCanary
			canary++
		} else {
			stable++
		}
		if desc != want || channel != wantChannel {
			t.Errorf("%s (in the canary: %v): shared-style %q, channel %q; want %q, %q", sid, want != "Stable house style.", desc, channel, want, wantChannel)
		}
		r, err := acme.CallSkill(ctx, events.SkillCall{Session: sid, Call: "c1", Args: events.SkillArgs{Name: "shared-style"}})
		if err != nil || r.IsError || r.Value == nil || r.Value.Channel != wantChannel {
			t.Errorf("%s loads shared-style: %+v %v; want channel %s", sid, r.Value, err, wantChannel)
		}
	}
	if canary == 0 || stable == 0 {
		t.Fatalf("20 sessions: %d in the canary, %d not; want both (the cohort function places about half in each)", canary, stable)
	}

	// The operator's preview of a session of acme: its cohort is acme's.
	yaml, _ := filepath.Abs(tenantsYAML)
	for i := range 20 {
		sid := "lib-rel-" + strconv.Itoa(i)
		in := catalog.InCanary("acme", sid, rel)
		if in == catalog.InCanary("", sid, rel) {
			continue // a session placed alike without the tenant proves nothing
		}
		code, out, stderr := runMain(t, "catalog", "--json", "--nats-url", natsURL, "--tenants", yaml, "--tenant", "acme",
			"--no-bundled", "--user-skills-dir=", "--session", sid)
		var v catalogView
		if err := json.Unmarshal([]byte(out), &v); code != exitOK || err != nil {
			t.Fatalf("catalog --session %s for acme: exit %d %v\n%s%s", sid, code, err, out, stderr)
		}
		want := catalog.ChannelStable
		if in {
			want = catalog.ChannelCanary
		}
		for _, s := range v.Skills {
			if s.Name == "shared-style" && s.Origin.Channel != want {
				t.Errorf("catalog --session %s for acme: shared-style %+v, want channel %s", sid, s.Origin, want)
			}
		}
		if len(v.Releases) != 1 || v.Releases[0].Taken == nil || *v.Releases[0].Taken != in {
			t.Errorf("catalog --session %s for acme: releases %+v, want taken %v", sid, v.Releases, in)
		}
		break
	}

	lib("promote", "shared-style")
	attempt := 0 // a fresh call id every attempt: a call id answers once
	eventually(t, 30*time.Second, "every session on the promoted library revision", func() error {
		attempt++
		for i := range 20 {
			sid := "lib-rel-" + strconv.Itoa(i)
			r, err := acme.CallSkill(ctx, events.SkillCall{Session: sid, Call: fmt.Sprintf("p%d-%d", attempt, i), Args: events.SkillArgs{Name: "shared-style"}})
			if err != nil {
				return err
			}
			if r.IsError || r.Value == nil || r.Value.Rev != 2 || r.Value.Channel != catalog.ChannelStable {
				return fmt.Errorf("%s: %+v", sid, r.Value)
			}
		}
		return nil
	})

	// The curator's pin of a library skill (in the library: every tenant)
	// holds every session at that revision, channel pin, until unpinned.
	lib("pin", "shared-style@1", "--scope", "global")
	onRev := func(rev uint64, channel string) {
		t.Helper()
		eventually(t, 30*time.Second, fmt.Sprintf("every session on library rev %d (%s)", rev, channel), func() error {
			attempt++
			for i := range 20 {
				sid := "lib-rel-" + strconv.Itoa(i)
				r, err := acme.CallSkill(ctx, events.SkillCall{Session: sid, Call: fmt.Sprintf("r%d-%s-%d-%d", rev, channel, attempt, i), Args: events.SkillArgs{Name: "shared-style"}})
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
	onRev(1, catalog.ChannelPin)
	lib("unpin", "shared-style", "--scope", "global")
	onRev(2, catalog.ChannelStable)
}
