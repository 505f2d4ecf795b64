package projection

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// RebuildResult says what a rebuild applied.
type RebuildResult struct {
	Bucket string
	// Records is how many output records were applied, Unreadable how
	// many of them were not what their subject says.
	Records, Unreadable uint64
	// FirstSeq and LastSeq are the stream sequences of the first and last
	// record applied (0 when none).
	FirstSeq, LastSeq uint64
	// From is where the new projection starts (zero: the stream's start).
	From    time.Time
	Elapsed time.Duration
}

// Rebuild deletes the projection of opts.Bucket and replays the stream's
// output records into it, from since (zero: the stream's start), until
// it has applied every one; progress, when set, is called after each
// batch with the records read (the triggers, passed over, among them)
// and those left in the stream. The bucket is created when
// missing. It reads through a consumer of its own (opts.Consumer, by
// default DefaultConsumer-rebuild), deleted when it is done.
//
// It takes the lease from whoever holds it (a serve member stands by at
// its next renewal and takes over again once the rebuild is done), starts
// a new generation (a member still writing the old one finds its next
// write refused, and whatever it wrote is not counted), then removes
// every hour bucket. A rebuild that is interrupted leaves a projection
// that a serve member completes from where it stopped.
func Rebuild(ctx context.Context, js jetstream.JetStream, opts Options, since time.Time, progress func(read uint64, remaining uint64)) (*RebuildResult, error) {
	if opts.Instance == "" {
		opts.Instance = "rebuild"
	}
	if opts.Consumer == "" {
		// Its own: the members' consumer stays theirs.
		opts.Consumer = DefaultConsumer + "-rebuild"
	}
	if opts.FlushWait <= 0 {
		opts.FlushWait = 250 * time.Millisecond // nothing waits for records to come
	}
	p, err := New(js, opts)
	if err != nil {
		return nil, err
	}
	start := time.Now()
	if _, err := js.Stream(ctx, p.opts.Stream); err != nil {
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return nil, fmt.Errorf("stream %s does not exist", p.opts.Stream)
		}
		return nil, fmt.Errorf("stream %s: %w", p.opts.Stream, err)
	}
	kv, err := p.bucket(ctx, true)
	if err != nil {
		return nil, err
	}
	l, err := force(ctx, kv, p.opts.Instance, p.opts.LeaseTTL)
	if err != nil {
		return nil, p.hint(err)
	}
	tctx, cancel := context.WithCancelCause(ctx)
	kept := make(chan struct{})
	go func() { defer close(kept); l.keep(tctx, cancel) }()
	defer func() {
		cancel(nil)
		<-kept
		l.release()
	}()

	var from time.Time
	if !since.IsZero() {
		from = since.UTC()
	}
	pos := p.newPosition(from)
	b, _ := json.Marshal(pos)
	if _, err := kv.Put(tctx, posKey, b); err != nil {
		return nil, p.hint(fmt.Errorf("write position: %w", err))
	}
	if err := purgeHours(tctx, js, p.opts.Bucket); err != nil {
		return nil, err
	}
	res, err := p.term(tctx, kv, termOptions{caughtUp: true, progress: progress})
	if st, serr := js.Stream(context.WithoutCancel(ctx), p.opts.Stream); serr == nil {
		_ = st.DeleteConsumer(context.WithoutCancel(ctx), p.opts.Consumer) // done with it
	}
	if err != nil {
		if cause := context.Cause(tctx); cause != nil && ctx.Err() == nil && errors.Is(cause, errLeaseLost) {
			err = fmt.Errorf("%w (another rebuild?)", cause)
		}
		return nil, err
	}
	return &RebuildResult{Bucket: p.opts.Bucket, Records: res.Applied, Unreadable: res.Unreadable,
		FirstSeq: res.FirstSeq, LastSeq: res.LastSeq, From: from, Elapsed: time.Since(start)}, nil
}

// purgeHours removes every hour bucket of the bucket, at once: one purge
// of the subjects of its hour keys in the bucket's stream.
func purgeHours(ctx context.Context, js jetstream.JetStream, bucket string) error {
	st, err := js.Stream(ctx, "KV_"+bucket)
	if err != nil {
		return fmt.Errorf("bucket %s: %w", bucket, err)
	}
	if err := st.Purge(ctx, jetstream.WithPurgeSubject("$KV."+bucket+".h.>")); err != nil {
		return fmt.Errorf("purge the hours of bucket %s: %w", bucket, err)
	}
	return nil
}
