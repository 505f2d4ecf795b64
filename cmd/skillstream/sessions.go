package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/processor/embedded"
	"github.com/skillstream/skillstream/processor/partition"
)

// The session readers (export, replay --live, history --session) read
// session logs where serve writes them. They take the part of serve's
// configuration that says where that is - NATS and the stream - and none of
// its processing settings.

// readerServerName names the embedded server a reader opens a store with.
const readerServerName = "skillstream-reader"

// readerFlags registers where session logs are read from: NATS, the stream
// and subject prefix, and logging.
func (c *Config) readerFlags(cmd *command) {
	cmd.group("NATS (the --data store by default)")
	cmd.pick(c.natsFlags, "listen", "data", "nats-url", "nats-user", "nats-password", "nats-token",
		"nats-nkey", "nats-creds", "nats-tls-ca", "nats-tls-cert", "nats-tls-key", "tenants", "tenant")
	cmd.fs.Lookup("listen").Usage = "client `address` of a running serve's embedded server; while it answers, --data is not opened"
	cmd.fs.Lookup("data").Usage = "JetStream store `directory` to read (serve's --data) when no --nats-url is given"
	cmd.group("Stream")
	cmd.pick(c.streamFlags, "stream", "prefix")
	c.layoutFlag(cmd)
	c.partitionsFlag(cmd)
	c.opsFlags(cmd, false)
}

// validateReader checks what readerFlags registers, in the order an
// operator would fix it.
func (c *Config) validateReader() error {
	if err := c.validateLog(); err != nil {
		return err
	}
	if err := c.validateNATS(); err != nil {
		return err
	}
	return c.validateStream()
}

// validateNATS checks how NATS is reached: the embedded server's --listen
// and --data, or --nats-url with one authentication method and readable
// key and certificate files.
func (c *Config) validateNATS() error {
	if c.Tenants != "" {
		if c.NATSURL == "" {
			return usagef("--tenants needs --nats-url: tenants are accounts of a NATS server you configure (the embedded server has none)")
		}
		for _, f := range []struct{ name, v string }{
			{"--nats-user", c.NATSUser}, {"--nats-password", c.NATSPassword}, {"--nats-token", c.NATSToken},
			{"--nats-nkey", c.NATSNKey}, {"--nats-creds", c.NATSCreds},
		} {
			if f.v != "" {
				return usagef("%s is not used with --tenants: the tenants file gives each tenant's credentials", f.name)
			}
		}
		if c.serveTenants {
			if c.Tenant != "" {
				return usagef("serve serves every tenant of --tenants; --tenant is for the other commands")
			}
			f, err := loadTenants(c.Tenants)
			if err != nil {
				return err
			}
			// MCP tokens only when serve serves MCP.
			need := f.everyone(c.MCP.Listen != "")
			need.console = c.Console.Listen != ""
			if err := f.checkSecrets(need); err != nil {
				return err
			}
		} else if err := c.useTenant(); err != nil {
			return err
		}
	} else if c.Tenant != "" {
		return usagef("--tenant %s needs --tenants FILE (the file that names the tenants and their credentials)", c.Tenant)
	}
	if c.NATSURL == "" {
		if err := checkAddr("--listen", c.Listen); err != nil {
			return err
		}
		if c.Data == "" {
			return usagef("--data must name a directory for the embedded server's store")
		}
		for _, f := range []struct{ name, v string }{
			{"--nats-user", c.NATSUser}, {"--nats-password", c.NATSPassword}, {"--nats-token", c.NATSToken},
			{"--nats-nkey", c.NATSNKey}, {"--nats-creds", c.NATSCreds}, {"--nats-tls-ca", c.NATSTLSCA},
			{"--nats-tls-cert", c.NATSTLSCert}, {"--nats-tls-key", c.NATSTLSKey},
		} {
			if f.v != "" {
				return usagef("%s applies to --nats-url only; the embedded server needs no credentials", f.name)
			}
		}
		return nil
	}
	methods := 0
	for _, set := range []bool{c.NATSUser != "" || c.NATSPassword != "", c.NATSToken != "", c.NATSNKey != "", c.NATSCreds != ""} {
		if set {
			methods++
		}
	}
	if methods > 1 {
		return usagef("choose one of --nats-user/--nats-password, --nats-token, --nats-nkey and --nats-creds")
	}
	if c.NATSPassword != "" && c.NATSUser == "" {
		return usagef("--nats-password needs --nats-user")
	}
	if (c.NATSTLSCert == "") != (c.NATSTLSKey == "") {
		return usagef("--nats-tls-cert and --nats-tls-key go together")
	}
	for _, f := range []struct{ name, path string }{
		{"--nats-nkey", c.NATSNKey}, {"--nats-creds", c.NATSCreds}, {"--nats-tls-ca", c.NATSTLSCA},
		{"--nats-tls-cert", c.NATSTLSCert}, {"--nats-tls-key", c.NATSTLSKey},
	} {
		if f.path == "" {
			continue
		}
		if _, err := os.Stat(f.path); err != nil {
			return usagef("%s %s: %v", f.name, f.path, errors.Unwrap(err))
		}
	}
	return nil
}

// validateStream checks --stream, --prefix and --session-layout as given.
func (c *Config) validateStream() error {
	if err := c.validateLayout(); err != nil {
		return err
	}
	p := processorDefaults()
	p.Stream, p.Prefix = c.Stream, c.Prefix
	if err := p.Validate(); err != nil {
		return usageError{msg: err.Error()}
	}
	return nil
}

// openSessions validates the reader configuration and connects to where
// session logs live, to read them: --nats-url when given, else the --data
// store, opened by an embedded server of our own that does not listen. When
// a server answers on --listen (a running serve, most likely on that very
// store) the logs are read through it instead, never by opening the store
// a second time. close releases everything.
func (a *app) openSessions(c *Config) (js jetstream.JetStream, close func(), err error) {
	if err := c.validateReader(); err != nil {
		return nil, nil, err
	}
	log := c.newLogger(a.stderr)
	var nc *nats.Conn
	switch {
	case c.NATSURL != "":
		opts, err := c.connectOptions(log)
		if err != nil {
			return nil, nil, err
		}
		if nc, err = nats.Connect(c.NATSURL, append(opts, nats.MaxReconnects(0))...); err != nil {
			return nil, nil, fmt.Errorf("connect to %s: %w", c.NATSURL, err)
		}
		close = nc.Close
	case serving(c.Listen):
		// A running serve, most likely on --data itself: read through it
		// (two servers on one store would corrupt it).
		url := "nats://" + c.Listen
		if nc, err = nats.Connect(url, nats.Name("skillstream reader"), nats.MaxReconnects(0)); err != nil {
			return nil, nil, fmt.Errorf("something answers on --listen %s but reading through it failed (%w); stop it to open --data %s, or name the cluster with --nats-url", c.Listen, err, c.Data)
		}
		fmt.Fprintf(a.stderr, "reading through the server running on --listen %s (--data %s is not opened)\n", c.Listen, c.Data)
		close = nc.Close
	default:
		fi, err := os.Stat(c.Data)
		if err != nil || !fi.IsDir() {
			return nil, nil, usagef("--data %s: no such store directory (and nothing serves on --listen %s)", c.Data, c.Listen)
		}
		quiet := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelError}))
		srv, err := embedded.Start(embedded.Options{Name: readerServerName, StoreDir: c.Data}, quiet)
		if err != nil {
			return nil, nil, err
		}
		if nc, err = embedded.Connect(srv, "skillstream reader"); err != nil {
			srv.Shutdown()
			srv.WaitForShutdown()
			return nil, nil, err
		}
		close = func() {
			nc.Close()
			srv.Shutdown()
			srv.WaitForShutdown()
		}
	}
	js, err = jetstream.New(nc)
	if err != nil {
		close()
		return nil, nil, fmt.Errorf("jetstream context: %w", err)
	}
	if c.Partitions >= 2 {
		// A count that does not match the streams would read the wrong
		// stream for some sessions: refuse it before reading any.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		err := partition.Check(ctx, js, c.Stream, c.Partitions)
		cancel()
		if err != nil {
			close()
			return nil, nil, inputf("%v", err)
		}
	}
	return js, close, nil
}

// partitionHint is err, or when it is the error of a reader without
// --partitions that found no stream where the server holds partitioned
// sessions, an error that says to give --partitions.
func (c *Config) partitionHint(ctx context.Context, js jetstream.JetStream, err error) error {
	if err == nil || c.Partitions >= 2 {
		return err
	}
	if m := partition.Check(ctx, js, c.Stream, 0); errors.Is(m, partition.ErrMismatch) {
		return inputf("%v", m)
	}
	return err
}

// sessionNotFound is the error of a reader that found no event of session
// sid in stream, where --partitions places it: it names where the session
// is instead when another session stream of the server holds it.
func (c *Config) sessionNotFound(ctx context.Context, js jetstream.JetStream, sid string) error {
	stream, prefix := c.sessionPlace(sid)
	if err := partition.Elsewhere(ctx, js, c.Stream, c.Prefix, c.layout(), sid, c.Partitions, partition.Place{Stream: stream, Prefix: prefix}); errors.Is(err, partition.ErrMismatch) {
		return inputf("%v", err)
	}
	if c.Partitions >= 2 {
		return fmt.Errorf("session %s has no events in stream %s (its partition of %d)", sid, stream, c.Partitions)
	}
	return fmt.Errorf("session %s has no events in stream %s", sid, stream)
}

// serving reports whether something accepts connections on addr (a running
// `skillstream serve` with its embedded server).
func serving(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, 300*time.Millisecond)
	if err != nil {
		return false
	}
	conn.Close()
	return true
}
