package main

import (
	"context"
	"encoding/json"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillstream/skillstream/providers/store/audit"
)

// TestAuditNamesServerKnownUsers: with the shipped tenants.conf and
// tenants.yaml, serve runs the audit service in the AUDIT account. Pushes,
// a release and a trust change by two tenants' administrators and the
// library's curator are recorded under the user and account the server
// knows, whatever the pusher writes; history shows them. A revision
// written without a claim shows as not audited; a forged identity header
// is replaced by the server's; a claim of a revision the store does not
// hold, of another account's store, or of the library by a tenant is
// refused; one tenant never reads another's records.
func TestAuditNamesServerKnownUsers(t *testing.T) {
	natsURL, pw := tenantServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	as := adminRun(t, natsURL)
	logs := startTenantServe(t, natsURL)
	if !strings.Contains(logs.String(), "audit_account=AUDIT") {
		t.Fatalf("serve does not say it runs the audit service:\n%s", logs)
	}

	// Two administrators push a skill of the same name, each in its own
	// tenant; the curator pushes to the library.
	for _, p := range []struct{ tenant, name, user string }{
		{"acme", "report", "acme-admin@ACME"},
		{"globex", "report", "globex-admin@GLOBEX"},
		{"library", "shared-style", "curator@LIBRARY"},
	} {
		code, out, stderr := as(p.tenant, "skills", "push", skillDir(t, p.name, "Written by "+p.tenant+"."))
		if code != exitOK || !strings.Contains(stderr, "audit: 1 write recorded as "+p.user) {
			t.Fatalf("%s push: exit %d\n%s%s", p.tenant, code, out, stderr)
		}
	}
	code, out, stderr := as("acme", "skills", "push", skillDir(t, "report", "Written by acme, again."), "--draft")
	if code != exitOK || !strings.Contains(stderr, "recorded as acme-admin@ACME") {
		t.Fatalf("acme draft: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := as("acme", "skills", "release", "report", "2", "--canary", "10%"); code != exitOK || !strings.Contains(stderr, "recorded as acme-admin@ACME") {
		t.Fatalf("acme release: exit %d\n%s%s", code, out, stderr)
	}

	// A revision written straight into the store, unclaimed.
	pushAs(t, ctx, natsURL, "acme-admin", pw["acme-admin"], "SKILLS", skillDir(t, "report", "Written without the command."))

	// A forged identity: the admin writes a Nats-Request-Info header of
	// globex's; the server replaces it, and the record names acme-admin.
	nc, err := nats.Connect(userURL(t, natsURL, "acme-admin", pw["acme-admin"]))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	forged := nats.NewMsg(audit.RecordSubject)
	forged.Header.Set("Nats-Request-Info", `{"acc":"GLOBEX","user":"globex-admin"}`)
	forged.Data, _ = json.Marshal(audit.Claim{Op: audit.OpPush, Store: audit.StoreTenant, Key: "global.report", Name: "report", Digest: strings.Repeat("0", 64)})
	m, err := nc.RequestMsgWithContext(ctx, forged)
	if err != nil {
		t.Fatal(err)
	}
	// The newest revision's digest is not all zeros: refused, and the
	// refusal is about the digest, not the identity.
	if !strings.Contains(string(m.Data), "has digest") {
		t.Errorf("a claim with a wrong digest: %s", m.Data)
	}
	forged.Data, _ = json.Marshal(audit.Claim{Op: audit.OpPush, Store: audit.StoreTenant, Key: "global.report", Name: "report", Digest: newestDigest(t, ctx, natsURL, pw)})
	if m, err = nc.RequestMsgWithContext(ctx, forged); err != nil {
		t.Fatal(err)
	}
	var ans audit.Answer
	if err := json.Unmarshal(m.Data, &ans); err != nil || ans.Record == nil || ans.Record.Who() != "acme-admin@ACME" {
		t.Fatalf("a forged header: %s (%v)", m.Data, err)
	}
	// Bad claims: every one refused with a reason, none recorded.
	for claim, want := range map[string]string{
		`{"op":"push","store":"tenant","key":"global.report","name":"report","revision":999999,"digest":"` + strings.Repeat("a", 64) + `"}`: "no revision 999999",
		`{"op":"push","store":"library","key":"global.shared-style","name":"shared-style","digest":"` + strings.Repeat("a", 64) + `"}`:      "does not write the library",
		`{"op":"frob","store":"tenant","key":"global.report","name":"report"}`:                                                              "want push, remove",
		`{"op":"release","store":"tenant","key":"global.report\u0000","name":"report"}`:                                                     "not an index key",
		`not json`: "not JSON",
		`{"op":"remove","store":"tenant","key":"global.report","name":"report"}`: "not a removal",
	} {
		m, err := nc.RequestWithContext(ctx, audit.RecordSubject, []byte(claim))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(m.Data), want) {
			t.Errorf("claim %s: answered %s, want %q", claim, m.Data, want)
		}
	}

	code, out, stderr = as("acme", "skills", "history", "report")
	if code != exitOK {
		t.Fatalf("acme history: exit %d\n%s%s", code, out, stderr)
	}
	t.Logf("acme's history:\n%s", out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	checks := []*regexp.Regexp{
		regexp.MustCompile(`^rev 1 \w{12} \S+ store revision \d+ by acme-admin@ACME at \S+$`),
		regexp.MustCompile(`^rev 2 \w{12} \S+ store revision \d+ by acme-admin@ACME at \S+$`),
		// The unclaimed revision, then claimed by the forged request: the
		// server's name, not the header's.
		regexp.MustCompile(`^rev 3 \w{12} \S+ store revision \d+ by acme-admin@ACME at \S+$`),
		regexp.MustCompile(`^release release\.global\.report by acme-admin@ACME at \S+ store revision \d+: skills release report 2 --canary 10%$`),
	}
	if len(lines) != len(checks) {
		t.Fatalf("acme history: %d lines, want %d:\n%s", len(lines), len(checks), out)
	}
	for i, re := range checks {
		if !re.MatchString(lines[i]) {
			t.Errorf("acme history line %d: %q, want %s", i+1, lines[i], re)
		}
	}
	if strings.Contains(out, "GLOBEX") || strings.Contains(out, "globex") {
		t.Errorf("acme's history shows globex:\n%s", out)
	}

	code, out, _ = as("globex", "skills", "history", "report")
	if code != exitOK || !regexp.MustCompile(`(?m)^rev 1 \w{12} \S+ store revision \d+ by globex-admin@GLOBEX at \S+$`).MatchString(out) ||
		strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Errorf("globex history: exit %d\n%s", code, out)
	}
	code, out, _ = as("library", "skills", "history", "shared-style")
	if code != exitOK || !strings.Contains(out, "by curator@LIBRARY") {
		t.Errorf("library history: exit %d\n%s", code, out)
	}

	// An unclaimed revision shows as such.
	pushAs(t, ctx, natsURL, "globex-admin", pw["globex-admin"], "SKILLS", skillDir(t, "report", "Globex, unclaimed."))
	code, out, _ = as("globex", "skills", "history", "report")
	if code != exitOK || !regexp.MustCompile(`(?m)^rev 2 \w{12} \S+ store revision \d+ not audited$`).MatchString(out) {
		t.Errorf("globex history after an unclaimed push: exit %d\n%s", code, out)
	}

	// The key that signed a revision is shown beside who pushed it.
	seedFile := filepath.Join(t.TempDir(), "acme.seed")
	if code, out, stderr := runMain(t, "skills", "keygen", "--out", seedFile); code != exitOK {
		t.Fatalf("keygen: exit %d\n%s%s", code, out, stderr)
	}
	if code, out, stderr := as("acme", "skills", "push", skillDir(t, "signed-one", "Signed."), "--sign", seedFile); code != exitOK {
		t.Fatalf("push --sign: exit %d\n%s%s", code, out, stderr)
	}
	code, out, _ = as("acme", "skills", "history", "signed-one")
	if code != exitOK || !regexp.MustCompile(`(?m)^rev 1 \w{12} \S+ store revision \d+ signed N[A-Z2-7]{55} by acme-admin@ACME at \S+$`).MatchString(out) {
		t.Errorf("history of a signed push: exit %d\n%s", code, out)
	}

	// A trust change is audited too (the policy's own records).
	if code, out, stderr := as("globex", "skills", "revoke", "--digest", strings.Repeat("b", 64)); code != exitOK || !strings.Contains(stderr, "recorded as globex-admin@GLOBEX") {
		t.Errorf("revoke: exit %d\n%s%s", code, out, stderr)
	}
}

// newestDigest is the digest of acme's newest revision of report.
func newestDigest(t *testing.T, ctx context.Context, natsURL string, pw map[string]string) string {
	t.Helper()
	hs := storeHistory(t, ctx, natsURL, "acme-admin", pw["acme-admin"], "SKILLS", "report")
	return hs[len(hs)-1].Record.Digest
}
