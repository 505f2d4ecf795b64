package main

import (
	"context"
	"fmt"
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
	"github.com/skillstream/skillstream/natstest/operator"
)

// operatorWorker is a worker connected with creds (a worker user of the
// operator-mode layout, its inboxes under _INBOX.<user>), until the test
// ends; its permission violations are collected.
func operatorWorker(t *testing.T, url, creds, user string) (*client.Client, *violations) {
	t.Helper()
	v := &violations{}
	nc, err := nats.Connect(url, nats.UserCredentials(creds), nats.CustomInboxPrefix("_INBOX."+user), nats.ErrorHandler(v.handler))
	if err != nil {
		t.Fatalf("%s: %v", user, err)
	}
	t.Cleanup(nc.Close)
	c, err := client.New(nc, client.WithInboxPrefix("_INBOX."+user), client.WithRetryInterval(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c, v
}

// writeTenants writes a tenants file by a rename (as an editor saves).
func writeTenants(t *testing.T, path, body string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// tenantEntryYAML is one tenant of a tenants file, with creds.
func tenantEntryYAML(name, creds string) string {
	return fmt.Sprintf("  - name: %s\n    creds: %s\n    max_bytes: 256MiB\n", name, creds)
}

// TestTenantsOperatorMode: an operator-mode deployment, its accounts and
// users made as JWTs (as nsc makes them), on a real server with a full
// resolver: serve --tenants with creds files serves both tenants and the
// library; the administrators push with the commands; a third tenant,
// pushed to the resolver and added to the tenants file while workers of
// the first two keep stepping, is served without a restart and without
// one of their triggers lost; a bad edit of the file changes nothing; a
// tenant dropped from it is stopped alone. The shipped permissions hold
// as JWTs: a worker cannot reach another tenant's inboxes or any stream's
// API, and an administrator cannot delete the processors' consumer.
func TestTenantsOperatorMode(t *testing.T) {
	op := operator.New(t)
	lib := operator.NewLibrary(op)
	acme := operator.NewTenant(op, lib, "acme")
	globex := operator.NewTenant(op, lib, "globex")
	srv := op.Start(lib.Account, acme.Account, acme.Workers, globex.Account, globex.Workers)
	url := srv.URL()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()

	// The administrators' file, and pushes with the commands.
	dir := t.TempDir()
	admin := filepath.Join(dir, "tenants-admin.yaml")
	adminYAML := "library:\n  creds: " + lib.Curator + "\n  bucket: LIBRARY\ntenants:\n" +
		tenantEntryYAML("acme", acme.Admin) + tenantEntryYAML("globex", globex.Admin)
	writeTenants(t, admin, adminYAML)
	push := func(tenant, skill, desc string) {
		t.Helper()
		if code, out, stderr := runMain(t, "skills", "push", skillDir(t, skill, desc), "--nats-url", url, "--tenants", admin, "--tenant", tenant); code != exitOK {
			t.Fatalf("push %s to %s: exit %d\n%s%s", skill, tenant, code, out, stderr)
		}
	}
	push("library", "shared-style", "Apply the house writing style.")
	push("acme", "acme-deploy", "Deploy Acme's services.")
	push("globex", "globex-billing", "Run Globex's billing.")

	// serve, with the processors' and the library reader's creds.
	tenants := filepath.Join(dir, "tenants.yaml")
	libYAML := "library:\n  creds: " + lib.Reader + "\n  bucket: LIBRARY\ntenants:\n"
	writeTenants(t, tenants, libYAML+tenantEntryYAML("acme", acme.Processor)+tenantEntryYAML("globex", globex.Processor))
	logs := runPermittedServe(t, []string{"serve", "--nats-url", url, "--tenants", tenants,
		"--no-bundled", "--user-skills-dir=", "--workers", "4", "--metrics-listen", quietAddr(t)}, "skillstream serving")

	tools := []events.Tool{client.SkillTool("skillstream")}
	acmeW, acmeViol := operatorWorker(t, url, acme.Worker("acme-worker-1"), "acme-worker-1")
	globexW, _ := operatorWorker(t, url, globex.Worker("globex-worker-1"), "globex-worker-1")
	for _, w := range []struct {
		c          *client.Client
		want, none string
	}{{acmeW, "acme-deploy", "globex-billing"}, {globexW, "globex-billing", "acme-deploy"}} {
		d, err := w.c.PreStep(ctx, events.PreStep{Session: "s1", Step: "1", Tools: tools})
		if err != nil || d.Outcome != events.OutcomeAppended {
			t.Fatalf("%s's worker: %+v %v", w.want, d, err)
		}
		if got := names(d); !slices.Contains(got, w.want) || !slices.Contains(got, "shared-style") || slices.Contains(got, w.none) {
			t.Errorf("catalog %v: want %s and shared-style, never %s", got, w.want, w.none)
		}
	}

	// Workers of both tenants step on, each step awaited, while a third
	// tenant is added.
	lctx, lstop := context.WithCancel(ctx)
	var sent, answered atomic.Int64
	var failMu sync.Mutex
	var failures []string
	var wg sync.WaitGroup
	for _, w := range []*client.Client{acmeW, globexW} {
		for s := range 2 {
			wg.Go(func() {
				sid := fmt.Sprintf("load-%d", s)
				for i := 0; lctx.Err() == nil; i++ {
					sent.Add(1)
					pctx, pcancel := context.WithTimeout(context.WithoutCancel(lctx), 30*time.Second)
					d, err := w.PreStep(pctx, events.PreStep{Session: sid, Step: fmt.Sprint(i), Tools: tools})
					pcancel()
					if err != nil || d.Outcome != events.OutcomeAppended && d.Outcome != events.OutcomeUnchanged {
						failMu.Lock()
						failures = append(failures, fmt.Sprintf("%s step %d: %s %v", sid, i, d.Outcome, err))
						failMu.Unlock()
						continue
					}
					answered.Add(1)
				}
			})
		}
	}
	stopLoad := func() {
		lstop()
		wg.Wait()
	}
	defer stopLoad()
	eventually(t, 30*time.Second, "the load running", func() error {
		if answered.Load() < 20 {
			return fmt.Errorf("%d answered", answered.Load())
		}
		return nil
	})

	// The third tenant: its accounts pushed to the resolver (nsc push),
	// its administrator's push, then its entry in serve's file.
	initech := operator.NewTenant(op, lib, "initech")
	for _, a := range []*operator.Account{initech.Account, initech.Workers} {
		if err := srv.Push(a); err != nil {
			t.Fatal(err)
		}
	}
	writeTenants(t, admin, adminYAML+tenantEntryYAML("initech", initech.Admin))
	push("initech", "initech-reports", "File Initech's TPS reports.")
	before := answered.Load()
	writeTenants(t, tenants, libYAML+tenantEntryYAML("acme", acme.Processor)+tenantEntryYAML("globex", globex.Processor)+tenantEntryYAML("initech", initech.Processor))
	eventually(t, 60*time.Second, "initech served", func() error {
		if !regexp.MustCompile(`tenant serving"? tenant=initech`).MatchString(logs.String()) {
			return fmt.Errorf("not yet:\n%s", logs)
		}
		return nil
	})
	initechW, _ := operatorWorker(t, url, initech.Worker("initech-worker-1"), "initech-worker-1")
	d, err := initechW.PreStep(ctx, events.PreStep{Session: "s1", Step: "1", Tools: tools})
	if err != nil || d.Outcome != events.OutcomeAppended {
		t.Fatalf("initech's worker: %+v %v", d, err)
	}
	if got := names(d); !slices.Contains(got, "initech-reports") || !slices.Contains(got, "shared-style") || slices.Contains(got, "acme-deploy") {
		t.Errorf("initech's catalog %v: want initech-reports and shared-style, never acme-deploy", got)
	}
	// The others stepped on meanwhile.
	eventually(t, 30*time.Second, "the load going on", func() error {
		if answered.Load() < before+20 {
			return fmt.Errorf("%d answered since", answered.Load()-before)
		}
		return nil
	})

	// A bad edit: reported, nothing stops.
	writeTenants(t, tenants, libYAML+"  - name: acme\n    creds: "+acme.Processor+"\n    max_bytes: lots\n")
	eventually(t, 30*time.Second, "the bad edit reported", func() error {
		if !strings.Contains(logs.String(), "configuration file not applied") || !strings.Contains(logs.String(), `max_bytes \"lots\"`) {
			return fmt.Errorf("not yet:\n%s", logs)
		}
		return nil
	})
	stopLoad()
	failMu.Lock()
	if len(failures) > 0 || answered.Load() != sent.Load() {
		t.Errorf("%d triggers sent, %d answered; failures: %q", sent.Load(), answered.Load(), failures)
	}
	failMu.Unlock()
	t.Logf("%d triggers of acme and globex, all answered, while initech was added", answered.Load())
	if d, err := initechW.PreStep(ctx, events.PreStep{Session: "s1", Step: "2", Tools: tools}); err != nil || d.Outcome != events.OutcomeUnchanged {
		t.Errorf("initech after the bad edit: %+v %v", d, err)
	}

	// serve keeps each tenant's usage projection by default, in the
	// tenant's own account, as the shipped permissions let it.
	for _, tn := range []struct{ name, creds string }{{"acme", acme.Processor}, {"globex", globex.Processor}} {
		pnc, err := nats.Connect(url, nats.UserCredentials(tn.creds), nats.CustomInboxPrefix("_SKILLSTREAM_INBOX"))
		if err != nil {
			t.Fatal(err)
		}
		pjs, _ := jetstream.New(pnc)
		eventually(t, 30*time.Second, tn.name+"'s usage projection holds an hour", func() error {
			kctx, kcancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer kcancel()
			kv, err := pjs.KeyValue(kctx, "USAGE")
			if err != nil {
				return err
			}
			keys, err := kv.ListKeys(kctx)
			if err != nil {
				return err
			}
			for k := range keys.Keys() {
				if strings.HasPrefix(k, "h.") {
					return nil
				}
			}
			var said []string
			for _, line := range strings.Split(logs.String(), "\n") {
				if strings.Contains(line, "usage projection") {
					said = append(said, line)
				}
			}
			return fmt.Errorf("no hour bucket in %s's USAGE; serve said:\n%s", tn.name, strings.Join(said, "\n"))
		})
		pnc.Close()
	}

	// globex dropped from the file: stopped alone; acme and initech serve on.
	writeTenants(t, tenants, libYAML+tenantEntryYAML("acme", acme.Processor)+tenantEntryYAML("initech", initech.Processor))
	eventually(t, 30*time.Second, "globex stopped", func() error {
		if !regexp.MustCompile(`unit stopped"? tenant=globex`).MatchString(logs.String()) {
			return fmt.Errorf("not yet:\n%s", logs)
		}
		return nil
	})
	if d, err := acmeW.PreStep(ctx, events.PreStep{Session: "s1", Step: "3", Tools: tools}); err != nil || d.Outcome != events.OutcomeUnchanged {
		t.Errorf("acme after globex's removal: %+v %v", d, err)
	}
	m := regexp.MustCompile(`metrics=http://(\S+)/metrics`).FindStringSubmatch(logs.String())
	if m == nil {
		t.Fatalf("no metrics address:\n%s", logs)
	}
	eventually(t, 10*time.Second, "readiness without globex", func() error {
		resp, err := http.Get("http://" + m[1] + "/readyz")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		b := make([]byte, 4096)
		n, _ := resp.Body.Read(b)
		body := string(b[:n])
		if resp.StatusCode != http.StatusOK || strings.Contains(body, "globex") || !strings.Contains(body, "tenant initech: ready") {
			return fmt.Errorf("%d %s", resp.StatusCode, body)
		}
		return nil
	})

	// A tenant added in an account another tenant has: refused for good,
	// named; the others serve on.
	writeTenants(t, tenants, libYAML+tenantEntryYAML("acme", acme.Processor)+tenantEntryYAML("initech", initech.Processor)+
		tenantEntryYAML("acme-too", acme.Admin))
	eventually(t, 30*time.Second, "acme-too refused", func() error {
		if !strings.Contains(logs.String(), "tenants acme and acme-too are both in account") {
			return fmt.Errorf("not yet:\n%s", logs)
		}
		return nil
	})
	if d, err := acmeW.PreStep(ctx, events.PreStep{Session: "s1", Step: "4", Tools: tools}); err != nil || d.Outcome != events.OutcomeUnchanged {
		t.Errorf("acme after acme-too's refusal: %+v %v", d, err)
	}

	// The shipped permissions, as JWTs: a worker reaches no stream's API
	// and no other worker's inbox; the administrator cannot delete the
	// processors' consumer that serve made.
	nc := acmeW.Conn()
	for _, subj := range []string{"$JS.API.STREAM.INFO.SESSIONS", "$KV.SKILLS.global.acme-deploy", "ev.s1.catalog.append", "_INBOX.globex-worker-1.x"} {
		if err := nc.Publish(subj, []byte("x")); err != nil {
			t.Fatal(err)
		}
		acmeViol.wait(t, "acme's worker publishing "+subj, subj)
	}
	if _, err := nc.Subscribe("_INBOX.>", func(*nats.Msg) {}); err != nil {
		t.Fatal(err)
	}
	acmeViol.wait(t, "acme's worker subscribing to every inbox", "_INBOX.>")
	av := &violations{}
	anc, err := nats.Connect(url, nats.UserCredentials(acme.Admin), nats.ErrorHandler(av.handler))
	if err != nil {
		t.Fatal(err)
	}
	defer anc.Close()
	ajs, _ := jetstream.New(anc)
	dctx, dcancel := context.WithTimeout(ctx, 2*time.Second)
	defer dcancel()
	if err := ajs.DeleteConsumer(dctx, "SESSIONS", "skillstream"); err == nil {
		t.Error("acme's administrator deleted the processors' consumer")
	}
	av.wait(t, "acme's administrator deleting the processors' consumer", "$JS.API.CONSUMER.DELETE.SESSIONS.skillstream")
	// acme's worker stepping a session called as globex's reaches acme's
	// stream only.
	gnc, err := nats.Connect(url, nats.UserCredentials(globex.Admin))
	if err != nil {
		t.Fatal(err)
	}
	defer gnc.Close()
	gjs, _ := jetstream.New(gnc)
	gst, err := gjs.Stream(ctx, "SESSIONS")
	if err != nil {
		t.Fatal(err)
	}
	had := gst.CachedInfo().State.Msgs
	if _, err := acmeW.PreStep(ctx, events.PreStep{Session: "load-0", Step: "x", Tools: tools}); err != nil {
		t.Fatal(err)
	}
	if info, err := gst.Info(ctx); err != nil || info.State.Msgs != had {
		t.Errorf("globex's SESSIONS changed under acme's worker's trigger: %d → %v %v", had, info, err)
	}
}

// TestOperatorLayoutMatchesShippedConf: the JWT layout the operator-mode
// tests (and the manual's nsc commands) use gives each user the
// permissions the shipped tenants.conf gives it.
func TestOperatorLayoutMatchesShippedConf(t *testing.T) {
	setPasswords(t, tenantUsers)
	opts, err := server.ProcessConfigFile(tenantsConf)
	if err != nil {
		t.Fatal(err)
	}
	byUser := map[string]*server.User{}
	for _, u := range opts.Users {
		byUser[u.Username] = u
	}
	get := func(user string, pub bool, allow bool) []string {
		u := byUser[user]
		if u == nil {
			t.Fatalf("%s: no user %s", tenantsConf, user)
		}
		if u.Permissions == nil {
			return nil
		}
		p := u.Permissions.Subscribe
		if pub {
			p = u.Permissions.Publish
		}
		if p == nil {
			return nil
		}
		out := p.Deny
		if allow {
			out = p.Allow
		}
		return slices.Sorted(slices.Values(out))
	}
	sorted := func(s []string) []string { return slices.Sorted(slices.Values(s)) }
	for _, tc := range []struct {
		user       string
		pub, allow bool
		want       []string
	}{
		{"acme-processor", true, true, operator.ProcessorPublish},
		{"acme-processor", false, true, operator.ProcessorSubscribe},
		{"globex-processor", true, true, operator.ProcessorPublish},
		{"acme-admin", true, false, operator.AdminDeny},
		{"acme-admin", true, true, nil},
		{"acme-worker-1", true, true, operator.WorkerPublish()},
		{"acme-worker-1", false, true, []string(operator.WorkerPermissions("acme-worker-1").Sub.Allow)},
		{"library-reader", true, true, operator.LibraryReaderPublish},
		{"library-reader", false, true, []string{"_SKILLSTREAM_INBOX.>"}},
	} {
		if got := get(tc.user, tc.pub, tc.allow); !slices.Equal(got, sorted(tc.want)) {
			t.Errorf("%s (publish %v, allow %v): %s gives %q, the JWT layout %q", tc.user, tc.pub, tc.allow, tenantsConf, got, sorted(tc.want))
		}
	}
}
