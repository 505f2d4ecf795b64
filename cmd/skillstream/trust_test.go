package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nkeys"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/providers/store"
)

// TestSigningWithShippedTenants: with the shipped multi-tenant
// configuration, an administrator makes a key, pushes a skill signed and
// one unsigned, trusts the key and requires signed revisions: a running
// serve stops offering the unsigned skill to the tenant's workers within
// seconds, says why (status, catalog --json, the warning metric), and
// offers it again under warn. The library's curator signs; a tenant
// that trusts the library's keys is offered its skill under signed, one
// that does not is not. A worker cannot write the policy.
func TestSigningWithShippedTenants(t *testing.T) {
	natsURL, pw := tenantServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	as := adminRun(t, natsURL)

	// keygen: the seed in a 0600 file, never printed; the public key printed.
	seedFile := filepath.Join(t.TempDir(), "acme.seed")
	code, out, stderr := runMain(t, "skills", "keygen", "--out", seedFile)
	if code != exitOK {
		t.Fatalf("keygen: exit %d\n%s%s", code, out, stderr)
	}
	info, err := os.Stat(seedFile)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("seed file %v, %v: want mode 0600", info, err)
	}
	seed, _ := os.ReadFile(seedFile)
	if strings.Contains(out+stderr, strings.TrimSpace(string(seed))) {
		t.Fatalf("keygen printed the seed:\n%s", out)
	}
	pub := regexp.MustCompile(`public key (N[A-Z2-7]{55})`).FindStringSubmatch(out)
	if pub == nil || !skillstore.ValidPublicKey(pub[1]) {
		t.Fatalf("keygen printed no public key:\n%s", out)
	}
	if code, _, stderr := runMain(t, "skills", "keygen", "--out", seedFile); code == exitOK || !strings.Contains(stderr, "never overwrites") {
		t.Errorf("keygen over an existing file: exit %d %s", code, stderr)
	}

	code, out, stderr = as("acme", "skills", "push", skillDir(t, "acme-signed", "Signed by Acme."), "--sign", seedFile)
	if code != exitOK || !strings.Contains(out, "signed by "+pub[1]) {
		t.Fatalf("push --sign: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := as("acme", "skills", "push", skillDir(t, "acme-unsigned", "Not signed.")); code != exitOK {
		t.Fatalf("push: exit %d\n%s%s", code, out, stderr)
	}
	if code, _, stderr := as("acme", "skills", "trust", "require", "signed"); code == exitOK || !strings.Contains(stderr, "trust add KEY first") {
		t.Errorf("require signed without a key: exit %d %s", code, stderr)
	}
	if code, out, stderr := as("acme", "skills", "trust", "add", strings.TrimSpace(string(seed))); code == exitOK || strings.Contains(out+stderr, strings.TrimSpace(string(seed))) {
		t.Errorf("trust add SEED: exit %d, or the seed echoed:\n%s%s", code, out, stderr)
	}
	for _, args := range [][]string{{"add", pub[1]}, {"require", "signed"}} {
		if code, out, stderr := as("acme", append([]string{"skills", "trust"}, args...)...); code != exitOK {
			t.Fatalf("trust %v: exit %d\n%s%s", args, code, out, stderr)
		}
	}
	code, out, _ = as("acme", "skills", "trust", "show")
	if code != exitOK || !strings.Contains(out, "require  signed") || !strings.Contains(out, "key      "+pub[1]) {
		t.Errorf("trust show: exit %d\n%s", code, out)
	}

	logs := startTenantServe(t, natsURL)
	w1 := tenantWorker(t, natsURL, "acme-worker-1", pw["acme-worker-1"])
	tools := []events.Tool{client.SkillTool("skillstream")}
	catalogOf := func(c *client.Client, session string) []string {
		t.Helper()
		d, err := c.PreStep(ctx, events.PreStep{Session: session, Step: "1", Tools: tools})
		if err != nil {
			t.Fatal(err)
		}
		return names(d)
	}
	if got := catalogOf(w1, "acme-1"); !slices.Contains(got, "acme-signed") || slices.Contains(got, "acme-unsigned") {
		t.Errorf("under signed acme's catalog lists %v: want acme-signed, never acme-unsigned", got)
	}
	code, out, _ = as("acme", "skills", "status", "acme-unsigned")
	if code != exitOK || !strings.Contains(out, "trust      newest revision unsigned, not trusted: revision not signed; require signed: not offered") {
		t.Errorf("status of the unsigned skill: exit %d\n%s", code, out)
	}
	yaml, _ := filepath.Abs(tenantsYAML)
	code, out, stderr = runMain(t, "catalog", "--json", "--nats-url", natsURL, "--tenants", yaml, "--tenant", "acme", "--no-bundled", "--user-skills-dir=")
	if code != exitOK || !strings.Contains(out, "global.acme-unsigned") || !strings.Contains(out, "not trusted") {
		t.Errorf("catalog --json lacks the diagnostic: exit %d\n%s%s", code, out, stderr)
	}
	if m := servedMetrics(t, logs.String()); !strings.Contains(m, `skillstream_store_warnings_total{kind="untrusted",tenant="acme"}`) {
		t.Errorf("no untrusted warning counted:\n%.3000s", m)
	}
	if !strings.Contains(logs.String(), "not trusted by the store's trust policy") {
		t.Errorf("serve's log does not say why:\n%s", logs)
	}

	// Warn, on the running serve: offered again (a new session).
	if code, out, stderr := as("acme", "skills", "trust", "require", "warn"); code != exitOK {
		t.Fatalf("require warn: exit %d\n%s%s", code, out, stderr)
	}
	eventually(t, 20*time.Second, "the unsigned skill offered under warn", func() error {
		got := catalogOf(w1, "acme-warn-"+strconv.FormatInt(time.Now().UnixNano(), 10))
		if !slices.Contains(got, "acme-unsigned") {
			return errorf("catalog %v", got)
		}
		return nil
	})

	// The library: the curator signs, and names its key in the library's
	// policy; acme trusts the library's keys, globex does not.
	curator, curPub := mustKey(t)
	lib := publisherAs(t, ctx, natsURL, "curator", pw["curator"], "LIBRARY")
	l, err := store.ReadSkill(skillDir(t, "shared-style", "Apply the house writing style."), store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := lib.PushWith(ctx, skillstore.Global, []store.Local{l}, store.PushOptions{Sign: curator}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := lib.ChangePolicy(ctx, func(p *store.TrustPolicy) error { p.Keys = []string{curPub}; return nil }); err != nil {
		t.Fatal(err)
	}
	_, globexKey := mustKey(t)
	for _, step := range []struct {
		tenant string
		args   []string
	}{
		{"acme", []string{"library", "trust"}}, {"acme", []string{"require", "signed"}},
		{"globex", []string{"add", globexKey}}, {"globex", []string{"require", "signed"}},
	} {
		if code, out, stderr := as(step.tenant, append([]string{"skills", "trust"}, step.args...)...); code != exitOK {
			t.Fatalf("%s: trust %v: exit %d\n%s%s", step.tenant, step.args, code, out, stderr)
		}
	}
	g1 := tenantWorker(t, natsURL, "globex-worker-1", pw["globex-worker-1"])
	eventually(t, 20*time.Second, "library offered to acme only", func() error {
		stamp := strconv.FormatInt(time.Now().UnixNano(), 10)
		a, g := catalogOf(w1, "acme-lib-"+stamp), catalogOf(g1, "globex-lib-"+stamp)
		if !slices.Contains(a, "shared-style") || slices.Contains(a, "acme-unsigned") || slices.Contains(g, "shared-style") {
			return errorf("acme %v, globex %v", a, g)
		}
		return nil
	})

	// A worker cannot write the policy.
	v := &violations{}
	w1.Conn().SetErrorHandler(v.handler)
	if err := w1.Conn().Publish("$KV.SKILLS."+store.TrustKey, []byte(`{"v":1,"require":"off","keys":[]}`)); err != nil {
		t.Fatal(err)
	}
	v.wait(t, "a worker writing the trust policy", "$KV.SKILLS."+store.TrustKey)
}

func errorf(format string, args ...any) error { return fmt.Errorf(format, args...) }

func mustKey(t testing.TB) (nkeys.KeyPair, string) {
	t.Helper()
	kp, err := skillstore.NewKey()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := kp.PublicKey()
	return kp, pub
}
