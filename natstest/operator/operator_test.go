package operator_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/natstest/operator"
)

// violations collects the permission violations the server reports to
// one connection.
type violations struct{ ch chan string }

// connect connects with creds, taking answers on _SKILLSTREAM_INBOX (the
// inboxes a processor or administrator may subscribe to).
func connect(t *testing.T, url, creds string) (*nats.Conn, *violations) {
	t.Helper()
	v := &violations{ch: make(chan string, 64)}
	nc, err := nats.Connect(url, nats.UserCredentials(creds), nats.CustomInboxPrefix("_SKILLSTREAM_INBOX"), nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		select {
		case v.ch <- err.Error():
		default:
		}
	}))
	if err != nil {
		t.Fatalf("connect with %s: %v", creds, err)
	}
	t.Cleanup(nc.Close)
	return nc, v
}

func (v *violations) wait(t *testing.T, what, subject string) {
	t.Helper()
	timer := time.NewTimer(10 * time.Second)
	defer timer.Stop()
	for {
		select {
		case e := <-v.ch:
			if strings.Contains(e, "ermissions Violation") && strings.Contains(e, subject) {
				return
			}
		case <-timer.C:
			t.Fatalf("%s: no permissions violation for %s", what, subject)
		}
	}
}

// TestTenantLayout: the shipped tenant layout as JWTs, on a real server
// in operator mode: each tenant's workers reach their own tenant's
// stream through its imports and nothing else; a tenant's administrator
// cannot delete the processors' consumer; an account pushed to the
// resolver while the server runs is served at once.
func TestTenantLayout(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	op := operator.New(t)
	lib := operator.NewLibrary(op)
	acme := operator.NewTenant(op, lib, "acme")
	globex := operator.NewTenant(op, lib, "globex")
	acmeWorker, globexWorker := acme.Worker("acme-worker-1"), globex.Worker("globex-worker-1")
	srv := op.Start(lib.Account, acme.Account, acme.Workers, globex.Account, globex.Workers)

	// Each tenant's processor: its own account, with JetStream, and the
	// processors' stream and consumer in it.
	for _, tn := range []*operator.Tenant{acme, globex} {
		nc, _ := connect(t, srv.URL(), tn.Processor)
		m, err := nc.Request("$SYS.REQ.USER.INFO", nil, 5*time.Second)
		if err != nil {
			t.Fatalf("%s: user info: %v", tn.Name, err)
		}
		if !strings.Contains(string(m.Data), tn.Account.Public()) {
			t.Fatalf("%s: user info names another account: %s", tn.Name, m.Data)
		}
		js, _ := jetstream.New(nc)
		st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "SESSIONS", Subjects: []string{"ev.>"}, MaxBytes: 1 << 20})
		if err != nil {
			t.Fatalf("%s: stream: %v", tn.Name, err)
		}
		if _, err := st.CreateOrUpdateConsumer(ctx, jetstream.ConsumerConfig{Durable: "skillstream", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
			t.Fatalf("%s: consumer: %v", tn.Name, err)
		}
	}

	// A worker's trigger lands in its own tenant's stream, through the
	// import, with the stream's acknowledgement on its own inbox.
	wnc, wv := connect(t, srv.URL(), acmeWorker)
	wnc2, _ := nats.Connect(srv.URL(), nats.UserCredentials(acmeWorker), nats.CustomInboxPrefix("_INBOX.acme-worker-1"))
	defer wnc2.Close()
	if m, err := wnc2.Request("ev.s1.agent.pre-step", []byte("x"), 5*time.Second); err != nil || !strings.Contains(string(m.Data), `"stream":"SESSIONS"`) {
		t.Fatalf("acme's worker's trigger: %v", err)
	}
	gnc, _ := nats.Connect(srv.URL(), nats.UserCredentials(globexWorker), nats.CustomInboxPrefix("_INBOX.globex-worker-1"))
	defer gnc.Close()
	if _, err := gnc.Request("ev.s1.agent.pre-step", []byte("x"), 5*time.Second); err != nil {
		t.Fatalf("globex's worker's trigger: %v", err)
	}
	for _, tn := range []*operator.Tenant{acme, globex} {
		nc, _ := connect(t, srv.URL(), tn.Admin)
		js, _ := jetstream.New(nc)
		st, err := js.Stream(ctx, "SESSIONS")
		if err != nil {
			t.Fatal(err)
		}
		if n := st.CachedInfo().State.Msgs; n != 1 {
			t.Errorf("%s's SESSIONS holds %d triggers, want its own worker's 1", tn.Name, n)
		}
	}

	// A worker cannot publish anything of a stream's API, nor subscribe
	// to another worker's inboxes.
	for _, subj := range []string{"$JS.API.STREAM.INFO.SESSIONS", "$KV.SKILLS.global.x", "ev.s1.catalog.append", "_INBOX.globex-worker-1.x"} {
		if err := wnc.Publish(subj, []byte("x")); err != nil {
			t.Fatal(err)
		}
		wv.wait(t, "worker publish "+subj, subj)
	}
	if _, err := wnc.SubscribeSync("_INBOX.acme-worker-2.>"); err != nil {
		t.Fatal(err)
	}
	wv.wait(t, "worker subscribe to another's inbox", "_INBOX.acme-worker-2.>")

	// The administrator cannot delete the processors' consumer or stream.
	anc, av := connect(t, srv.URL(), acme.Admin)
	ajs, _ := jetstream.New(anc)
	// (Refused requests get no answer: each waits for a short deadline.)
	short := func() context.Context {
		c, cancel := context.WithTimeout(ctx, 2*time.Second)
		t.Cleanup(cancel)
		return c
	}
	if err := ajs.DeleteConsumer(short(), "SESSIONS", "skillstream"); err == nil {
		t.Error("acme's administrator deleted the processors' consumer")
	}
	av.wait(t, "admin deleting the consumer", "$JS.API.CONSUMER.DELETE.SESSIONS.skillstream")
	if err := ajs.DeleteStream(short(), "SESSIONS"); err == nil {
		t.Error("acme's administrator deleted SESSIONS")
	}
	av.wait(t, "admin deleting the stream", "$JS.API.STREAM.DELETE.SESSIONS")

	// A third tenant, pushed while the server runs.
	initech := operator.NewTenant(op, lib, "initech")
	if _, err := nats.Connect(srv.URL(), nats.UserCredentials(initech.Processor)); err == nil {
		t.Fatal("a tenant not pushed yet connects")
	}
	for _, a := range []*operator.Account{initech.Account, initech.Workers} {
		if err := srv.Push(a); err != nil {
			t.Fatal(err)
		}
	}
	inc, _ := connect(t, srv.URL(), initech.Processor)
	ijs, _ := jetstream.New(inc)
	if _, err := ijs.AccountInfo(ctx); err != nil {
		t.Fatalf("initech's JetStream: %v", err)
	}
}
