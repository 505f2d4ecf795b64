package console_test

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/providers/store/audit"
)

// auditConf has the audit service's account AUD and a tenant T that
// imports it: alice pushes, the console connects as ops.
const auditConf = `
listen: 127.0.0.1:-1
jetstream { store_dir: %DIR% }
accounts {
  AUD { jetstream: enabled, users: [{user: aud, password: a}],
        exports: [{service: "audit.skillstream.>", accounts: [T]}] }
  T { jetstream: enabled, users: [{user: alice, password: a}, {user: ops, password: o}],
      imports: [{service: {account: AUD, subject: "audit.skillstream.>"}, share: true}] }
}
`

func connectAs(t *testing.T, url, user, pass string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, nats.UserInfo(user, pass))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

// TestSkillAudit: with the audit trail, the skill page names who pushed
// each revision (and "not audited" for one nobody claimed), and an
// operator's action is claimed in the trail as the console's connection.
func TestSkillAudit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.conf")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(auditConf, "%DIR%", filepath.Join(dir, "js"))), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatal(err)
	}
	opts.NoLog, opts.NoSigs = true, true
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	alice := connectAs(t, srv.ClientURL(), "alice", "a")
	tjs, err := jetstream.New(alice)
	if err != nil {
		t.Fatal(err)
	}
	ajs, err := jetstream.New(connectAs(t, srv.ClientURL(), "aud", "a"))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- audit.Serve(ctx, audit.Config{NC: ajs.Conn(), JS: ajs, Resolve: func(a string) (audit.Index, bool) {
			return audit.Index{JS: tjs, Bucket: skillstore.DefaultBucket}, a == "T"
		}})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	ops := connectAs(t, srv.ClientURL(), "ops", "o")
	e := newSkillEnv(t, tjs, ops)
	// alice claims report's first revision, as skills push does; the
	// second stays unclaimed.
	hist, err := e.pb.History(context.Background(), skillstore.Global, "report")
	if err != nil {
		t.Fatal(err)
	}
	natstest.Eventually(t, 10*time.Second, "the audit service answers", func() error {
		_, err := audit.Submit(context.Background(), alice, audit.Claim{Op: audit.OpPush, Store: audit.StoreTenant,
			Key: "global.report", Name: "report", Revision: hist[0].Revision, Digest: hist[0].Record.Digest, Detail: "skills push"})
		return err
	})

	c := client(t)
	signIn(t, c, e.ts.URL, operatorToken)
	_, body := fetchPage(t, c, e.ts.URL+"/skills/report?in=global")
	row1, row2 := revRow(body, "1"), revRow(body, "2")
	if !strings.Contains(row1, `<td class="who">alice@T</td>`) {
		t.Errorf("rev 1 does not name alice:\n%s", row1)
	}
	if !strings.Contains(row2, "not audited") {
		t.Errorf("rev 2 is not said to be not audited:\n%s", row2)
	}
	csrf := csrfOf(t, body)
	res, rbody := post(t, c, e.ts.URL, e.ts.URL+"/skills/report/rollback", url.Values{"in": {"global"}, "rev": {"1"}, "csrf": {csrf}})
	if res.StatusCode != 303 {
		t.Fatalf("rollback: %s\n%s", res.Status, rbody)
	}
	rs, _, err := audit.Lookup(context.Background(), alice, audit.Query{Store: audit.StoreTenant, Name: "report"})
	if err != nil {
		t.Fatal(err)
	}
	h, _ := e.pb.History(context.Background(), skillstore.Global, "report")
	var found bool
	for _, r := range rs {
		if r.Op == audit.OpRollback && r.User == "ops" && r.Revision == h[len(h)-1].Revision && strings.Contains(r.Detail, "skills rollback report --scope global --to 1") {
			found = true
		}
	}
	if !found {
		t.Errorf("the rollback is not in the trail as ops's: %+v", rs)
	}
	// The page now names ops for rev 3.
	_, body = fetchPage(t, c, e.ts.URL+"/skills/report?in=global")
	if row3 := revRow(body, "3"); !strings.Contains(row3, `<td class="who">ops@T</td>`) {
		t.Errorf("rev 3 does not name ops:\n%s", row3)
	}
}

// revRow is the skill page's row of revision rev.
func revRow(body, rev string) string {
	i := strings.Index(body, `data-rev="`+rev+`"`)
	if i < 0 {
		return ""
	}
	j := strings.Index(body[i:], "</tr>")
	return body[i : i+j]
}
