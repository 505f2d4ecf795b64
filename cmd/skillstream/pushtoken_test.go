package main

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
	"github.com/skillstream/skillstream/events/skillstore"
)

// skills push prints the store's epoch beside the revision, and --json the
// token "<epoch>:<revision>" too. A worker holding the token is served the
// push through serve; once the store's buckets are recreated, the old
// token is answered unavailable, saying the epochs differ, and the next
// push's token (another epoch) is served.
func TestSkillsPushPrintsStoreToken(t *testing.T) {
	s := startServe(t, t.TempDir(), t.TempDir())
	root := t.TempDir()
	push := func(args ...string) string {
		t.Helper()
		code, stdout, stderr := runMain(t, append(append([]string{"skills", "push", root}, args...), "--nats-url", s.url)...)
		if code != exitOK {
			t.Fatalf("push %v: exit %d\n%s%s", args, code, stdout, stderr)
		}
		return stdout
	}
	type pushed struct {
		Revision uint64 `json:"revision"`
		Epoch    string `json:"epoch"`
		Token    string `json:"token"`
	}
	pushJSON := func() pushed {
		t.Helper()
		out := push("--json")
		var p pushed
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatalf("push --json: %v\n%s", err, out)
		}
		if p.Revision == 0 || !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(p.Epoch) || p.Token != p.Epoch+":"+itoa(p.Revision) {
			t.Fatalf("push --json: revision, epoch and token:\n%s", out)
		}
		return p
	}

	writeFile(t, root, "pushed/SKILL.md", skillMD("Body.", "name: pushed", "description: Version one."))
	first := pushJSON()
	writeFile(t, root, "pushed/SKILL.md", skillMD("Body.", "name: pushed", "description: Version two."))
	m := regexp.MustCompile(`(?m)^store revision (\d+) epoch ([0-9a-f]{16})$`).FindStringSubmatch(push())
	if m == nil || m[2] != first.Epoch || m[1] != itoa(first.Revision+1) {
		t.Fatalf("push's last line %q, want revision %d and epoch %s", m, first.Revision+1, first.Epoch)
	}
	token := first.Epoch + ":" + m[1]

	c, err := client.New(s.connect(t), client.WithStoreToken(token))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n := 0
	step := func(sid string) (events.Decision, error) {
		n++
		sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		return c.PreStep(sctx, events.PreStep{Session: sid, Step: itoa(uint64(n)), Cwd: t.TempDir(), Tools: []events.Tool{client.SkillTool("skillstream")}})
	}
	d, err := step("token-1")
	if err != nil || d.Catalog == nil || len(d.Catalog.Source.Entries) != 1 || d.Catalog.Source.Entries[0].Description != "Version two." ||
		d.Catalog.Source.View.Epoch != first.Epoch {
		t.Fatalf("pre-step with the push's token: %+v, %v", d, err)
	}

	js, err := jetstream.New(s.connect(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteKeyValue(ctx, skillstore.DefaultBucket); err != nil {
		t.Fatal(err)
	}
	if err := js.DeleteObjectStore(ctx, skillstore.DefaultObjects); err != nil {
		t.Fatal(err)
	}
	again := pushJSON()
	if again.Epoch == first.Epoch {
		t.Fatalf("recreated buckets under the old epoch %s", again.Epoch)
	}
	// serve loads the new buckets by itself within seconds; until then a
	// token of the old ones may still be served from its old view. Once it
	// has, the old token is answered unavailable, naming both epochs.
	want := "store epoch " + first.Epoch + " is not this store's (" + again.Epoch + ")"
	eventually(t, 30*time.Second, "the old token to be refused", func() error {
		_, err := step("token-old")
		if !errors.Is(err, client.ErrUnavailable) || !strings.Contains(err.Error(), want) {
			return errors.New("pre-step with the old token: " + errText(err) + "\n" + s.stderr.String())
		}
		return nil
	})
	tok, err := events.ParseStoreToken(again.Token)
	if err != nil {
		t.Fatal(err)
	}
	c.RequireStore(tok)
	if d, err := step("token-2"); err != nil || d.Catalog == nil || d.Catalog.Source.View.Epoch != again.Epoch {
		t.Fatalf("pre-step with the new push's token: %+v, %v", d, err)
	}
}

func itoa(n uint64) string { return events.StoreToken{Revision: n}.String() }

func errText(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}
