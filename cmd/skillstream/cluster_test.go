package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
)

// tokenServer is an existing NATS server with JetStream that requires token.
type tokenServer struct {
	srv *server.Server
	url string
}

func startTokenServer(t testing.TB, token string) *tokenServer {
	t.Helper()
	srv, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true, StoreDir: t.TempDir(),
		Authorization: token, NoLog: true, NoSigs: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	if !srv.ReadyForConnections(30 * time.Second) {
		t.Fatal("NATS server not ready")
	}
	return &tokenServer{srv: srv, url: srv.ClientURL()}
}

// TestServeNATSURLConsumerGroup points two serve instances at an existing
// NATS server that wants a token: no embedded server starts, both join one
// consumer group, and every trigger is answered exactly once.
func TestServeNATSURLConsumerGroup(t *testing.T) {
	const token = "s3cret-token"
	ns := startTokenServer(t, token)
	root := spec4Skills(t)
	cwd := t.TempDir()
	wd := t.TempDir()
	t.Chdir(wd) // a stray embedded store would appear here

	t.Setenv("SKILLSTREAM_NATS_URL", ns.url) // from the environment, like a fleet would
	args := []string{"serve", "--nats-token", token, "--no-bundled", "--user-skills-dir=", "--skills-dir", root, "--workers", "2"}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	codes := make([]int, 2)
	logs := []*syncBuffer{{}, {}}
	for i := range codes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = Main(ctx, args, io.Discard, logs[i])
		}()
	}
	stopped := false
	stop := func() {
		if !stopped {
			stopped = true
			cancel()
			wg.Wait()
		}
	}
	t.Cleanup(stop)

	nc, err := nats.Connect(ns.url, nats.Token(token))
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "both instances consuming", func() error {
		for i, l := range logs {
			if !strings.Contains(l.String(), "processor started") {
				return fmt.Errorf("instance %d not started:\n%s", i, l)
			}
		}
		return nil
	})

	reqCtx, reqCancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer reqCancel()
	for i := range 10 {
		w := newTestWorker(t, nc, fmt.Sprintf("group-%d", i))
		d, err := w.PreStep(reqCtx, "1", cwd)
		if err != nil || d.Outcome != events.OutcomeAppended {
			t.Fatalf("session %d: %+v, %v", i, d, err)
		}
		r, err := w.Call(reqCtx, "c1", cwd, "a-skill")
		if err != nil || r.IsError {
			t.Fatalf("session %d call: %+v, %v", i, r, err)
		}
	}
	outputs, _ := streamOutputs(t, js)
	if len(outputs) != 20 {
		t.Errorf("%d triggers with outputs, want 20", len(outputs))
	}
	for k, n := range outputs {
		if n != 1 {
			t.Errorf("%s: %d outputs", k, n)
		}
	}

	stop()
	for i, code := range codes {
		if code != exitOK {
			t.Errorf("instance %d exit %d:\n%s", i, code, logs[i])
		}
		first := strings.SplitN(logs[i].String(), "\n", 2)[0]
		if !strings.Contains(first, "skillstream serving") || strings.Contains(first, "embedded") || strings.Contains(first, token) {
			t.Errorf("instance %d first line: %s", i, first)
		}
	}
	if _, err := os.Stat(filepath.Join(wd, defaultData)); !os.IsNotExist(err) {
		t.Errorf("an embedded store was created with --nats-url: %v", err)
	}
}

func TestServeNATSURLBadToken(t *testing.T) {
	ns := startTokenServer(t, "right")
	code, _, stderr := runMain(t, "serve", "--nats-url", ns.url, "--nats-token", "wrong", "--no-bundled", "--user-skills-dir=")
	if code != exitFailure || !strings.Contains(stderr, "connect to "+ns.url) || !strings.Contains(strings.ToLower(stderr), "authorization") {
		t.Errorf("exit %d, stderr:\n%s", code, stderr)
	}
}
