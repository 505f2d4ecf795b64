package processor

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/natstest"
)

// BenchmarkReadPlan compares two ways for an unchanged pre-step to learn
// what it needs about its session (the session's newest sequence, its
// newest catalog and compaction):
//
//   - multi-last: the one Direct Get multi_last the processor uses, which
//     carries the newest catalog's bytes every time;
//   - lean: three small Direct Gets issued together (the session's newest
//     record, any catalog after the one already known, the newest
//     compaction), which carry no catalog unless a new one exists, but
//     cannot tell that the known catalog was deleted (kept for comparison);
//   - head: the two small Direct Gets of a catalog head check (head.go),
//     which the processor uses for catalogs of catalogHeadMin or more.
func BenchmarkReadPlan(b *testing.B) {
	srv := natstest.Start(b)
	nc := srv.Connect()
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "RP", Subjects: []string{"rp.>"}, AllowDirect: true}); err != nil {
		b.Fatal(err)
	}
	for _, size := range []int{4 << 10, 63 << 10} {
		sid := fmt.Sprintf("s%d", size)
		pub := func(kind string, n int) uint64 {
			a, err := js.Publish(ctx, "rp."+sid+"."+kind, []byte(strings.Repeat("x", n)))
			if err != nil {
				b.Fatal(err)
			}
			return a.Sequence
		}
		pub("agent.pre-step", 200)
		headSeq := pub("catalog.head", 60)
		catSeq := pub("catalog.append", size)
		pub("tool.call.skill", 100)
		pub("tool.result", 2<<10)
		pub("agent.pre-step", 200)
		rd := newReader(nc, "RP")
		b.Run(fmt.Sprintf("multi-last/catalog=%dKiB", size>>10), func(b *testing.B) {
			for b.Loop() {
				ms, err := rd.lastOf(ctx, []string{"rp." + sid + ".>"}, 0, 0)
				if err != nil || len(ms) != 5 {
					b.Fatal(len(ms), err)
				}
			}
		})
		api := "$JS.API.DIRECT.GET.RP"
		req := func(v any) *nats.Msg {
			body, _ := json.Marshal(v)
			return &nats.Msg{Subject: api, Data: body}
		}
		b.Run(fmt.Sprintf("lean/catalog=%dKiB", size>>10), func(b *testing.B) {
			reqs := []*nats.Msg{
				req(map[string]any{"last_by_subj": "rp." + sid + ".>"}),
				req(map[string]any{"seq": catSeq + 1, "next_by_subj": "rp." + sid + ".catalog.append"}),
				req(map[string]any{"last_by_subj": "rp." + sid + ".context.compact"}),
			}
			for b.Loop() {
				done := make(chan *nats.Msg, len(reqs))
				for _, m := range reqs {
					go func() {
						r, err := nc.RequestMsg(m, 5e9)
						if err != nil {
							b.Error(err)
						}
						done <- r
					}()
				}
				for range reqs {
					<-done
				}
			}
		})
		b.Run(fmt.Sprintf("head/catalog=%dKiB", size>>10), func(b *testing.B) {
			filters := []string{"rp." + sid + ".agent.pre-step", "rp." + sid + ".catalog.>", "rp." + sid + ".context.compact"}
			for b.Loop() {
				done := make(chan error, 2)
				go func() {
					body, _ := json.Marshal(map[string]any{"multi_last": filters, "seq": catSeq + 1})
					reply, a, _ := rd.open()
					defer rd.closeAnswer(reply)
					nc.PublishRequest(rd.api, reply, body)
					for {
						<-a.signal
						a.mu.Lock()
						n := len(a.msgs)
						a.mu.Unlock()
						if n == 2 {
							break
						}
					}
					done <- nil
				}()
				go func() {
					r, err := nc.RequestMsg(req(map[string]any{"seq": headSeq, "next_by_subj": "rp." + sid + ".catalog.>", "batch": 1}), 5e9)
					if err == nil && r.Header.Get("Nats-Num-Pending") != "1" {
						err = fmt.Errorf("pending %q", r.Header.Get("Nats-Num-Pending"))
					}
					done <- err
				}()
				for range 2 {
					if err := <-done; err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
