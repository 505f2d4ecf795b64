package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
	"github.com/skillstream/skillstream/natstest"
)

// runServeAt runs Main(args) in-process until stopped (or the test ends),
// with its metrics on a port of its own; it does not wait for anything.
func runServeAt(t *testing.T, natsURL string, args ...string) *served {
	t.Helper()
	mport := freePort(t)
	s := &served{t: t, url: natsURL, metrics: fmt.Sprintf("http://127.0.0.1:%d", mport), stderr: &syncBuffer{}, done: make(chan int, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	s.cancel = cancel
	args = append([]string{"serve", "--nats-url", natsURL, "--metrics-listen", "127.0.0.1:" + strconv.Itoa(mport),
		"--no-bundled", "--user-skills-dir=", "--workers", "4", "--log-format", "json"}, args...)
	go func() { s.done <- Main(ctx, args, io.Discard, s.stderr) }()
	t.Cleanup(func() { s.stop() })
	return s
}

// exited reports serve's exit status if it has exited.
func (s *served) exited() (int, bool) {
	select {
	case code := <-s.done:
		s.done <- code
		return code, true
	default:
		return 0, false
	}
}

// waitLog waits until serve's log holds want, failing early if it exits.
func (s *served) waitLog(want string) {
	s.t.Helper()
	eventually(s.t, 45*time.Second, "serve logs "+want, func() error {
		if strings.Contains(s.stderr.String(), want) {
			return nil
		}
		if code, ok := s.exited(); ok {
			s.t.Fatalf("serve exited %d before logging %q:\n%s", code, want, s.stderr)
		}
		return errors.New("not yet")
	})
}

// metric reads one sample of serve's /metrics, -1 when absent.
func (s *served) metric(name string) float64 {
	s.t.Helper()
	_, body, err := s.get("/metrics")
	if err != nil {
		s.t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindStringSubmatch(body)
	if m == nil {
		return -1
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// TestTenantFailsAlone: with the shipped multi-tenant files, a tenant's
// administrator cannot delete or replace the processors' consumer or
// stream (the server refuses); and when that consumer is sabotaged anyway
// (here by a user who still may, the tenant's processor user), serve still
// starts, serves the other tenant, reports the broken one not ready in
// /readyz and in skillstream_tenant_up, and serves it once the sabotage is
// undone, without a restart.
func TestTenantFailsAlone(t *testing.T) {
	natsURL, pw := tenantServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	tools := []events.Tool{client.SkillTool("skillstream")}
	step := func(c *client.Client, sid, step string) error {
		rctx, rcancel := context.WithTimeout(ctx, 20*time.Second)
		defer rcancel()
		d, err := c.PreStep(rctx, events.PreStep{Session: sid, Step: step, Tools: tools})
		if err == nil && d.Outcome != events.OutcomeAppended && d.Outcome != events.OutcomeEmpty {
			err = fmt.Errorf("outcome %s", d.Outcome)
		}
		return err
	}

	// A first serve provisions both tenants' streams and consumers.
	first := runServeAt(t, natsURL, "--tenants", tenantsYAMLPath(t))
	first.waitLog(`"msg":"skillstream serving"`)
	acmeWorker := tenantWorker(t, natsURL, "acme-worker-1", pw["acme-worker-1"])
	globexWorker := tenantWorker(t, natsURL, "globex-worker-1", pw["globex-worker-1"])
	if err := step(acmeWorker, "acme-s1", "1"); err != nil {
		t.Fatal(err)
	}

	// (a) acme's administrator, with the shipped file, cannot touch them.
	v := &violations{}
	admin, err := nats.Connect(userURL(t, natsURL, "acme-admin", pw["acme-admin"]), nats.ErrorHandler(v.handler))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	ajs, err := jetstream.New(admin)
	if err != nil {
		t.Fatal(err)
	}
	short := func() (context.Context, context.CancelFunc) { return context.WithTimeout(ctx, time.Second) }
	for _, try := range []struct {
		subject string
		do      func(context.Context) error
	}{
		{"$JS.API.CONSUMER.DELETE.SESSIONS.skillstream", func(c context.Context) error { return ajs.DeleteConsumer(c, "SESSIONS", "skillstream") }},
		{"$JS.API.CONSUMER.CREATE.SESSIONS.skillstream", func(c context.Context) error {
			_, err := ajs.CreateOrUpdateConsumer(c, "SESSIONS", jetstream.ConsumerConfig{Durable: "skillstream", AckPolicy: jetstream.AckExplicitPolicy})
			return err
		}},
		{"$JS.API.CONSUMER.DURABLE.CREATE.SESSIONS.skillstream", func(c context.Context) error {
			_, err := admin.RequestWithContext(c, "$JS.API.CONSUMER.DURABLE.CREATE.SESSIONS.skillstream",
				[]byte(`{"stream_name":"SESSIONS","config":{"durable_name":"skillstream","deliver_subject":"sabotage","ack_policy":"explicit"}}`))
			return err
		}},
		{"$JS.API.STREAM.DELETE.SESSIONS", func(c context.Context) error { return ajs.DeleteStream(c, "SESSIONS") }},
		{"$JS.API.STREAM.UPDATE.SESSIONS", func(c context.Context) error {
			_, err := ajs.UpdateStream(c, jetstream.StreamConfig{Name: "SESSIONS", Subjects: []string{"ev.>"}, MaxMsgs: 1})
			return err
		}},
		{"$JS.API.STREAM.PURGE.SESSIONS", func(c context.Context) error {
			st, err := ajs.Stream(c, "SESSIONS")
			if err == nil {
				err = st.Purge(c)
			}
			return err
		}},
	} {
		c, cc := short()
		err := try.do(c)
		cc()
		if err == nil {
			t.Errorf("acme-admin: %s was accepted", try.subject)
		}
		v.wait(t, "acme-admin refused "+try.subject, try.subject)
	}
	// What its commands need still works: reading the stream, a consumer
	// of its own (as sessions export and usage make).
	if _, err := ajs.CreateConsumer(ctx, "SESSIONS", jetstream.ConsumerConfig{AckPolicy: jetstream.AckNonePolicy, InactiveThreshold: time.Minute}); err != nil {
		t.Errorf("acme-admin: a consumer of its own: %v", err)
	}
	if err := step(acmeWorker, "acme-s1", "2"); err != nil {
		t.Fatalf("acme after its administrator's attempts: %v", err)
	}
	if code := first.stop(); code != exitOK {
		t.Fatalf("first serve exit %d:\n%s", code, first.stderr)
	}

	// (b) A user who still may (acme's processor user) replaces the
	// processors' pull consumer with a push consumer of the same name.
	pnc, err := nats.Connect(userURL(t, natsURL, "acme-processor", pw["acme-processor"]), nats.CustomInboxPrefix("_SKILLSTREAM_INBOX"))
	if err != nil {
		t.Fatal(err)
	}
	defer pnc.Close()
	pjs, err := jetstream.New(pnc)
	if err != nil {
		t.Fatal(err)
	}
	if err := pjs.DeleteConsumer(ctx, "SESSIONS", "skillstream"); err != nil {
		t.Fatal(err)
	}
	if _, err := pjs.CreateOrUpdateConsumer(ctx, "SESSIONS", jetstream.ConsumerConfig{Durable: "skillstream",
		DeliverSubject: "skillstream.sabotage", AckPolicy: jetstream.AckExplicitPolicy}); err != nil {
		t.Fatal(err)
	}

	s := runServeAt(t, natsURL, "--tenants", tenantsYAMLPath(t), "--start-retry-min", "50ms", "--start-retry-max", "200ms")
	s.waitLog(`"msg":"skillstream serving"`)
	if err := step(globexWorker, "globex-s1", "1"); err != nil {
		t.Fatalf("globex while acme cannot start: %v\n%s", err, s.stderr)
	}
	code, body, err := s.get("/readyz")
	if err != nil || code != http.StatusServiceUnavailable || !strings.Contains(body, "tenant acme: not ready") || !strings.Contains(body, "tenant globex: ready") {
		t.Fatalf("/readyz while acme cannot start: %d %q %v", code, body, err)
	}
	if up := s.metric(`skillstream_tenant_up{tenant="acme"}`); up != 0 {
		t.Errorf("acme up %v, want 0", up)
	}
	if up := s.metric(`skillstream_tenant_up{tenant="globex"}`); up != 1 {
		t.Errorf("globex up %v, want 1", up)
	}
	eventually(t, 10*time.Second, "acme's failed starts counted", func() error {
		if n := s.metric(`skillstream_tenant_start_failures_total{tenant="acme"}`); n < 2 {
			return fmt.Errorf("%v failed starts", n)
		}
		return nil
	})
	if !strings.Contains(s.stderr.String(), `"msg":"not serving: retrying","tenant":"acme"`) || !strings.Contains(s.stderr.String(), `"tenants_not_serving":["acme"]`) {
		t.Errorf("the log does not say acme is not served:\n%s", s.stderr)
	}

	// The sabotage undone, acme is served by the same serve.
	if err := pjs.DeleteConsumer(ctx, "SESSIONS", "skillstream"); err != nil {
		t.Fatal(err)
	}
	s.waitLog(`"msg":"tenant serving","tenant":"acme"`)
	if err := step(acmeWorker, "acme-s2", "1"); err != nil {
		t.Fatalf("acme once its consumer is back: %v", err)
	}
	eventually(t, 10*time.Second, "/readyz ready", func() error { return s.ready() })
	if up := s.metric(`skillstream_tenant_up{tenant="acme"}`); up != 1 {
		t.Errorf("acme up %v, want 1", up)
	}
}

// TestServeWaitsForJetStream: a serve started while its cluster has no
// JetStream meta leader (two of three members down, as during a restart
// of the cluster) does not exit: it retries, and serves once the members
// are back.
func TestServeWaitsForJetStream(t *testing.T) {
	c := natstest.StartCluster(t, 3)
	c.Stop(1)
	c.Stop(2)
	s := runServeAt(t, c.URL(0), "--start-retry-min", "50ms", "--start-retry-max", "500ms", "--start-timeout", "3s")
	s.waitLog(`"msg":"not serving: retrying"`)
	c.Restart(1)
	c.Restart(2)
	s.waitLog(`"msg":"skillstream serving"`)
	nc := s.connect(t)
	w := newTestWorker(t, nc, "after-the-election")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if d, err := w.PreStep(ctx, "1", ""); err != nil || d.Outcome != events.OutcomeEmpty {
		t.Fatalf("pre-step: %+v %v", d, err)
	}
}

// TestReadyzCachedAndGuarded: with --metrics-token-file, /metrics and
// /readyz refuse a request without the token (401) and /healthz does not;
// and however many /readyz calls come at once, serve asks the server for
// its consumer's info at most about once a second (counted on the
// server's API subject).
func TestReadyzCachedAndGuarded(t *testing.T) {
	srv := natstest.Start(t, natstest.WithTCP())
	token := "metrics-" + randomToken(t)
	tokenFile := filepath.Join(t.TempDir(), "metrics.token")
	if err := os.WriteFile(tokenFile, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"serve", "--nats-url", srv.URL(), "--metrics-token-file", tokenFile},
		{"serve", "--nats-url", srv.URL(), "--metrics-listen", quietAddr(t), "--metrics-token-file", tokenFile + ".missing"},
	} {
		if code, _, stderr := runMain(t, args...); code != exitUsage || !strings.Contains(stderr, "--metrics-token-file") {
			t.Errorf("%q: exit %d\n%s", args, code, stderr)
		}
	}
	s := runServeAt(t, srv.URL(), "--metrics-token-file", tokenFile)
	s.waitLog(`"msg":"skillstream serving"`)

	httpc := &http.Client{Timeout: 10 * time.Second}
	get := func(path, auth string) (int, string) {
		t.Helper()
		req, err := http.NewRequest("GET", s.metrics+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		if auth != "" {
			req.Header.Set("Authorization", auth)
		}
		resp, err := httpc.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, path := range []string{"/metrics", "/readyz"} {
		for _, auth := range []string{"", "Bearer wrong", "Basic " + token, token} {
			if code, body := get(path, auth); code != http.StatusUnauthorized || strings.Contains(body, "skillstream_") {
				t.Errorf("%s with %q: %d %q, want 401", path, auth, code, body)
			}
		}
	}
	if code, _ := get("/healthz", ""); code != http.StatusOK {
		t.Errorf("/healthz without a token: %d", code)
	}
	if code, body := get("/metrics", "Bearer "+token); code != http.StatusOK || !strings.Contains(body, `skillstream_tenant_up{tenant=""} 1`) {
		t.Errorf("/metrics with the token: %d\n%s", code, body)
	}

	// Every consumer info request of the account, counted where the
	// server takes it.
	nc := srv.Connect()
	var infos atomic.Int64
	sub, err := nc.Subscribe("$JS.API.CONSUMER.INFO.SESSIONS.skillstream", func(*nats.Msg) { infos.Add(1) })
	if err != nil {
		t.Fatal(err)
	}
	defer sub.Unsubscribe()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	const calls, callers = 2000, 16
	start := time.Now()
	var wg sync.WaitGroup
	var notReady atomic.Int64
	for range callers {
		wg.Go(func() {
			for range calls / callers {
				if code, _ := get("/readyz", "Bearer "+token); code != http.StatusOK {
					notReady.Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	got := infos.Load()
	// At most one per second of calls for readiness, and the processor's
	// own consumer watch (one every few seconds) besides.
	bound := int64(2*elapsed.Seconds()) + 4
	t.Logf("%d /readyz calls by %d callers in %v: %d consumer info requests at the server (bound %d)", calls, callers, elapsed.Round(time.Millisecond), got, bound)
	if got > bound {
		t.Errorf("%d consumer info requests for %d /readyz calls in %v, want at most %d", got, calls, elapsed, bound)
	}
	if n := notReady.Load(); n != 0 {
		t.Errorf("%d of %d calls not ready", n, calls)
	}
}
