package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/oklog/run"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/skillstream/skillstream/processor"
	"github.com/skillstream/skillstream/processor/embedded"
	"github.com/skillstream/skillstream/processor/gcpolicy"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/search"
)

// shutdownTimeout bounds how long the metrics server and the NATS client may
// take to finish at shutdown.
const shutdownTimeout = 10 * time.Second

func (a *app) serveCommand() (*command, runFunc) {
	var c Config
	cmd := newCommand("serve", "skillstream serve [flags]", `
Run the skillstream processor. By default it starts an embedded NATS server
with JetStream (clients connect to --listen, data is kept in --data) and the
processor on it: agent workers connect to that address, append triggers to
their session logs, and get catalogs and skill tool results back. With
--nats-url it joins an existing NATS cluster instead and starts no server.

Every instance sharing a --stream and --consumer is one member of a consumer
group: run as many as you need, each trigger is handled by one of them and
answered exactly once.

SIGINT or SIGTERM stops taking new triggers, finishes those in flight, then
stops the embedded server; the exit status is 0. A trigger received but not
yet acknowledged is redelivered after a restart. Invalid configuration fails
at start with one line and exit status 2.

Unless GOGC is set in the environment, serve runs the Go garbage collector
at GOGC=400 rather than the runtime's 100 while its live heap is under
16 MiB, and lets the heap grow at most 64 MiB above the live heap beyond
that (never collecting more often than GOGC=100): the processor's live heap
is small and its garbage short-lived, so collecting less often saves about
40% of the CPU per trigger for some 10 MiB more memory. Set GOGC (and
GOMEMLIMIT, which the runtime honours as usual) to choose otherwise.`[1:], `
  skillstream serve
  skillstream serve --listen 0.0.0.0:4222 --data /var/lib/skillstream --metrics-listen :9090
  skillstream serve --skills-dir /srv/team-skills --project-skills-subdir .claude/skills
  skillstream serve --nats-url nats://n1:4222,nats://n2:4222 --nats-creds /etc/skillstream/nats.creds --replicas 3
  SKILLSTREAM_NATS_URL=nats://nats:4222 SKILLSTREAM_LOG_FORMAT=json skillstream serve`[1:])
	c.skillFlags(cmd)
	c.storeFlags(cmd)
	c.natsFlags(cmd)
	c.streamFlags(cmd)
	c.layoutFlag(cmd)
	c.securityFlags(cmd)
	c.mcpFlags(cmd)
	c.opsFlags(cmd, true)
	c.usageProjectionFlags(cmd)
	return cmd, func(ctx context.Context, args []string) error {
		if len(args) > 0 {
			return usagef("serve takes no arguments, got %q", args[0])
		}
		c.serveTenants = true // serve serves every tenant of --tenants
		if c.MetricsSkillLimit < 1 {
			return usagef("--metrics-skill-limit %d: want at least 1", c.MetricsSkillLimit)
		}
		if err := c.validateServe(); err != nil {
			return err
		}
		token, err := c.validateMCP()
		if err != nil {
			return err
		}
		return a.serve(ctx, &c, token)
	}
}

// serve runs the processor until ctx is cancelled or a signal arrives.
//
// Actors, in the order their interrupts run: signals, processors (each
// interrupt waits until in-flight triggers are finished and the client
// connection is flushed and closed), metrics server, embedded NATS server.
// With --tenants there is one processor per tenant, each on a connection
// of its own to the tenant's account (tenants.go).
func (a *app) serve(ctx context.Context, c *Config, mcpToken string) error {
	log := c.newLogger(a.stderr)
	gc, stopGC := gcpolicy.Start()
	defer stopGC()

	var (
		srv   *server.Server
		where []any
		conns []tenantConn
		err   error
	)
	switch {
	case c.Tenants != "":
		f, err := loadTenants(c.Tenants)
		if err != nil {
			return err
		}
		var lib *tenantConn
		conns, lib, err = c.connectTenants(ctx, log, f)
		if err != nil {
			return err
		}
		if lib != nil {
			defer lib.nc.Close()
			c.library = &libraryStore{js: lib.js, bucket: f.Library.Bucket, objects: f.Library.Objects}
			where = append(where, "library", f.Library.Bucket, "library_account", lib.account)
		}
		where = append([]any{"nats", conns[0].nc.ConnectedUrlRedacted(), "tenants", len(conns)}, where...)
	case c.NATSURL == "":
		srv, err = embedded.Start(embedded.Options{Name: c.ServerName, Listen: c.Listen, StoreDir: c.Data}, log)
		if err != nil {
			return err
		}
		defer func() { // also on early return; idempotent after the actor stopped it
			srv.Shutdown()
			srv.WaitForShutdown()
		}()
		var opts []nats.Option
		if c.InboxPrefix != "" {
			opts = append(opts, nats.CustomInboxPrefix(c.InboxPrefix))
		}
		nc, err := embedded.Connect(srv, "skillstream "+c.ToolOwner, opts...)
		if err != nil {
			return err
		}
		conns = []tenantConn{{nc: nc}}
		if !loopback(c.Listen) {
			log.Warn("the embedded NATS server takes clients without authentication on a non-loopback address; firewall it, or run an authenticated cluster and use --nats-url",
				"listen", c.Listen)
		}
		data, _ := filepath.Abs(c.Data)
		where = []any{"nats", "embedded", "listen", embedded.URL(srv), "data", data}
	default:
		opts, err := c.connectOptions(log)
		if err != nil {
			return err
		}
		nc, err := nats.Connect(c.NATSURL, opts...)
		if err != nil {
			return fmt.Errorf("connect to %s: %w", c.NATSURL, err)
		}
		conns = []tenantConn{{nc: nc}}
		where = []any{"nats", nc.ConnectedUrlRedacted()}
	}
	for _, t := range conns {
		defer t.nc.Close()
	}
	if !c.NoSkillStore {
		where = append(where, "skill_store", c.SkillStoreBucket)
	}
	if c.SkillSearch {
		where = append(where, "skill_search", "on", "catalog_listed_max", c.CatalogListedMax)
	}

	storeWarnings := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "skillstream", Name: "store_warnings_total",
		Help: "Skill store warnings, logged or not (one key's are logged at most once a minute), by kind: malformed_entry, bad_object (a record whose object is missing, damaged or another skill's: not listed), watch."},
		[]string{"kind"})
	c.storeWarned = func(kind string) { storeWarnings.WithLabelValues(kind).Inc() }
	metrics := prometheus.NewRegistry()
	metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), buildInfo(), storeWarnings)

	// Serving is announced once every processor serves (its consumer
	// pulls, its endpoints answer), before anything more is logged: a
	// worker that connects on the line finds a responder.
	var serving []any
	var readyCount atomic.Int32
	units := make([]*servedUnit, 0, len(conns))
	for _, t := range conns {
		u, err := a.prepareUnit(ctx, c, log, t, metrics, func(u *servedUnit) {
			if u.tenant != "" {
				log.Info("tenant serving", "tenant", u.tenant, "account", u.account, "instance", u.p.Config().Instance)
			}
			if int(readyCount.Add(1)) == len(conns) {
				log.Info("skillstream serving", serving...)
			}
		})
		if u != nil {
			defer u.close(log)
		}
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		units = append(units, u)
	}

	var ln net.Listener
	if c.MetricsListen != "" {
		if ln, err = net.Listen("tcp", c.MetricsListen); err != nil {
			return fmt.Errorf("metrics listener: %w", err)
		}
		defer ln.Close()
		where = append(where, "metrics", "http://"+ln.Addr().String()+"/metrics")
	}

	var mcpFront *mcpHTTP
	if c.MCP.Listen != "" {
		if mcpFront, err = c.startMCPUnits(units, mcpToken, log, metrics, thisBuild().version); err != nil {
			return err
		}
		defer mcpFront.ln.Close()
		where = append(where, "mcp", "http://"+mcpFront.ln.Addr().String()+"/mcp")
	}

	pcfg := units[0].pcfg
	sl := units[0].p.StreamLimits()
	serving = append(where,
		"stream", pcfg.Stream, "subjects", pcfg.Prefix+".>", "consumer", pcfg.Consumer,
		"max_bytes", limitText(sl.MaxBytes), "max_age", durationLimitText(sl.MaxAge), "max_msg_size", limitText(int64(sl.MaxMsgSize)),
		"stream_limits", sl.Provisioned, "max_trigger_bytes", formatBytes(int64(pcfg.MaxTriggerBytes)),
		"tool_owner", pcfg.ToolOwner, "instance", units[0].p.Config().Instance, "workers", pcfg.Workers, "gc", gc)

	var g run.Group

	// Signals. Registered now, before anything runs, so that a signal is
	// never lost to the default handler once serving began.
	sigc := make(chan os.Signal, 1)
	signal.Notify(sigc, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigc)
	stop := make(chan struct{})
	g.Add(func() error {
		select {
		case sig := <-sigc:
			log.Info("shutting down: finishing triggers in flight", "signal", sig.String())
			return nil
		case <-ctx.Done():
			log.Info("shutting down: finishing triggers in flight", "reason", context.Cause(ctx))
			return nil
		case <-stop:
			return nil
		}
	}, func(error) { close(stop) })

	// Usage projectors: their interrupts run before the processors', so
	// they give their lease back while the connections are open.
	if err := addUsageProjectors(&g, c, log, units, metrics); err != nil {
		return err
	}

	// Processors. Each interrupt returns only once its processor has
	// drained and its connection is closed, so nothing after it stops
	// under its feet.
	for _, u := range units {
		pctx, pcancel := context.WithCancel(context.WithoutCancel(ctx))
		g.Add(func() error {
			defer close(u.pdone)
			err := u.p.Run(pctx)
			if ferr := u.nc.FlushTimeout(shutdownTimeout); ferr != nil && !errors.Is(ferr, nats.ErrConnectionClosed) {
				log.Warn("flush NATS connection", "tenant", u.tenant, "err", ferr)
			}
			u.nc.Close()
			if err != nil {
				return fmt.Errorf("processor%s: %w", u.label(), err)
			}
			if pctx.Err() == nil {
				return fmt.Errorf("processor%s stopped unexpectedly", u.label())
			}
			return nil
		}, func(error) {
			pcancel()
			<-u.pdone
		})
	}

	// Metrics, health and readiness.
	if ln != nil {
		hs := &http.Server{
			Handler: opsHandler(metrics, units),
			// Scrapes and probes are small GETs: nothing here needs a
			// connection held open by a slow client.
			ReadHeaderTimeout: 5 * time.Second,
			ReadTimeout:       10 * time.Second,
			WriteTimeout:      30 * time.Second,
			IdleTimeout:       60 * time.Second,
		}
		g.Add(func() error {
			if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("metrics server: %w", err)
			}
			return nil
		}, func(error) {
			sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
			defer cancel()
			_ = hs.Shutdown(sctx)
		})
	}

	// MCP hosts: they only read the registry; stopped after the processor.
	if mcpFront != nil {
		mctx, mcancel := context.WithCancel(context.WithoutCancel(ctx))
		g.Add(func() error {
			if err := mcpFront.run(mctx); err != nil {
				return fmt.Errorf("mcp server: %w", err)
			}
			return nil
		}, func(error) { mcancel() })
	}

	// Embedded server, stopped last.
	if srv != nil {
		srvStop := make(chan struct{})
		g.Add(func() error {
			done := make(chan struct{})
			go func() { srv.WaitForShutdown(); close(done) }()
			select {
			case <-done:
				return errors.New("embedded NATS server stopped")
			case <-srvStop:
				srv.Shutdown()
				<-done
				return nil
			}
		}, func(error) { close(srvStop) })
	}

	err = g.Run()
	if err != nil {
		return err
	}
	log.Info("skillstream stopped")
	return nil
}

// servedUnit is one processor of serve and what it runs on: the only one
// without tenants, one per tenant with them.
type servedUnit struct {
	tenant, account string // "" without tenants
	nc              *nats.Conn
	js              jetstream.JetStream
	reg             *providers.Registry
	index           *search.Index
	p               *processor.Processor
	pcfg            processor.Config
	pdone           chan struct{}
	mcpToken        string
	// What /readyz asks: closed once p serves, and its divergences.
	ready       <-chan struct{}
	divergences func() []processor.Divergence
}

// label is " for tenant NAME", or "" without tenants.
func (u *servedUnit) label() string {
	if u.tenant == "" {
		return ""
	}
	return " for tenant " + u.tenant
}

// close releases the unit's registry and index.
func (u *servedUnit) close(log *slog.Logger) {
	if u.index != nil {
		u.index.Close()
	}
	if u.reg != nil {
		if err := u.reg.Close(); err != nil {
			log.Warn("close skill registry", "tenant", u.tenant, "err", err)
		}
	}
}

// prepareUnit builds the registry and the processor of connection t and
// prepares it (stream, consumer and size limits are checked before serving
// is announced: a configuration refused here never logs that it serves).
// ready is called once the processor serves. The unit returned, even with
// an error, must be closed.
func (a *app) prepareUnit(ctx context.Context, c *Config, log *slog.Logger, t tenantConn, metrics *prometheus.Registry, ready func(*servedUnit)) (*servedUnit, error) {
	u := &servedUnit{tenant: t.name, account: t.account, nc: t.nc, mcpToken: t.mcpToken, pdone: make(chan struct{})}
	ulog := log
	var reg prometheus.Registerer = metrics
	if u.tenant != "" {
		ulog = log.With("tenant", u.tenant)
		// Every processor metric of a tenant carries its name: one label
		// value per tenant of the file, so the series stay bounded.
		reg = prometheus.WrapRegistererWith(prometheus.Labels{"tenant": u.tenant}, metrics)
	}
	var err error
	if u.js, err = jetstream.New(u.nc); err != nil {
		return u, fmt.Errorf("jetstream context%s: %w", u.label(), err)
	}
	var sjs jetstream.JetStream
	if !c.NoSkillStore {
		sjs = u.js
	}
	if u.reg, err = c.registryWith(ctx, ulog, true, sjs); err != nil {
		if u.tenant != "" {
			return u, fmt.Errorf("tenant %s: %w", u.tenant, err)
		}
		return u, err
	}
	u.pcfg = c.processorConfig()
	if t.maxBytes > 0 {
		u.pcfg.MaxBytes = t.maxBytes
	}
	if t.workers > 0 {
		u.pcfg.Workers = t.workers
	}
	if t.rate > 0 {
		u.pcfg.MaxTriggerRate = float64(t.rate)
	}
	popts := []processor.Option{processor.WithLogger(ulog), processor.WithRegisterer(reg),
		processor.WithVersion(thisBuild().version),
		processor.WithOnReady(func() { ready(u) })}
	if c.SkillSearch {
		// The index follows the registry: built per changed skill, never
		// per search.
		u.index = search.New(u.reg, search.Options{})
		popts = append(popts, processor.WithSearcher(u.index))
	}
	if u.p, err = processor.New(u.nc, u.reg, u.pcfg, popts...); err != nil {
		return u, err
	}
	u.ready, u.divergences = u.p.Ready(), u.p.Divergences
	if err := u.p.Prepare(ctx); err != nil {
		return u, fmt.Errorf("processor%s: %w", u.label(), err)
	}
	return u, nil
}

// limitText shows a stream's size limit: "none" when it has none.
func limitText(n int64) string {
	if n <= 0 {
		return "none"
	}
	return formatBytes(n)
}

// durationLimitText shows a stream's age limit: "none" when it has none.
func durationLimitText(d time.Duration) string {
	if d <= 0 {
		return "none"
	}
	return formatDuration(d)
}

// loopback reports whether a listen address only accepts local clients.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// opsHandler serves /metrics, /healthz (the process is up) and /readyz (the
// processor serves, see processor.Run, and has not stopped, NATS is
// connected and the consumer exists). A ready member with unresolved view
// divergences stays ready (it answers every trigger; the divergence is a
// configuration problem of the group, which a restart of this member would
// not fix) and lists them after "ready", one a line.
func opsHandler(reg *prometheus.Registry, units []*servedUnit) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		// Ready when every processor is: one tenant's that is not makes
		// the member not ready, named.
		for _, u := range units {
			notReady := func(why string) {
				http.Error(w, "not ready: "+why+u.label(), http.StatusServiceUnavailable)
			}
			select {
			case <-u.pdone:
				notReady("processor stopped")
				return
			default:
			}
			select {
			case <-u.ready:
			default:
				notReady("processor starting")
				return
			}
			if !u.nc.IsConnected() {
				notReady("NATS " + u.nc.Status().String())
				return
			}
			ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
			_, err := u.js.Consumer(ctx, u.pcfg.Stream, u.pcfg.Consumer)
			cancel()
			if err != nil {
				notReady(fmt.Sprintf("consumer %s on stream %s: %v", u.pcfg.Consumer, u.pcfg.Stream, err))
				return
			}
		}
		fmt.Fprintln(w, "ready")
		for _, u := range units {
			for _, d := range u.divergences() {
				if u.tenant != "" {
					fmt.Fprintf(w, "tenant %s: ", u.tenant)
				}
				fmt.Fprintln(w, d.String())
			}
		}
	})
	return mux
}
