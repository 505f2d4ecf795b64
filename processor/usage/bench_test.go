package usage_test

import (
	"context"
	"flag"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/processor/usage"
)

var benchEvents = flag.Int("usage.events", 20000, "events in BenchmarkRead's stream (the README's figure used 1,000,000)")

// BenchmarkRead fills a stream with the README's mix - per session a
// pre-step, a 2 KB catalog of 20 skills, four skill calls and four 1 KB
// results, one error in ten sessions - and reads it whole.
func BenchmarkRead(b *testing.B) {
	srv := natstest.Start(b)
	js := srv.JS
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "SESSIONS", Subjects: []string{"ev.>"}}); err != nil {
		b.Fatal(err)
	}
	entries := make([]events.Entry, 20)
	for i := range entries {
		entries[i] = events.Entry{Name: "skill-" + strconv.Itoa(i), Description: strings.Repeat("d", 80)}
	}
	text, body := strings.Repeat("c", 2000), strings.Repeat("b", 1000)
	pub := func(sid string, k events.Kind, v any) {
		data, err := events.Encode(events.Msgpack, v)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := js.PublishAsync(events.Subject("ev", sid, k), data); err != nil {
			b.Fatal(err)
		}
	}
	for s := 0; s*10 < *benchEvents; s++ {
		sid := "s" + strconv.Itoa(s)
		pub(sid, events.KindPreStep, events.PreStep{V: 1, Session: sid, Step: "1", Tools: []events.Tool{{Name: "skill", Owner: "x"}}})
		pub(sid, events.KindCatalog, events.Catalog{V: 1, Session: sid, Step: "1", ID: "c", Role: "user", Text: text,
			Source: events.CatalogSource{Kind: events.SourceKindCatalog, Producer: "x", Update: "initial", Entries: entries, Digest: "d"}})
		for c := range 4 {
			name, call := "skill-"+strconv.Itoa((s+c)%15), "c"+strconv.Itoa(c)
			pub(sid, events.KindSkillCall, events.SkillCall{V: 1, Session: sid, Call: call, Args: events.SkillArgs{Name: name}})
			r := events.ToolResult{V: 1, Session: sid, Call: call, TriggerSeq: 1, Text: body, Value: &events.SkillValue{Name: name, Provider: "store"}}
			if s%10 == 0 && c == 0 {
				r = events.ToolResult{V: 1, Session: sid, Call: call, TriggerSeq: 1, IsError: true, Text: "no", Error: &events.ErrorInfo{Code: "unknown", Message: "no"}}
			}
			pub(sid, events.KindToolResult, r)
		}
		if s%300 == 0 {
			<-js.PublishAsyncComplete()
		}
	}
	<-js.PublishAsyncComplete()
	b.ResetTimer()
	for b.Loop() {
		rep, err := usage.Read(ctx, js, usage.Options{Stream: "SESSIONS"})
		if err != nil {
			b.Fatal(err)
		}
		if rep.Records == 0 {
			b.Fatal("nothing read")
		}
	}
	b.ReportMetric(float64(*benchEvents)*float64(b.N)/b.Elapsed().Seconds(), "events/s")
}
