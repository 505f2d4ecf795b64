package processor

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
)

// BenchmarkPreStepHistory measures one pre-step whose catalog is unchanged,
// end to end (publish the trigger, the processor reads, decides, answers),
// on a session of 10 events and on one of 100,000 events, both in a stream
// of 1,000,000 messages spread over a thousand sessions. Reads are indexed,
// so both should cost about the same:
//
//	go test -run XXX -bench PreStepHistory -benchtime 2000x ./processor
//
// Populating the stream takes a while.
func BenchmarkPreStepHistory(b *testing.B) {
	const (
		total    = 1_000_000
		bigLen   = 100_000
		smallLen = 10
		fillers  = 1000
	)
	e := newEnv(b)
	e.withoutFlaky()
	e.writeSkill("a-skill", "A skill.")
	e.waitSkills("a-skill")
	e.start(func(c *Config, _ *options) { c.Workers = 4 })
	w := e.worker()

	// Both sessions start with a catalog; the big one also has a compaction
	// that keeps it visible, far back in the stream.
	for _, sid := range []string{"small", "big"} {
		d := w.preStep(events.PreStep{Session: sid, Step: "0", Cwd: e.cwd, Tools: ourTool()})
		if d.Outcome != events.OutcomeAppended {
			b.Fatalf("%s: %+v", sid, d)
		}
	}
	catSeq := e.outputs("big", events.KindCatalog)[0].Sequence
	w.compact("big", catSeq)

	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	js, err := jetstream.New(e.srv.Connect(), jetstream.WithPublishAsyncMaxPending(8192))
	if err != nil {
		b.Fatal(err)
	}
	payload := []byte(`{"v":1,"role":"user","text":"some message of a conversation"}`)
	smallLeft, bigLeft := smallLen-2, bigLen-3 // minus pre-step, catalog (and compaction)
	for i := 0; i < total-5; i++ {             // 5 events so far: 2 pre-steps, 2 catalogs, 1 compaction
		subject := fmt.Sprintf("ev.f%d.message.user", i%fillers)
		switch {
		case i%10 == 0 && bigLeft > 0:
			subject = "ev.big.message.user"
			bigLeft--
		case i%100_000 == 1 && smallLeft > 0:
			subject = "ev.small.message.user"
			smallLeft--
		}
		if _, err := js.PublishAsync(subject, payload); err != nil {
			b.Fatal(err)
		}
		if i%4096 == 4095 {
			select {
			case <-js.PublishAsyncComplete():
			case <-ctx.Done():
				b.Fatal("populating the stream timed out")
			}
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		b.Fatal("populating the stream timed out")
	}
	st, err := js.Stream(ctx, DefaultStream)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("stream populated in %v: %d messages", time.Since(start).Round(time.Millisecond), st.CachedInfo().State.Msgs)

	// Warm up (server caches, background flushes of the population) on a
	// session of its own.
	for i := range 2000 {
		w.preStep(events.PreStep{Session: "warm", Step: fmt.Sprint(i), Cwd: e.cwd, Tools: ourTool()})
	}

	inbox := w.nc.NewInbox()
	sub, err := w.nc.SubscribeSync(inbox)
	if err != nil {
		b.Fatal(err)
	}
	defer sub.Unsubscribe()
	n := 0
	preStep := func(b *testing.B, sid string) {
		n++
		data, err := events.Encode(events.Msgpack, events.PreStep{V: 1, Session: sid, Step: fmt.Sprint(n), Cwd: e.cwd, Tools: ourTool()})
		if err != nil {
			b.Fatal(err)
		}
		m := &nats.Msg{
			Subject: events.Subject(events.DefaultPrefix, sid, events.KindPreStep),
			Header:  nats.Header{events.HeaderReplyInbox: []string{inbox}},
			Data:    data,
		}
		if _, err := w.js.PublishMsg(ctx, m); err != nil {
			b.Fatal(err)
		}
		reply, err := sub.NextMsg(waitTimeout)
		if err != nil {
			b.Fatal(err)
		}
		d, err := events.DecodeDecision(events.Msgpack, reply.Data)
		if err != nil || d.Outcome != events.OutcomeUnchanged {
			b.Fatalf("%s step %d: %+v %v", sid, n, d, err)
		}
	}
	for _, sid := range []string{"small", "big"} {
		b.Run("session="+sid, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				preStep(b, sid)
			}
		})
	}
	// Alternating the two sessions exposes both to the same background
	// noise; medians ignore outliers. big/small is the figure to watch.
	b.Run("alternating", func(b *testing.B) {
		var small, big []time.Duration
		for b.Loop() {
			t0 := time.Now()
			preStep(b, "small")
			t1 := time.Now()
			preStep(b, "big")
			small, big = append(small, t1.Sub(t0)), append(big, time.Since(t1))
		}
		ms, mb := median(small), median(big)
		b.ReportMetric(float64(ms.Nanoseconds()), "small-median-ns")
		b.ReportMetric(float64(mb.Nanoseconds()), "big-median-ns")
		b.ReportMetric(float64(mb)/float64(ms), "big/small")
	})
}

func median(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
