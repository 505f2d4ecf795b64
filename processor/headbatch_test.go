package processor

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/natstest"
)

// BenchmarkHeadAndCatalogAppend compares the two ways of appending a
// large catalog's head and the catalog so that nothing of the session
// lies between them: two publishes, the catalog expecting the head as the
// session's last event (what the processor does), against one atomic
// batch of both (the server checks and stores them together, one request
// and one acknowledgement). One op is a session's pre-step, head and 63 KB
// catalog, on one server and on a three-server cluster. On nats-server
// 2.15 the batch is about ten times slower: the server stages every batch
// in a store of its own (on a one-replica file stream a new file store,
// its metadata written and synced) before committing it.
func BenchmarkHeadAndCatalogAppend(b *testing.B) {
	for _, mode := range []string{"two", "atomic", "two-r3", "atomic-r3"} {
		b.Run(mode, func(b *testing.B) {
			var nc *nats.Conn
			replicas := 1
			if strings.HasSuffix(mode, "-r3") {
				c := natstest.StartCluster(b, 3)
				c.WaitReady()
				nc = c.Connect(0)
				replicas = 3
				mode = strings.TrimSuffix(mode, "-r3")
			} else {
				srv := natstest.Start(b, natstest.WithTCP())
				nc = srv.Connect()
			}
			js, _ := jetstream.New(nc)
			ctx := context.Background()
			if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"ev.>"}, Storage: jetstream.FileStorage, AllowAtomicPublish: true, Replicas: replicas}); err != nil {
				b.Fatal(err)
			}
			head := []byte(strings.Repeat("h", 120))
			cat := []byte(strings.Repeat("c", 63000))
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				sid := "s" + strconv.Itoa(i)
				// the pre-step
				ack, err := js.Publish(ctx, "ev."+sid+".agent.pre-step", []byte("p"))
				if err != nil {
					b.Fatal(err)
				}
				last := ack.Sequence
				hm := &nats.Msg{Subject: "ev." + sid + ".catalog.head", Data: head, Header: nats.Header{
					"Nats-Expected-Last-Subject-Sequence":         {strconv.FormatUint(last, 10)},
					"Nats-Expected-Last-Subject-Sequence-Subject": {"ev." + sid + ".>"}}}
				cm := &nats.Msg{Subject: "ev." + sid + ".catalog.append", Data: cat, Header: nats.Header{"Nats-Msg-Id": {sid + ":1"}}}
				switch mode {
				case "two":
					a, err := js.PublishMsg(ctx, hm)
					if err != nil {
						b.Fatal(err)
					}
					cm.Header.Set("Nats-Expected-Last-Subject-Sequence", strconv.FormatUint(a.Sequence, 10))
					cm.Header.Set("Nats-Expected-Last-Subject-Sequence-Subject", "ev."+sid+".>")
					if _, err := js.PublishMsg(ctx, cm); err != nil {
						b.Fatal(err)
					}
				case "atomic":
					id := "b" + strconv.Itoa(i)
					hm.Header.Set("Nats-Batch-Id", id)
					hm.Header.Set("Nats-Batch-Sequence", "1")
					if err := nc.PublishMsg(hm); err != nil {
						b.Fatal(err)
					}
					cm.Header.Set("Nats-Batch-Id", id)
					cm.Header.Set("Nats-Batch-Sequence", "2")
					cm.Header.Set("Nats-Batch-Commit", "1")
					r, err := nc.RequestMsg(cm, 5e9)
					if err != nil {
						b.Fatal(err)
					}
					var pa struct {
						Seq   uint64 `json:"seq"`
						Error any    `json:"error"`
					}
					if err := json.Unmarshal(r.Data, &pa); err != nil || pa.Error != nil || pa.Seq == 0 {
						b.Fatalf("%s", r.Data)
					}
				}
			}
		})
	}
}
