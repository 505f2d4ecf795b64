package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/history"
)

// ErrEmptySession reports a session without any event in the stream.
var ErrEmptySession = errors.New("session has no events")

// readBatch and readBytes bound one read batch.
const (
	readBatch = 512
	readBytes = 16 << 20
)

// ReadSession calls fn with every event of session sid in stream, in stream
// order, until it has delivered the session's newest event (events appended
// while it reads are included until it catches up). It reads in batches
// through an ephemeral, unacknowledged, in-memory pull consumer filtered to
// <prefix>.<sid>.> (sid is a session id of either layout, "<owner>.<sid>"
// in the owner layout), deleted at the end (and by the server after a short
// idle time should the reader vanish): nothing is published to the session
// and no durable state is created. fn also gets how many events remain
// after this one. Memory is bounded by one batch (readBatch messages,
// readBytes bytes or one maximal message), whatever the session's length.
// A session without events is ErrEmptySession.
func ReadSession(ctx context.Context, js jetstream.JetStream, stream, prefix, sid string, fn func(e Event, remaining uint64) error) error {
	if _, ok := events.SessionLayout(sid); !ok {
		return fmt.Errorf("read session: %w", events.CheckSession(sid))
	}
	cons, err := js.CreateConsumer(ctx, stream, jetstream.ConsumerConfig{
		Description:       "skillstream session reader (export, replay, history)",
		FilterSubjects:    []string{events.SessionWildcard(prefix, sid)},
		DeliverPolicy:     jetstream.DeliverAllPolicy,
		AckPolicy:         jetstream.AckNonePolicy,
		MemoryStorage:     true,
		Replicas:          1,
		InactiveThreshold: 30 * time.Second,
	})
	if err != nil {
		return fmt.Errorf("read session %s from stream %s: %w", sid, stream, err)
	}
	name := cons.CachedInfo().Name
	defer func() {
		// Best effort: the server drops an idle reader consumer by itself.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_ = js.DeleteConsumer(dctx, stream, name)
	}()
	if cons.CachedInfo().NumPending == 0 {
		return fmt.Errorf("read session %s from stream %s: %w", sid, stream, ErrEmptySession)
	}
	limit := readBytes
	if nc := js.Conn(); nc != nil {
		limit = max(limit, 2*int(nc.MaxPayload()))
	}
	var delivered uint64 // consumer sequence of the last message
	for {
		fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		batch, err := cons.Fetch(readBatch, jetstream.FetchMaxBytes(limit), jetstream.FetchContext(fctx))
		if err != nil {
			cancel()
			return fmt.Errorf("read session %s: %w", sid, err)
		}
		for msg := range batch.Messages() {
			md, err := msg.Metadata()
			if err != nil {
				cancel()
				return fmt.Errorf("read session %s: %w", sid, err)
			}
			if md.Sequence.Consumer != delivered+1 {
				cancel()
				return fmt.Errorf("read session %s: delivery gap after event %d: %w", sid, delivered, ErrGap)
			}
			delivered = md.Sequence.Consumer
			e := Event{
				Seq:     md.Sequence.Stream,
				Subject: msg.Subject(),
				Time:    md.Timestamp.UTC(),
				Headers: msg.Headers(),
				Data:    msg.Data(),
			}
			if len(e.Headers) == 0 {
				e.Headers = nil
			}
			if e.Data == nil {
				e.Data = []byte{}
			}
			if err := fn(e, md.NumPending); err != nil {
				cancel()
				return err
			}
			if md.NumPending == 0 {
				// Caught up: do not wait for the rest of the batch.
				cancel()
				return nil
			}
		}
		cancel()
		if err := batch.Error(); err != nil {
			return fmt.Errorf("read session %s: %w", sid, err)
		}
	}
}

// ErrGap reports messages lost between the server and the reader; reading
// again is safe.
var ErrGap = errors.New("events missing from the read")

// ExportOptions say what to export and how.
type ExportOptions struct {
	Stream, Prefix, Session string
	// Layout is the stream's session layout; the recording says it.
	Layout events.Layout
	// Skills, when set, is asked for the skills of every working directory
	// a trigger of the session names, and the answers (with bodies) go into
	// the recording, each before the first trigger that uses it.
	Skills history.Skills
	// Progress, when set, is called after each event with the number of
	// events written and the number still to read.
	Progress func(written int, remaining uint64)
	// Now is the recording's creation time; zero means time.Now.
	Now time.Time
}

// Export writes the whole log of one session as a recording on w and
// returns the number of events written. It streams: one event at a time is
// held in memory.
func Export(ctx context.Context, js jetstream.JetStream, opts ExportOptions, w io.Writer) (int, error) {
	if opts.Prefix == "" {
		opts.Prefix = events.DefaultPrefix
	}
	if opts.Now.IsZero() {
		opts.Now = time.Now()
	}
	if err := events.CheckSessionIn(opts.Layout, opts.Session); err != nil {
		return 0, fmt.Errorf("new recording: %w", err)
	}
	recOpts, err := SessionOptions(ctx, js, opts.Stream, opts.Prefix, opts.Layout, opts.Session)
	if err != nil {
		return 0, err
	}
	rw, err := NewWriter(w, Header{Session: opts.Session, Prefix: opts.Prefix, Layout: opts.Layout, Stream: opts.Stream, Created: opts.Now.UTC(), Options: recOpts})
	if err != nil {
		return 0, err
	}
	captured := map[string]bool{}
	n := 0
	err = ReadSession(ctx, js, opts.Stream, opts.Prefix, opts.Session, func(e Event, remaining uint64) error {
		if opts.Skills != nil {
			if cwd, ok := triggerCwd(opts.Layout, opts.Prefix, e); ok && !captured[cwd] {
				captured[cwd] = true
				set, err := CaptureSkills(ctx, opts.Skills, cwd)
				if err != nil {
					return err
				}
				if err := rw.Skills(set); err != nil {
					return err
				}
			}
		}
		if err := rw.Event(e); err != nil {
			return err
		}
		n++
		if opts.Progress != nil {
			opts.Progress(n, remaining)
		}
		return nil
	})
	if err != nil {
		return n, err
	}
	return n, rw.Close()
}

// Record writes session sid of stream to w as a recording, without a skills
// capture: the helper for tests that keep golden recordings of sessions they
// played through the processor.
func Record(ctx context.Context, js jetstream.JetStream, stream, prefix, sid string, w io.Writer) error {
	_, err := Export(ctx, js, ExportOptions{Stream: stream, Prefix: prefix, Session: sid}, w)
	return err
}

// CaptureSkills asks skills for the snapshot of cwd and loads every skill
// in it. A skill whose body fails to load is kept with its LoadError.
func CaptureSkills(ctx context.Context, skills history.Skills, cwd string) (SkillSet, error) {
	q := catalog.At(cwd)
	snap, err := skills.Snapshot(ctx, q)
	if err != nil {
		return SkillSet{}, fmt.Errorf("capture skills for %q: %w", cwd, err)
	}
	set := SkillSet{Cwd: cwd, Complete: snap.Complete, Skills: make([]RecordedSkill, 0, len(snap.Skills))}
	for _, s := range snap.Skills {
		rs := RecordedSkill{Skill: catalog.Skill{Summary: s}}
		sk, err := skills.Load(ctx, s.Name, q)
		switch {
		case ctx.Err() != nil:
			return SkillSet{}, fmt.Errorf("capture skills for %q: %w", cwd, ctx.Err())
		case err != nil:
			rs.LoadError = err.Error()
		default:
			rs.Skill = sk
		}
		set.Skills = append(set.Skills, rs)
	}
	return set, nil
}

// triggerCwd returns the working directory of a decodable pre-step, skill
// call or skill search.
func triggerCwd(l events.Layout, prefix string, e Event) (string, bool) {
	_, kind, err := events.ParseSubjectIn(l, prefix, e.Subject)
	if err != nil {
		return "", false
	}
	enc, err := events.EncodingOf(e.Header(events.HeaderContentType))
	if err != nil {
		return "", false
	}
	switch kind {
	case events.KindPreStep:
		p, err := events.DecodePreStepIn(l, enc, e.Data)
		return p.Cwd, err == nil
	case events.KindSkillCall:
		c, err := events.DecodeSkillCallIn(l, enc, e.Data)
		return c.Cwd, err == nil
	case events.KindSkillSearch:
		c, err := events.DecodeSkillSearchIn(l, enc, e.Data)
		return c.Cwd, err == nil
	}
	return "", false
}

// causation returns the Causation-Seq header of a processor output.
func causation(e Event) (uint64, bool) {
	v := e.Header(events.HeaderCausationSeq)
	if v == "" {
		return 0, false
	}
	n, err := strconv.ParseUint(v, 10, 64)
	return n, err == nil
}
