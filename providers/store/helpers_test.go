package store_test

import (
	"io"
	"log/slog"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/providers/store"
)

func newLogger(w io.Writer) *slog.Logger { return slog.New(slog.NewTextHandler(w, nil)) }

func publisherWithHook(t testing.TB, js jetstream.JetStream, hook func()) *store.Publisher {
	t.Helper()
	pb := publisher(t, js, store.Config{})
	store.SetBeforeWrite(pb, hook)
	return pb
}

// tcpServer is a JetStream server on a loopback port that a test can stop
// and start again on the same port and store, so clients reconnect.
type tcpServer struct {
	srv  *server.Server
	port int
	url  string
}

func startTCP(t testing.TB, dir string, port int) *tcpServer {
	t.Helper()
	if port == 0 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		port = l.Addr().(*net.TCPAddr).Port
		l.Close()
	}
	srv, err := server.NewServer(&server.Options{
		ServerName: "restartable", JetStream: true, StoreDir: dir,
		Host: "127.0.0.1", Port: port, NoLog: true, NoSigs: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	srv.Start()
	if !srv.ReadyForConnections(10 * time.Second) {
		t.Fatal("server not ready")
	}
	s := &tcpServer{srv: srv, port: port, url: "nats://127.0.0.1:" + strconv.Itoa(port)}
	t.Cleanup(s.stop)
	return s
}

func (s *tcpServer) stop() {
	s.srv.Shutdown()
	s.srv.WaitForShutdown()
}

func connectTCP(t testing.TB, url string) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(url, nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}
