package projection

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/usage"
)

// BenchmarkProjection measures what one output record costs the
// projection catching up, end to end: delivery (headers only) through the
// durable consumer, reading the record (its Usage-Summary; an error's
// payload and a catalog body's first record by sequence), applying it,
// and its share of the batch's bucket and position writes and ack. The stream holds b.N output records of the
// usage benchmark's mix (per session a 2 KB catalog of 20 skills and four
// 1 KB skill results, one error in ten sessions, with their triggers);
// one op is one record applied. It also reports what a report over the
// last hour and the last week then takes.
func BenchmarkProjection(b *testing.B) {
	srv, l := newSessionLog(b, events.LayoutFlat)
	js := srv.JS
	ctx := context.Background()
	entries := make([]events.Entry, 20)
	for i := range entries {
		entries[i] = events.Entry{Name: "skill-" + strconv.Itoa(i), Description: strings.Repeat("d", 80)}
	}
	text, body := strings.Repeat("c", 2000), strings.Repeat("b", 1000)
	// Each record as a processor appends it: its content type and, on a
	// catalog or a load, its Usage-Summary.
	pub := func(sid string, k events.Kind, v any) {
		data, err := events.Encode(events.Msgpack, v)
		if err != nil {
			b.Fatal(err)
		}
		m := nats.NewMsg(events.Subject("ev", sid, k))
		m.Data = data
		m.Header.Set(events.HeaderContentType, events.ContentTypeMsgpack)
		if u := summary(events.Msgpack, data, v); u != "" {
			m.Header.Set(events.HeaderUsageSummary, u)
		}
		if _, err := js.PublishMsgAsync(m); err != nil {
			b.Fatal(err)
		}
	}
	outputs := 0
	for s := 0; outputs < b.N; s++ {
		sid := "s" + strconv.Itoa(s)
		pub(sid, events.KindPreStep, events.PreStep{V: 1, Session: sid, Step: "1", Tools: []events.Tool{{Name: "skill", Owner: "x"}}})
		pub(sid, events.KindCatalog, events.Catalog{V: 1, Session: sid, Step: "1", ID: "c", Role: "user", Text: text,
			Source: events.CatalogSource{Kind: events.SourceKindCatalog, Producer: "x", Update: "initial", Entries: entries, Digest: "d"}})
		outputs++
		for c := range 4 {
			name, call := "skill-"+strconv.Itoa((s+c)%15), "c"+strconv.Itoa(c)
			pub(sid, events.KindSkillCall, events.SkillCall{V: 1, Session: sid, Call: call, Args: events.SkillArgs{Name: name}})
			r := events.ToolResult{V: 1, Session: sid, Call: call, TriggerSeq: 1, Text: body, Value: &events.SkillValue{Name: name, Provider: "store", Digest: "dd", Revision: 3}}
			if s%10 == 0 && c == 0 {
				r = events.ToolResult{V: 1, Session: sid, Call: call, TriggerSeq: 3, IsError: true, Text: "no", Error: &events.ErrorInfo{Code: "unknown", Message: "no"}}
			}
			pub(sid, events.KindToolResult, r)
			outputs++
		}
		if s%200 == 0 {
			<-js.PublishAsyncComplete()
		}
	}
	<-js.PublishAsyncComplete()
	p, err := New(js, l.opts())
	if err != nil {
		b.Fatal(err)
	}
	kv, err := p.bucket(ctx, true)
	if err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	start := time.Now()
	res, err := p.term(ctx, kv, termOptions{caughtUp: true})
	elapsed := time.Since(start)
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
	if res.Applied != uint64(outputs) {
		b.Fatalf("applied %d of %d records", res.Applied, outputs)
	}
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(outputs), "ns/record")
	b.ReportMetric(float64(outputs)/elapsed.Seconds(), "records/s")

	// And a report over the last hour and over a week, read back.
	for _, w := range []struct {
		unit string
		d    time.Duration
	}{{"ms/report-1h", time.Hour}, {"ms/report-7d", 7 * 24 * time.Hour}} {
		start = time.Now()
		rep, err := Read(ctx, js, l.opts(), time.Now().Add(-w.d))
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(time.Since(start).Microseconds())/1000, w.unit)
		if rep.Records != outputs {
			b.Fatalf("a report of %d records, want %d", rep.Records, outputs)
		}
	}
}

// BenchmarkHourApply measures applying one record to an hour in memory
// (the projection's own work, without JetStream): a load of one of 50
// skills by one of 1,000 sessions.
func BenchmarkHourApply(b *testing.B) {
	h := newHour(1, time.Now())
	outs := make([]usage.Output, 4096)
	for i := range outs {
		outs[i] = usage.Output{Kind: usage.OutputLoad, Session: "s" + strconv.Itoa(i%1000), Skill: "skill-" + strconv.Itoa(i%50), Digest: "dd", Revision: 3}
	}
	at := time.Now()
	i := 0
	for b.Loop() {
		h.Apply(outs[i%len(outs)], uint64(i+1), at)
		i++
	}
}

// BenchmarkHourApplyBusy measures the same with distinct sessions past
// the exact range: a load of one of 5 skills by one of 100,000 sessions
// (20,000 sessions a skill, each skill's sketch a HyperLogLog).
func BenchmarkHourApplyBusy(b *testing.B) {
	h := newHour(1, time.Now())
	outs := make([]usage.Output, 100000)
	for i := range outs {
		outs[i] = usage.Output{Kind: usage.OutputLoad, Session: "s" + strconv.Itoa(i), Skill: "skill-" + strconv.Itoa(i%5), Digest: "dd", Revision: 3}
	}
	at := time.Now()
	i := 0
	for b.Loop() {
		h.Apply(outs[i%len(outs)], uint64(i+1), at)
		i++
	}
}

// BenchmarkHourEncode measures writing out an hour of a thousand skills,
// each loaded by 20 of 1,000 sessions (what a projector encodes at each
// write while the bench's mixed workload runs).
func BenchmarkHourEncode(b *testing.B) {
	h := newHour(1, time.Now())
	at := time.Now()
	seq := uint64(0)
	for s := range 1000 {
		for c := range 20 {
			seq++
			h.Apply(usage.Output{Kind: usage.OutputLoad, Session: "s" + strconv.Itoa(s), Skill: "skill-" + strconv.Itoa((s*7+c*13)%1000), Digest: "sha256:0123456789abcdef", Revision: 3}, seq, at)
		}
	}
	enc, err := h.Encode()
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := h.Encode(); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(enc)), "bytes")
}
