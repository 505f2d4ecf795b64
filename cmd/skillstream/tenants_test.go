package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/providers/store"
)

// The multi-tenant configuration shipped beside the single-tenant one; the
// tests below load both files as they are.
const (
	tenantsConf = "deploy/tenants.conf"
	tenantsYAML = "deploy/tenants.yaml"
)

// tenantUsers are the users of tenantsConf and the environment variables
// their passwords come from.
var tenantUsers = map[string]string{
	"auditor":          "SKILLSTREAM_AUDITOR_PASSWORD",
	"library-reader":   "SKILLSTREAM_LIBRARY_READER_PASSWORD",
	"curator":          "SKILLSTREAM_CURATOR_PASSWORD",
	"acme-processor":   "ACME_PROCESSOR_PASSWORD",
	"acme-admin":       "ACME_ADMIN_PASSWORD",
	"acme-worker-1":    "ACME_WORKER_1_PASSWORD",
	"acme-worker-2":    "ACME_WORKER_2_PASSWORD",
	"globex-processor": "GLOBEX_PROCESSOR_PASSWORD",
	"globex-admin":     "GLOBEX_ADMIN_PASSWORD",
	"globex-worker-1":  "GLOBEX_WORKER_1_PASSWORD",
	"globex-worker-2":  "GLOBEX_WORKER_2_PASSWORD",
}

// confServer starts a real NATS server from the configuration file conf,
// with only its store folder and port replaced.
func confServer(t testing.TB, conf string) string {
	t.Helper()
	opts, err := server.ProcessConfigFile(conf)
	if err != nil {
		t.Fatalf("%s: %v", conf, err)
	}
	opts.StoreDir = t.TempDir()
	opts.Host, opts.Port = "127.0.0.1", server.RANDOM_PORT
	opts.NoLog, opts.NoSigs = true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	if !srv.ReadyForConnections(30 * time.Second) {
		t.Fatal("NATS server not ready")
	}
	return srv.ClientURL()
}

// tenantServer sets every user's password in the environment and starts
// tenantsConf; it returns the URL and the passwords.
func tenantServer(t testing.TB) (string, map[string]string) {
	t.Helper()
	pw := setPasswords(t, tenantUsers)
	t.Setenv("ACME_MCP_TOKEN", randomToken(t))
	t.Setenv("GLOBEX_MCP_TOKEN", randomToken(t))
	return confServer(t, tenantsConf), pw
}

// adminRun runs a command as a tenant's administrator of the shipped
// administrators' file (--tenant library: the curator) against natsURL.
func adminRun(t testing.TB, natsURL string) func(tenant string, args ...string) (int, string, string) {
	t.Helper()
	adminYAML, err := filepath.Abs("deploy/tenants-admin.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return func(tenant string, args ...string) (int, string, string) {
		t.Helper()
		return runMain(t, append(args, "--nats-url", natsURL, "--tenants", adminYAML, "--tenant", tenant)...)
	}
}

// publisherAs is a publisher of the store buckets named bucket (index and
// objects), connected as user until the test ends.
func publisherAs(t testing.TB, ctx context.Context, natsURL, user, password, bucket string) *store.Publisher {
	t.Helper()
	nc, err := nats.Connect(userURL(t, natsURL, user, password))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	pb, err := store.NewPublisher(ctx, js, store.Config{Bucket: bucket, Objects: bucket})
	if err != nil {
		t.Fatalf("%s: publisher: %v", user, err)
	}
	return pb
}

// pushAs publishes the skill dir (a folder with SKILL.md) as user into
// the store buckets named bucket.
func pushAs(t testing.TB, ctx context.Context, natsURL, user, password, bucket, dir string) {
	t.Helper()
	pb := publisherAs(t, ctx, natsURL, user, password, bucket)
	local, err := store.ReadSkill(dir, store.Config{Bucket: bucket, Objects: bucket})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pb.Push(ctx, skillstore.Global, []store.Local{local}, false); err != nil {
		t.Fatalf("%s: push: %v", user, err)
	}
}

// tenantWorker connects user, a worker of the shipped configuration, with
// its own inbox prefix (the only inboxes it may subscribe to), until the
// test ends.
func tenantWorker(t testing.TB, natsURL, user, password string) *client.Client {
	t.Helper()
	c, err := client.Connect(userURL(t, natsURL, user, password), client.WithInboxPrefix("_INBOX."+user),
		client.WithRetryInterval(time.Second))
	if err != nil {
		t.Fatalf("%s: %v", user, err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// skillDir writes a skill called name with description desc and one
// script, and returns its folder.
func skillDir(t testing.TB, name, desc string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), name)
	writeFile(t, dir, "SKILL.md", skillMD("Run scripts/run.sh.", "name: "+name, "description: "+desc))
	writeFile(t, dir, "scripts/run.sh", "#!/bin/sh\necho "+name+"\n")
	return dir
}

// startTenantServe runs serve with the shipped tenants file against
// natsURL until the test ends, and waits until it serves.
func startTenantServe(t testing.TB, natsURL string, extra ...string) *syncBuffer {
	t.Helper()
	yaml, err := filepath.Abs(tenantsYAML)
	if err != nil {
		t.Fatal(err)
	}
	args := append([]string{"serve", "--nats-url", natsURL, "--tenants", yaml,
		"--no-bundled", "--user-skills-dir=", "--workers", "4", "--metrics-listen", quietAddr(t)}, extra...)
	return runPermittedServe(t, args, "skillstream serving")
}

// runPermittedServe runs Main(args), a serve under a permission file,
// until the test ends, and waits until its log holds ready. At the end it
// must exit cleanly, the server having refused it nothing.
func runPermittedServe(t testing.TB, args []string, ready string) *syncBuffer {
	t.Helper()
	logs := &syncBuffer{}
	sctx, scancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() { done <- Main(sctx, args, io.Discard, logs) }()
	t.Cleanup(func() {
		scancel()
		if code := <-done; code != exitOK {
			t.Errorf("serve exit %d:\n%s", code, logs)
		}
		if strings.Contains(logs.String(), "ermissions") {
			t.Errorf("serve was refused something by the permission file:\n%s", logs)
		}
	})
	eventually(t, 30*time.Second, "serve "+ready, func() error {
		if !strings.Contains(logs.String(), ready) {
			return fmt.Errorf("not yet %q:\n%s", ready, logs)
		}
		return nil
	})
	return logs
}

// names are the catalog entries' names of d.
func names(d events.Decision) []string {
	if d.Catalog == nil {
		return nil
	}
	var out []string
	for _, e := range d.Catalog.Source.Entries {
		out = append(out, e.Name)
	}
	return out
}

// TestTenantsIsolated: with the shipped multi-tenant configuration loaded
// as it is and one serve for both tenants, each tenant's workers get their
// own store's skills and the shared library's, never the other tenant's,
// and load a library skill's files; one tenant's worker cannot reach the
// other tenant's stream, store, inboxes or sessions, nor write the library;
// a tenant's administrator cannot write the library either.
func TestTenantsIsolated(t *testing.T) {
	natsURL, pw := tenantServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	pushAs(t, ctx, natsURL, "curator", pw["curator"], "LIBRARY", skillDir(t, "shared-style", "Apply the house writing style."))
	pushAs(t, ctx, natsURL, "acme-admin", pw["acme-admin"], "SKILLS", skillDir(t, "acme-deploy", "Deploy Acme's services."))
	pushAs(t, ctx, natsURL, "globex-admin", pw["globex-admin"], "SKILLS", skillDir(t, "globex-billing", "Run Globex's billing."))
	logs := startTenantServe(t, natsURL)
	if !strings.Contains(logs.String(), "tenant serving") {
		t.Errorf("no tenant announced as serving:\n%s", logs)
	}

	worker := func(user string) (*client.Client, *violations) {
		t.Helper()
		v := &violations{}
		c := tenantWorker(t, natsURL, user, pw[user])
		c.Conn().SetErrorHandler(v.handler)
		return c, v
	}
	acme, acmeViol := worker("acme-worker-1")
	acme2, acme2Viol := worker("acme-worker-2")
	globex, _ := worker("globex-worker-1")
	globex2, _ := worker("globex-worker-2")
	tools := []events.Tool{client.SkillTool("skillstream")}
	for _, w := range []struct {
		c          *client.Client
		sid        string
		want, none string
	}{
		{acme, "acme-s1", "acme-deploy", "globex-billing"},
		{globex, "globex-s1", "globex-billing", "acme-deploy"},
	} {
		d, err := w.c.PreStep(ctx, events.PreStep{Session: w.sid, Step: "1", Tools: tools})
		if err != nil || d.Outcome != events.OutcomeAppended {
			t.Fatalf("%s: %+v %v", w.sid, d, err)
		}
		got := names(d)
		if !slices.Contains(got, w.want) || !slices.Contains(got, "shared-style") || slices.Contains(got, w.none) {
			t.Errorf("%s's catalog lists %v: want %s and shared-style, never %s", w.sid, got, w.want, w.none)
		}
		// Same session id in the other tenant: another session altogether.
	}
	// The second worker of each tenant: its own sessions, its tenant's
	// skills, and not the other worker's answers.
	for _, w := range []struct {
		c         *client.Client
		sid, want string
	}{{acme2, "acme-s2", "acme-deploy"}, {globex2, "globex-s2", "globex-billing"}} {
		if d, err := w.c.PreStep(ctx, events.PreStep{Session: w.sid, Step: "1", Tools: tools}); err != nil || !slices.Contains(names(d), w.want) {
			t.Errorf("%s: %+v %v", w.sid, d, err)
		}
	}
	if _, err := acme2.Conn().Subscribe("_INBOX.acme-worker-1.>", func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	acme2Viol.wait(t, "acme-worker-2 subscribing to acme-worker-1's inbox", "_INBOX.acme-worker-1.>")

	// The same session id in both tenants is two sessions.
	if d, err := globex.PreStep(ctx, events.PreStep{Session: "acme-s1", Step: "1", Tools: tools}); err != nil ||
		d.Outcome != events.OutcomeAppended || slices.Contains(names(d), "acme-deploy") {
		t.Errorf("globex's session acme-s1: %+v %v", d, err)
	}

	// The operator's preview for a tenant shows the same: its skills and
	// the library's, named as such.
	yaml, _ := filepath.Abs(tenantsYAML)
	code, out, stderr := runMain(t, "catalog", "--json", "--nats-url", natsURL, "--tenants", yaml, "--tenant", "acme",
		"--no-bundled", "--user-skills-dir=")
	if code != exitOK || !strings.Contains(out, `"acme-deploy"`) || !strings.Contains(out, `"library"`) || strings.Contains(out, "globex-billing") {
		t.Errorf("catalog --json for acme: exit %d\n%s%s", code, out, stderr)
	}

	// Each tenant's processor metrics carry its name.
	body := []byte(servedMetrics(t, logs.String()))
	for _, tenant := range []string{"acme", "globex"} {
		if !strings.Contains(string(body), `skillstream_triggers_total{kind="pre-step",outcome="appended",tenant="`+tenant+`"}`) {
			t.Errorf("metrics lack tenant %s's pre-steps:\n%.2000s", tenant, body)
		}
	}

	// A library skill, loaded with its files by acme's worker.
	res := t.TempDir()
	r, err := acme.CallSkill(ctx, events.SkillCall{Session: "acme-s1", Call: "c1", ResourceDir: res, Args: events.SkillArgs{Name: "shared-style"}})
	if err != nil || r.IsError || r.Value == nil || r.Value.Provider != client.LibraryProvider {
		t.Fatalf("library skill: %+v %v", r, err)
	}
	script := filepath.Join(r.Value.ResourceBase.Path, "scripts", "run.sh")
	if b, err := os.ReadFile(script); err != nil || !strings.Contains(string(b), "shared-style") {
		t.Errorf("library skill's script %s: %q %v", script, b, err)
	}
	// The other tenant's skill is unknown to acme.
	if r, err := acme.CallSkill(ctx, events.SkillCall{Session: "acme-s1", Call: "c2", Args: events.SkillArgs{Name: "globex-billing"}}); err != nil ||
		!r.IsError || r.Error == nil || r.Error.Code != events.CodeUnknown {
		t.Errorf("acme calling globex's skill: %+v %v", r, err)
	}

	// Probes as acme's worker: each refused by the server.
	probes := 0
	nc := acme.Conn()
	for _, subj := range []string{
		"$JS.API.STREAM.INFO.SESSIONS",              // read a stream (its own tenant's, let alone globex's)
		"$JS.API.STREAM.MSG.GET.SESSIONS",           // read messages
		"$JS.API.CONSUMER.CREATE.SESSIONS",          // create a consumer
		"$JS.API.DIRECT.GET.SESSIONS.>",             // direct reads of sessions
		"$JS.API.DIRECT.GET.KV_SKILLS.$KV.SKILLS.>", // list or read a store's index
		"$KV.LIBRARY.global.shared-style",           // write the library
		"$KV.SKILLS.global.acme-deploy",             // write its own tenant's store
		"ev.acme-s1.catalog.append",                 // plant an output
		"globex.ev.globex-s1.agent.pre-step",        // name another tenant
		"_INBOX.globex-worker-1.x",                  // answer another worker
	} {
		if err := nc.Publish(subj, []byte("x")); err != nil {
			t.Fatalf("publish %s: %v", subj, err)
		}
		acmeViol.wait(t, "publish "+subj, strings.TrimSuffix(subj, ".>"))
		probes++
	}
	for _, subj := range []string{"_INBOX.globex-worker-1.>", "_INBOX.>", "ev.>", "_SKILLSTREAM_INBOX.>", ">"} {
		if _, err := nc.Subscribe(subj, func(*nats.Msg) {}); err != nil {
			t.Fatalf("subscribe %s: %v", subj, err)
		}
		acmeViol.wait(t, "subscribe "+subj, subj)
		probes++
	}
	// acme's worker appending a trigger under globex's session id reaches
	// acme's own stream only: globex's session is untouched.
	if _, err := acme.PreStep(ctx, events.PreStep{Session: "globex-s1", Step: "9", Tools: tools}); err != nil {
		t.Fatal(err)
	}
	gadmin, err := nats.Connect(userURL(t, natsURL, "globex-admin", pw["globex-admin"]))
	if err != nil {
		t.Fatal(err)
	}
	defer gadmin.Close()
	gjs, _ := jetstream.New(gadmin)
	st, err := gjs.Stream(ctx, "SESSIONS")
	if err != nil {
		t.Fatal(err)
	}
	if m, err := st.GetLastMsgForSubject(ctx, "ev.globex-s1.agent.pre-step"); err != nil || !strings.Contains(string(m.Data), "1") ||
		strings.Contains(string(m.Data), `"9"`) {
		t.Errorf("globex's session globex-s1 got acme's trigger: %v", err)
	}
	// A tenant's administrator cannot write the library (another account).
	aadmin, err := nats.Connect(userURL(t, natsURL, "acme-admin", pw["acme-admin"]))
	if err != nil {
		t.Fatal(err)
	}
	defer aadmin.Close()
	ajs, _ := jetstream.New(aadmin)
	if _, err := ajs.KeyValue(ctx, "LIBRARY"); err == nil {
		t.Error("acme's administrator finds the library's bucket in its account")
	}
	probes++
	probes++ // acme-worker-2 on acme-worker-1's inbox, above
	t.Logf("%d probes, all refused", probes)
}

// TestTenantsBadConfiguration: serve refuses to start, naming the tenant
// and why, for a tenants file naming credentials that do not work, two
// tenants in one account, and a tenant whose account has no JetStream.
func TestTenantsBadConfiguration(t *testing.T) {
	natsURL, _ := tenantServer(t)
	serveWith := func(yaml string) (int, string) {
		path := filepath.Join(t.TempDir(), "tenants.yaml")
		if err := os.WriteFile(path, []byte(yaml), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := runMain(t, "serve", "--nats-url", natsURL, "--tenants", path, "--no-bundled", "--user-skills-dir=")
		return code, stderr
	}
	t.Setenv("WRONG_PASSWORD", "not-the-password")
	for _, tc := range []struct {
		name, yaml string
		code       int
		want       string
	}{
		{"unset password", "tenants:\n  - name: acme\n    user: acme-processor\n    password_env: NO_SUCH_VARIABLE_SET\n",
			exitUsage, `not set in the environment: NO_SUCH_VARIABLE_SET (tenant acme's password_env)`},
		{"missing creds file", "tenants:\n  - name: acme\n    creds: /nonexistent/acme.creds\n",
			exitUsage, `tenant acme's credentials: open /nonexistent/acme.creds`},
		{"wrong password", "tenants:\n  - name: acme\n    user: acme-processor\n    password_env: WRONG_PASSWORD\n",
			exitFailure, "tenant acme: connect to"},
		{"one account twice", "tenants:\n  - name: acme\n    user: acme-processor\n    password_env: ACME_PROCESSOR_PASSWORD\n" +
			"  - name: acme-too\n    user: acme-admin\n    password_env: ACME_ADMIN_PASSWORD\n",
			exitFailure, "tenants acme and acme-too are both in account ACME"},
		{"duplicate name", "tenants:\n  - name: acme\n    user: a\n    password_env: WRONG_PASSWORD\n  - name: acme\n    user: b\n    password_env: WRONG_PASSWORD\n",
			exitUsage, `tenant "acme" is listed twice`},
		{"unknown key", "tenants:\n  - name: acme\n    usr: a\n", exitUsage, "field usr not found"},
	} {
		code, stderr := serveWith(tc.yaml)
		if code != tc.code || !strings.Contains(stderr, tc.want) {
			t.Errorf("%s: exit %d, want %d and %q:\n%s", tc.name, code, tc.code, tc.want, stderr)
		}
	}

	// An account without JetStream (its own small server: the shipped
	// file gives every tenant account JetStream).
	conf := filepath.Join(t.TempDir(), "nojs.conf")
	if err := os.WriteFile(conf, []byte(`
jetstream {}
accounts {
  HASJS { jetstream: enabled, users: [{user: p1, password: pw1}] }
  NOJS { users: [{user: p2, password: pw2}] }
}
`), 0o600); err != nil {
		t.Fatal(err)
	}
	url := confServer(t, conf)
	t.Setenv("PW1", "pw1")
	t.Setenv("PW2", "pw2")
	path := filepath.Join(t.TempDir(), "tenants.yaml")
	if err := os.WriteFile(path, []byte("tenants:\n  - name: one\n    user: p1\n    password_env: PW1\n  - name: two\n    user: p2\n    password_env: PW2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runMain(t, "serve", "--nats-url", url, "--tenants", path, "--no-bundled", "--user-skills-dir=")
	if code != exitFailure || !strings.Contains(stderr, "tenant two: account NOJS has no JetStream") {
		t.Errorf("a tenant without JetStream: exit %d\n%s", code, stderr)
	}
	// --tenants without --nats-url, and --tenant for serve.
	for _, args := range [][]string{
		{"serve", "--tenants", path},
		{"serve", "--nats-url", url, "--tenants", path, "--tenant", "one"},
		{"usage", "--nats-url", url, "--tenants", path},
		{"usage", "--nats-url", url, "--tenants", path, "--tenant", "three"},
	} {
		if code, _, stderr := runMain(t, args...); code != exitUsage || !strings.Contains(stderr, "tenant") {
			t.Errorf("%q: exit %d\n%s", args, code, stderr)
		}
	}
}

// BenchmarkTenantFairness measures tenant globex's pre-step latency alone
// and while tenant acme floods its own sessions with pre-steps from many
// workers at once (128 sessions, as fast as their answers come: acme at
// its rate limit), with one serve for both and the shipped configuration
// (each tenant has workers and a rate of its own). globex steps one
// session every 4 ms. It reports globex's p50 and p99 both ways, the p99
// ratio and acme's rate:
//
//	go test ./cmd/skillstream -run '^$' -bench TenantFairness -benchtime 1x
func BenchmarkTenantFairness(b *testing.B) {
	natsURL, pw := tenantServer(b)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for i := range 20 {
		pushAs(b, ctx, natsURL, "acme-admin", pw["acme-admin"], "SKILLS", skillDir(b, fmt.Sprintf("acme-%02d", i), "An Acme skill."))
		pushAs(b, ctx, natsURL, "globex-admin", pw["globex-admin"], "SKILLS", skillDir(b, fmt.Sprintf("globex-%02d", i), "A Globex skill."))
	}
	pushAs(b, ctx, natsURL, "curator", pw["curator"], "LIBRARY", skillDir(b, "shared-style", "Apply the house writing style."))
	startTenantServe(b, natsURL)
	connect := func(user string) *client.Client { return tenantWorker(b, natsURL, user, pw[user]) }
	tools := []events.Tool{client.SkillTool("skillstream")}
	globex := connect("globex-worker-1")
	// globex steps at a steady pace well under its own rate limit (as a
	// tenant going about its work), 1,000 steps a phase.
	const steps, pace = 1000, 4 * time.Millisecond
	measure := func(sid string) []time.Duration {
		out := make([]time.Duration, 0, steps)
		tick := time.NewTicker(pace)
		defer tick.Stop()
		for i := range steps {
			<-tick.C
			start := time.Now()
			if _, err := globex.PreStep(ctx, events.PreStep{Session: sid, Step: fmt.Sprint(i), Tools: tools}); err != nil {
				b.Fatal(err)
			}
			out = append(out, time.Since(start))
		}
		slices.Sort(out)
		return out
	}
	pct := func(d []time.Duration, p float64) float64 {
		return float64(d[int(p*float64(len(d)-1))].Microseconds()) / 1000
	}
	for range b.N {
		alone := measure(fmt.Sprintf("alone-%d", time.Now().UnixNano()))
		// acme floods: 128 sessions stepping as fast as their answers come.
		fctx, fcancel := context.WithCancel(ctx)
		var flooded atomic.Int64
		var floodErr atomic.Value
		var wg sync.WaitGroup
		for w := range 2 {
			c := connect(fmt.Sprintf("acme-worker-%d", w+1))
			for s := range 64 {
				wg.Go(func() {
					sid := fmt.Sprintf("flood-%d-%d-%d", w, s, time.Now().UnixNano())
					for i := 0; fctx.Err() == nil; i++ {
						d, err := c.PreStep(fctx, events.PreStep{Session: sid, Step: fmt.Sprint(i), Tools: tools})
						switch {
						case err == nil && (d.Outcome == events.OutcomeAppended || d.Outcome == events.OutcomeUnchanged):
							flooded.Add(1)
						case fctx.Err() == nil:
							floodErr.Store(fmt.Sprintf("%s %v", d.Outcome, err))
						}
					}
				})
			}
		}
		time.Sleep(2 * time.Second) // the flood at full rate
		start, before := time.Now(), flooded.Load()
		during := measure(fmt.Sprintf("during-%d", time.Now().UnixNano()))
		rate := float64(flooded.Load()-before) / time.Since(start).Seconds()
		fcancel()
		wg.Wait()
		if e := floodErr.Load(); e != nil {
			b.Logf("a flood pre-step failed: %v", e)
		}
		b.ReportMetric(pct(alone, 0.5), "alone-p50-ms")
		b.ReportMetric(pct(alone, 0.99), "alone-p99-ms")
		b.ReportMetric(pct(during, 0.5), "flood-p50-ms")
		b.ReportMetric(pct(during, 0.99), "flood-p99-ms")
		b.ReportMetric(pct(during, 0.99)/pct(alone, 0.99), "p99-ratio")
		b.ReportMetric(rate, "acme-pre-steps/s")
	}
}

// FuzzLoadTenants: whatever the tenants file holds, loading it either
// fails with a usage error or gives tenants that are each named once,
// validly, with one kind of credentials.
func FuzzLoadTenants(f *testing.F) {
	if b, err := os.ReadFile(tenantsYAML); err == nil {
		f.Add(b)
	}
	f.Add([]byte("tenants:\n  - name: a\n    token_env: PATH\n"))
	f.Add([]byte("tenants: [{name: a, user: u, password_env: PATH}, {name: a}]\n"))
	f.Add([]byte("library: {user: x}\ntenants: []\n"))
	f.Add([]byte("tenants:\n  - name: a\n    user: u\n    password_env: PATH\n    max_bytes: 1KiB\n    workers: -1\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, b []byte) {
		path := filepath.Join(dir, "tenants.yaml")
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		tf, err := loadTenants(path)
		if err != nil {
			var ue usageError
			if !errors.As(err, &ue) {
				t.Fatalf("not a usage error: %T %v", err, err)
			}
			return
		}
		seen := map[string]bool{}
		for _, tn := range tf.Tenants {
			if !tenantNameRE.MatchString(tn.Name) || tn.Name == libraryTenant || seen[tn.Name] {
				t.Fatalf("tenant %q accepted", tn.Name)
			}
			seen[tn.Name] = true
			if err := tn.check(); err != nil || tn.Workers < 0 || tn.MaxTriggerRate < 0 {
				t.Fatalf("tenant %q accepted with %v", tn.Name, err)
			}
		}
	})
}

// TestTenantMCPStdio: `skillstream mcp --tenants FILE --tenant acme`, as
// acme's administrator's host would spawn it, serves acme's skills and the
// library's, never globex's.
func TestTenantMCPStdio(t *testing.T) {
	natsURL, pw := tenantServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	pushAs(t, ctx, natsURL, "curator", pw["curator"], "LIBRARY", skillDir(t, "shared-style", "Apply the house writing style."))
	pushAs(t, ctx, natsURL, "acme-admin", pw["acme-admin"], "SKILLS", skillDir(t, "acme-deploy", "Deploy Acme's services."))
	pushAs(t, ctx, natsURL, "globex-admin", pw["globex-admin"], "SKILLS", skillDir(t, "globex-billing", "Run Globex's billing."))
	admin, err := filepath.Abs("deploy/tenants-admin.yaml")
	if err != nil {
		t.Fatal(err)
	}
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stderr := &syncBuffer{}
	a := &app{stdin: inR, stdout: outW, stderr: stderr, lookupEnv: os.LookupEnv}
	done := make(chan int, 1)
	go func() {
		done <- a.main(ctx, []string{"mcp", "--nats-url", natsURL, "--tenants", admin, "--tenant", "acme",
			"--no-bundled", "--user-skills-dir=", "--cwd", t.TempDir()})
		outW.Close()
	}()
	defer func() {
		inW.Close()
		if code := <-done; code != exitOK {
			t.Errorf("mcp exit %d:\n%s", code, stderr)
		}
	}()
	lines := bufio.NewScanner(outR)
	lines.Buffer(make([]byte, 1<<20), 16<<20)
	send := func(msg string) {
		if _, err := io.WriteString(inW, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	recv := func(id int) string {
		for lines.Scan() {
			var m struct {
				ID *int `json:"id"`
			}
			if json.Unmarshal(lines.Bytes(), &m) == nil && m.ID != nil && *m.ID == id {
				return lines.Text()
			}
		}
		t.Fatalf("no response %d; stderr:\n%s", id, stderr)
		return ""
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`)
	recv(1)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	id := 2
	eventually(t, 20*time.Second, "acme's and the library's skills listed", func() error {
		id++
		send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"skills/list","params":{}}`, id))
		got := recv(id)
		if strings.Contains(got, "globex-billing") {
			t.Fatalf("acme's host is offered globex's skill: %s", got)
		}
		if !strings.Contains(got, "skill://acme-deploy/SKILL.md") || !strings.Contains(got, "skill://shared-style/SKILL.md") {
			return fmt.Errorf("listed %s", got)
		}
		return nil
	})
}

// servedMetrics is what the /metrics address named in a serve's serving
// line answers.
func servedMetrics(t *testing.T, logs string) string {
	t.Helper()
	m := regexp.MustCompile(`metrics=(http://\S+/metrics)`).FindStringSubmatch(logs)
	if m == nil {
		t.Fatalf("no metrics address in the serving line:\n%s", logs)
	}
	resp, err := http.Get(m[1])
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(body)
}
