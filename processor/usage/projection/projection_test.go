package projection

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
)

// TestProjectionEqualsScan: the projection of a recorded workload, kept by
// a running projector in batches while the records arrive, reports what a
// scan of the stream reports, in both session layouts; the rows it
// cannot count exactly say so, and what it does not keep is named.
func TestProjectionEqualsScan(t *testing.T) {
	for _, layout := range []events.Layout{events.LayoutFlat, events.LayoutOwner} {
		t.Run(layout.String(), func(t *testing.T) {
			_, l := newSessionLog(t, layout)
			l.record(0, 20)
			o := l.opts()
			o.Batch, o.WriteEvery = 37, time.Nanosecond // many batches, each written: hours written again and again
			p, _ := run(t, l.js, o)
			l.record(20, 70)
			proj := caughtUp(t, l.js, o)
			scan := l.scan()
			sameCounts(t, scan, proj)
			// Catalogs and loads in msgpack were counted from their
			// headers (a catalog body once from its payload), the rest
			// from their payloads.
			header, payload := testutilCount(p.m.summaries, "header"), testutilCount(p.m.summaries, "payload")
			if header < 100 || payload < 20 || payload > header {
				t.Errorf("counted %v records from their header and %v from their payload", header, payload)
			}
			if scan.Records < 250 || len(scan.Skills) < 4 || scan.Searches.Searches == 0 || scan.Unreadable == 0 {
				t.Fatalf("the workload is too thin to compare: %+v", scan)
			}
			for _, s := range proj.Skills {
				// a-skill is loaded in all 70 sessions: within the exact
				// range, as every row is (estimates: sketch_test.go).
				if s.SessionsEstimated {
					t.Errorf("%s: %d sessions estimated", s.Name, s.Sessions)
				}
			}
			info := proj.Projection
			if info == nil || info.AppliedSeq == 0 || info.Hours < 1 || info.Read < 1 || len(info.NotKept) != 4 || len(info.Partial) != 0 {
				t.Errorf("projection info %+v", info)
			}
			if proj.Searches.FoundThenLoaded != 0 || len(proj.Searches.BySession) != 0 {
				t.Errorf("searches per session are not kept, yet reported: %+v", proj.Searches)
			}
		})
	}
}

// TestProjectionFarBehindThenOutputsOnly: a projector that starts further
// behind the stream than liveLag reads every record, passing the triggers
// over, until it has caught up; then it reads the outputs only (its
// consumer filtered on them: no trigger is delivered to it any more). The
// counts equal the scan's either way, in both layouts.
func TestProjectionFarBehindThenOutputsOnly(t *testing.T) {
	defer func(l uint64) { liveLag = l }(liveLag)
	liveLag = 20
	for _, layout := range []events.Layout{events.LayoutFlat, events.LayoutOwner} {
		t.Run(layout.String(), func(t *testing.T) {
			_, l := newSessionLog(t, layout)
			l.record(0, 30) // hundreds of records: far behind
			o := l.opts()
			o.Batch, o.WriteEvery = 37, time.Nanosecond
			p, _ := run(t, l.js, o)
			sameCounts(t, l.scan(), caughtUp(t, l.js, o))
			if n := testutilCount(p.m.records, "passed"); n < 100 {
				t.Errorf("%v triggers passed over while catching up, want them all", n)
			}
			st, err := l.js.Stream(context.Background(), "SESSIONS")
			if err != nil {
				t.Fatal(err)
			}
			natstest.Eventually(t, 30*time.Second, "a consumer of the outputs", func() error {
				c, err := st.Consumer(context.Background(), DefaultConsumer)
				if err != nil {
					return err
				}
				if cfg := c.CachedInfo().Config; !slices.Equal(cfg.FilterSubjects, filters(layout, o.Prefix)) {
					return fmt.Errorf("consumer filters %q %v", cfg.FilterSubject, cfg.FilterSubjects)
				}
				return nil
			})
			passed := testutilCount(p.m.records, "passed")
			l.record(30, 45)
			sameCounts(t, l.scan(), caughtUp(t, l.js, o))
			if n := testutilCount(p.m.records, "passed"); n != passed {
				t.Errorf("%v triggers delivered to the consumer of the outputs", n-passed)
			}
		})
	}
}

// TestProjectionKilledAndRestarted: a projector whose connection dies
// after it wrote a batch's hours, before its position and ack, leaves
// that batch to be delivered again; the member that takes its lease over
// (once the lease expires: the dead one could not give it back) skips
// what was applied, and the counts still equal the scan's. A projector
// stopped cleanly gives its lease back, and the next takes over at once.
func TestProjectionKilledAndRestarted(t *testing.T) {
	srv, l := newSessionLog(t, events.LayoutFlat)
	l.record(0, 40)
	o := l.opts()
	o.Batch, o.WriteEvery = 10, time.Nanosecond // a write every fetch of 10 outputs: several before the kill

	ncA := srv.Connect()
	jsA, _ := jetstream.New(ncA)
	pa, err := New(jsA, withInstance(o, "a"))
	if err != nil {
		t.Fatal(err)
	}
	var batches atomic.Int32
	pa.afterHours = func() error {
		if batches.Add(1) == 3 {
			ncA.Close() // killed: hours written, position and ack not
			return errors.New("killed")
		}
		return nil
	}
	ctxA, cancelA := context.WithCancel(context.Background())
	doneA := make(chan struct{})
	go func() { defer close(doneA); pa.Run(ctxA) }()
	natstest.Eventually(t, 30*time.Second, "projector a killed", func() error {
		if batches.Load() < 3 {
			return errors.New("not yet")
		}
		return nil
	})
	cancelA()
	<-doneA

	reg := prometheus.NewRegistry()
	ob := withInstance(o, "b")
	ob.Registerer = reg
	started := time.Now()
	pb, stopB := run(t, l.js, ob)
	l.record(40, 60)
	proj := caughtUp(t, l.js, o)
	if waited := time.Since(started); waited < o.LeaseTTL/2 {
		t.Errorf("b took over after %v, before a's lease of %v could expire", waited, o.LeaseTTL)
	}
	sameCounts(t, l.scan(), proj)
	skipped := testutil.ToFloat64(pb.m.records.WithLabelValues("skipped"))
	if skipped < 1 {
		t.Errorf("b skipped %v records; the killed batch should have been delivered again", skipped)
	}

	// A clean stop gives the lease back: c takes over without waiting for
	// it to expire.
	stopB()
	oc := withInstance(o, "c")
	oc.LeaseTTL = time.Minute
	started = time.Now()
	run(t, l.js, oc)
	l.record(60, 65)
	sameCounts(t, l.scan(), caughtUp(t, l.js, o))
	if waited := time.Since(started); waited > 30*time.Second {
		t.Errorf("c took %v to take over a lease given back", waited)
	}
}

func withInstance(o Options, name string) Options {
	o.Instance = name
	return o
}

// TestProjectionTwoWritersNeverDoubleCount: two projectors applying the
// same records at once (no lease between them: each its own consumer)
// write the same hour buckets; compare-and-set and the buckets' sequences
// keep every record counted once.
func TestProjectionTwoWritersNeverDoubleCount(t *testing.T) {
	_, l := newSessionLog(t, events.LayoutFlat)
	l.record(0, 60)
	o := l.opts()
	o.Batch, o.WriteEvery = 10, time.Nanosecond // a write every fetch
	ctx := context.Background()
	errs := make(chan error, 2)
	var conflicts, stale atomic.Int32
	for _, name := range []string{"x", "y"} {
		ox := withInstance(o, name)
		ox.Consumer = "usage-" + name
		p, err := New(l.js, ox)
		if err != nil {
			t.Fatal(err)
		}
		kv, err := p.bucket(ctx, true)
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			// A term that finds the position written by the other ends
			// (ErrStale); it starts again from the position, as Run does.
			for {
				res, err := p.term(ctx, kv, termOptions{caughtUp: true})
				conflicts.Add(int32(res.Conflicts))
				if !errors.Is(err, ErrStale) {
					errs <- err
					return
				}
				stale.Add(1)
			}
		}()
	}
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
	proj, err := Read(ctx, l.js, o, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if proj.Projection.LagRecords != 0 {
		t.Fatalf("%d records not applied", proj.Projection.LagRecords)
	}
	t.Logf("%d hour writes refused as conflicting, %d terms ended stale", conflicts.Load(), stale.Load())
	if stale.Load() == 0 {
		t.Errorf("the two projectors never met: no term ended stale")
	}
	sameCounts(t, l.scan(), proj)
}

// TestRebuild: a rebuild, while a projector runs, counts the stream again
// from its start (the same counts), or from a time (only what came after
// it, the window saying where the projection starts); the running
// projector takes the lease back afterwards and goes on.
func TestRebuild(t *testing.T) {
	_, l := newSessionLog(t, events.LayoutFlat)
	l.record(0, 30)
	o := l.opts()
	run(t, l.js, o)
	before := caughtUp(t, l.js, o)

	var calls int
	var lastRead uint64
	res, err := Rebuild(context.Background(), l.js, o, time.Time{}, func(read, remaining uint64) {
		calls++
		lastRead = read
	})
	if err != nil {
		t.Fatal(err)
	}
	scan := l.scan() // near the tail, the records read are the outputs: as many as those applied
	if res.Records != uint64(scan.Records) || res.Unreadable != uint64(scan.Unreadable) || calls == 0 || lastRead < res.Records {
		t.Errorf("rebuild %+v after %d progress calls (last %d); the scan read %d records, %d unreadable", res, calls, lastRead, scan.Records, scan.Unreadable)
	}
	after, err := Read(context.Background(), l.js, o, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	sameCounts(t, scan, after)
	sameCounts(t, before, after)

	// From a time: only the records after it.
	st, _ := l.js.Stream(context.Background(), "SESSIONS")
	last, err := st.GetLastMsgForSubject(context.Background(), "ev.>")
	if err != nil {
		t.Fatal(err)
	}
	since := last.Time.Add(time.Millisecond)
	time.Sleep(5 * time.Millisecond)
	l.record(100, 105)
	res, err = Rebuild(context.Background(), l.js, o, since, nil)
	if err != nil {
		t.Fatal(err)
	}
	late, err := usageSince(l, since)
	if err != nil {
		t.Fatal(err)
	}
	if res.Records != uint64(late.Records) || !res.From.Equal(since.UTC()) {
		t.Errorf("rebuild since %v: %+v, want the %d records after it", since, res, late.Records)
	}
	proj, err := Read(context.Background(), l.js, o, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	sameCounts(t, late, proj)
	if !proj.Projection.CountsFrom.Equal(since.UTC()) {
		t.Errorf("counts from %v, want %v", proj.Projection.CountsFrom, since)
	}

	// The projector takes over again and counts what comes next.
	l.record(105, 110)
	natstest.Eventually(t, 30*time.Second, "projector resumed", func() error {
		want, err := usageSince(l, since)
		if err != nil {
			return err
		}
		got, err := Read(context.Background(), l.js, o, time.Time{})
		if err != nil {
			return err
		}
		if got.Records != want.Records {
			return errors.New("not yet")
		}
		return nil
	})
}

// TestReadTenThousandHours: a window over a projection of 10,000 hour
// buckets, written directly, sums exactly the hours it spans, read with
// gets (a week) or by one pass (everything).
func TestReadTenThousandHours(t *testing.T) {
	srv, l := newSessionLog(t, events.LayoutFlat)
	o := l.opts()
	p, err := New(srv.JS, o)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	kv, err := p.bucket(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Truncate(time.Hour)
	const hours = 10000
	pos := p.newPosition(time.Time{})
	pos.First = now.Add(-(hours - 1) * time.Hour)
	pos.Seq = 0
	putJSON(t, kv, posKey, pos)
	for i := range hours {
		at := now.Add(-time.Duration(i) * time.Hour)
		h := newHour(pos.Gen, at)
		h.Seq = uint64(hours - i)
		for range i%5 + 1 {
			h.Apply(output("a-skill", "s"+itoa(i)), h.Seq, at.Add(time.Minute))
		}
		h.Apply(invocation("b-skill", "s"+itoa(i)), h.Seq, at.Add(2*time.Minute))
		b, err := h.Encode()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := srv.JS.PublishAsync("$KV."+p.opts.Bucket+"."+HourKey(at), b); err != nil {
			t.Fatal(err)
		}
		if i%500 == 499 {
			<-srv.JS.PublishAsyncComplete()
		}
	}
	select {
	case <-srv.JS.PublishAsyncComplete():
	case <-time.After(60 * time.Second):
		t.Fatal("buckets not stored")
	}
	sum := func(n int) (loads int) {
		for i := range n {
			loads += i%5 + 1
		}
		return loads
	}
	for _, tt := range []struct {
		name  string
		since time.Time
		hours int
	}{
		{"a week", time.Now().Add(-7 * 24 * time.Hour), 169},
		{"a day, from mid-hour", now.Add(-24*time.Hour + 30*time.Minute), 25},
		{"everything", time.Time{}, hours},
		{"longer than the projection", now.Add(-20000 * time.Hour), hours},
	} {
		start := time.Now()
		rep, err := Read(ctx, srv.JS, o, tt.since)
		took := time.Since(start)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d hours in %v", tt.name, rep.Projection.Hours, took)
		if len(rep.Skills) != 2 || rep.Skills[0].Name != "a-skill" || rep.Skills[0].Loads != sum(tt.hours) ||
			rep.Skills[1].Invocations != tt.hours || rep.Records != sum(tt.hours)+tt.hours || rep.Projection.Read != tt.hours {
			t.Errorf("%s: %d records, rows %+v, %d hours read; want %d loads of a-skill and %d invocations of b-skill over %d hours",
				tt.name, rep.Records, rep.Skills, rep.Projection.Read, sum(tt.hours), tt.hours, tt.hours)
			continue
		}
		sessionsClose(t, tt.name, rep.Skills[0].Sessions, rep.Skills[0].SessionsEstimated, tt.hours)
		if first, want := rep.Skills[0].First, now.Add(-time.Duration(tt.hours-1)*time.Hour+time.Minute); !first.Equal(want) {
			t.Errorf("%s: first %v, want %v", tt.name, first, want)
		}
		if took > 10*time.Second {
			t.Errorf("%s: %v to read %d hours", tt.name, took, tt.hours)
		}
	}
}

func putJSON(t *testing.T, kv jetstream.KeyValue, key string, v any) {
	t.Helper()
	b, err := jsonMarshal(v)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(context.Background(), key, b); err != nil {
		t.Fatal(err)
	}
}

// TestProjectionBadInput: records of something else on the output
// subjects are counted as unreadable and logged, never a crash; an hour
// bucket that cannot be read is replaced by one marked damaged, logged,
// and the report says so; one the projector never writes again is left
// out of the sums, named in the report.
func TestProjectionBadInput(t *testing.T) {
	srv, l := newSessionLog(t, events.LayoutFlat)
	var logs logBuffer
	o := l.opts()
	o.Logger = logs.logger()
	run(t, l.js, o)
	l.raw("ev.s1.tool.result", events.ContentTypeMsgpack, []byte{0xc1})
	l.raw("ev.s1.skill.invocation", events.ContentTypeJSON, []byte(`{"v":1}`))
	l.raw("ev.s1.catalog.append", "text/html", []byte(`<p>`))
	l.load("s1", "a-skill", "d", 1)
	rep := caughtUp(t, l.js, o)
	if rep.Records != 4 || rep.Unreadable != 3 || len(rep.Skills) != 1 || rep.Skills[0].Loads != 1 {
		t.Fatalf("foreign records: %+v", rep)
	}
	if !strings.Contains(logs.String(), "not what its subject says") || !strings.Contains(logs.String(), "subject=ev.s1.tool.result") {
		t.Errorf("foreign record not logged:\n%s", logs.String())
	}

	// Usage-Summary headers that do not parse, and a catalog whose body
	// key is not its body's (twice: not remembered), are counted from
	// their payload, as the scan counts them.
	cat := events.Catalog{V: 1, Session: "s2", Step: "9", ID: "c", Role: "user", Text: "t",
		Source: events.CatalogSource{Kind: events.SourceKindCatalog, Update: "initial", Entries: []events.Entry{{Name: "real-skill", Description: "x"}}, Digest: "d"}}
	catData, err := events.Encode(events.Msgpack, cat)
	if err != nil {
		t.Fatal(err)
	}
	lying := events.UsageSummary{Kind: events.UsageCatalog, Update: "replacement", TextBytes: 999, Body: "00112233445566778899aabbccddeeff"}.Header()
	l.raw("ev.s2.catalog.append", events.ContentTypeMsgpack, catData, lying)
	l.raw("ev.s2.catalog.append", events.ContentTypeMsgpack, catData, lying)
	l.raw("ev.s2.catalog.append", events.ContentTypeMsgpack, catData, `{"k":"catalog",`)
	res, err := events.Encode(events.Msgpack, events.ToolResult{V: 1, Session: "s2", Call: "c9", Text: "t", Value: &events.SkillValue{Name: "b-skill", Provider: "store"}})
	if err != nil {
		t.Fatal(err)
	}
	l.raw("ev.s2.tool.result", events.ContentTypeMsgpack, res, `{"k":"load"}`)
	rep = caughtUp(t, l.js, o)
	scan := l.scan()
	sameCounts(t, scan, rep)
	if rep.Catalogs.Appends["initial"] != 3 || rep.Catalogs.Appends["replacement"] != 0 || len(rep.Skills) != 2 {
		t.Fatalf("bad summaries trusted: %+v, %+v", rep.Catalogs, rep.Skills)
	}

	// The current hour's bucket overwritten with garbage.
	kv, err := srv.JS.KeyValue(context.Background(), DefaultBucket)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(context.Background(), HourKey(time.Now()), []byte("garbage")); err != nil {
		t.Fatal(err)
	}
	// A past hour's too, which no projector writes again.
	past := HourKey(time.Now().Add(-3 * time.Hour))
	if _, err := kv.Put(context.Background(), past, []byte(`{"v":1,"skills":{"x":null}}`)); err != nil {
		t.Fatal(err)
	}
	rep, err = Read(context.Background(), l.js, o, time.Now().Add(-5*time.Hour))
	if err != nil {
		t.Fatalf("a report over garbage buckets: %v", err)
	}
	if partial := strings.Join(rep.Projection.Partial, "\n"); rep.Records != 0 || !strings.Contains(partial, "cannot be read") ||
		!strings.Contains(partial, past) || !strings.Contains(partial, HourKey(time.Now())) {
		t.Errorf("garbage buckets: %d records, partial %q", rep.Records, rep.Projection.Partial)
	}
	// The projector replaces the current hour's when it next writes it.
	l.load("s1", "a-skill", "d", 1)
	natstest.Eventually(t, 30*time.Second, "damaged hour replaced", func() error {
		rep, err = Read(context.Background(), l.js, o, time.Now().Add(-5*time.Hour))
		if err != nil {
			return err
		}
		if rep.Records != 1 {
			return errors.New("not yet")
		}
		return nil
	})
	if len(rep.Skills) != 1 || rep.Skills[0].Loads != 1 || !strings.Contains(strings.Join(rep.Projection.Partial, "\n"), "replaced an unreadable value") {
		t.Errorf("after the damaged hour: %+v, partial %q", rep.Skills, rep.Projection.Partial)
	}
	if !strings.Contains(logs.String(), "cannot be read") || !strings.Contains(logs.String(), "key="+HourKey(time.Now())) {
		t.Errorf("damaged hour not logged:\n%s", logs.String())
	}
}

// TestBadOptionsAndMissingProjection: bad names are refused with the
// reason; reading where there is no projection, or one of another
// stream, is ErrNoProjection saying why.
func TestBadOptionsAndMissingProjection(t *testing.T) {
	srv, l := newSessionLog(t, events.LayoutFlat)
	for _, o := range []Options{
		{Stream: "SESSIONS", Prefix: "bad..prefix"},
		{Stream: "SESSIONS", Bucket: "a.b"},
		{Stream: "SESSIONS", Consumer: "x y"},
		{},
	} {
		if _, err := New(srv.JS, o); err == nil {
			t.Errorf("New(%+v) succeeded", o)
		}
	}
	o := l.opts()
	if _, err := Read(context.Background(), srv.JS, o, time.Time{}); !errors.Is(err, ErrNoProjection) || !strings.Contains(err.Error(), "does not exist") {
		t.Errorf("no bucket: %v", err)
	}
	p, _ := New(srv.JS, o)
	kv, err := p.bucket(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Read(context.Background(), srv.JS, o, time.Time{}); !errors.Is(err, ErrNoProjection) || !strings.Contains(err.Error(), "no position") {
		t.Errorf("no position: %v", err)
	}
	other := p.newPosition(time.Time{})
	other.Prefix = "other"
	putJSON(t, kv, posKey, other)
	if _, err := Read(context.Background(), srv.JS, o, time.Time{}); !errors.Is(err, ErrNoProjection) || !strings.Contains(err.Error(), "projects stream SESSIONS, prefix other") {
		t.Errorf("another prefix's bucket: %v", err)
	}
	if _, _, err := p.position(context.Background(), kv); err == nil || !strings.Contains(err.Error(), "give each its own bucket") {
		t.Errorf("a projector on another prefix's bucket: %v", err)
	}
	o.NoProvision = true
	o.Bucket = "NOPE"
	p, _ = New(srv.JS, o)
	if _, err := p.bucket(context.Background(), false); err == nil || !strings.Contains(err.Error(), "does not exist, and provisioning is off") {
		t.Errorf("no bucket without provisioning: %v", err)
	}
}

// TestHourWriteCompareAndSet: a writer whose copy of an hour is older
// than the bucket (another wrote it since) has its write refused, reads
// the bucket again and applies only the records above its sequence; a
// batch delivered again changes nothing.
func TestHourWriteCompareAndSet(t *testing.T) {
	srv, l := newSessionLog(t, events.LayoutFlat)
	ctx := context.Background()
	p, err := New(srv.JS, l.opts())
	if err != nil {
		t.Fatal(err)
	}
	kv, err := p.bucket(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	pos, posRev, err := p.position(ctx, kv)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Now().UTC()
	hour := at.Truncate(time.Hour).Unix()
	var recs []record
	for i := range 10 {
		recs = append(recs, record{seq: uint64(100 + i), at: at, out: output("a-skill", "s"+itoa(i))})
	}
	newTerm := func() *term {
		return &term{p: p, kv: kv, pos: pos, posRev: posRev, hours: map[int64]*cached{}}
	}
	loads := func() (int, uint64) {
		t.Helper()
		e, err := kv.Get(ctx, HourKey(at))
		if err != nil {
			t.Fatal(err)
		}
		h, err := DecodeHour(e.Value())
		if err != nil {
			t.Fatal(err)
		}
		return h.Skills["a-skill"].Loads, h.Seq
	}
	t1, t2 := newTerm(), newTerm()
	for _, step := range []struct {
		t          *term
		n          int
		loads      int
		seq        uint64
		conflicts  int
		appliedNow uint64
	}{
		{t1, 5, 5, 104, 0, 5},
		{t2, 8, 8, 107, 0, 3},   // reads t1's bucket, applies 105-107
		{t1, 10, 10, 109, 1, 2}, // its copy is stale: refused, read again, 108-109 only
		{t2, 10, 10, 109, 1, 0}, // the same batch again: nothing to apply
	} {
		before := step.t.res
		if err := step.t.writeHour(ctx, hour, recs[:step.n]); err != nil {
			t.Fatal(err)
		}
		got, seq := loads()
		if got != step.loads || seq != step.seq || step.t.res.Conflicts != step.conflicts || step.t.res.Applied-before.Applied != step.appliedNow {
			t.Errorf("after %d records: %d loads at seq %d, %d conflicts, %d applied; want %d at %d, %d, %d",
				step.n, got, seq, step.t.res.Conflicts, step.t.res.Applied-before.Applied, step.loads, step.seq, step.conflicts, step.appliedNow)
		}
	}
}

// TestReadSaysLag: a projection that has not applied the newest output
// records says how many (the triggers between them not counted) and how
// long after its last record they were written; up to TailMax records
// after it, the report reads them from the stream and counts them,
// beyond it it does not.
func TestReadSaysLag(t *testing.T) {
	for _, layout := range []events.Layout{events.LayoutFlat, events.LayoutOwner} {
		t.Run(layout.String(), func(t *testing.T) {
			_, l := newSessionLog(t, layout)
			o := l.opts()
			l.record(0, 5)
			_, stop := run(t, l.js, o)
			before := caughtUp(t, l.js, o)
			stop()
			time.Sleep(50 * time.Millisecond)
			sid := l.sid(99)
			l.load(sid, "a-skill", "d", 1) // a call and its result
			l.fail(sid, "b-skill", events.CodeUnknown)
			l.invoke(sid, "a-skill")
			rep, err := Read(context.Background(), l.js, o, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			info := rep.Projection
			if info.LagRecords != 3 || !info.LagCounted || info.LagSeconds < 0.04 || info.LagSeconds > 30 || rep.Records != before.Records+3 {
				t.Errorf("lag %d records (counted %v), %.3f s, %d records counted; want 3 records counted, about 0.05 s, %d in all",
					info.LagRecords, info.LagCounted, info.LagSeconds, rep.Records, before.Records+3)
			}
			sameCounts(t, l.scan(), rep)

			tailMax = 2
			defer func() { tailMax = TailMax }()
			rep, err = Read(context.Background(), l.js, o, time.Time{})
			if err != nil {
				t.Fatal(err)
			}
			info = rep.Projection
			if info.LagRecords != 3 || info.LagCounted || info.LagSeconds < 0.04 || info.LagSeconds > 30 || rep.Records != before.Records {
				t.Errorf("past TailMax: lag %d records (counted %v), %.3f s, %d records counted; want 3 records not counted, about 0.05 s, %d in all",
					info.LagRecords, info.LagCounted, info.LagSeconds, rep.Records, before.Records)
			}
		})
	}
}

// TestReadTailNotCountedTwice: records after the position that an hour
// bucket holds already (written after its position was, by a projector
// stopped before its position write) are counted once.
func TestReadTailNotCountedTwice(t *testing.T) {
	_, l := newSessionLog(t, events.LayoutFlat)
	l.record(0, 5)
	o := l.opts()
	_, stop := run(t, l.js, o)
	caughtUp(t, l.js, o)
	stop()
	l.record(5, 8)
	p, err := New(l.js, o)
	if err != nil {
		t.Fatal(err)
	}
	p.afterHours = func() error { return errors.New("stopped before the position") }
	kv, err := p.bucket(context.Background(), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.term(context.Background(), kv, termOptions{caughtUp: true}); err == nil || !strings.Contains(err.Error(), "stopped before the position") {
		t.Fatalf("term: %v", err)
	}
	rep, err := Read(context.Background(), l.js, o, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Projection.LagCounted || rep.Projection.LagRecords == 0 {
		t.Fatalf("the position should lag the buckets: %+v", rep.Projection)
	}
	sameCounts(t, l.scan(), rep)
}

func testutilCount(c *prometheus.CounterVec, label string) float64 {
	return testutil.ToFloat64(c.WithLabelValues(label))
}

// TestLiveProjectorPolls: a live projector asks for what has come without
// waiting and then pauses FlushWait, rather than keeping a pull request
// waiting at the server (which would hand it each record as it is
// appended): sampled between its fetches, its consumer has no request
// waiting. Records appended meanwhile are read at its next fetch.
func TestLiveProjectorPolls(t *testing.T) {
	_, l := newSessionLog(t, events.LayoutFlat)
	l.record(0, 10)
	o := l.opts()
	o.FlushWait = 400 * time.Millisecond
	run(t, l.js, o)
	caughtUp(t, l.js, o)
	ctx := context.Background()
	st, err := l.js.Stream(ctx, "SESSIONS")
	if err != nil {
		t.Fatal(err)
	}
	cons, err := st.Consumer(ctx, DefaultConsumer)
	if err != nil {
		t.Fatal(err)
	}
	waiting, samples := 0, 20
	for range samples {
		info, err := cons.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if info.NumWaiting > 0 {
			waiting++
		}
		time.Sleep(60 * time.Millisecond)
	}
	if waiting > samples/4 {
		t.Errorf("a pull request was waiting at %d of %d samples: the live projector waits at the server", waiting, samples)
	}
	l.record(10, 20)
	sameCounts(t, l.scan(), caughtUp(t, l.js, o))
}
