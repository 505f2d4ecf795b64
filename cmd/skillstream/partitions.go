package main

import (
	"strconv"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor"
	"github.com/skillstream/skillstream/processor/usage/projection"
)

// partitionConfigs are the processor configurations serve runs for base:
// base alone without --partitions, one per partition with it.
func (c *Config) partitionConfigs(base processor.Config) []processor.Config {
	if c.Partitions < 2 {
		return []processor.Config{base}
	}
	out := make([]processor.Config, c.Partitions)
	for k := range out {
		out[k] = base.Partition(k, c.Partitions)
	}
	return out
}

// partitionMappings is the subject mapping the embedded server is started
// with: the sessions' partition mapping with --partitions, none without.
func (c *Config) partitionMappings() [][2]string {
	if c.Partitions < 2 {
		return nil
	}
	src, dest := events.PartitionMapping(c.Prefix, c.layout(), c.Partitions)
	return [][2]string{{src, dest}}
}

// usageBucketOf is the usage projection's bucket of partition k: the
// --usage-bucket without partitions, <bucket>-<k> with them.
func (c *Config) usageBucketOf(k int) string {
	if c.Partitions < 2 {
		return c.UsageBucket
	}
	return projection.PartitionBucket(c.UsageBucket, k)
}

// validatePartitions checks --partitions.
func (c *Config) validatePartitions() error {
	if err := events.CheckPartitions(c.Partitions); err != nil {
		return usagef("--%v", err)
	}
	return nil
}

// partitionLabel is " (partition K)" with --partitions, "" without.
func partitionLabel(c *Config, k int) string { return partitionLabel2(c.Partitions, k) }

// partitionLabel2 is " (partition K)" among n > 1 partitions, "" otherwise.
func partitionLabel2(n, k int) string {
	if n < 2 {
		return ""
	}
	return " (partition " + strconv.Itoa(k) + ")"
}
