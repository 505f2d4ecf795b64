package embedded

import (
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// An in-process server takes no TCP clients, keeps JetStream data in its
// store directory and accepts messages up to MaxPayload.
func TestStartInProcess(t *testing.T) {
	dir := t.TempDir()
	srv, err := Start(Options{Name: "t", StoreDir: dir}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
	if srv.Addr() != nil {
		t.Fatalf("server listens on %v without Listen", srv.Addr())
	}
	nc, err := Connect(srv, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if got := nc.MaxPayload(); got != MaxPayload {
		t.Fatalf("max payload %d, want %d", got, MaxPayload)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, "s.x", []byte("hello")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "jetstream")); err != nil {
		t.Fatalf("store directory holds no JetStream data: %v", err)
	}
}

// Port 0 means a free port (not nats-server's 4222), and URL names it.
func TestStartListenFreePort(t *testing.T) {
	srv, err := Start(Options{Name: "t", Listen: "127.0.0.1:0", StoreDir: t.TempDir()}, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
	url := URL(srv)
	if !strings.HasPrefix(url, "nats://127.0.0.1:") || strings.HasSuffix(url, ":4222") || strings.HasSuffix(url, ":0") {
		t.Fatalf("URL %q, want a free loopback port", url)
	}
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	nc.Close()
}

// Bad input fails at start with an error naming what is wrong.
func TestStartBadInput(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		o    Options
		want string
	}{
		{"no port", Options{Listen: "localhost", StoreDir: t.TempDir()}, "listen address"},
		{"bad port", Options{Listen: "127.0.0.1:\x00x", StoreDir: t.TempDir()}, "listen address"},
		{"port in use", Options{Listen: busy.Addr().String(), StoreDir: t.TempDir()}, "address already in use"},
		{"store is a file", Options{StoreDir: file}, "embedded NATS server"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := Start(tc.o, quiet())
			if err == nil {
				srv.Shutdown()
				srv.WaitForShutdown()
				t.Fatalf("started; want an error containing %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err %q, want it to contain %q", err, tc.want)
			}
		})
	}
}
