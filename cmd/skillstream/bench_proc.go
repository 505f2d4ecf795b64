package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/processor"
	"github.com/skillstream/skillstream/processor/bench"
	"github.com/skillstream/skillstream/processor/gcpolicy"
	"github.com/skillstream/skillstream/processor/usage"
	"github.com/skillstream/skillstream/processor/usage/projection"
	"github.com/skillstream/skillstream/providers/search"
)

// benchChildSpec is what the parent sends a consumer child on its stdin.
type benchChildSpec struct {
	Role       string              `json:"role"`
	Config     Config              `json:"config"`
	URL        string              `json:"url"`
	CPUProfile string              `json:"cpuprofile,omitempty"`
	Baseline   *bench.BaselineSpec `json:"baseline,omitempty"`
	// Projector, on a processor's spec (never sent to a child), is the
	// usage projector's own child beside it (--projector-apart).
	Projector *benchChildSpec `json:"-"`
}

// startBenchInProcess runs the configured processor in this process, on
// its own connection to url, with its search index as serve builds it.
func startBenchInProcess(ctx context.Context, c *Config, url string, log *slog.Logger) (bench.Proc, error) {
	reg, err := c.registry(log, true)
	if err != nil {
		return nil, err
	}
	nc, err := benchConnect(c, url, "skillstream bench processor", log)
	if err != nil {
		reg.Close()
		return nil, err
	}
	var opts []processor.Option
	var index *search.Index
	if c.SkillSearch {
		index = search.New(reg, c.searchOptions())
		opts = append(opts, processor.WithSearcher(index))
	}
	base := c.processorConfig()
	if base.Instance == "" {
		base.Instance = processor.DefaultInstance() // one member over every partition
	}
	cfgs := c.partitionConfigs(base)
	stopLearner := func() {}
	if c.SearchLearn && index != nil {
		// The index learns from the bench's stream (each partition's), as
		// serve's does.
		js, err := jetstream.New(nc)
		if err != nil {
			nc.Close()
			reg.Close()
			return nil, fmt.Errorf("search learning: %w", err)
		}
		lctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		var wg sync.WaitGroup
		for _, pc := range cfgs {
			wg.Go(func() {
				_ = usage.FollowSearchLoads(lctx, js, usage.FollowOptions{Stream: pc.Stream, Prefix: pc.Prefix, Layout: pc.Layout},
					func(p usage.SearchLoad) { _ = index.Learn(p.Skill, p.Query, p.At) })
			})
		}
		stopLearner = func() { cancel(); wg.Wait() }
	}
	stopProjector := func() {}
	if c.usageProjection() {
		// The usage projector, as serve runs it beside the processor: one
		// per partition's stream.
		js, err := jetstream.New(nc)
		var projs []*projection.Projector
		for k, pc := range cfgs {
			if err != nil {
				break
			}
			o := benchProjectorOptions(c, log)
			o.Stream, o.Prefix, o.Bucket = pc.Stream, pc.Prefix, c.usageBucketOf(k)
			var proj *projection.Projector
			if proj, err = projection.New(js, o); err == nil {
				projs = append(projs, proj)
			}
		}
		if err != nil {
			nc.Close()
			reg.Close()
			return nil, fmt.Errorf("usage projector: %w", err)
		}
		pctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		var wg sync.WaitGroup
		for _, proj := range projs {
			wg.Go(func() { _ = proj.Run(pctx) })
		}
		stopProjector = func() { cancel(); wg.Wait() }
	}
	return bench.StartPartitions(ctx, nc, reg, cfgs, log, func() {
		stopProjector()
		stopLearner()
		nc.Close()
		if index != nil {
			index.Close()
		}
		reg.Close()
	}, opts...)
}

// benchProjectorOptions are the usage projector's options as a bench
// processor of c runs it: its consumer named after the processor's.
func benchProjectorOptions(c *Config, log *slog.Logger) projection.Options {
	o := c.usageOptions()
	o.Consumer, o.Logger = c.processorConfig().Consumer+"-usage", log
	return o
}

// startBenchProjector runs the usage projector alone in this process (the
// projector child of --projector-apart), on its own connection to url.
func startBenchProjector(ctx context.Context, c *Config, url string, log *slog.Logger) (bench.Proc, error) {
	nc, err := benchConnect(c, url, "skillstream bench usage projector", log)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	var proj *projection.Projector
	if err == nil {
		proj, err = projection.New(js, benchProjectorOptions(c, log))
	}
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("usage projector: %w", err)
	}
	return bench.StartRunner(ctx, proj.Run, nc.Close), nil
}

// settleProjection waits until the usage projection of c's stream has
// applied every output record in it (at most a minute).
func settleProjection(ctx context.Context, nc *nats.Conn, c *Config) error {
	js, err := jetstream.New(nc)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		rep, err := projection.Read(ctx, js, c.usageOptions(), time.Now())
		switch {
		case err != nil:
			last = err
		case rep.Projection != nil && rep.Projection.LagRecords == 0:
			return nil
		case rep.Projection != nil:
			last = fmt.Errorf("%d output records not applied", rep.Projection.LagRecords)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not caught up within a minute: %w", last)
		case <-tick.C:
		}
	}
}

// startBenchBaseline runs the baseline consumer in this process, on its
// own connection to url.
func startBenchBaseline(ctx context.Context, c *Config, url string, spec *bench.BaselineSpec, log *slog.Logger) (bench.Proc, error) {
	nc, err := benchConnect(c, url, "skillstream bench baseline", log)
	if err != nil {
		return nil, err
	}
	return bench.StartBaseline(ctx, nc, spec)
}

// runBenchChild is the child's side: read the spec, start the consumer,
// say "ready", run until stdin ends, print its statistics as one JSON line.
func (a *app) runBenchChild(ctx context.Context, stdin io.Reader) error {
	var spec benchChildSpec
	dec := json.NewDecoder(stdin)
	if err := dec.Decode(&spec); err != nil {
		return fmt.Errorf("bench child: read spec: %w", err)
	}
	c := spec.Config
	log := c.newLogger(a.stderr)
	if spec.CPUProfile != "" {
		stop, err := bench.StartCPUProfile(spec.CPUProfile)
		if err != nil {
			return err
		}
		defer stop()
	}
	var (
		p   bench.Proc
		err error
	)
	switch spec.Role {
	case bench.RoleProcessor:
		_, stopGC := gcpolicy.Start() // the processor child runs as serve does
		defer stopGC()
		p, err = startBenchInProcess(ctx, &c, spec.URL, log)
	case bench.RoleProjector:
		_, stopGC := gcpolicy.Start() // as serve runs
		defer stopGC()
		p, err = startBenchProjector(ctx, &c, spec.URL, log)
	case bench.RoleBaseline:
		if spec.Baseline == nil {
			return errors.New("bench child: baseline role without its spec")
		}
		p, err = startBenchBaseline(ctx, &c, spec.URL, spec.Baseline, log)
	default:
		return fmt.Errorf("bench child: unknown role %q", spec.Role)
	}
	if err != nil {
		return err
	}
	return bench.Serve(ctx, p, dec, stdin, a.stdout)
}

// benchConnect opens a client connection to url with the configured
// credentials when it is the configured cluster.
func benchConnect(c *Config, url, name string, log *slog.Logger) (*nats.Conn, error) {
	opts := []nats.Option{nats.Name(name), nats.MaxReconnects(-1)}
	if c.NATSURL != "" {
		copts, err := c.connectOptions(log)
		if err != nil {
			return nil, err
		}
		opts = append(copts, nats.Name(name))
	}
	nc, err := nats.Connect(url, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", url, err)
	}
	return nc, nil
}
