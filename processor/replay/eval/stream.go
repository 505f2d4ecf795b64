package eval

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/replay"
	"github.com/skillstream/skillstream/processor/usage"
)

// Window names the sessions of a stream to evaluate: those with a
// pre-step stored in [Since, Until), at most Max of them (the first
// ones), each read whole, as export reads it.
type Window struct {
	Stream, Prefix string
	Layout         events.Layout
	Since, Until   time.Time // zero Until: up to the newest event
	Max            int
}

// ErrTooManySessions is wrapped by Sessions when the window holds more
// sessions than Window.Max.
var ErrTooManySessions = errors.New("more sessions in the window than the bound")

// Sessions lists the sessions of w in the order of their first pre-step
// in it, through an ordered consumer of the pre-step subjects started at
// w.Since; it reads until the newest pre-step stored when it started, or
// one stored at w.Until or later.
func Sessions(ctx context.Context, js jetstream.JetStream, w Window) ([]string, error) {
	st, err := js.Stream(ctx, w.Stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("stream %s does not exist", w.Stream)
	}
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", w.Stream, err)
	}
	all := strings.Repeat("*.", w.Layout.SessionTokens()-1) + "*"
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects:    []string{events.Subject(w.Prefix, all, events.KindPreStep)},
		DeliverPolicy:     jetstream.DeliverAllPolicy,
		InactiveThreshold: usage.ReaderInactive,
	}
	if !w.Since.IsZero() {
		t := w.Since
		cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &t
	}
	cons, err := st.OrderedConsumer(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("read stream %s: %w", w.Stream, err)
	}
	defer usage.DeleteReader(ctx, st, cons)
	info, err := cons.Info(ctx)
	if err != nil {
		return nil, fmt.Errorf("read stream %s: %w", w.Stream, err)
	}
	if info.NumPending == 0 {
		return nil, nil
	}
	it, err := cons.Messages(jetstream.PullMaxMessages(512))
	if err != nil {
		return nil, fmt.Errorf("read stream %s: %w", w.Stream, err)
	}
	defer it.Stop()
	stop := context.AfterFunc(ctx, it.Stop)
	defer stop()
	var out []string
	seen := map[string]bool{}
	for {
		msg, err := it.Next(jetstream.NextMaxWait(30 * time.Second))
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, fmt.Errorf("read stream %s: %w", w.Stream, err)
		}
		md, err := msg.Metadata()
		if err != nil {
			return nil, fmt.Errorf("read stream %s: %w", w.Stream, err)
		}
		if !w.Until.IsZero() && !md.Timestamp.Before(w.Until) {
			return out, nil
		}
		if sid, _, err := events.ParseSubjectIn(w.Layout, w.Prefix, msg.Subject()); err == nil && !seen[sid] {
			if w.Max > 0 && len(out) == w.Max {
				return nil, fmt.Errorf("%w (%d): narrow the window", ErrTooManySessions, w.Max)
			}
			seen[sid] = true
			out = append(out, sid)
		}
		if md.NumPending == 0 {
			return out, nil
		}
	}
}

// StreamSource is session sid of w's stream as a Source: read whole when
// opened (replay.Export, in memory), named "<stream>/<sid>".
func StreamSource(js jetstream.JetStream, w Window, sid string) Source {
	return Source{Name: w.Stream + "/" + sid, Open: func(ctx context.Context) (io.ReadCloser, error) {
		var buf bytes.Buffer
		if _, err := replay.Export(ctx, js, replay.ExportOptions{Stream: w.Stream, Prefix: w.Prefix, Layout: w.Layout, Session: sid}, &buf); err != nil {
			return nil, err
		}
		return io.NopCloser(&buf), nil
	}}
}
