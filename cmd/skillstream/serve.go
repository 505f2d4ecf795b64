package main

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
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

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor"
	"github.com/skillstream/skillstream/processor/console"
	"github.com/skillstream/skillstream/processor/embedded"
	"github.com/skillstream/skillstream/processor/gcpolicy"
	"github.com/skillstream/skillstream/processor/supervise"
	"github.com/skillstream/skillstream/processor/usage/projection"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/search"
	"github.com/skillstream/skillstream/providers/store/audit"
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
	c.partitionsFlag(cmd)
	c.securityFlags(cmd)
	c.mcpFlags(cmd)
	c.consoleFlags(cmd, "", "serve the operator console on this `address` (off when empty): at / without --tenants, each tenant's at /<tenant>/ with the tokens its console_token_env and console_operator_token_env name")
	c.opsFlags(cmd, true)
	c.usageProjectionFlags(cmd)
	c.searchLearnFlags(cmd)
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
		learnFrom, err := c.validateSearchLearn(time.Now())
		if err != nil {
			return err
		}
		if err := c.validateSearchBodies(); err != nil {
			return err
		}
		c.searchLearnFrom = learnFrom
		if err := c.validateStart(); err != nil {
			return err
		}
		token, err := c.validateMCP()
		if err != nil {
			return err
		}
		if err := a.validateServeConsole(&c); err != nil {
			return err
		}
		var metricsToken string
		if c.MetricsTokenFile != "" && c.MetricsListen == "" {
			return usagef("--metrics-token-file needs --metrics-listen (the token guards /metrics and /readyz there)")
		}
		if c.MetricsTokenFile != "" {
			if metricsToken, err = readToken("--metrics-token-file", c.MetricsTokenFile); err != nil {
				return err
			}
		}
		return a.serve(ctx, &c, token, metricsToken)
	}
}

// serve runs the processor until ctx is cancelled or a signal arrives.
//
// Actors, in the order their interrupts run: signals, processors (the
// supervisor of every processor: its interrupt waits until in-flight
// triggers are finished and the connections are flushed and closed),
// metrics server, MCP hosts, embedded NATS server. With --tenants there is
// one processor per tenant, each on a connection of its own to the
// tenant's account (tenants.go), each started and retried on its own.
func (a *app) serve(ctx context.Context, c *Config, mcpToken, metricsToken string) error {
	log := c.newLogger(a.stderr)
	gc, stopGC := gcpolicy.Start()
	defer stopGC()

	var (
		srv   *server.Server
		where []any
		conns []tenantConn
		err   error
		tf    *tenantsFile // with --tenants
		libAc string       // the library's account, with one
		lib   *tenantConn  // the library's connection, with one
		aud   *tenantConn  // the audit service's, with one
	)
	switch {
	case c.Tenants != "":
		f, err := loadTenants(c.Tenants)
		if err != nil {
			return err
		}
		tf = f
		conns, lib, err = c.connectTenants(ctx, log, f)
		if err != nil {
			return err
		}
		if f.Audit != nil {
			if aud, err = c.connectAudit(ctx, log, f, conns, lib); err != nil {
				for _, t := range conns {
					t.nc.Close()
				}
				if lib != nil {
					lib.nc.Close()
				}
				return err
			}
			defer aud.nc.Close()
			where = append(where, "audit_account", aud.account)
		}
		if lib != nil {
			defer lib.nc.Close()
			c.library = &libraryStore{js: lib.js, bucket: f.Library.Bucket, objects: f.Library.Objects}
			where = append(where, "library", f.Library.Bucket, "library_account", lib.account)
			libAc = lib.account
		}
		where = append([]any{"nats", conns[0].nc.ConnectedUrlRedacted(), "tenants", len(conns)}, where...)
	case c.NATSURL == "":
		srv, err = embedded.Start(embedded.Options{Name: c.ServerName, Listen: c.Listen, StoreDir: c.Data, Mappings: c.partitionMappings()}, log)
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
		if m := c.partitionMappings(); m != nil {
			where = append(where, "mapping", m[0][0]+" -> "+m[0][1])
		}
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
	// The options that shape the model's text: the update mode always,
	// the others when they are on.
	where = append(where, "catalog_updates", c.CatalogUpdates)
	if c.UserInvocation {
		where = append(where, "user_invocation", "on")
	}
	if c.SkillSearch {
		where = append(where, "skill_search", "on", "catalog_listed_max", c.CatalogListedMax)
		if c.SearchBodies {
			where = append(where, "search_bodies", "on")
		}
	}
	if c.CatalogRank == string(catalog.RankUse) {
		where = append(where, "catalog_rank", c.CatalogRank)
	}

	storeWarnings := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "skillstream", Name: "store_warnings_total",
		Help: "Skill store warnings, logged or not, by kind and tenant (\"\" without tenants): malformed_entry, bad_object (a record whose object is missing, damaged or another skill's: not listed), over_bounds (the store is over its bounds: none of its skills listed), watch, untrusted (a revision the store's trust policy does not trust: not offered under require signed, offered under warn), revoked (a revision whose digest or signing key the policy revokes: never offered)."},
		[]string{"kind", "tenant"})
	c.storeWarnedFor = func(tenant string) func(string) {
		return func(kind string) { storeWarnings.WithLabelValues(kind, tenant).Inc() }
	}
	c.storeWarned = c.storeWarnedFor("")
	metrics := prometheus.NewRegistry()
	metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), buildInfo(), storeWarnings)

	units := make([]*servedUnit, len(conns))
	for i, t := range conns {
		units[i] = &servedUnit{tenant: t.name, account: t.account, nc: t.nc, js: t.js, conn: t, mcpToken: t.mcpToken, late: supervise.NewLate()}
		defer units[i].close(log)
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

	var consoles *console.Mux
	var consoleLn net.Listener
	if c.Console.Listen != "" {
		if consoles, err = a.serveConsoles(c, units, log); err != nil {
			return err
		}
		if consoleLn, err = net.Listen("tcp", c.Console.Listen); err != nil {
			return fmt.Errorf("console listener: %w", err)
		}
		defer consoleLn.Close()
		where = append(where, "console", "http://"+consoleLn.Addr().String()+"/")
	}

	// Each processor is started, and started again after a failure, on
	// its own (processor/supervise): one tenant that cannot start leaves
	// the others serving. Without tenants only what waiting may fix (a
	// server or cluster not answering yet) is retried; a configuration
	// the server refuses ends serve.
	ann := &announcer{log: log, where: where, gc: gc, pending: len(units)}
	retry := supervise.Transient
	if c.Tenants != "" {
		retry = func(err error) bool { return !supervise.IsPermanent(err) }
	}
	sunits := make([]supervise.Unit, len(units))
	for i, u := range units {
		sunits[i] = a.supervisedUnit(c, log, u, metrics, ann)
	}
	sup, err := supervise.New(supervise.Config{Backoff: supervise.Backoff{Min: c.StartRetryMin, Max: c.StartRetryMax},
		StartTimeout: c.StartTimeout, Retry: retry, Logger: log, Registerer: metrics}, sunits)
	if err != nil {
		return err
	}

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

	// The tenants file, watched: tenants added, removed or changed in it
	// are started and stopped without a restart (tenantwatch.go). Its
	// interrupt runs before the processors', so that no tenant is added
	// while they stop.
	if tf != nil {
		tw := a.newTenantWatch(c, log, tf, units, libAc, metrics, ann)
		tw.console = consoles // tenants added or changed get their console
		defer tw.close()
		if aud != nil {
			actx, acancel := context.WithCancel(context.WithoutCancel(ctx))
			cfg := audit.Config{NC: aud.nc, JS: aud.js, LibraryAccount: libAc, Replicas: c.Replicas, Log: log,
				Resolve: tw.auditIndex(c.SkillStoreBucket, lib, tf)}
			g.Add(func() error { return audit.Serve(actx, cfg) }, func(error) { acancel() })
		}
		wctx, wcancel := context.WithCancel(context.WithoutCancel(ctx))
		wdone := make(chan struct{})
		g.Add(func() error {
			defer close(wdone)
			if err := tw.run(wctx, sup, tf); err != nil && wctx.Err() == nil {
				// Without the watch the tenants serve on: say so, and
				// wait for the end.
				log.Error("tenants file not watched: edits need a restart", "file", c.Tenants, "err", err)
				<-wctx.Done()
			}
			return nil
		}, func(error) {
			wcancel()
			<-wdone
		})
	}

	// Processors (and their usage projectors). The interrupt returns only
	// once every processor has drained and flushed its connection, so
	// nothing after it stops under its feet. Run returns early only when
	// no processor can ever serve.
	sctx, scancel := context.WithCancel(context.WithoutCancel(ctx))
	sdone := make(chan struct{})
	g.Add(func() error {
		defer close(sdone)
		err := sup.Run(sctx)
		for _, u := range units {
			u.nc.Close()
		}
		if err != nil {
			return err
		}
		if sctx.Err() == nil {
			return errors.New("processors stopped unexpectedly")
		}
		return nil
	}, func(error) {
		scancel()
		<-sdone
	})

	// Metrics, health and readiness.
	if ln != nil {
		hs := &http.Server{
			Handler: opsHandler(metrics, sup, metricsToken),
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

	// MCP hosts: they only read the registries; stopped after the
	// processors.
	if mcpFront != nil {
		mctx, mcancel := context.WithCancel(context.WithoutCancel(ctx))
		g.Add(func() error {
			if err := mcpFront.run(mctx); err != nil {
				return fmt.Errorf("mcp server: %w", err)
			}
			return nil
		}, func(error) { mcancel() })
	}

	// The operator console: it reads the registries and stores; stopped
	// after the processors.
	if consoles != nil {
		cctx, ccancel := context.WithCancel(context.WithoutCancel(ctx))
		g.Add(func() error {
			if err := console.Serve(cctx, consoleLn, consoles); err != nil {
				return fmt.Errorf("console server: %w", err)
			}
			return nil
		}, func(error) { ccancel() })
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
// without tenants, one per tenant with them. Its registry and index are
// built by the first start that gets so far, and kept for the next ones.
type servedUnit struct {
	tenant, account string // "" without tenants
	nc              *nats.Conn
	js              jetstream.JetStream         // nil until a start makes it (without tenants)
	dial            func(context.Context) error // connects nc, js and conn (tenants added at run time); nil otherwise
	conn            tenantConn
	mcpToken        string
	late            *supervise.Late                    // the registry and index as the MCP front door reads them
	uses            atomic.Pointer[projection.Uses]    // the use ranking of the unit's current start (--catalog-rank use)
	served          atomic.Pointer[providers.Registry] // reg, for the console: set once built, nil once closed
	reg             *providers.Registry
	index           *search.Index
}

// label is " for tenant NAME", or "" without tenants.
func (u *servedUnit) label() string {
	if u.tenant == "" {
		return ""
	}
	return " for tenant " + u.tenant
}

// close releases the unit's registry and index (once: a tenant dropped
// from the tenants file is released when it stopped, and not again at
// the end).
func (u *servedUnit) close(log *slog.Logger) {
	if u.index != nil {
		u.index.Close()
		u.index = nil
	}
	if u.reg != nil {
		u.served.Store(nil)
		if err := u.reg.Close(); err != nil {
			log.Warn("close skill registry", "tenant", u.tenant, "err", err)
		}
		u.reg = nil
	}
}

// startUnit builds the registry of u (on its first start) and a
// processor, and prepares it (stream, consumer and size limits are checked
// before serving is announced: a configuration refused here never logs
// that it serves). ready is called once the processor serves. An error no
// retry can fix (the configuration's) is marked supervise.Permanent.
func (a *app) startUnit(ctx context.Context, c *Config, log *slog.Logger, u *servedUnit, metrics *prometheus.Registry, ready func(*unitRun)) (*unitRun, error) {
	ulog := log
	var reg prometheus.Registerer = metrics
	if u.tenant != "" {
		ulog = log.With("tenant", u.tenant)
		// Every processor metric of a tenant carries its name: one label
		// value per tenant of the file, so the series stay bounded.
		reg = prometheus.WrapRegistererWith(prometheus.Labels{"tenant": u.tenant}, metrics)
	}
	var err error
	if u.js == nil {
		if u.js, err = jetstream.New(u.nc); err != nil {
			return nil, supervise.Permanent(fmt.Errorf("jetstream context%s: %w", u.label(), err))
		}
	}
	// The use ranking is read once before the registry reaches the MCP
	// front door, whose first tool description hosts may keep.
	uses := c.useRanking(ulog, u, c.processorConfig())
	if uses != nil {
		rctx, cancel := context.WithTimeout(ctx, useFirstRead)
		if err := uses.Refresh(rctx); err != nil {
			ulog.Warn("read skill use for the catalog ranking", "err", err)
		}
		cancel()
		u.uses.Store(uses)
	}
	if u.reg == nil {
		var sjs jetstream.JetStream
		if !c.NoSkillStore {
			sjs = u.js
		}
		uc := *c // the tenant's store warnings counted under its name
		if c.storeWarnedFor != nil {
			uc.storeWarned = c.storeWarnedFor(u.tenant)
		}
		r, err := uc.registryWith(ctx, ulog, true, sjs)
		if err != nil {
			if errors.As(err, new(usageError)) {
				err = supervise.Permanent(err)
			}
			return nil, err
		}
		u.reg = r
		u.served.Store(r)
		if c.SkillSearch {
			// The index follows the registry: built per changed skill,
			// never per search.
			u.index = search.New(u.reg, c.searchOptions())
			u.late.Set(u.reg, u.index)
		} else {
			u.late.Set(u.reg, nil)
		}
	}
	base := c.processorConfig()
	base.Tenant = u.tenant // the cohorts of its releases are the tenant's
	if t := u.conn; t.maxBytes > 0 {
		base.MaxBytes = t.maxBytes
		if c.Partitions > 1 {
			// A tenant's max_bytes is its sessions' budget: shared out
			// over its partition streams, within its account's storage.
			base.MaxBytes = t.maxBytes / int64(c.Partitions)
		}
	}
	if t := u.conn; t.workers > 0 {
		base.Workers = t.workers
	}
	if t := u.conn; t.rate > 0 {
		base.MaxTriggerRate = float64(t.rate)
	}
	if base.Instance == "" {
		// One name for the member's processors of every partition.
		base.Instance = processor.DefaultInstance()
	}
	r := &unitRun{u: u, log: ulog, announced: make(chan struct{})}
	if c.SearchLearn {
		r.learnFrom = &c.searchLearnFrom
	}
	r.uses = uses
	var mu sync.Mutex
	pending := 0
	for k, pcfg := range c.partitionConfigs(base) {
		popts := []processor.Option{processor.WithLogger(ulog), processor.WithRegisterer(reg),
			processor.WithVersion(thisBuild().version)}
		if c.Partitions > 1 {
			// Every partition's processor registers the same metrics:
			// a label tells them apart.
			popts[1] = processor.WithRegisterer(prometheus.WrapRegistererWith(prometheus.Labels{"partition": strconv.Itoa(k)}, reg))
		}
		popts = append(popts, processor.WithOnReady(func() {
			// Serving is announced once the processor of every
			// partition serves.
			mu.Lock()
			pending--
			last := pending == 0
			mu.Unlock()
			if last {
				ready(r)
				close(r.announced)
			}
		}))
		if u.index != nil {
			popts = append(popts, processor.WithSearcher(u.index))
		}
		if uses != nil {
			popts = append(popts, processor.WithRanker(uses))
		}
		p, err := processor.New(u.nc, u.reg, pcfg, popts...)
		if err != nil {
			return nil, supervise.Permanent(err)
		}
		if err := p.Prepare(ctx); err != nil {
			err = fmt.Errorf("processor%s%s: %w", u.label(), partitionLabel(c, k), err)
			if errors.Is(err, processor.ErrInvalidConfig) {
				err = supervise.Permanent(err)
			}
			return nil, err
		}
		proj, err := c.usageProjector(log, u, pcfg, k, p.Config().Instance, metrics)
		if err != nil {
			return nil, supervise.Permanent(err)
		}
		r.parts = append(r.parts, unitPart{pcfg: pcfg, p: p, proj: proj})
		pending++
	}
	r.pcfg, r.p = r.parts[0].pcfg, r.parts[0].p
	if c.Partitions < 2 {
		if _, err := u.js.Stream(ctx, events.PartitionStream(c.Stream, 0)); err == nil {
			ulog.Warn("partition streams exist beside the stream of sessions without partitions: their sessions are not served (serve them with --partitions)", "stream", events.PartitionStream(c.Stream, 0))
		}
	}
	if c.Partitions > 1 {
		// The server must map the sessions as the processors read them:
		// checked once the partition streams exist.
		err := processor.CheckPartitionMapping(ctx, u.js, c.Stream, c.Prefix, base.Layout, c.Partitions)
		var alone bool
		if err == nil {
			alone, err = processor.CheckPartitionStreams(ctx, u.js, c.Stream, c.Partitions, !c.NoProvision)
		}
		if err != nil {
			err = fmt.Errorf("processor%s: %w", u.label(), err)
			if errors.Is(err, processor.ErrInvalidConfig) {
				err = supervise.Permanent(err)
			}
			return nil, err
		}
		if alone {
			ulog.Warn("a stream of sessions kept without partitions exists beside the partitions: its sessions are not served, and readers given --partitions do not find them", "stream", c.Stream)
		}
	}
	return r, nil
}

// unitRun is one start of a servedUnit: its processor and usage
// projector, one of each per partition with --partitions.
type unitRun struct {
	u     *servedUnit
	log   *slog.Logger
	parts []unitPart
	pcfg  processor.Config     // the first partition's (the only one without partitions)
	p     *processor.Processor // the first partition's
	// announced is closed once every processor serves and that is
	// logged: the projectors start then, so that the serving line comes
	// first.
	announced chan struct{}
	// learnFrom, with --search-learn, is where the index's learning
	// reads the log from.
	learnFrom *time.Time
	uses      *projection.Uses // nil without --catalog-rank use
}

// unitPart is the processor of one partition (the only one without
// partitions) and its usage projector.
type unitPart struct {
	pcfg processor.Config
	p    *processor.Processor
	proj *projection.Projector // nil with --no-usage-projection
}

// Run runs the processors, and the usage projectors beside them, until
// ctx ends, then flushes the connection. A processor that fails stops the
// others: the unit starts again whole.
func (r *unitRun) Run(ctx context.Context) error {
	pctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, part := range r.parts {
		if part.proj != nil {
			wg.Go(func() {
				select {
				case <-r.announced:
					_ = part.proj.Run(pctx)
				case <-pctx.Done():
				}
			})
		}
	}
	if r.learnFrom != nil && r.u.index != nil {
		wg.Go(func() { r.learnSearches(pctx, *r.learnFrom) })
	}
	if r.uses != nil {
		wg.Go(func() { _ = r.uses.Run(pctx) })
	}
	errs := make([]error, len(r.parts))
	var pwg sync.WaitGroup
	for i, part := range r.parts {
		pwg.Go(func() {
			if errs[i] = part.p.Run(pctx); errs[i] != nil {
				cancel()
			}
		})
	}
	pwg.Wait()
	cancel()
	wg.Wait()
	if ferr := r.u.nc.FlushTimeout(shutdownTimeout); ferr != nil && !errors.Is(ferr, nats.ErrConnectionClosed) && ctx.Err() != nil {
		r.log.Warn("flush NATS connection", "err", ferr)
	}
	for i, err := range errs {
		if err != nil {
			return fmt.Errorf("processor%s%s: %w", r.u.label(), partitionLabel2(len(r.parts), i), err)
		}
	}
	return nil
}

// Ready is closed once every processor serves.
func (r *unitRun) Ready() <-chan struct{} {
	if len(r.parts) == 1 {
		return r.p.Ready()
	}
	ch := make(chan struct{})
	go func() {
		for _, part := range r.parts {
			<-part.p.Ready()
		}
		close(ch)
	}()
	return ch
}

// Check reports whether the processors still serve: NATS connected and
// each one's consumer there, a pull consumer.
func (r *unitRun) Check(ctx context.Context) error {
	if !r.u.nc.IsConnected() {
		return errors.New("NATS " + r.u.nc.Status().String())
	}
	for _, part := range r.parts {
		cons, err := r.u.js.Consumer(ctx, part.pcfg.Stream, part.pcfg.Consumer)
		if err != nil {
			return fmt.Errorf("consumer %s on stream %s: %w", part.pcfg.Consumer, part.pcfg.Stream, err)
		}
		if cons.CachedInfo().Config.DeliverSubject != "" {
			return fmt.Errorf("consumer %s on stream %s is a push consumer, not the processors' pull consumer", part.pcfg.Consumer, part.pcfg.Stream)
		}
	}
	return nil
}

// Notes are the processors' unresolved view divergences.
func (r *unitRun) Notes() []string {
	var out []string
	for i, part := range r.parts {
		for _, d := range part.p.Divergences() {
			out = append(out, d.String()+partitionLabel2(len(r.parts), i))
		}
	}
	return out
}

// announcer logs "skillstream serving" once every processor has had its
// first start and at least one serves (naming those that do not), and
// "tenant serving" each time a tenant's processor serves. Both are logged
// from the processor's ready hook, before it logs anything more: a worker
// that connects on the line finds a responder.
type announcer struct {
	log   *slog.Logger
	where []any
	gc    string

	mu        sync.Mutex
	pending   int // units whose first start has not ended
	settled   map[*servedUnit]bool
	serving   map[*servedUnit]bool
	first     []any // the serving line's fields of the first processor that served
	announced bool
}

func (a *announcer) ready(r *unitRun) {
	u := r.u
	if u.tenant != "" {
		a.log.Info("tenant serving", "tenant", u.tenant, "account", u.account, "instance", r.p.Config().Instance)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.serving == nil {
		a.serving, a.settled = map[*servedUnit]bool{}, map[*servedUnit]bool{}
	}
	a.serving[u] = true
	if a.first == nil {
		pcfg, sl := r.pcfg, r.p.StreamLimits()
		stream, subjects := pcfg.Stream, pcfg.Prefix+".>"
		if n := len(r.parts); n > 1 {
			stream = fmt.Sprintf("%s … %s (%d partitions)", pcfg.Stream, r.parts[n-1].pcfg.Stream, n)
			subjects = fmt.Sprintf("%s.> … %s.>", pcfg.Prefix, r.parts[n-1].pcfg.Prefix)
		}
		a.first = []any{"stream", stream, "subjects", subjects, "consumer", pcfg.Consumer,
			"max_bytes", limitText(sl.MaxBytes), "max_age", durationLimitText(sl.MaxAge), "max_msg_size", limitText(int64(sl.MaxMsgSize)),
			"stream_limits", sl.Provisioned, "max_trigger_bytes", formatBytes(int64(pcfg.MaxTriggerBytes)),
			"tool_owner", pcfg.ToolOwner, "instance", r.p.Config().Instance, "workers", pcfg.Workers, "gc", a.gc}
	}
	a.settle(u)
}

func (a *announcer) failed(u *servedUnit) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.serving == nil {
		a.serving, a.settled = map[*servedUnit]bool{}, map[*servedUnit]bool{}
	}
	delete(a.serving, u)
	a.settle(u)
}

// settle notes u's start ended, and announces once every unit's first did
// and one serves. a.mu is held.
func (a *announcer) settle(u *servedUnit) {
	if !a.settled[u] {
		a.settled[u] = true
		a.pending--
	}
	if a.announced || a.pending > 0 || len(a.serving) == 0 {
		return
	}
	a.announced = true
	fields := append(append([]any{}, a.where...), a.first...)
	if n := len(a.settled) - len(a.serving); n > 0 {
		var not []string
		for v := range a.settled {
			if !a.serving[v] {
				not = append(not, v.tenant)
			}
		}
		slices.Sort(not)
		fields = append(fields, "tenants_not_serving", not)
	}
	a.log.Info("skillstream serving", fields...)
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

// opsHandler serves /metrics, /healthz (the process is up) and /readyz:
// each processor serves (see processor.Run), NATS is connected and its
// consumer exists. With tenants each tenant has a line, and one that does
// not serve makes the member not ready. A ready processor with unresolved
// view divergences stays ready (it answers every trigger; the divergence
// is a configuration problem of the group, which a restart of this member
// would not fix) and lists them after "ready", one a line. Readiness is
// worked out at most once a second, however often it is asked
// (supervise.Readiness). With a token, /metrics and /readyz require it
// (Authorization: Bearer); /healthz never does.
func opsHandler(reg *prometheus.Registry, sup *supervise.Supervisor, token string) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", bearer(token, promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg})))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.Handle("GET /readyz", bearer(token, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rep := sup.Readiness(context.WithoutCancel(r.Context()))
		var b strings.Builder
		if len(rep.Units) == 1 && rep.Units[0].Name == "" {
			u := rep.Units[0]
			if !u.Ready {
				http.Error(w, "not ready: "+u.Why, http.StatusServiceUnavailable)
				return
			}
			b.WriteString("ready\n")
			for _, n := range u.Notes {
				b.WriteString(n + "\n")
			}
			io.WriteString(w, b.String())
			return
		}
		var not []string
		for _, u := range rep.Units {
			if u.Ready {
				fmt.Fprintf(&b, "tenant %s: ready\n", u.Name)
				for _, n := range u.Notes {
					fmt.Fprintf(&b, "tenant %s: %s\n", u.Name, n)
				}
			} else {
				not = append(not, u.Name)
				fmt.Fprintf(&b, "tenant %s: not ready: %s\n", u.Name, u.Why)
			}
		}
		if len(not) > 0 {
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("X-Content-Type-Options", "nosniff")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintf(w, "not ready: tenants %s\n%s", strings.Join(not, ", "), b.String())
			return
		}
		io.WriteString(w, "ready\n"+b.String())
	})))
	return mux
}

// bearer requires token (when not empty) of h's requests: 401 otherwise.
func bearer(token string, h http.Handler) http.Handler {
	if token == "" {
		return h
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="skillstream"`)
			http.Error(w, "unauthorized: send the metrics token (Authorization: Bearer)", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}
