package replay

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
)

// Live replays session sid straight from stream (subjects under prefix,
// in the session layout opts.Layout), as Run replays a recording of it:
// every event in stream order, nothing published. A session without
// events is ErrEmptySession.
func Live(ctx context.Context, js jetstream.JetStream, stream, prefix, sid string, opts Options) (Summary, error) {
	if err := events.CheckSessionIn(opts.Layout, sid); err != nil {
		return Summary{}, fmt.Errorf("replay: %w", err)
	}
	rp, err := NewReplayer(Header{Session: sid, Prefix: prefix, Layout: opts.Layout, Stream: stream}, opts)
	if err != nil {
		return Summary{}, err
	}
	defer rp.release()
	err = ReadSession(ctx, js, stream, prefix, sid, func(e Event, _ uint64) error {
		return rp.Add(ctx, Item{Event: &e})
	})
	if err != nil {
		return Summary{}, err
	}
	return rp.Finish(ctx)
}

// Verify reads a recording to its end record, checking every record, the
// event count and the checksum; a bad recording is a *FormatError. Replay
// a file only once it verifies: the checksum is only known at the end, and
// a truncated or altered recording should be refused before a single step
// is shown.
func Verify(r io.Reader) error {
	rd, err := NewReader(r)
	if err != nil {
		return err
	}
	for {
		_, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
