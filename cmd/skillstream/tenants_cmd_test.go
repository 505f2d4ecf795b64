package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/processor"
	"github.com/skillstream/skillstream/providers/store"
)

// tenantsYAMLPath is the shipped tenants file as an absolute path, as an
// operator would pass it from anywhere.
func tenantsYAMLPath(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs(tenantsYAML)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// storeHistory is the index history of skill name in the global scope of
// the store buckets named bucket, read as user (none when it was never
// published there).
func storeHistory(t *testing.T, ctx context.Context, natsURL, user, password, bucket, name string) []store.Revision {
	t.Helper()
	pb := publisherAs(t, ctx, natsURL, user, password, bucket)
	h, err := pb.History(ctx, skillstore.Global, name)
	if errors.Is(err, catalog.ErrNotFound) {
		return nil
	}
	if err != nil {
		t.Fatalf("%s: history of %s in %s: %v", user, name, bucket, err)
	}
	return h
}

// lsNames are the skill names of `skills ls` output lines ("SCOPE NAME rev
// N DIGEST TIME").
func lsNames(out string) []string {
	var ns []string
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] != "SCOPE" { // not the header
			ns = append(ns, f[1])
		}
	}
	return ns
}

// TestTenantCommands: with the shipped tenants files, the commands other
// than serve act for the tenant --tenant names and for it only. The shipped
// file's credentials for acme (its processor's) cannot push; with acme's
// administrator's in their place a push lands in acme's store, where acme's
// workers and `skills ls` for acme find it and globex's do not. The
// library's reader credentials cannot push to the library while the
// curator can. usage and export read the named tenant's sessions only, and
// an exported session plays back in history.
func TestTenantCommands(t *testing.T) {
	natsURL, pw := tenantServer(t)
	yaml := tenantsYAMLPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	as := func(tenant string, args ...string) (int, string, string) {
		t.Helper()
		return runMain(t, append(args, "--nats-url", natsURL, "--tenants", yaml, "--tenant", tenant)...)
	}

	// Every command used below says in its help that it takes both flags.
	for _, cmd := range [][]string{{"skills", "push"}, {"skills", "ls"}, {"usage"}, {"export"}, {"history"}} {
		code, stdout, stderr := runMain(t, append(cmd, "--help")...)
		help := stdout + stderr
		if code != exitOK || !strings.Contains(help, "--tenants FILE") || !strings.Contains(help, "--tenant ") {
			t.Errorf("%q --help (exit %d) does not offer --tenants and --tenant:\n%s", cmd, code, help)
		}
	}

	pushAs(t, ctx, natsURL, "curator", pw["curator"], "LIBRARY", skillDir(t, "shared-style", "Apply the house writing style."))
	pushAs(t, ctx, natsURL, "globex-admin", pw["globex-admin"], "SKILLS", skillDir(t, "globex-billing", "Run Globex's billing."))
	startTenantServe(t, natsURL)

	// The shipped file gives acme's processor's credentials, which may not
	// write the store: a push with them is refused and leaves nothing.
	code, stdout, stderr := as("acme", "skills", "push", skillDir(t, "acme-deploy", "Deploy Acme's services."))
	t.Logf("skills push --tenant acme (acme-processor): exit %d\n%s%s", code, stdout, stderr)
	if code != exitFailure || !strings.Contains(stderr, "Permissions Violation for Publish to") || !strings.Contains(stderr, "$O.SKILLS.") ||
		!strings.Contains(stderr, "the NATS server refused it") {
		t.Errorf("skills push --tenant acme as acme-processor: exit %d, want %d and the refusal\nstdout:\n%s\nstderr:\n%s", code, exitFailure, stdout, stderr)
	}
	if h := storeHistory(t, ctx, natsURL, "acme-admin", pw["acme-admin"], "SKILLS", "acme-deploy"); len(h) != 0 {
		t.Errorf("acme's store holds %d revisions of acme-deploy after the processor's refused push", len(h))
	}

	// acme's administrator pushes with the administrators' file shipped
	// beside it.
	adminYAML, err := filepath.Abs("deploy/tenants-admin.yaml")
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = runMain(t, "skills", "push", skillDir(t, "acme-deploy", "Deploy Acme's services."),
		"--nats-url", natsURL, "--tenants", adminYAML, "--tenant", "acme")
	t.Logf("skills push --tenant acme (acme-admin): exit %d\n%s%s", code, stdout, stderr)
	if code != exitOK || !strings.Contains(stdout, "added acme-deploy rev ") || !strings.Contains(stdout, "store revision ") {
		t.Fatalf("skills push --tenant acme as acme-admin: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if h := storeHistory(t, ctx, natsURL, "acme-admin", pw["acme-admin"], "SKILLS", "acme-deploy"); len(h) != 1 {
		t.Errorf("acme's store holds %d revisions of acme-deploy after the push, want 1", len(h))
	}
	if h := storeHistory(t, ctx, natsURL, "globex-admin", pw["globex-admin"], "SKILLS", "acme-deploy"); len(h) != 0 {
		t.Errorf("globex's store holds %d revisions of acme-deploy, acme's skill", len(h))
	}

	code, stdout, stderr = as("acme", "skills", "ls")
	t.Logf("skills ls --tenant acme: exit %d\n%s%s", code, stdout, stderr)
	if got := lsNames(stdout); code != exitOK || !slices.Equal(got, []string{"acme-deploy"}) {
		t.Errorf("skills ls --tenant acme: exit %d, lists %v, want acme-deploy alone\n%s", code, got, stderr)
	}
	code, stdout, stderr = as("globex", "skills", "ls")
	t.Logf("skills ls --tenant globex: exit %d\n%s%s", code, stdout, stderr)
	if got := lsNames(stdout); code != exitOK || !slices.Equal(got, []string{"globex-billing"}) {
		t.Errorf("skills ls --tenant globex: exit %d, lists %v, want globex-billing alone\n%s", code, got, stderr)
	}
	code, stdout, stderr = as("library", "skills", "ls")
	t.Logf("skills ls --tenant library: exit %d\n%s%s", code, stdout, stderr)
	if got := lsNames(stdout); code != exitOK || !slices.Equal(got, []string{"shared-style"}) {
		t.Errorf("skills ls --tenant library: exit %d, lists %v, want shared-style alone\n%s", code, got, stderr)
	}

	// The workers: acme's catalog lists the pushed skill once serve's
	// store watch has it, globex's never does.
	acme := tenantWorker(t, natsURL, "acme-worker-1", pw["acme-worker-1"])
	globex := tenantWorker(t, natsURL, "globex-worker-1", pw["globex-worker-1"])
	tools := []events.Tool{client.SkillTool("skillstream")}
	acmeSID, globexSID := "acme-cmd-"+randomToken(t)[:8], "globex-cmd-"+randomToken(t)[:8]
	step := 0
	eventually(t, 30*time.Second, "acme's catalog lists acme-deploy", func() error {
		step++
		d, err := acme.PreStep(ctx, events.PreStep{Session: acmeSID, Step: strconv.Itoa(step), Tools: tools})
		if err != nil {
			return err
		}
		if got := names(d); !slices.Contains(got, "acme-deploy") || !slices.Contains(got, "shared-style") {
			return fmt.Errorf("acme's catalog lists %v (outcome %s)", got, d.Outcome)
		}
		return nil
	})
	d, err := globex.PreStep(ctx, events.PreStep{Session: globexSID, Step: "1", Tools: tools})
	if err != nil || d.Outcome != events.OutcomeAppended {
		t.Fatalf("globex's pre-step: %+v %v", d, err)
	}
	if got := names(d); slices.Contains(got, "acme-deploy") || !slices.Contains(got, "globex-billing") || !slices.Contains(got, "shared-style") {
		t.Errorf("globex's catalog lists %v: want globex-billing and shared-style, never acme-deploy", got)
	}
	// One load of each tenant's own skill, so that usage has something to
	// tell the tenants apart by.
	for _, w := range []struct {
		c          *client.Client
		sid, skill string
	}{{acme, acmeSID, "acme-deploy"}, {globex, globexSID, "globex-billing"}} {
		r, err := w.c.CallSkill(ctx, events.SkillCall{Session: w.sid, Call: "c1", Args: events.SkillArgs{Name: w.skill}})
		if err != nil || r.IsError || r.Value == nil || r.Value.Name != w.skill {
			t.Fatalf("%s loading %s: %+v %v", w.sid, w.skill, r, err)
		}
	}

	// The library's reader credentials cannot push to the library; the
	// curator can.
	code, stdout, stderr = as("library", "skills", "push", skillDir(t, "reader-push", "Pushed by the library's reader."))
	t.Logf("skills push --tenant library (library-reader): exit %d\n%s%s", code, stdout, stderr)
	if code == exitOK || !strings.Contains(strings.ToLower(stderr), "permission") {
		t.Errorf("skills push --tenant library as library-reader: exit %d, want a refusal naming permissions\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	if h := storeHistory(t, ctx, natsURL, "curator", pw["curator"], "LIBRARY", "reader-push"); len(h) != 0 {
		t.Errorf("the library holds %d revisions of the reader's push", len(h))
	}
	pushAs(t, ctx, natsURL, "curator", pw["curator"], "LIBRARY", skillDir(t, "curated", "Pushed by the curator."))
	code, stdout, stderr = as("library", "skills", "ls")
	if got := lsNames(stdout); code != exitOK || !slices.Equal(got, []string{"curated", "shared-style"}) {
		t.Errorf("skills ls --tenant library after the curator's push: exit %d, lists %v\n%s", code, got, stderr)
	}

	// usage reads the named tenant's sessions only.
	code, stdout, stderr = as("acme", "usage")
	t.Logf("usage --tenant acme: exit %d\n%s%s", code, stdout, stderr)
	if code != exitOK || !usageRow(stdout, "acme-deploy", 1, 1) || strings.Contains(stdout, "globex-billing") {
		t.Errorf("usage --tenant acme: exit %d, want one load of acme-deploy in one session and nothing of globex\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = as("globex", "usage")
	t.Logf("usage --tenant globex: exit %d\n%s%s", code, stdout, stderr)
	if code != exitOK || !usageRow(stdout, "globex-billing", 1, 1) || strings.Contains(stdout, "acme-deploy") {
		t.Errorf("usage --tenant globex: exit %d, want one load of globex-billing in one session and nothing of acme\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = as("globex", "usage", "--session", globexSID)
	if code != exitOK || !strings.Contains(stdout, ", session "+globexSID+": 2 records read") {
		t.Errorf("usage --tenant globex of its own session: exit %d, want its catalog and result\n%s\n%s", code, stdout, stderr)
	}
	code, stdout, stderr = as("acme", "usage", "--session", globexSID)
	t.Logf("usage --tenant acme --session %s: exit %d\n%s%s", globexSID, code, stdout, stderr)
	if code != exitOK || !strings.Contains(stdout, ", session "+globexSID+": 0 records read") {
		t.Errorf("usage --tenant acme of globex's session: exit %d, want no records\n%s\n%s", code, stdout, stderr)
	}

	// export: acme's session for acme; for globex there is no such session.
	out := filepath.Join(t.TempDir(), "acme.jsonl")
	code, stdout, stderr = as("acme", "export", "--session", acmeSID, "--out", out)
	t.Logf("export --tenant acme: exit %d\n%s%s", code, stdout, stderr)
	if code != exitOK || !strings.Contains(stderr, "of session "+acmeSID+" to "+out) {
		t.Fatalf("export --tenant acme --session %s: exit %d\n%s\n%s", acmeSID, code, stdout, stderr)
	}
	// The recording: a header naming the session, then its events, every
	// one on the session's subjects (the trigger, the catalog, the skill
	// call and its result), then the end, which counts them.
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	var header struct {
		Format, Session, Stream string
	}
	if err := json.Unmarshal([]byte(lines[0]), &header); err != nil || header.Format != "skillstream-recording" ||
		header.Session != acmeSID || header.Stream != "SESSIONS" {
		t.Errorf("the export's header: %+v %v\n%s", header, err, lines[0])
	}
	var subjects []string
	var end struct {
		Type   string
		Events int
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &end); err != nil || end.Type != "end" || end.Events != len(lines)-2 {
		t.Errorf("the export's last line: %+v %v, want the end with %d events", end, err, len(lines)-2)
	}
	for _, line := range lines[1 : len(lines)-1] {
		var ev struct{ Type, Subject string }
		if err := json.Unmarshal([]byte(line), &ev); err != nil || ev.Type != "event" ||
			!strings.HasPrefix(ev.Subject, events.DefaultPrefix+"."+acmeSID+".") {
			t.Errorf("an exported event not of %s: %v\n%.300s", acmeSID, err, line)
		}
		subjects = append(subjects, ev.Subject)
	}
	if !strings.Contains(stderr, fmt.Sprintf("exported %d events ", len(subjects))) || len(subjects) != 4 {
		t.Errorf("the export holds the events %v, want acme's pre-step, catalog, skill call and result as reported:\n%s", subjects, stderr)
	}
	other := filepath.Join(t.TempDir(), "globex.jsonl")
	code, stdout, stderr = as("globex", "export", "--session", acmeSID, "--out", other)
	t.Logf("export --tenant globex of acme's session: exit %d\n%s%s", code, stdout, stderr)
	if code != exitFailure || !strings.Contains(stderr, "session "+acmeSID+" has no events in stream SESSIONS") {
		t.Errorf("export --tenant globex --session %s: exit %d, want %d and no such session\n%s\n%s", acmeSID, code, exitFailure, stdout, stderr)
	}
	if _, err := os.Stat(other); !os.IsNotExist(err) {
		t.Errorf("a failed export left %s behind: %v", other, err)
	}

	// history plays the recording back: acme's steps, with acme's skill
	// listed and loaded, never globex's.
	code, stdout, stderr = runMain(t, "history", out)
	t.Logf("history %s: exit %d\n%s%s", out, code, stdout, stderr)
	if code != exitOK || !strings.Contains(stdout, "step 1 (seq 1): catalog seq 2 (initial, step 1), 2 entries\n  added 2: acme-deploy, shared-style\n") || strings.Contains(stdout, "globex") {
		t.Errorf("history of acme's export: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// usageRow reports whether usage's table has a row for skill with loads
// loads in sessions sessions.
func usageRow(out, skill string, loads, sessions int) bool {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) >= 5 && f[0] == skill && f[1] == strconv.Itoa(loads) && f[4] == strconv.Itoa(sessions) {
			return true
		}
	}
	return false
}

// bearerTransport sends every request with a bearer token, as an MCP host
// configured with one does.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// mcpSkills connects an MCP host with token to endpoint and returns the
// skills it is offered: the names of the skill://NAME/SKILL.md resources,
// and the skill tool's description.
func mcpSkills(ctx context.Context, endpoint, token string) ([]string, string, error) {
	c := sdk.NewClient(&sdk.Implementation{Name: "tenant-host", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1, DisableStandaloneSSE: true,
		HTTPClient: &http.Client{Transport: bearerTransport{token}, Timeout: 10 * time.Second}}, nil)
	if err != nil {
		return nil, "", err
	}
	defer cs.Close()
	rl, err := cs.ListResources(ctx, nil)
	if err != nil {
		return nil, "", err
	}
	var skills []string
	for _, r := range rl.Resources {
		if name, ok := strings.CutSuffix(strings.TrimPrefix(r.URI, "skill://"), "/SKILL.md"); ok && name != r.URI {
			skills = append(skills, name)
		}
	}
	slices.Sort(skills)
	tl, err := cs.ListTools(ctx, nil)
	if err != nil {
		return nil, "", err
	}
	desc := ""
	for _, tool := range tl.Tools {
		if tool.Name == "skill" {
			desc = tool.Description
		}
	}
	return skills, desc, nil
}

// TestTenantMCP: serve --mcp-listen with the shipped tenants files serves
// each tenant's MCP hosts, told apart by their bearer tokens, their own
// tenant's skills and the library's, never the other tenant's; a request
// with no token or a token of no tenant is refused with 401; and a single
// token for every tenant is refused at start.
func TestTenantMCP(t *testing.T) {
	natsURL, pw := tenantServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	pushAs(t, ctx, natsURL, "curator", pw["curator"], "LIBRARY", skillDir(t, "shared-style", "Apply the house writing style."))
	pushAs(t, ctx, natsURL, "acme-admin", pw["acme-admin"], "SKILLS", skillDir(t, "acme-deploy", "Deploy Acme's services."))
	pushAs(t, ctx, natsURL, "globex-admin", pw["globex-admin"], "SKILLS", skillDir(t, "globex-billing", "Run Globex's billing."))
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	logs := startTenantServe(t, natsURL, "--mcp-listen", addr)
	endpoint := "http://" + addr + "/mcp"
	if !strings.Contains(logs.String(), " mcp="+endpoint+" ") {
		t.Errorf("the serving line does not name the MCP endpoint %s:\n%s", endpoint, logs)
	}
	acmeToken, globexToken := os.Getenv("ACME_MCP_TOKEN"), os.Getenv("GLOBEX_MCP_TOKEN")
	if acmeToken == "" || globexToken == "" || acmeToken == globexToken {
		t.Fatalf("tenantServer set the MCP tokens %q and %q: want two distinct ones", acmeToken, globexToken)
	}

	for _, h := range []struct {
		tenant, token, own, other string
	}{
		{"acme", acmeToken, "acme-deploy", "globex-billing"},
		{"globex", globexToken, "globex-billing", "acme-deploy"},
	} {
		want := []string{h.own, "shared-style"}
		slices.Sort(want)
		var desc string
		eventually(t, 30*time.Second, h.tenant+"'s MCP host offered its skills", func() error {
			got, d, err := mcpSkills(ctx, endpoint, h.token)
			if err != nil {
				return err
			}
			if !slices.Equal(got, want) {
				return fmt.Errorf("%s's host is offered the skills %v, want %v", h.tenant, got, want)
			}
			desc = d
			return nil
		})
		t.Logf("%s's MCP host is offered %v", h.tenant, want)
		if !strings.Contains(desc, "`"+h.own+"`") || !strings.Contains(desc, "`shared-style`") || strings.Contains(desc, h.other) {
			t.Errorf("%s's skill tool description: want %s and shared-style, never %s:\n%s", h.tenant, h.own, h.other, desc)
		}
	}

	// Without a token, or with one no tenant has, the endpoint answers 401
	// and serves nothing.
	post := func(token string) (int, string) {
		return mcpPost(endpoint, token, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`)
	}
	for _, tc := range []struct{ what, token string }{
		{"no token", ""},
		{"an unknown token", randomToken(t)},
		{"acme's token with a suffix", acmeToken + "x"},
	} {
		code, body := post(tc.token)
		if code != http.StatusUnauthorized || strings.Contains(body, "skill") {
			t.Errorf("%s: HTTP %d %q, want 401 and nothing served", tc.what, code, body)
		}
		if _, _, err := mcpSkills(ctx, endpoint, tc.token); err == nil {
			t.Errorf("%s: an MCP host connected", tc.what)
		}
	}
	// A valid token does answer the same request (the 401s above are the
	// token's doing).
	if code, body := post(acmeToken); code != http.StatusOK {
		t.Errorf("acme's token on the same request: HTTP %d %q", code, body)
	}

	// One token for every tenant is refused, whether given as the flag
	// serve has (--mcp-token-file) or as a --mcp-token that does not exist.
	yaml := tenantsYAMLPath(t)
	tokenFile := writeFile(t, t.TempDir(), "token", "one-token-for-all\n")
	other := "127.0.0.1:" + strconv.Itoa(freePort(t))
	for _, tc := range []struct {
		flag []string
		want string
	}{
		{[]string{"--mcp-token", "X"}, "flag provided but not defined: -mcp-token"},
		{[]string{"--mcp-token-file", tokenFile}, "--mcp-token-file is not used with --tenants"},
	} {
		args := append([]string{"serve", "--nats-url", natsURL, "--tenants", yaml, "--no-bundled", "--user-skills-dir=",
			"--metrics-listen", quietAddr(t), "--mcp-listen", other}, tc.flag...)
		code, _, stderr := runMain(t, args...)
		t.Logf("serve --tenants with %q: exit %d\n%s", tc.flag, code, stderr)
		if code != exitUsage || !strings.Contains(stderr, tc.want) || strings.Contains(stderr, "serving") {
			t.Errorf("serve --tenants with %q: exit %d, want %d and %q\n%s", tc.flag, code, exitUsage, tc.want, stderr)
		}
	}
}

// TestTenantReplySubjects: acme's worker names, as the reply subject of
// valid triggers and requests (and as the Reply-Inbox the processor answers
// on), acme's own store index, the library's index and globex's worker's
// inbox. JetStream's acknowledgements and the processor's answers go
// nowhere they could be stored or read: acme's store and the library still
// hold the one revision pushed, and globex's worker receives nothing.
func TestTenantReplySubjects(t *testing.T) {
	natsURL, pw := tenantServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	pushAs(t, ctx, natsURL, "curator", pw["curator"], "LIBRARY", skillDir(t, "shared-style", "Apply the house writing style."))
	pushAs(t, ctx, natsURL, "acme-admin", pw["acme-admin"], "SKILLS", skillDir(t, "acme-deploy", "Deploy Acme's services."))
	logs := startTenantServe(t, natsURL)

	// globex's worker listens on every inbox it may have.
	var (
		mu  sync.Mutex
		got []string
	)
	gnc, err := nats.Connect(userURL(t, natsURL, "globex-worker-1", pw["globex-worker-1"]), nats.CustomInboxPrefix("_INBOX.globex-worker-1"))
	if err != nil {
		t.Fatal(err)
	}
	defer gnc.Close()
	gviol := &violations{}
	gnc.SetErrorHandler(gviol.handler)
	if _, err := gnc.Subscribe("_INBOX.globex-worker-1.>", func(m *nats.Msg) {
		mu.Lock()
		got = append(got, m.Subject)
		mu.Unlock()
	}); err != nil {
		t.Fatal(err)
	}
	if err := gnc.Flush(); err != nil {
		t.Fatal(err)
	}

	// acme's worker: its own inbox takes the answers of the triggers whose
	// Msg reply subject is the probe, which tells when each was handled.
	anc, err := nats.Connect(userURL(t, natsURL, "acme-worker-1", pw["acme-worker-1"]), nats.CustomInboxPrefix("_INBOX.acme-worker-1"))
	if err != nil {
		t.Fatal(err)
	}
	defer anc.Close()
	aviol := &violations{}
	anc.SetErrorHandler(aviol.handler)
	own := "_INBOX.acme-worker-1.answers"
	answers, err := anc.SubscribeSync(own)
	if err != nil {
		t.Fatal(err)
	}
	if err := anc.Flush(); err != nil {
		t.Fatal(err)
	}

	sid := "acme-probe-" + randomToken(t)[:8]
	trigger := func(step, replyInbox, reply string) *nats.Msg {
		ps := events.PreStep{V: 1, Session: sid, Step: step, Tools: []events.Tool{client.SkillTool("skillstream")}}
		data, err := events.Encode(events.Msgpack, ps)
		if err != nil {
			t.Fatal(err)
		}
		return &nats.Msg{Subject: events.Subject(events.DefaultPrefix, sid, events.KindPreStep), Reply: reply, Data: data,
			Header: nats.Header{
				events.HeaderContentType: {events.Msgpack.ContentType()},
				events.HeaderReplyInbox:  {replyInbox},
				events.HeaderMsgID:       {sid + ":" + step},
			}}
	}
	// A trigger's reply subject does carry JetStream's acknowledgement back
	// to the worker: aimed at its own inbox, the acknowledgement arrives.
	acks, err := anc.SubscribeSync("_INBOX.acme-worker-1.ack")
	if err != nil {
		t.Fatal(err)
	}
	if err := anc.PublishMsg(trigger("ack", own, "_INBOX.acme-worker-1.ack")); err != nil {
		t.Fatal(err)
	}
	var pa struct {
		Stream string `json:"stream"`
		Seq    uint64 `json:"seq"`
	}
	if m, err := acks.NextMsg(10 * time.Second); err != nil || json.Unmarshal(m.Data, &pa) != nil || pa.Stream != processor.DefaultStream || pa.Seq == 0 {
		t.Fatalf("the acknowledgement of a trigger on acme's worker's own inbox: %+v %v", pa, err)
	}
	if m, err := answers.NextMsg(30 * time.Second); err != nil {
		t.Fatalf("the answer to the acknowledged trigger: %v", err)
	} else if d, err := events.DecodeDecision(events.Msgpack, m.Data); err != nil || d.Step != "ack" {
		t.Fatalf("the answer to the acknowledged trigger: %+v %v", d, err)
	}

	targets := []string{"$KV.SKILLS.global.acme-deploy", "$KV.LIBRARY.global.shared-style", "_INBOX.globex-worker-1.x"}
	probes, answered := 0, 0
	for i, target := range targets {
		// The trigger's reply subject (where JetStream acknowledges it),
		// its answer on acme's worker's own inbox.
		if err := anc.PublishMsg(trigger(fmt.Sprint("r", i), own, target)); err != nil {
			t.Fatal(err)
		}
		probes++
		answered++
		t.Logf("probe %d: pre-step with reply subject %s", probes, target)
		// The processor's answer aimed at the target (Reply-Inbox), the
		// acknowledgement at the target too.
		if err := anc.PublishMsg(trigger(fmt.Sprint("h", i), target, target)); err != nil {
			t.Fatal(err)
		}
		probes++
		t.Logf("probe %d: pre-step with Reply-Inbox and reply subject %s", probes, target)
		// A request to the tool definition service answered there.
		if err := anc.PublishRequest(events.ToolDefinitionSubject, target, nil); err != nil {
			t.Fatal(err)
		}
		probes++
		t.Logf("probe %d: %s request with reply subject %s", probes, events.ToolDefinitionSubject, target)
	}
	if err := anc.Flush(); err != nil {
		t.Fatal(err)
	}
	for range answered {
		m, err := answers.NextMsg(30 * time.Second)
		if err != nil {
			t.Fatalf("acme's worker's answers to its probing triggers: %v", err)
		}
		d, err := events.DecodeDecision(events.Msgpack, m.Data)
		if err != nil || d.Session != sid || !strings.HasPrefix(d.Step, "r") {
			t.Errorf("an answer on acme's worker's inbox: %+v %v", d, err)
		}
	}

	// Every trigger of the probe session is in acme's stream and handled:
	// acme's consumer holds nothing pending.
	admin, err := nats.Connect(userURL(t, natsURL, "acme-admin", pw["acme-admin"]))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ajs, err := jetstream.New(admin)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "acme's probing triggers handled", func() error {
		st, err := ajs.Stream(ctx, processor.DefaultStream)
		if err != nil {
			return err
		}
		info, err := st.Info(ctx, jetstream.WithSubjectFilter(events.Subject(events.DefaultPrefix, sid, events.KindPreStep)))
		if err != nil {
			return err
		}
		if n := info.State.Subjects[events.Subject(events.DefaultPrefix, sid, events.KindPreStep)]; n != uint64(1+2*len(targets)) {
			return fmt.Errorf("acme's stream holds %d of the %d probing triggers", n, 1+2*len(targets))
		}
		cons, err := st.Consumer(ctx, processor.DefaultConsumer)
		if err != nil {
			return err
		}
		ci, err := cons.Info(ctx)
		if err != nil {
			return err
		}
		if ci.NumPending != 0 || ci.NumAckPending != 0 {
			return fmt.Errorf("acme's consumer: %d pending, %d unacknowledged", ci.NumPending, ci.NumAckPending)
		}
		return nil
	})
	// The tool definition requests were answered too by now: one more
	// request, on acme's worker's own inbox, comes back.
	if m, err := anc.Request(events.ToolDefinitionSubject, nil, 10*time.Second); err != nil || len(m.Data) == 0 {
		t.Errorf("acme's worker's own tool definition request: %v", err)
	}

	if h := storeHistory(t, ctx, natsURL, "acme-admin", pw["acme-admin"], "SKILLS", "acme-deploy"); len(h) != 1 {
		t.Errorf("acme's store holds %d revisions of acme-deploy after the probes, want the 1 pushed", len(h))
	}
	if h := storeHistory(t, ctx, natsURL, "curator", pw["curator"], "LIBRARY", "shared-style"); len(h) != 1 {
		t.Errorf("the library holds %d revisions of shared-style after the probes, want the 1 pushed", len(h))
	}
	if err := gnc.Flush(); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(got) != 0 {
		t.Errorf("globex's worker received %d messages on its inbox: %q", len(got), got)
	}
	mu.Unlock()
	for _, v := range []*violations{aviol, gviol} {
		v.mu.Lock()
		if len(v.errs) > 0 {
			t.Logf("refused by the server: %q", v.errs)
		}
		v.mu.Unlock()
	}
	// The processor refused to answer on the $-subjects named as
	// Reply-Inbox; the answer on globex's worker's inbox name was published
	// in acme's account, where globex's worker cannot be.
	for _, target := range targets[:2] {
		if !strings.Contains(logs.String(), `reason=inbox err="header Reply-Inbox: reply inbox not allowed: \"`+target+`\" is a server or JetStream API subject"`) {
			t.Errorf("serve did not refuse the Reply-Inbox %s:\n%s", target, logs)
		}
	}
	if n := strings.Count(logs.String(), "trigger rejected"); n != 2 {
		t.Errorf("serve rejected %d triggers, want the 2 naming $-subjects:\n%s", n, logs)
	}
	t.Logf("%d probes of acme's worker's reply subjects, none reached a store or globex", probes)
}
