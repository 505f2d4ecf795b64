package main

import (
	"math"

	"github.com/skillstream/skillstream/processor"
)

// processorDefaults are the processor's own defaults, shown by --help.
func processorDefaults() processor.Config {
	return processor.Config{}.WithDefaults()
}

// processorConfig is the processor's share of the configuration.
func (c *Config) processorConfig() processor.Config {
	return processor.Config{
		Stream:          c.Stream,
		Prefix:          c.Prefix,
		Layout:          c.layout(),
		Consumer:        c.Consumer,
		Instance:        c.Instance,
		ToolOwner:       c.ToolOwner,
		Catalog:         c.catalogOptions(),
		Replicas:        c.Replicas,
		MaxAge:          c.MaxAge.processor(),
		MaxBytes:        c.MaxBytes.processor(),
		MaxMsgSize:      int32(min(c.MaxMsgSize.processor(), math.MaxInt32)),
		MaxTriggerBytes: int(c.MaxTriggerBytes),
		CatalogResends:  noLimitIfZero(c.CatalogResends),
		CatalogBytes:    noLimitIfZero(c.CatalogBytes),
		InvocationBytes: noLimitIfZero(c.InvocationBytes),
		DuplicateWindow: c.DuplicateWindow,
		Workers:         c.Workers,
		MaxTriggerRate:  float64(c.MaxTriggerRate),
		AckWait:         c.AckWait,
		MaxDeliver:      c.MaxDeliver,
		CatchUpWait:     c.CatchUpWait,
		NoProvision:     c.NoProvision,
		ReplyPrefixes:   c.ReplyPrefixes,
		AnyOwnerInbox:   c.AnyOwnerInbox,
		CwdRoots:        c.CwdRoots,
		InboxPrefix:     c.InboxPrefix,
		SkillLabelLimit: c.MetricsSkillLimit,
	}.WithDefaults()
}

// noLimitIfZero is a flag's bound as processor.Config takes it: the flag's
// 0 (no bound) is processor.NoLimit, since the processor's 0 is its
// default.
func noLimitIfZero[T int | int64](v T) T {
	if v == 0 {
		return processor.NoLimit
	}
	return v
}
