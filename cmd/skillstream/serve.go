package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
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
	c.securityFlags(cmd)
	c.mcpFlags(cmd)
	c.opsFlags(cmd, true)
	return cmd, func(ctx context.Context, args []string) error {
		if len(args) > 0 {
			return usagef("serve takes no arguments, got %q", args[0])
		}
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
// Actors, in the order their interrupts run: signals, processor (its
// interrupt waits until in-flight triggers are finished and the client
// connection is flushed and closed), metrics server, embedded NATS server.
func (a *app) serve(ctx context.Context, c *Config, mcpToken string) error {
	log := c.newLogger(a.stderr)
	gc, stopGC := gcpolicy.Start()
	defer stopGC()

	var (
		srv   *server.Server
		nc    *nats.Conn
		where []any
		err   error
	)
	if c.NATSURL == "" {
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
		nc, err = embedded.Connect(srv, "skillstream "+c.ToolOwner, opts...)
		if !loopback(c.Listen) {
			log.Warn("the embedded NATS server takes clients without authentication on a non-loopback address; firewall it, or run an authenticated cluster and use --nats-url",
				"listen", c.Listen)
		}
		data, _ := filepath.Abs(c.Data)
		where = []any{"nats", "embedded", "listen", embedded.URL(srv), "data", data}
	} else {
		var opts []nats.Option
		if opts, err = c.connectOptions(log); err == nil {
			nc, err = nats.Connect(c.NATSURL, opts...)
			if err != nil {
				err = fmt.Errorf("connect to %s: %w", c.NATSURL, err)
			}
		}
		if nc != nil {
			where = []any{"nats", nc.ConnectedUrlRedacted()}
		}
	}
	if err != nil {
		return err
	}
	defer nc.Close()

	var sjs jetstream.JetStream
	if !c.NoSkillStore {
		if sjs, err = jetstream.New(nc); err != nil {
			return fmt.Errorf("jetstream context: %w", err)
		}
		where = append(where, "skill_store", c.SkillStoreBucket)
	}
	storeWarnings := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "skillstream", Name: "store_warnings_total",
		Help: "Skill store warnings, logged or not (one key's are logged at most once a minute), by kind: malformed_entry, bad_object (a record whose object is missing, damaged or another skill's: not listed), watch."},
		[]string{"kind"})
	c.storeWarned = func(kind string) { storeWarnings.WithLabelValues(kind).Inc() }
	reg, err := c.registryWith(ctx, log, true, sjs)
	if err != nil {
		return err
	}
	defer func() {
		if err := reg.Close(); err != nil {
			log.Warn("close skill registry", "err", err)
		}
	}()

	pcfg := c.processorConfig()
	metrics := prometheus.NewRegistry()
	metrics.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), buildInfo(), storeWarnings)
	// Serving is announced once the processor serves (its consumer pulls,
	// its endpoints answer), by its Run, before Run logs anything more: a
	// worker that connects on the line finds a responder.
	var serving []any
	popts := []processor.Option{processor.WithLogger(log), processor.WithRegisterer(metrics),
		processor.WithVersion(thisBuild().version),
		processor.WithOnReady(func() { log.Info("skillstream serving", serving...) })}
	var index *search.Index // with --skill-search: the processor's and the MCP front door's
	if c.SkillSearch {
		// The index follows the registry: built per changed skill, never
		// per search.
		index = search.New(reg, search.Options{})
		defer index.Close()
		popts = append(popts, processor.WithSearcher(index))
		where = append(where, "skill_search", "on", "catalog_listed_max", c.CatalogListedMax)
	}
	p, err := processor.New(nc, reg, pcfg, popts...)
	if err != nil {
		return err
	}
	// Stream, consumer and size limits are checked before serving is
	// announced: a configuration refused here never logs that it serves.
	// A stop asked for meanwhile is not a failure.
	if err := p.Prepare(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return fmt.Errorf("processor: %w", err)
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
		if mcpFront, err = c.startMCP(reg, index, mcpToken, log, metrics, thisBuild().version); err != nil {
			return err
		}
		defer mcpFront.ln.Close()
		where = append(where, "mcp", "http://"+mcpFront.ln.Addr().String()+"/mcp")
	}

	sl := p.StreamLimits()
	serving = append(where,
		"stream", pcfg.Stream, "subjects", pcfg.Prefix+".>", "consumer", pcfg.Consumer,
		"max_bytes", limitText(sl.MaxBytes), "max_age", durationLimitText(sl.MaxAge), "max_msg_size", limitText(int64(sl.MaxMsgSize)),
		"stream_limits", sl.Provisioned, "max_trigger_bytes", formatBytes(int64(pcfg.MaxTriggerBytes)),
		"tool_owner", pcfg.ToolOwner, "instance", p.Config().Instance, "workers", pcfg.Workers, "gc", gc)

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

	// Processor. Its interrupt returns only once it has drained and the
	// connection is closed, so nothing after it stops under its feet.
	pctx, pcancel := context.WithCancel(context.WithoutCancel(ctx))
	pdone := make(chan struct{})
	g.Add(func() error {
		defer close(pdone)
		err := p.Run(pctx)
		if ferr := nc.FlushTimeout(shutdownTimeout); ferr != nil && !errors.Is(ferr, nats.ErrConnectionClosed) {
			log.Warn("flush NATS connection", "err", ferr)
		}
		nc.Close()
		if err != nil {
			return fmt.Errorf("processor: %w", err)
		}
		if pctx.Err() == nil {
			return errors.New("processor stopped unexpectedly")
		}
		return nil
	}, func(error) {
		pcancel()
		<-pdone
	})

	// Metrics, health and readiness.
	if ln != nil {
		js, err := jetstream.New(nc)
		if err != nil {
			return fmt.Errorf("jetstream context: %w", err)
		}
		hs := &http.Server{
			Handler: opsHandler(metrics, nc, js, pcfg, p.Ready(), pdone, p.Divergences),
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
func opsHandler(reg *prometheus.Registry, nc *nats.Conn, js jetstream.JetStream, cfg processor.Config, ready, pdone <-chan struct{},
	divergences func() []processor.Divergence) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		notReady := func(why string) {
			http.Error(w, "not ready: "+why, http.StatusServiceUnavailable)
		}
		select {
		case <-pdone:
			notReady("processor stopped")
			return
		default:
		}
		select {
		case <-ready:
		default:
			notReady("processor starting")
			return
		}
		if !nc.IsConnected() {
			notReady("NATS " + nc.Status().String())
			return
		}
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if _, err := js.Consumer(ctx, cfg.Stream, cfg.Consumer); err != nil {
			notReady(fmt.Sprintf("consumer %s on stream %s: %v", cfg.Consumer, cfg.Stream, err))
			return
		}
		fmt.Fprintln(w, "ready")
		for _, d := range divergences() {
			fmt.Fprintln(w, d.String())
		}
	})
	return mux
}
