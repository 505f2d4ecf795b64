package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// embeddedMaxPayload is the embedded server's largest message: room for a
// maximal 1 MiB trigger plus headers, and for tool results carrying large
// skill bodies.
const embeddedMaxPayload = 8 << 20

// startupTimeout bounds how long the embedded server may take to start.
const startupTimeout = 30 * time.Second

// embeddedOptions describe the embedded server to start.
type embeddedOptions struct {
	name     string
	listen   string // host:port; "" means in-process connections only
	storeDir string
}

// startEmbedded starts a JetStream-enabled NATS server and waits until it
// accepts connections. The caller owns it: Shutdown, then WaitForShutdown.
func startEmbedded(o embeddedOptions, log *slog.Logger) (*server.Server, error) {
	store, err := filepath.Abs(o.storeDir)
	if err != nil {
		return nil, fmt.Errorf("embedded NATS store %s: %w", o.storeDir, err)
	}
	opts := &server.Options{
		ServerName: o.name,
		JetStream:  true,
		StoreDir:   store,
		MaxPayload: embeddedMaxPayload,
		NoSigs:     true, // signals belong to the run group
	}
	if o.listen == "" {
		opts.DontListen = true
	} else {
		host, portText, err := net.SplitHostPort(o.listen)
		if err != nil {
			return nil, fmt.Errorf("embedded NATS listen address %q: %w", o.listen, err)
		}
		port, err := net.LookupPort("tcp", portText)
		if err != nil {
			return nil, fmt.Errorf("embedded NATS listen address %q: %w", o.listen, err)
		}
		if port == 0 {
			port = server.RANDOM_PORT // for nats-server, 0 would mean 4222
		}
		opts.Host, opts.Port = host, port
	}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded NATS server: %w", err)
	}
	logs := &serverLog{log: log.With("component", "nats-server")}
	srv.SetLoggerV2(logs, false, false, false)
	srv.Start()

	deadline := time.Now().Add(startupTimeout)
	for !srv.ReadyForConnections(25 * time.Millisecond) {
		if msg := logs.fatal(); msg != "" || time.Now().After(deadline) {
			srv.Shutdown()
			srv.WaitForShutdown()
			if msg == "" {
				msg = fmt.Sprintf("not ready within %v", startupTimeout)
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

// connectOptions builds the client options for --nats-url from the
// configuration. The connection reconnects forever; it is closed by the
// command that opened it.
func (c *Config) connectOptions(log *slog.Logger) ([]nats.Option, error) {
	opts := []nats.Option{
		nats.Name("skillstream " + c.ToolOwner),
		nats.MaxReconnects(-1),
		nats.DisconnectErrHandler(func(_ *nats.Conn, err error) {
			if err != nil {
				log.Warn("NATS disconnected", "err", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			log.Info("NATS reconnected", "url", nc.ConnectedUrlRedacted())
		}),
		nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			log.Warn("NATS asynchronous error", "subject", subject, "err", err)
		}),
	}
	if c.InboxPrefix != "" {
		opts = append(opts, nats.CustomInboxPrefix(c.InboxPrefix))
	}
	switch {
	case c.NATSUser != "":
		opts = append(opts, nats.UserInfo(c.NATSUser, c.NATSPassword))
	case c.NATSToken != "":
		opts = append(opts, nats.Token(c.NATSToken))
	case c.NATSNKey != "":
		o, err := nats.NkeyOptionFromSeed(c.NATSNKey)
		if err != nil {
			return nil, fmt.Errorf("read --nats-nkey %s: %w", c.NATSNKey, err)
		}
		opts = append(opts, o)
	case c.NATSCreds != "":
		opts = append(opts, nats.UserCredentials(c.NATSCreds))
	}
	if c.NATSTLSCA != "" {
		opts = append(opts, nats.RootCAs(c.NATSTLSCA))
	}
	if c.NATSTLSCert != "" {
		opts = append(opts, nats.ClientCert(c.NATSTLSCert, c.NATSTLSKey))
	}
	return opts, nil
}

// inProcess connects to an embedded server without a socket.
func inProcess(srv *server.Server, name string, opts ...nats.Option) (*nats.Conn, error) {
	nc, err := nats.Connect("", append([]nats.Option{nats.InProcessServer(srv), nats.Name(name)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("connect to embedded NATS server: %w", err)
	}
	return nc, nil
}

// listenURL is the client URL of an embedded server listening on TCP.
func listenURL(srv *server.Server) string {
	if a, ok := srv.Addr().(*net.TCPAddr); ok {
		return "nats://" + net.JoinHostPort(a.IP.String(), strconv.Itoa(a.Port))
	}
	return srv.ClientURL()
}
