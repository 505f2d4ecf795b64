// Package partition finds a deployment's session streams for a reader:
// the streams of its partitions (events.PartitionStream), a session's
// partition (events.PartitionOf), and, when a reader's partition count
// does not match the streams the server holds, an error that says so
// and what count would.
//
// A reader is told the partition count (--partitions); it never guesses
// it. These checks only turn the errors of a wrong count (a stream that
// does not exist, a session that is not where its id places it) into
// ones that name the fix.
package partition

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
)

// Place is where sessions are kept: a stream and the subject prefix of
// its sessions.
type Place struct {
	Stream, Prefix string
}

// Places are the places of n partitions of stream and prefix: each
// partition's, in order; with n < 2 the stream and prefix alone.
func Places(stream, prefix string, n int) []Place {
	if n < 2 {
		return []Place{{stream, prefix}}
	}
	ps := make([]Place, n)
	for k := range ps {
		ps[k] = Place{events.PartitionStream(stream, k), events.PartitionPrefix(prefix, k)}
	}
	return ps
}

// Of is where session sid is kept among n partitions in layout l.
func Of(stream, prefix string, l events.Layout, sid string, n int) Place {
	if n < 2 {
		return Place{stream, prefix}
	}
	k := events.PartitionOf(l, sid, n)
	return Place{events.PartitionStream(stream, k), events.PartitionPrefix(prefix, k)}
}

// ErrMismatch reports a partition count that does not match the streams
// the server holds.
var ErrMismatch = errors.New("the partition count does not match the session streams")

// streams says which of stream and its partition streams (stream-<k>,
// from 0 on, up to the first missing) the server holds, asking for each
// by name: a reader's credentials may read streams it cannot list.
func streams(ctx context.Context, js jetstream.JetStream, stream string) (whole bool, have int, err error) {
	exists := func(name string) (bool, error) {
		_, err := js.Stream(ctx, name)
		switch {
		case err == nil:
			return true, nil
		case errors.Is(err, jetstream.ErrStreamNotFound):
			return false, nil
		}
		return false, fmt.Errorf("stream %s: %w", name, err)
	}
	if whole, err = exists(stream); err != nil {
		return false, 0, err
	}
	for have < events.MaxPartitions {
		// A partition that cannot be asked about (not permitted, say)
		// counts as missing: the hints only name what is known.
		if ok, err := exists(events.PartitionStream(stream, have)); err != nil || !ok {
			break
		}
		have++
	}
	return whole, have, nil
}

// Check verifies that the server holds the streams of n partitions of
// stream (n < 2: stream itself), and no partition stream past them. Its
// error wraps ErrMismatch and names the count the streams suggest.
func Check(ctx context.Context, js jetstream.JetStream, stream string, n int) error {
	whole, have, err := streams(ctx, js, stream)
	if err != nil {
		return err
	}
	if n < 2 {
		if !whole && have >= 2 {
			return fmt.Errorf("%w: stream %s does not exist, but its partitions %s to %s do: give --partitions %d",
				ErrMismatch, stream, events.PartitionStream(stream, 0), events.PartitionStream(stream, have-1), have)
		}
		return nil
	}
	for k := range n {
		if k < have {
			continue
		}
		hint := "no partition stream of " + stream + " exists"
		switch {
		case have >= 2:
			hint = fmt.Sprintf("the server holds %d partitions (%s to %s): give --partitions %d",
				have, events.PartitionStream(stream, 0), events.PartitionStream(stream, have-1), have)
		case whole:
			hint = fmt.Sprintf("the sessions are kept in one stream, %s: give no --partitions", stream)
		}
		return fmt.Errorf("%w: --partitions %d: stream %s does not exist (%s)", ErrMismatch, n, events.PartitionStream(stream, k), hint)
	}
	if have > n {
		return fmt.Errorf("%w: --partitions %d, but stream %s exists too: the server holds %d partitions: give --partitions %d",
			ErrMismatch, n, events.PartitionStream(stream, n), have, have)
	}
	return nil
}

// Elsewhere looks for session sid in every session stream of stream the
// server holds other than at (the whole stream, and each partition),
// for a reader that did not find it where n partitions place it: an
// error wrapping ErrMismatch naming where it is and what to give, or nil
// when it is nowhere else either.
func Elsewhere(ctx context.Context, js jetstream.JetStream, stream, prefix string, l events.Layout, sid string, n int, at Place) error {
	whole, have, err := streams(ctx, js, stream)
	if err != nil {
		return err
	}
	var candidates []Place
	if whole {
		candidates = append(candidates, Place{stream, prefix})
	}
	if have >= 2 {
		candidates = append(candidates, Places(stream, prefix, have)...)
	}
	for _, p := range candidates {
		if p == at {
			continue
		}
		st, err := js.Stream(ctx, p.Stream)
		if err != nil {
			continue
		}
		info, err := st.Info(ctx, jetstream.WithSubjectFilter(events.SessionWildcard(p.Prefix, sid)))
		if err != nil || len(info.State.Subjects) == 0 {
			continue
		}
		given := "no --partitions"
		if n >= 2 {
			given = "--partitions " + strconv.Itoa(n)
		}
		fix := fmt.Sprintf("the server holds %d partitions: give --partitions %d", have, have)
		switch {
		case p.Stream == stream:
			fix = "a session kept before the sessions were partitioned: read it with no --partitions"
		case have < 2 || have == n:
			fix = "the server's mapping places it otherwise than " + given + " does (check the mapping's partition count)"
		}
		return fmt.Errorf("%w: session %s is not in stream %s, where %s places it, but in stream %s: %s",
			ErrMismatch, sid, at.Stream, given, p.Stream, fix)
	}
	return nil
}
