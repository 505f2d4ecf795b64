// Package embedded starts the NATS server with JetStream that serve,
// bench, demo and the session readers run inside their own process when
// no cluster is named: one store directory, an optional client listener,
// the server's logs on slog, and connections without a socket.
package embedded

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// MaxPayload is the embedded server's largest message: room for a
// maximal 1 MiB trigger plus headers, and for tool results carrying large
// skill bodies.
const MaxPayload = 8 << 20

// StartupTimeout bounds how long the embedded server may take to start.
const StartupTimeout = 30 * time.Second

// Options describe the server to start.
type Options struct {
	Name     string // server name
	Listen   string // client host:port (port 0: a free one); "" means in-process connections only
	StoreDir string // JetStream store directory
	// Mappings are subject mappings of the server's global account, each
	// a source and its destination (e.g. events.PartitionMapping's).
	Mappings [][2]string
}

// Start starts a JetStream-enabled NATS server and waits until it accepts
// connections. The caller owns it: Shutdown, then WaitForShutdown.
func Start(o Options, log *slog.Logger) (*server.Server, error) {
	store, err := filepath.Abs(o.StoreDir)
	if err != nil {
		return nil, fmt.Errorf("embedded NATS store %s: %w", o.StoreDir, err)
	}
	opts := &server.Options{
		ServerName: o.Name,
		JetStream:  true,
		// Storage is accounted against this, not against 75% of the disk
		// that happens to be free: the session stream reserves its byte
		// limit (10 GiB by default) when it is created.
		JetStreamMaxStore: server.JetStreamMaxStoreDefault,
		StoreDir:          store,
		MaxPayload:        MaxPayload,
		NoSigs:            true, // signals belong to the run group
	}
	if len(o.Mappings) > 0 {
		// The global account, as a configuration's top-level mappings
		// block makes it.
		g := server.NewAccount(server.DEFAULT_GLOBAL_ACCOUNT)
		for _, m := range o.Mappings {
			if err := g.AddMapping(m[0], m[1]); err != nil {
				return nil, fmt.Errorf("embedded NATS server: mapping %s to %s: %w", m[0], m[1], err)
			}
		}
		opts.Accounts = append(opts.Accounts, g)
	}
	if o.Listen == "" {
		opts.DontListen = true
	} else if err := listenOn(opts, o.Listen); err != nil {
		return nil, err
	}
	return start(opts, log)
}

// listenOn sets opts' client address to listen (host:port, port 0: a free
// one).
func listenOn(opts *server.Options, listen string) error {
	host, portText, err := net.SplitHostPort(listen)
	if err != nil {
		return fmt.Errorf("embedded NATS listen address %q: %w", listen, err)
	}
	port, err := net.LookupPort("tcp", portText)
	if err != nil {
		return fmt.Errorf("embedded NATS listen address %q: %w", listen, err)
	}
	if port == 0 {
		port = server.RANDOM_PORT // for nats-server, 0 would mean 4222
	}
	opts.Host, opts.Port = host, port
	return nil
}

// StartConfig starts a NATS server from the configuration file path, as
// nats-server -c path would, and waits until it accepts connections;
// storeDir (nats-server's -sd) and listen, when given, replace the file's
// store_dir and listen. Before the server reads the file, every variable
// it names without defining is checked at once (CheckVariables), where
// the server would stop at the first. The caller owns the server.
func StartConfig(path, storeDir, listen string, lookup func(string) (string, bool), log *slog.Logger) (*server.Server, error) {
	text, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("NATS configuration: %w", err)
	}
	if err := CheckVariables(Variables(string(text)), lookup); err != nil {
		return nil, fmt.Errorf("NATS configuration %s: %w", path, err)
	}
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		return nil, fmt.Errorf("NATS configuration %s: %w", path, err)
	}
	switch {
	case storeDir != "":
		if opts.StoreDir, err = filepath.Abs(storeDir); err != nil {
			return nil, fmt.Errorf("NATS store %s: %w", storeDir, err)
		}
	case opts.StoreDir == "":
		return nil, fmt.Errorf("NATS configuration %s names no store_dir: give the JetStream store directory with -sd DIR", path)
	}
	if !opts.JetStream {
		return nil, fmt.Errorf("NATS configuration %s: JetStream is not enabled (add a jetstream block)", path)
	}
	if listen != "" {
		if err := listenOn(opts, listen); err != nil {
			return nil, err
		}
	}
	opts.NoSigs = true // signals belong to the caller
	return start(opts, log)
}

// start starts the server of opts and waits until it serves JetStream.
func start(opts *server.Options, log *slog.Logger) (*server.Server, error) {
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded NATS server: %w", err)
	}
	logs := &serverLog{log: log.With("component", "nats-server")}
	srv.SetLoggerV2(logs, false, false, false)
	srv.Start()

	deadline := time.Now().Add(StartupTimeout)
	for !srv.ReadyForConnections(25 * time.Millisecond) {
		if msg := logs.fatal(); msg != "" || time.Now().After(deadline) {
			srv.Shutdown()
			srv.WaitForShutdown()
			if msg == "" {
				msg = fmt.Sprintf("not ready within %v", StartupTimeout)
			}
			return nil, fmt.Errorf("embedded NATS server: %s", msg)
		}
	}
	if !srv.JetStreamEnabled() {
		srv.Shutdown()
		srv.WaitForShutdown()
		if msg := logs.fatal(); msg != "" {
			return nil, fmt.Errorf("embedded NATS server: %s", msg)
		}
		return nil, errors.New("embedded NATS server: JetStream did not start")
	}
	return srv, nil
}

// serverLog adapts the NATS server's logger to slog. Its chatty notices go
// to debug so that skillstream's own first line says where it listens; a
// fatal error is kept so that startup can report it instead of waiting.
type serverLog struct {
	log *slog.Logger

	mu        sync.Mutex
	lastFatal string
}

func (l *serverLog) fatal() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lastFatal
}

func (l *serverLog) Noticef(format string, v ...any) { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l *serverLog) Warnf(format string, v ...any)   { l.log.Warn(fmt.Sprintf(format, v...)) }
func (l *serverLog) Errorf(format string, v ...any)  { l.log.Error(fmt.Sprintf(format, v...)) }
func (l *serverLog) Debugf(format string, v ...any)  { l.log.Debug(fmt.Sprintf(format, v...)) }
func (l *serverLog) Tracef(format string, v ...any)  {}
func (l *serverLog) Fatalf(format string, v ...any) {
	msg := fmt.Sprintf(format, v...)
	l.mu.Lock()
	l.lastFatal = msg
	l.mu.Unlock()
	l.log.Error(msg)
}

// Connect connects to an embedded server without a socket.
func Connect(srv *server.Server, name string, opts ...nats.Option) (*nats.Conn, error) {
	nc, err := nats.Connect("", append([]nats.Option{nats.InProcessServer(srv), nats.Name(name)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("connect to embedded NATS server: %w", err)
	}
	return nc, nil
}

// URL is the client URL of an embedded server listening on TCP.
func URL(srv *server.Server) string {
	if a, ok := srv.Addr().(*net.TCPAddr); ok {
		return "nats://" + net.JoinHostPort(a.IP.String(), strconv.Itoa(a.Port))
	}
	return srv.ClientURL()
}
