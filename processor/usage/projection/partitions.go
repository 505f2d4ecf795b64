package projection

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
)

// Partitioned sessions keep one projection per partition: partition k's,
// of stream events.PartitionStream(Stream, k) under
// events.PartitionPrefix(Prefix, k), in bucket PartitionBucket(Bucket, k).
// The readers below sum them; a session is kept in one partition, so
// what is counted per session adds up exactly.

// PartitionBucket is the bucket of partition k's usage projection:
// <bucket>-<k>.
func PartitionBucket(bucket string, k int) string {
	return bucket + "-" + strconv.Itoa(k)
}

// partition is o for partition k's projection.
func (o Options) partition(k int) Options {
	o.Stream = events.PartitionStream(o.Stream, k)
	o.Prefix = events.PartitionPrefix(o.Prefix, k)
	o.Bucket = PartitionBucket(o.Bucket, k)
	return o
}

// ReadSeriesPartitions is ReadSeries over the projections of n
// partitions, summed point by point, over one window for all. The
// series' Partitions is n and its AppliedSeq zero (each partition has
// its own sequences); its lag is the sum of theirs.
func ReadSeriesPartitions(ctx context.Context, js jetstream.JetStream, opts Options, n int, step Step, from, to time.Time) (*Series, error) {
	if n < 2 {
		return ReadSeries(ctx, js, opts, step, from, to)
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	if to.IsZero() {
		to = time.Now() // one window for every partition
	}
	var sum *Series
	for k := range n {
		s, err := ReadSeries(ctx, js, o.partition(k), step, from, to)
		if err != nil {
			return nil, err
		}
		if sum == nil {
			sum = s
			continue
		}
		if !slices.Equal(sum.Times, s.Times) {
			return nil, fmt.Errorf("series of partition %d: its points differ from partition 0's", k)
		}
		sum.add(s)
	}
	sum.Partitions, sum.AppliedSeq = n, 0
	return sum, nil
}

// add sums series s, of the same points, into x.
func (x *Series) add(s *Series) {
	addInts := func(a, b []int) {
		for i := range a {
			a[i] += b[i]
		}
	}
	addInts(x.Total.Loads, s.Total.Loads)
	addInts(x.Total.Searches, s.Total.Searches)
	addInts(x.Total.SearchThenLoad, s.Total.SearchThenLoad)
	addInts(x.Total.NoMatch, s.Total.NoMatch)
	addInts(x.Total.Errors, s.Total.Errors)
	for _, sk := range s.Skills {
		xs := x.Skill(sk.Name)
		if xs == nil {
			x.Skills = append(x.Skills, sk)
			continue
		}
		addInts(xs.Loads, sk.Loads)
		addInts(xs.Found, sk.Found)
		addInts(xs.SearchThenLoad, sk.SearchThenLoad)
		addInts(xs.Errors, sk.Errors)
		for _, r := range sk.Releases {
			i := slices.IndexFunc(xs.Releases, func(xr ReleaseSeries) bool { return xr.Rev == r.Rev && xr.Channel == r.Channel })
			if i < 0 {
				xs.Releases = append(xs.Releases, r)
				continue
			}
			addInts(xs.Releases[i].Loads, r.Loads)
			addInts(xs.Releases[i].Errors, r.Errors)
		}
		sort.Slice(xs.Releases, func(i, j int) bool {
			a, c := xs.Releases[i], xs.Releases[j]
			if a.Rev != c.Rev {
				return a.Rev < c.Rev
			}
			return a.Channel < c.Channel
		})
	}
	sort.Slice(x.Skills, func(i, j int) bool { return x.Skills[i].Name < x.Skills[j].Name })
	for _, p := range s.Partial {
		if !slices.Contains(x.Partial, p) {
			x.Partial = append(x.Partial, p)
		}
	}
	x.LagRecords += s.LagRecords
	x.LagCounted = x.LagCounted && s.LagCounted
}

// RebuildPartitions is Rebuild of each of n partitions' projections in
// turn: a result each.
func RebuildPartitions(ctx context.Context, js jetstream.JetStream, opts Options, n int, since time.Time, progress func(read uint64, remaining uint64)) ([]*RebuildResult, error) {
	if n < 2 {
		r, err := Rebuild(ctx, js, opts, since, progress)
		if err != nil {
			return nil, err
		}
		return []*RebuildResult{r}, nil
	}
	o, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	var out []*RebuildResult
	for k := range n {
		r, err := Rebuild(ctx, js, o.partition(k), since, progress)
		if err != nil {
			return out, fmt.Errorf("partition %d: %w", k, err)
		}
		out = append(out, r)
	}
	return out, nil
}
