package processor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
)

// Partition is the configuration of the processor of partition k of n
// (events.PartitionStream, events.PartitionPrefix): c's stream and prefix
// made the partition's, and c's trigger rate shared out over the n
// partitions, so that a member started with a rate keeps to it in all.
// Everything else, the instance included, stays c's: the processors of one
// member's partitions are one member, each in the group of its own
// partition's stream.
func (c Config) Partition(k, n int) Config {
	if c.Stream == "" {
		c.Stream = DefaultStream
	}
	if c.Prefix == "" {
		c.Prefix = events.DefaultPrefix
	}
	c.Stream = events.PartitionStream(c.Stream, k)
	c.Prefix = events.PartitionPrefix(c.Prefix, k)
	if n > 1 && c.MaxTriggerRate > 0 {
		c.MaxTriggerRate /= float64(n)
	}
	return c
}

// ProbeKind is the kind of the messages CheckPartitionMapping publishes:
// no trigger kind, so no processor ever handles one.
const ProbeKind events.Kind = "skillstream.probe"

// probes is how many sessions CheckPartitionMapping places: enough that a
// mapping with another partition count is all but never taken for the
// right one.
const probes = 8

// CheckPartitionMapping checks that the NATS server behind js maps the
// sessions under prefix (layout l) to the n partition streams of stream,
// as events.PartitionOf places them: for a few random session ids it
// publishes a probe message on <prefix>.<session>.skillstream.probe, reads
// from the acknowledgement which stream took it, and deletes it there. A
// server without the mapping, or with one for another partition count, is
// an error naming the mapping to add. The partition streams must exist.
func CheckPartitionMapping(ctx context.Context, js jetstream.JetStream, stream, prefix string, l events.Layout, n int) error {
	src, dest := events.PartitionMapping(prefix, l, n)
	want := fmt.Sprintf("the NATS server (or the account) must map %s to %s", src, dest)
	for range probes {
		sid := randomToken()
		if l == events.LayoutOwner {
			sid = randomToken() + "." + sid
		}
		subject := events.Subject(prefix, sid, ProbeKind)
		ack, err := js.Publish(ctx, subject, nil)
		if errors.Is(err, jetstream.ErrNoStreamResponse) {
			return fmt.Errorf("%w: partitions: no stream took probe %s: %s (mappings { \"%s\": \"%s\" })", ErrInvalidConfig, subject, want, src, dest)
		}
		if err != nil {
			return fmt.Errorf("partitions: publish probe %s: %w", subject, err)
		}
		// The probe goes whatever is found: it is nobody's event.
		derr := deleteMsg(ctx, js, ack.Stream, ack.Sequence)
		k := events.PartitionOf(l, sid, n)
		if got := events.PartitionStream(stream, k); ack.Stream != got {
			return fmt.Errorf("%w: partitions: probe %s went to stream %s, not to partition %d's stream %s: %s (mappings { \"%s\": \"%s\" })",
				ErrInvalidConfig, subject, ack.Stream, k, got, want, src, dest)
		}
		if derr != nil {
			return fmt.Errorf("partitions: delete probe %s from stream %s: %w", subject, ack.Stream, derr)
		}
	}
	return nil
}

// deleteMsg deletes message seq of stream.
func deleteMsg(ctx context.Context, js jetstream.JetStream, stream string, seq uint64) error {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return err
	}
	return s.DeleteMsg(ctx, seq)
}

// randomToken is a random session token.
func randomToken() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return "probe-" + hex.EncodeToString(b[:])
}

// PartitionsMetadata is the key of a partition stream's metadata that
// records how many partitions its deployment has.
const PartitionsMetadata = "skillstream_partitions"

// CheckPartitionStreams checks that the n partition streams of stream were
// made for n partitions: a stream of partition n (one more) means they
// were made for more, and a stream whose metadata records another count
// was made for that many. A stream without the record gets it when mark
// is set (serve provisions), so that a later start with another count is
// refused. unpartitioned reports whether stream itself (sessions kept
// without partitions) exists beside them.
func CheckPartitionStreams(ctx context.Context, js jetstream.JetStream, stream string, n int, mark bool) (unpartitioned bool, err error) {
	want := fmt.Sprint(n)
	for k := range n {
		name := events.PartitionStream(stream, k)
		s, err := js.Stream(ctx, name)
		if err != nil {
			return false, fmt.Errorf("partitions: stream %s: %w", name, err)
		}
		cfg := s.CachedInfo().Config
		switch got := cfg.Metadata[PartitionsMetadata]; {
		case got == want:
		case got != "":
			return false, fmt.Errorf("%w: partitions: stream %s was made for %s partitions, not %d: changing the count moves sessions to other streams (see the manual's partitioned sessions)",
				ErrInvalidConfig, name, got, n)
		case mark:
			if cfg.Metadata == nil {
				cfg.Metadata = map[string]string{}
			}
			cfg.Metadata[PartitionsMetadata] = want
			if _, err := js.UpdateStream(ctx, cfg); err != nil {
				return false, fmt.Errorf("partitions: record the partition count on stream %s: %w", name, err)
			}
		}
	}
	next := events.PartitionStream(stream, n)
	if _, err := js.Stream(ctx, next); err == nil {
		return false, fmt.Errorf("%w: partitions: stream %s exists: the streams were made for more than %d partitions (see the manual's partitioned sessions)", ErrInvalidConfig, next, n)
	} else if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return false, fmt.Errorf("partitions: stream %s: %w", next, err)
	}
	if _, err := js.Stream(ctx, stream); err == nil {
		return true, nil
	} else if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return false, fmt.Errorf("partitions: stream %s: %w", stream, err)
	}
	return false, nil
}
