package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
)

// TestMsgIDsTellNoSession: with the shipped permission files in a real
// server and a real serve (nats-server.conf, tenants.conf, and
// owner-layout.conf where it would only disclose), a worker that publishes into its own session
// with a Nats-Expected-Last-Msg-Id that cannot match is told the Msg-Id of
// the stream's last message. After another worker's pre-step, skill call
// and unchanged pre-step (the last message being an output, then a
// trigger), that Msg-Id holds no part of the other worker's session id,
// however often it asks.
func TestMsgIDsTellNoSession(t *testing.T) {
	for _, c := range []struct {
		name, victim, attacker string
		layout                 events.Layout
		start                  func(t *testing.T) (natsURL string, pw map[string]string, skill string)
	}{
		{"nats-server.conf", "worker-a", "worker-b", events.LayoutFlat, func(t *testing.T) (string, map[string]string, string) {
			natsURL, pw := permServer(t)
			root := spec4Skills(t)
			t.Chdir(t.TempDir())
			runPermittedServe(t, []string{"serve", "--nats-url", natsURL, "--nats-user", "processor", "--nats-password", pw["processor"],
				"--no-bundled", "--user-skills-dir=", "--skills-dir", root, "--workers", "2"}, "processor started")
			return natsURL, pw, "a-skill"
		}},
		{"tenants.conf", "acme-worker-1", "acme-worker-2", events.LayoutFlat, func(t *testing.T) (string, map[string]string, string) {
			natsURL, pw := tenantServer(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			pushAs(t, ctx, natsURL, "acme-admin", pw["acme-admin"], "SKILLS", skillDir(t, "acme-deploy", "Deploy Acme's services."))
			startTenantServe(t, natsURL)
			return natsURL, pw, "acme-deploy"
		}},
		{"owner-layout.conf", "a1", "a2", events.LayoutOwner, func(t *testing.T) (string, map[string]string, string) {
			natsURL, pw := ownerPermServer(t)
			root := spec4Skills(t)
			t.Chdir(t.TempDir())
			runPermittedServe(t, []string{"serve", "--nats-url", natsURL, "--nats-user", "processor", "--nats-password", pw["processor"],
				"--session-layout", "owner", "--no-bundled", "--user-skills-dir=", "--skills-dir", root, "--no-skill-store",
				"--workers", "2"}, "processor started")
			return natsURL, pw, "a-skill"
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			natsURL, pw, skill := c.start(t)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			victim, err := client.Connect(userURL(t, natsURL, c.victim, pw[c.victim]), client.WithInboxPrefix("_INBOX."+c.victim),
				client.WithLayout(c.layout), client.WithRetryInterval(time.Second))
			if err != nil {
				t.Fatal(err)
			}
			defer victim.Close()
			// In the owner layout a session id is "<owner>.<id>"; its owner
			// is no secret, its id is.
			owned := func(owner, id string) string {
				if c.layout == events.LayoutOwner {
					return owner + "." + id
				}
				return id
			}
			nc, err := nats.Connect(userURL(t, natsURL, c.attacker, pw[c.attacker]), nats.CustomInboxPrefix("_INBOX."+c.attacker))
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			js, err := jetstream.New(nc)
			if err != nil {
				t.Fatal(err)
			}
			own := owned(c.attacker, "own-"+randomToken(t))
			probes := 0
			// probe asks for the stream's last Msg-Id and fails the test when
			// the answer holds 8 characters of the victim's session id in a
			// row.
			probe := func(sid string) {
				t.Helper()
				probes++
				m := &nats.Msg{Subject: events.Subject(events.DefaultPrefix, own, events.KindPreStep),
					Header: nats.Header{"Nats-Expected-Last-Msg-Id": []string{"cannot-match"}}, Data: []byte{0x80}}
				_, err := js.PublishMsg(ctx, m)
				var apiErr *jetstream.APIError
				if !errors.As(err, &apiErr) || apiErr.ErrorCode != 10070 {
					t.Fatalf("probe %d: %v; want the refusal quoting the last Msg-Id", probes, err)
				}
				_, rnd, _ := strings.Cut(sid, "victim-")
				for i := 0; i+8 <= len(rnd); i++ {
					if strings.Contains(err.Error(), rnd[i:i+8]) {
						t.Fatalf("probe %d learned the victim's session %s: %q", probes, sid, err.Error())
					}
				}
				if strings.Contains(err.Error(), "victim") {
					t.Fatalf("probe %d: %q names the victim's session", probes, err.Error())
				}
			}
			tools := []events.Tool{client.SkillTool("skillstream")}
			for round := 1; round <= 5; round++ {
				sid := owned(c.victim, "victim-"+randomToken(t))
				d, err := victim.PreStep(ctx, events.PreStep{Session: sid, Step: "1", Tools: tools})
				if err != nil || d.Outcome != events.OutcomeAppended {
					t.Fatalf("victim's pre-step: %+v, %v", d, err)
				}
				probe(sid) // the last message: the victim's catalog
				r, err := victim.CallSkill(ctx, events.SkillCall{Session: sid, Call: "c1", Args: events.SkillArgs{Name: skill}})
				if err != nil || r.IsError {
					t.Fatalf("victim's skill call: %+v, %v", r, err)
				}
				probe(sid) // its tool result
				d, err = victim.PreStep(ctx, events.PreStep{Session: sid, Step: "2", Tools: tools})
				if err != nil || d.Outcome != events.OutcomeUnchanged {
					t.Fatalf("victim's second pre-step: %+v, %v", d, err)
				}
				probe(sid) // its trigger, nothing appended after it
			}
			t.Log(fmt.Sprintf("%d probes, no part of a victim's session id learned", probes))
		})
	}
}
