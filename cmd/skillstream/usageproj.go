package main

import (
	"log/slog"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/processor"
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
	cmd.cfgBool(&c.UsageProjection, "usage-projection", true,
		"keep the usage projection that usage and the console read (the default; one member of the group keeping it is enough); it costs about 1% of the processor's CPU, see the manual")
	cmd.cfgBool(&c.NoUsageProjection, "no-usage-projection", false,
		"do not keep the usage projection (usage then reads the stream, unless another member keeps it)")
}

// usageProjection says whether this serve keeps the usage projection: by
// default, unless --no-usage-projection (or --usage-projection=false).
func (c *Config) usageProjection() bool { return c.UsageProjection && !c.NoUsageProjection }

// usageOptions are the projection's options for the stream of c.
func (c *Config) usageOptions() projection.Options {
	return projection.Options{Stream: c.Stream, Prefix: c.Prefix, Layout: c.layout(), Bucket: c.UsageBucket}
}

// usageProjector is the usage projector of one served processor, on its
// connection (a tenant's projection in its own account); nil without
// --no-usage-projection. It runs beside the processor, and stops with it.
func (c *Config) usageProjector(log *slog.Logger, u *servedUnit, pcfg processor.Config, k int, instance string, metrics *prometheus.Registry) (*projection.Projector, error) {
	if !c.usageProjection() {
		return nil, nil
	}
	o := c.usageOptions()
	o.Stream, o.Prefix, o.Layout = pcfg.Stream, pcfg.Prefix, pcfg.Layout
	o.Bucket = c.usageBucketOf(k) // with partitions, one bucket per partition's stream
	o.Consumer = pcfg.Consumer + "-usage"
	o.Instance = instance
	o.Replicas = pcfg.Replicas
	o.NoProvision = pcfg.NoProvision
	o.Logger = log
	o.Registerer = metrics
	if u.tenant != "" {
		o.Logger = log.With("tenant", u.tenant)
		o.Registerer = prometheus.WrapRegistererWith(prometheus.Labels{"tenant": u.tenant}, metrics)
	}
	if c.Partitions > 1 {
		o.Logger = o.Logger.With("partition", k)
		o.Registerer = prometheus.WrapRegistererWith(prometheus.Labels{"partition": strconv.Itoa(k)}, o.Registerer)
	}
	return projection.New(u.js, o)
}

// useRanking is what a processor ranks its catalogs by with --catalog-rank
// use: the tenant's loads over the last week, read from its usage
// projection every minute (nil with --catalog-rank name). Without a
// projection (--no-usage-projection here and on every other member) the
// ranking stays empty and catalogs list by name.
func (c *Config) useRanking(log *slog.Logger, u *servedUnit, pcfg processor.Config) *projection.Uses {
	if c.catalogRank() != catalog.RankUse {
		return nil
	}
	o := c.usageOptions()
	o.Stream, o.Prefix, o.Layout = pcfg.Stream, pcfg.Prefix, pcfg.Layout
	o.Logger = log
	if u.tenant != "" {
		o.Logger = log.With("tenant", u.tenant)
	}
	// With partitions, every partition's projection, summed: a member
	// ranks by the tenant's loads, not by its partition's.
	return projection.NewUses(u.js, o, projection.DefaultUseWindow, projection.DefaultUseRefresh).Partitions(c.Partitions)
}

// useFirstRead bounds the read of the use ranking at a unit's start.
const useFirstRead = 5 * time.Second

// Ranking is the use ranking of the unit's current start (nil without
// --catalog-rank use, or before it read any): what its MCP front door's
// tool description ranks by.
func (u *servedUnit) Ranking() catalog.Ranking {
	if x := u.uses.Load(); x != nil {
		return x.Ranking()
	}
	return nil
}
