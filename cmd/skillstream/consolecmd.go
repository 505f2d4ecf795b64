package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/processor/console"
	"github.com/skillstream/skillstream/processor/partition"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/store"
)

// defaultConsoleListen is where `skillstream console` listens.
const defaultConsoleListen = "127.0.0.1:8089"

// ConsoleConfig is the operator console's share of the configuration:
// console, and serve with --console-listen.
type ConsoleConfig struct {
	Listen string
	Hosts  []string // names people reach it by, besides loopback ones
	// The tokens of serve's console without tenants, decided at start
	// (made: a random operator token for this run).
	viewer, operator string
	made             bool
}

// consoleFlags registers the console's flags, listening on def by default
// (serve: off).
func (c *Config) consoleFlags(cmd *command, def, listenUsage string) {
	cmd.group("Operator console")
	cmd.cfgString(&c.Console.Listen, "console-listen", def, listenUsage)
	cmd.cfgList(&c.Console.Hosts, "console-host", "`host` name (with :port when not 80) people reach the console by besides loopback names; its Host check refuses others; repeatable")
}

func (a *app) consoleCommand() (*command, runFunc) {
	var c Config
	cmd := newCommand("console", "skillstream console [--console-listen ADDR] [flags]", `
Serve the operator console: web pages where a platform team sees one
tenant's skills (source, release and signature state, size, use), a
skill's revisions, diffs and actions (roll back, release, promote, pin),
usage plotted by hour and day, sessions step by step, and the fleet (the
members serving, the usage projection's lag, the sessions stream's limits
and use). It prints the console's URL on stdout and serves until
interrupted.

People sign in with a console token: SKILLSTREAM_CONSOLE_TOKEN (viewer:
every page) or SKILLSTREAM_CONSOLE_OPERATOR_TOKEN (operator: also the
actions), read from the environment. With neither set and a loopback
--console-listen, a random operator token is made for the run and printed
beside the URL; on any other address the console refuses to start without
a token. Reach it by another name than localhost with --console-host.

The console reads and acts with this command's credentials: --nats-url
and its credentials, or a running serve's embedded server on --listen (it
never opens a store folder itself: start serve first). With --tenants FILE --tenant NAME (the
administrators' file) it acts for that tenant alone, and operators'
actions are recorded by the audit service as that administrator's. It
takes the same skills, skill store and stream flags as serve, so that its
pages show what serve serves.`[1:], `
  skillstream console
  SKILLSTREAM_CONSOLE_OPERATOR_TOKEN=... skillstream console --nats-url nats://n1:4222 --tenants tenants-admin.yaml --tenant acme
  SKILLSTREAM_CONSOLE_TOKEN=... skillstream console --console-listen 0.0.0.0:8089 --console-host console.example.com:8089`[1:])
	c.consoleFlags(cmd, defaultConsoleListen, "`address` the console listens on (a non-loopback one needs a console token)")
	c.skillFlags(cmd)
	c.storeFlags(cmd)
	c.storeNATSFlags(cmd)
	cmd.group("Stream")
	cmd.pick(c.streamFlags, "stream", "prefix")
	c.layoutFlag(cmd)
	c.partitionsFlag(cmd)
	c.opsFlags(cmd, false)
	cmd.group("Usage projection")
	c.usageBucketFlag(cmd)
	return cmd, func(ctx context.Context, args []string) error {
		if len(args) > 0 {
			return usagef("console takes no arguments, got %q", args[0])
		}
		viewer, operator, made, err := a.consoleTokens(c.Console.Listen)
		if err != nil {
			return err
		}
		if err := c.validateSkills(); err != nil {
			return err
		}
		if err := c.validateStore(); err != nil {
			return err
		}
		js, closeJS, err := a.consoleConn(&c)
		if err != nil {
			return err
		}
		defer closeJS()
		closeLib, err := c.dialLibrary(a.stderr)
		if err != nil {
			return err
		}
		defer closeLib()
		log := c.newLogger(a.stderr)
		var sjs jetstream.JetStream
		if !c.NoSkillStore {
			sjs = js
		}
		reg, err := c.registryWith(ctx, log, true, sjs)
		if err != nil {
			return err
		}
		defer reg.Close()
		src, err := c.consoleSources(ctx, js, reg)
		if err != nil {
			return err
		}
		if c.audited() {
			src.AuditConn = js.Conn() // the administrator's: its actions are recorded as theirs
		}
		srv, err := console.New(console.Config{Tenant: c.Tenant, Base: "/", ViewerToken: viewer, OperatorToken: operator,
			Hosts: c.Console.Hosts, Sources: src, Log: log})
		if err != nil {
			return usagef("%v", err)
		}
		ln, err := net.Listen("tcp", c.Console.Listen)
		if err != nil {
			return fmt.Errorf("console listener: %w", err)
		}
		fmt.Fprintf(a.stdout, "console: http://%s/\n", ln.Addr())
		if made {
			fmt.Fprintf(a.stdout, "operator token, made for this run (set %s to choose one): %s\n", console.EnvOperatorToken, operator)
		}
		ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
		return console.Serve(ctx, ln, srv)
	}
}

// validateServeConsole checks serve's console flags before anything is
// connected; without tenants it decides the console's tokens.
func (a *app) validateServeConsole(c *Config) error {
	if c.Console.Listen == "" {
		if len(c.Console.Hosts) > 0 {
			return usagef("--console-host needs --console-listen")
		}
		return nil
	}
	if c.Tenants != "" {
		return checkAddr("--console-listen", c.Console.Listen)
	}
	var err error
	c.Console.viewer, c.Console.operator, c.Console.made, err = a.consoleTokens(c.Console.Listen)
	return err
}

// consoleConn checks the NATS and stream flags and connects where the
// console reads: --nats-url (with --tenants, as the tenant's
// administrator), else a running serve's embedded server on --listen. The
// console never opens a store folder itself, as usage may for a moment:
// it runs for long, and a serve started on the folder meanwhile would
// open it a second time. The connection reconnects until closed.
func (a *app) consoleConn(c *Config) (jetstream.JetStream, func(), error) {
	c.Data = defaultData // not a console flag: checked as the embedded server's, never opened
	if err := c.validateReader(); err != nil {
		return nil, nil, err
	}
	url, opts := c.NATSURL, []nats.Option{nats.Name("skillstream console"), nats.MaxReconnects(-1)}
	if url == "" {
		if !serving(c.Listen) {
			return nil, nil, fmt.Errorf("no NATS server answers on --listen %s: start `skillstream serve` (the console reads through its server), or give --nats-url", c.Listen)
		}
		url = "nats://" + c.Listen
	} else {
		var err error
		if opts, err = c.connectOptions(c.newLogger(a.stderr)); err != nil {
			return nil, nil, err
		}
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to %s: %w", url, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("jetstream context: %w", err)
	}
	return js, nc.Close, nil
}

// consoleTokens reads the console's tokens from the environment and
// decides them for a console on listen (console.Tokens).
func (a *app) consoleTokens(listen string) (viewer, operator string, made bool, err error) {
	if listen == "" {
		return "", "", false, usagef("--console-listen: give the address the console listens on")
	}
	if err := checkAddr("--console-listen", listen); err != nil {
		return "", "", false, err
	}
	viewer, _ = a.lookupEnv(console.EnvViewerToken)
	operator, _ = a.lookupEnv(console.EnvOperatorToken)
	viewer, operator, made, err = console.Tokens(listen, viewer, operator)
	if errors.Is(err, console.ErrNoToken) {
		return "", "", false, usagef("--console-listen %s: %v", listen, err)
	}
	if err != nil {
		return "", "", false, usagef("%v (the tokens of %s and %s)", err, console.EnvViewerToken, console.EnvOperatorToken)
	}
	return viewer, operator, made, nil
}

// consoleSources are the sources of a console reading through js: the
// registry reg, the skill store (unless --no-skill-store) and the shared
// library (when c acts for a tenant of a file that has one), the sessions
// stream and the usage projection.
func (c *Config) consoleSources(ctx context.Context, js jetstream.JetStream, reg *providers.Registry) (console.Sources, error) {
	src := console.Sources{JS: js, Registry: reg, Stream: c.Stream, Layout: c.layout(), UsageBucket: c.UsageBucket,
		Fleet: console.FleetSources{Prefix: c.Prefix}}
	if c.Partitions >= 2 {
		// Partitioned sessions: each session where its id places it,
		// and the lists over every partition.
		src.Place = c.sessionPlace
		src.Partitions = partition.Places(c.Stream, c.Prefix, c.Partitions)
	}
	if !c.NoSkillStore {
		pb, err := store.NewPublisher(ctx, js, c.storeConfig())
		if err != nil {
			return src, fmt.Errorf("console: skill store: %w", err)
		}
		src.Store = pb
	}
	if l := c.library; l != nil {
		cfg := c.storeConfig()
		cfg.Bucket, cfg.Objects = l.bucket, l.objects
		pb, err := store.NewPublisher(ctx, l.js, cfg)
		if err != nil {
			return src, fmt.Errorf("console: library: %w", err)
		}
		src.Library = pb
	}
	return src, nil
}

// consoleLog is the console's logger within serve.
func consoleLog(log *slog.Logger, tenant string) *slog.Logger {
	log = log.With("component", "console")
	if tenant != "" {
		log = log.With("tenant", tenant)
	}
	return log
}

// serveConsoles is serve's operator console (--console-listen): without
// tenants one console at /, its tokens from the environment as console's;
// with them each tenant's under /<tenant>/, its tokens from the variables
// its entry names. A unit's console is made once its registry is built,
// and reads through the unit's own connection.
func (a *app) serveConsoles(c *Config, units []*servedUnit, log *slog.Logger) (*console.Mux, error) {
	var ts []console.Tenant
	if units[0].tenant == "" {
		if c.Console.made {
			fmt.Fprintf(a.stderr, "console: operator token, made for this run (set %s to choose one): %s\n", console.EnvOperatorToken, c.Console.operator)
		}
		ts = append(ts, c.unitConsole(units[0], "/", c.Console.viewer, c.Console.operator, log))
		return console.NewMux(ts), nil
	}
	seen := map[string]string{}
	for _, u := range units {
		t := u.conn
		if t.consoleToken == "" && t.consoleOperatorToken == "" {
			return nil, usagef("--console-listen with --tenants: tenant %s has no console_token_env or console_operator_token_env in %s (each tenant's console needs tokens of its own)", u.tenant, c.Tenants)
		}
		if err := console.CheckTokens(t.consoleToken, t.consoleOperatorToken); err != nil {
			return nil, usagef("--console-listen: tenant %s: %v", u.tenant, err)
		}
		for _, tok := range []string{t.consoleToken, t.consoleOperatorToken} {
			if other, ok := seen[tok]; ok && tok != "" && other != u.tenant {
				return nil, usagef("--console-listen: tenants %s and %s have the same console token: each tenant's must be its own", other, u.tenant)
			}
			seen[tok] = u.tenant
		}
		ts = append(ts, c.unitConsole(u, "/"+u.tenant+"/", t.consoleToken, t.consoleOperatorToken, log))
	}
	return console.NewMux(ts), nil
}

// setConsole serves the console of tenant e, added or changed at run
// time and served by u, in place of the one it had; a tenant whose tokens
// are not set (or not fit) gets none, and the log says why.
func (w *tenantWatch) setConsole(u *servedUnit, e tenantEntry) {
	viewer, operator := os.Getenv(e.ConsoleTokenEnv), os.Getenv(e.ConsoleOperatorTokenEnv)
	err := console.CheckTokens(viewer, operator)
	w.mu.Lock()
	for _, o := range w.entries {
		if o.Name == e.Name || err != nil {
			continue
		}
		for _, tok := range []string{os.Getenv(o.ConsoleTokenEnv), os.Getenv(o.ConsoleOperatorTokenEnv)} {
			if tok != "" && (tok == viewer || tok == operator) {
				err = fmt.Errorf("tenants %s and %s have the same console token: each tenant's must be its own", o.Name, e.Name)
			}
		}
	}
	w.mu.Unlock()
	if err != nil {
		w.console.Remove(e.Name)
		w.log.Error("tenant has no operator console: set the variables its console_token_env and console_operator_token_env name, and edit its entry again",
			"tenant", e.Name, "err", err)
		return
	}
	w.console.Set(w.c.unitConsole(u, "/"+e.Name+"/", viewer, operator, w.log))
}

// unitConsole is the console of one served unit under base.
func (c *Config) unitConsole(u *servedUnit, base, viewer, operator string, log *slog.Logger) console.Tenant {
	return console.Tenant{Name: u.tenant, Serving: func() bool { return u.served.Load() != nil }, Make: func() (*console.Server, bool, error) {
		reg := u.served.Load()
		if reg == nil {
			return nil, false, nil
		}
		js, err := jetstream.New(u.nc)
		if err != nil {
			return nil, false, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		src, err := c.consoleSources(ctx, js, reg)
		if err != nil {
			return nil, false, err
		}
		s, err := console.New(console.Config{Tenant: u.tenant, Base: base, ViewerToken: viewer, OperatorToken: operator,
			Hosts: c.Console.Hosts, Sources: src, Log: consoleLog(log, u.tenant)})
		return s, err == nil, err
	}}
}
