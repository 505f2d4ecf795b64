package main

import (
	"context"
	"log/slog"

	"github.com/oklog/run"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/skillstream/skillstream/processor/usage/projection"
)

// usageBucketFlag registers --usage-bucket: serve's and usage's.
func (c *Config) usageBucketFlag(cmd *command) {
	cmd.cfgString(&c.UsageBucket, "usage-bucket", projection.DefaultBucket,
		"key-value `bucket` of the usage projection: serve keeps it, usage reads it; one per stream")
}

// usageProjectionFlags registers serve's flags of the usage projection.
func (c *Config) usageProjectionFlags(cmd *command) {
	cmd.group("Usage projection")
	c.usageBucketFlag(cmd)
	cmd.cfgBool(&c.UsageProjection, "usage-projection", false,
		"keep the usage projection that usage reads (one member of the group keeping it is enough; without, usage reads the stream); it costs CPU per trigger, see the manual")
}

// usageOptions are the projection's options for the stream of c.
func (c *Config) usageOptions() projection.Options {
	return projection.Options{Stream: c.Stream, Prefix: c.Prefix, Layout: c.layout(), Bucket: c.UsageBucket}
}

// addUsageProjectors adds to g one usage projector per served unit, each
// on its unit's connection (a tenant's projection in its own account).
// Added before the processors, they stop before the processors close
// the connections, giving their lease back.
func addUsageProjectors(g *run.Group, c *Config, log *slog.Logger, units []*servedUnit, metrics *prometheus.Registry) error {
	if !c.UsageProjection {
		return nil
	}
	for _, u := range units {
		o := c.usageOptions()
		o.Stream, o.Prefix, o.Layout = u.pcfg.Stream, u.pcfg.Prefix, u.pcfg.Layout
		o.Consumer = u.pcfg.Consumer + "-usage"
		o.Instance = u.p.Config().Instance
		o.Replicas = u.pcfg.Replicas
		o.NoProvision = u.pcfg.NoProvision
		o.Logger = log
		o.Registerer = metrics
		if u.tenant != "" {
			o.Logger = log.With("tenant", u.tenant)
			o.Registerer = prometheus.WrapRegistererWith(prometheus.Labels{"tenant": u.tenant}, metrics)
		}
		p, err := projection.New(u.js, o)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		g.Add(func() error {
			defer close(done)
			return p.Run(ctx)
		}, func(error) {
			cancel()
			<-done
		})
	}
	return nil
}
