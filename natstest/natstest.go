// Package natstest runs real NATS JetStream servers inside a test process, the
// way net/http/httptest runs HTTP servers: Start gives one in-process server
// with a temporary store, StartCluster a real multi-node JetStream cluster on
// the loopback interface whose nodes can be stopped and restarted. Everything
// is torn down by t.Cleanup.
package natstest

import (
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// readyTimeout bounds how long a server may take to accept connections or a
// cluster to elect its leaders.
const readyTimeout = 30 * time.Second

// Server is a running in-process JetStream server with one client connection.
type Server struct {
	*server.Server
	// Conn is connected to the server; it is closed at cleanup.
	Conn *nats.Conn
	// JS is a JetStream context over Conn.
	JS jetstream.JetStream

	t    testing.TB
	auth bool // started WithUsers: log in as adminUser by default
}

// Option changes how Start configures its server.
type Option func(*server.Options)

// WithTCP makes the server also listen for clients on a random loopback
// port, reachable at Server.URL (for example to run the nats CLI against it).
func WithTCP() Option {
	return func(o *server.Options) {
		o.DontListen = false
		o.Host = "127.0.0.1"
		o.Port = server.RANDOM_PORT
	}
}

// WithMaxPayload sets the server's maximum message payload.
func WithMaxPayload(n int32) Option {
	return func(o *server.Options) { o.MaxPayload = n }
}

// WithMappings gives the server's global account subject mappings, each a
// source and its destination, as a configuration's top-level mappings
// block does.
func WithMappings(mappings ...[2]string) Option {
	return func(o *server.Options) {
		g := server.NewAccount(server.DEFAULT_GLOBAL_ACCOUNT)
		for _, m := range mappings {
			if err := g.AddMapping(m[0], m[1]); err != nil {
				panic(fmt.Sprintf("natstest: mapping %s to %s: %v", m[0], m[1], err))
			}
		}
		o.Accounts = append(o.Accounts, g)
	}
}

// WithLogging routes the server's log output to the test log.
func WithLogging() Option {
	return func(o *server.Options) { o.NoLog = false }
}

// WithUsers makes the server require a user name and password and adds
// users (with their permissions, if any) to its global account, where
// JetStream runs. The connections of Start and Connect log in as an
// unrestricted user of natstest's own unless Connect is given
// nats.UserInfo for another one, so that a test can confine a client by
// real NATS permissions.
func WithUsers(users ...*server.User) Option {
	return func(o *server.Options) {
		o.Users = append(o.Users, &server.User{Username: adminUser, Password: adminPassword})
		o.Users = append(o.Users, users...)
	}
}

// The unrestricted user of a server started WithUsers.
const (
	adminUser     = "natstest"
	adminPassword = "natstest"
)

// Start runs an in-process JetStream server whose store lives in t.TempDir()
// and which, unless WithTCP is given, does not listen on any port. The
// returned connection goes through the in-process pipe.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	o := &server.Options{
		ServerName: "natstest",
		JetStream:  true,
		// Storage is accounted against this, not against 75% of the disk
		// that happens to be free: the session stream reserves its byte
		// limit (10 GiB by default) when it is created.
		JetStreamMaxStore: server.JetStreamMaxStoreDefault,
		StoreDir:          t.TempDir(),
		DontListen:        true,
		NoLog:             true,
		NoSigs:            true,
	}
	for _, opt := range opts {
		opt(o)
	}
	srv, err := server.NewServer(o)
	if err != nil {
		t.Fatalf("natstest: new server: %v", err)
	}
	if !o.NoLog {
		srv.SetLoggerV2(testLogger{t}, false, false, false)
	}
	srv.Start()
	t.Cleanup(func() {
		srv.Shutdown()
		srv.WaitForShutdown()
	})
	if !srv.ReadyForConnections(readyTimeout) {
		t.Fatalf("natstest: server not ready within %v", readyTimeout)
	}
	s := &Server{Server: srv, t: t, auth: len(o.Users) > 0}
	s.Conn = s.Connect()
	js, err := jetstream.New(s.Conn)
	if err != nil {
		t.Fatalf("natstest: jetstream: %v", err)
	}
	s.JS = js
	return s
}

// Connect opens another in-process client connection, closed at cleanup.
func (s *Server) Connect(opts ...nats.Option) *nats.Conn {
	s.t.Helper()
	base := []nats.Option{nats.InProcessServer(s.Server)}
	if s.auth {
		base = append(base, nats.UserInfo(adminUser, adminPassword))
	}
	opts = append(base, opts...)
	nc, err := nats.Connect("", opts...)
	if err != nil {
		s.t.Fatalf("natstest: connect: %v", err)
	}
	s.t.Cleanup(nc.Close)
	return nc
}

// URL is the client URL; it is only reachable over TCP when the server was
// started WithTCP.
func (s *Server) URL() string { return s.ClientURL() }

// testLogger forwards server logs to the test log.
type testLogger struct{ t testing.TB }

func (l testLogger) Noticef(format string, v ...any) { l.t.Logf("[INF] "+format, v...) }
func (l testLogger) Warnf(format string, v ...any)   { l.t.Logf("[WRN] "+format, v...) }
func (l testLogger) Fatalf(format string, v ...any)  { l.t.Logf("[FTL] "+format, v...) }
func (l testLogger) Errorf(format string, v ...any)  { l.t.Logf("[ERR] "+format, v...) }
func (l testLogger) Debugf(format string, v ...any)  { l.t.Logf("[DBG] "+format, v...) }
func (l testLogger) Tracef(format string, v ...any)  { l.t.Logf("[TRC] "+format, v...) }

// freePorts reserves n distinct loopback TCP ports by binding them all at
// once and releasing them together.
func freePorts(n int) ([]int, error) {
	ls := make([]net.Listener, 0, n)
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	ports := make([]int, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("reserve port: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(timeout time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		<-tick.C
	}
}
