package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
)

// BenchmarkSessionRead compares the two ways of reading what a pre-step
// needs from a session log, on a stream of 1,000 sessions with a trigger,
// a catalog and a tool result each: one Direct Get multi_last request over
// the session wildcard (the processor's read: every kind's newest event,
// answered as several messages and an end-of-batch status), and two Direct
// Get last_by_subj requests (newest catalog, newest compaction: the
// baseline's reads).
//
//	go test -run XXX -bench SessionRead ./processor/bench
func BenchmarkSessionRead(b *testing.B) {
	srv := natstest.Start(b)
	ctx := context.Background()
	if _, err := srv.JS.CreateStream(ctx, jetstream.StreamConfig{
		Name: "SESSIONS", Subjects: []string{"ev.>"}, Storage: jetstream.FileStorage, AllowDirect: true,
	}); err != nil {
		b.Fatal(err)
	}
	payload := make([]byte, 2048)
	for i := range 1000 {
		for _, k := range []events.Kind{events.KindPreStep, events.KindCatalog, events.KindToolResult} {
			if _, err := srv.JS.PublishAsync(events.Subject("ev", fmt.Sprintf("s%04d", i), k), payload); err != nil {
				b.Fatal(err)
			}
		}
	}
	select {
	case <-srv.JS.PublishAsyncComplete():
	case <-time.After(time.Minute):
		b.Fatal("populating the stream timed out")
	}
	nc := srv.Connect()
	const api = "$JS.API.DIRECT.GET.SESSIONS"

	b.Run("multi_last", func(b *testing.B) {
		inbox := nc.NewInbox()
		sub, err := nc.SubscribeSync(inbox)
		if err != nil {
			b.Fatal(err)
		}
		defer sub.Unsubscribe()
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			body, _ := json.Marshal(map[string]any{"multi_last": []string{events.SessionWildcard("ev", fmt.Sprintf("s%04d", i%1000))}})
			if err := nc.PublishRequest(api, inbox, body); err != nil {
				b.Fatal(err)
			}
			n := 0
			for {
				m, err := sub.NextMsg(5 * time.Second)
				if err != nil {
					b.Fatal(err)
				}
				if m.Header.Get("Nats-Sequence") == "" && m.Header.Get("Status") != "" {
					break // end of batch
				}
				n++
			}
			if n != 3 {
				b.Fatalf("multi_last returned %d messages, want 3", n)
			}
		}
	})
	b.Run("last_by_subj_x2", func(b *testing.B) {
		b.ReportAllocs()
		i := 0
		for b.Loop() {
			i++
			sid := fmt.Sprintf("s%04d", i%1000)
			for _, k := range []events.Kind{events.KindCatalog, events.KindCompaction} {
				m, err := nc.Request(api+"."+events.Subject("ev", sid, k), nil, 5*time.Second)
				if err != nil {
					b.Fatal(err)
				}
				if st := m.Header.Get("Status"); st != "" && st != "404" {
					b.Fatalf("status %s", st)
				}
			}
		}
	})
}
