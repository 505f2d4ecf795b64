package client

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
)

// The protocol's recipe for workers in other languages, with the nats CLI:
//
//	nats sub --raw --count 1 _INBOX.worker.s1
//	nats pub --jetstream ev.s1.agent.pre-step -H Content-Type:application/json -H Reply-Inbox:_INBOX.worker.s1 '<pre-step JSON>'
const (
	recipeInbox   = "_INBOX.worker.s1"
	recipeSubject = "ev.s1.agent.pre-step"
	recipeSub     = "nats sub --raw --count 1 " + recipeInbox
	recipePub     = "nats pub --jetstream " + recipeSubject + " \\\n  -H Content-Type:application/json -H Reply-Inbox:" + recipeInbox
)

// recipeBody is the recipe's pre-step for project folder cwd.
func recipeBody(cwd string) string {
	return `{"v":1,"session":"s1","step":"1","cwd":"` + cwd + `","tools":[{"name":"skill","owner":"skillstream"}]}`
}

// TestProtocolRecipe performs the steps of events/protocol.md's natscli recipe with
// plain core NATS (subscribe to an inbox, publish the JSON pre-step with
// its two headers, read the answer on the inbox) against a real processor,
// and, when the nats CLI is on PATH, runs the recipe's own commands too.
func TestProtocolRecipe(t *testing.T) {
	doc, err := os.ReadFile("../protocol.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{recipeSub, recipePub, recipeBody(`'"$PWD"'`)} {
		if !strings.Contains(string(doc), want) {
			t.Fatalf("events/protocol.md lacks the recipe line\n%s", want)
		}
	}

	w := newWorld(t, natstest.WithTCP())
	w.startProcessor()
	nc := w.srv.Connect()

	// Step 1: subscribe to the inbox.
	sub, err := nc.SubscribeSync(recipeInbox)
	if err != nil {
		t.Fatal(err)
	}
	// Step 2: publish the pre-step with the two headers.
	m := nats.NewMsg(recipeSubject)
	m.Header.Set("Content-Type", "application/json")
	m.Header.Set("Reply-Inbox", recipeInbox)
	m.Data = []byte(recipeBody(w.cwd))
	if err := nc.PublishMsg(m); err != nil {
		t.Fatal(err)
	}
	// Step 3: the answer arrives on the inbox, as JSON.
	a, err := sub.NextMsg(waitTimeout)
	if err != nil {
		t.Fatalf("no answer on the inbox: %v", err)
	}
	checkRecipeAnswer(t, a.Header.Get("Content-Type"), a.Data, events.OutcomeAppended)

	// The same with the nats CLI, if it is installed.
	cli, err := exec.LookPath("nats")
	if err != nil {
		t.Log("nats CLI not on PATH: its run of the recipe is skipped")
		return
	}
	ctx := timeout(t)
	subCmd := exec.CommandContext(ctx, cli, "--server", w.srv.ClientURL(), "sub", "--raw", "--count", "1", recipeInbox)
	var out strings.Builder
	subCmd.Stdout = &out
	var errOut strings.Builder
	subCmd.Stderr = &errOut
	// The test's own subscription must be gone from the server before its
	// interest is taken for nats sub's: Flush waits for the server to have
	// processed the UNSUB.
	if err := sub.Unsubscribe(); err != nil {
		t.Fatal(err)
	}
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	if err := subCmd.Start(); err != nil {
		t.Fatal(err)
	}
	// nats sub --raw prints nothing until a message comes: wait until the
	// server knows its subscription.
	poll(t, func() error {
		if w.srv.GlobalAccount().Interest(recipeInbox) == 0 {
			return fmt.Errorf("nats sub not subscribed yet (stderr %q)", errOut.String())
		}
		return nil
	})
	body := strings.Replace(recipeBody(w.cwd), `"step":"1"`, `"step":"2"`, 1)
	pub := exec.CommandContext(ctx, cli, "--server", w.srv.ClientURL(), "pub", "--jetstream", recipeSubject,
		"-H", "Content-Type:application/json", "-H", "Reply-Inbox:"+recipeInbox, body)
	if b, err := pub.CombinedOutput(); err != nil {
		t.Fatalf("nats pub: %v\n%s", err, b)
	}
	if err := subCmd.Wait(); err != nil {
		t.Fatalf("nats sub: %v\n%s", err, errOut.String())
	}
	checkRecipeAnswer(t, "application/json", []byte(strings.TrimSpace(out.String())), events.OutcomeUnchanged)
}

func checkRecipeAnswer(t *testing.T, contentType string, data []byte, outcome string) {
	t.Helper()
	if contentType != "application/json" {
		t.Errorf("answer Content-Type %q, want application/json", contentType)
	}
	var d events.Decision
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("answer is not JSON: %v\n%s", err, data)
	}
	if d.Outcome != outcome || d.Session != "s1" {
		t.Fatalf("answer %s; want outcome %s for session s1", data, outcome)
	}
	if outcome == events.OutcomeAppended && (d.Catalog == nil || !strings.Contains(d.Catalog.Text, "`a-skill`")) {
		t.Fatalf("answer lacks the catalog: %s", data)
	}
}
