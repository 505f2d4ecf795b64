package audit_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/providers/store/audit"
)

// conf has the service's account AUD, two audited accounts (T1, T2) that
// import it with share, and one (NS) that imports it without.
const conf = `
listen: 127.0.0.1:-1
jetstream { store_dir: %DIR% }
accounts {
  AUD { jetstream: enabled, users: [{user: aud, password: a}],
        exports: [{service: "audit.skillstream.>", accounts: [T1, T2, NS]}] }
  T1 { jetstream: enabled, users: [{user: alice, password: a}, {user: bob, password: b}],
       imports: [{service: {account: AUD, subject: "audit.skillstream.>"}, share: true}] }
  T2 { jetstream: enabled, users: [{user: carol, password: c}],
       imports: [{service: {account: AUD, subject: "audit.skillstream.>"}, share: true}] }
  NS { jetstream: enabled, users: [{user: nick, password: n}],
       imports: [{service: {account: AUD, subject: "audit.skillstream.>"}}] }
}
`

type env struct {
	url     string
	indexes map[string]audit.Index
}

func start(t *testing.T, rate float64, burst int) *env {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "a.conf")
	if err := os.WriteFile(path, []byte(strings.ReplaceAll(conf, "%DIR%", filepath.Join(dir, "js"))), 0o600); err != nil {
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
	e := &env{url: srv.ClientURL(), indexes: map[string]audit.Index{}}
	for acct, user := range map[string]string{"T1": "alice:a", "T2": "carol:c", "NS": "nick:n"} {
		js := jsAs(t, e.url, user)
		kv, err := js.CreateKeyValue(context.Background(), jetstream.KeyValueConfig{Bucket: "SKILLS", History: 8})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := kv.Put(context.Background(), "global.report", []byte(`{"name":"report","digest":"`+strings.Repeat("a", 64)+`"}`)); err != nil {
			t.Fatal(err)
		}
		e.indexes[acct] = audit.Index{JS: js, Bucket: "SKILLS"}
	}
	ajs := jsAs(t, e.url, "aud:a")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	cfg := audit.Config{NC: ajs.Conn(), JS: ajs, Rate: rate, Burst: burst,
		Resolve: func(a string) (audit.Index, bool) { i, ok := e.indexes[a]; return i, ok }}
	go func() { done <- audit.Serve(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	// Serve subscribes before it blocks: wait for its answers.
	nc := connAs(t, e.url, "alice:a")
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, _, err := audit.Lookup(context.Background(), nc, audit.Query{Store: audit.StoreTenant, Name: "report"})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the service does not answer: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return e
}

func connAs(t *testing.T, url, userpass string) *nats.Conn {
	t.Helper()
	u, p, _ := strings.Cut(userpass, ":")
	nc, err := nats.Connect(url, nats.UserInfo(u, p))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func jsAs(t *testing.T, url, userpass string) jetstream.JetStream {
	t.Helper()
	js, err := jetstream.New(connAs(t, url, userpass))
	if err != nil {
		t.Fatal(err)
	}
	return js
}

func push(digest string) audit.Claim {
	return audit.Claim{Op: audit.OpPush, Store: audit.StoreTenant, Key: "global.report", Name: "report", Digest: digest}
}

func TestRecordsNameTheServersUser(t *testing.T) {
	e := start(t, 0, 0)
	ctx := context.Background()
	d := strings.Repeat("a", 64)
	for _, who := range []string{"alice:a", "bob:b"} {
		r, err := audit.Submit(ctx, connAs(t, e.url, who), push(d))
		if err != nil {
			t.Fatal(err)
		}
		if want := strings.Split(who, ":")[0] + "@T1"; r.Who() != want || r.Revision != 1 || r.Digest != d {
			t.Errorf("%s: record %+v, want %s at revision 1", who, r, want)
		}
	}
	if _, err := audit.Submit(ctx, connAs(t, e.url, "carol:c"), push(d)); err != nil {
		t.Fatal(err)
	}
	rs, more, err := audit.Lookup(ctx, connAs(t, e.url, "alice:a"), audit.Query{Store: audit.StoreTenant, Name: "report"})
	if err != nil || more || len(rs) != 2 || rs[0].Who() != "alice@T1" || rs[1].Who() != "bob@T1" {
		t.Fatalf("T1's records: %+v %v %v", rs, more, err)
	}
	rs, _, err = audit.Lookup(ctx, connAs(t, e.url, "carol:c"), audit.Query{Store: audit.StoreTenant, Name: "report"})
	if err != nil || len(rs) != 1 || rs[0].Who() != "carol@T2" {
		t.Fatalf("T2's records: %+v %v", rs, err)
	}

	// Without share the server says the account, not the user: refused.
	_, err = audit.Submit(ctx, connAs(t, e.url, "nick:n"), push(d))
	if err == nil || !strings.Contains(err.Error(), "share: true") {
		t.Errorf("a claim through an import without share: %v", err)
	}
	// No library in this deployment.
	lib := push(d)
	lib.Store = audit.StoreLibrary
	if _, err := audit.Submit(ctx, connAs(t, e.url, "alice:a"), lib); err == nil || !strings.Contains(err.Error(), "no library") {
		t.Errorf("a library claim without a library: %v", err)
	}
}

func TestClaimsCheckedAgainstTheStore(t *testing.T) {
	e := start(t, 0, 0)
	ctx := context.Background()
	nc := connAs(t, e.url, "alice:a")
	for _, c := range []struct {
		claim audit.Claim
		want  string
	}{
		{push(strings.Repeat("b", 64)), "has digest"},
		{audit.Claim{Op: audit.OpPush, Store: audit.StoreTenant, Key: "global.other", Name: "other", Digest: strings.Repeat("a", 64)}, "no entry global.other"},
		{audit.Claim{Op: audit.OpPush, Store: audit.StoreTenant, Key: "global.report", Name: "report", Digest: strings.Repeat("a", 64), Revision: 7}, "no revision 7"},
		{audit.Claim{Op: audit.OpRemove, Store: audit.StoreTenant, Key: "global.report", Name: "report"}, "not a removal"},
	} {
		if _, err := audit.Submit(ctx, nc, c.claim); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("claim %+v: %v, want %q", c.claim, err, c.want)
		}
	}
	rs, _, err := audit.Lookup(ctx, nc, audit.Query{Store: audit.StoreTenant, Name: "report"})
	if err != nil || len(rs) != 0 {
		t.Errorf("refused claims were recorded: %+v %v", rs, err)
	}
}

func TestOneAccountsFloodIsItsOwn(t *testing.T) {
	e := start(t, 1, 5)
	ctx := context.Background()
	d := strings.Repeat("a", 64)
	alice := connAs(t, e.url, "alice:a")
	busy := 0
	for range 20 {
		if _, err := audit.Submit(ctx, alice, push(d)); err != nil {
			if !strings.Contains(err.Error(), "busy") {
				t.Fatal(err)
			}
			busy++
		}
	}
	if busy == 0 {
		t.Error("20 claims at once past a burst of 5: none refused as busy")
	}
	// The other tenant is not held by alice's flood.
	if _, err := audit.Submit(ctx, connAs(t, e.url, "carol:c"), push(d)); err != nil {
		t.Errorf("T2 during T1's flood: %v", err)
	}
	// The same user's claims of one revision are one record (a retry
	// writes nothing new).
	time.Sleep(1100 * time.Millisecond)
	rs, _, err := audit.Lookup(ctx, alice, audit.Query{Store: audit.StoreTenant, Name: "report"})
	if err != nil || len(rs) != 1 {
		t.Errorf("records of one revision claimed %d times by one user: %d (%v), want 1", 20-busy, len(rs), err)
	}
}

func TestNoService(t *testing.T) {
	srv := startBare(t)
	nc, err := nats.Connect(srv)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if _, err := audit.Submit(context.Background(), nc, push(strings.Repeat("a", 64))); !errors.Is(err, audit.ErrNoService) {
		t.Errorf("no service: %v", err)
	}
}

func startBare(t *testing.T) string {
	t.Helper()
	srv, err := server.NewServer(&server.Options{Host: "127.0.0.1", Port: -1, NoLog: true, NoSigs: true})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(srv.Shutdown)
	if !srv.ReadyForConnections(5 * time.Second) {
		t.Fatal("not ready")
	}
	return srv.ClientURL()
}

func TestDecodeClaimErrorsNameTheField(t *testing.T) {
	d := strings.Repeat("a", 64)
	for in, want := range map[string]string{
		`{"op":"push","store":"tenant","key":"global.x","name":"x"}`:                                        "names its digest",
		`{"op":"push","store":"moon","key":"global.x","name":"x","digest":"` + d + `"}`:                     "store \"moon\"",
		`{"op":"push","store":"tenant","key":"a..b","name":"x","digest":"` + d + `"}`:                       "not an index key",
		`{"op":"push","store":"tenant","key":"global.x","name":"X!","digest":"` + d + `"}`:                  "not a skill name",
		`{"op":"push","store":"tenant","key":"global.x","name":"x","digest":"zz"}`:                          "digest",
		`{"op":"release","store":"tenant","key":"global.x"}`:                                                "names its skill",
		`{"op":"policy","store":"tenant","key":"trust.policy","signer":"nope"}`:                             "signer",
		`{"op":"policy","store":"tenant","key":"trust.policy","detail":"a\nb"}`:                             "control characters",
		`{"op":"policy","store":"tenant","key":"trust.policy","detail":"` + strings.Repeat("x", 201) + `"}`: "detail of 201 bytes",
		strings.Repeat(" ", audit.MaxClaimBytes+1):                                                          "at most",
	} {
		_, err := audit.DecodeClaim([]byte(in))
		if err == nil || !errors.Is(err, audit.ErrBadClaim) || !strings.Contains(err.Error(), want) {
			t.Errorf("%.60s: %v, want %q", in, err, want)
		}
	}
	if _, err := audit.DecodeClaim([]byte(`{"op":"policy","store":"library","key":"trust.policy","detail":"skills trust add N"}`)); err != nil {
		t.Errorf("a good claim: %v", err)
	}
}

func FuzzDecodeClaim(f *testing.F) {
	f.Add([]byte(`{"op":"push","store":"tenant","key":"global.x","name":"x","digest":"` + strings.Repeat("a", 64) + `"}`))
	f.Add([]byte(`{"op":"policy","store":"library","key":"trust.policy"}`))
	f.Add([]byte(`{"op":"release","store":"tenant","key":"release.global.x","name":"x","revision":18446744073709551615}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		c, err := audit.DecodeClaim(b)
		if err != nil {
			return
		}
		// What decodes is within every bound a record relies on.
		if len(c.Key) > audit.MaxKey || len(c.Detail) > audit.MaxDetail || c.Key == "" {
			t.Fatalf("accepted out of bounds: %+v", c)
		}
	})
}

func FuzzDecodeQuery(f *testing.F) {
	f.Add([]byte(`{"store":"tenant","name":"x"}`))
	f.Add([]byte(`{"store":"library"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		q, err := audit.DecodeQuery(b)
		if err == nil && q.Store != audit.StoreTenant && q.Store != audit.StoreLibrary {
			t.Fatalf("accepted store %q", q.Store)
		}
	})
}
