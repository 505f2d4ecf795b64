package events_test

import (
	"crypto/rand"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/skillstream/skillstream/events"
)

// TestPartitionOfIsTheServers: for random session ids of both layouts, a
// real nats-server's partition() mapping (the one PartitionMapping writes)
// puts each session's subjects under the partition PartitionOf computes.
func TestPartitionOfIsTheServers(t *testing.T) {
	const n = 7
	for _, l := range []events.Layout{events.LayoutFlat, events.LayoutOwner} {
		t.Run(l.String(), func(t *testing.T) {
			src, dest := events.PartitionMapping("ev", l, n)
			conf := filepath.Join(t.TempDir(), "s.conf")
			if err := os.WriteFile(conf, []byte(fmt.Sprintf("listen: 127.0.0.1:-1\nmappings: { %q: %q }\n", src, dest)), 0o600); err != nil {
				t.Fatal(err)
			}
			opts, err := server.ProcessConfigFile(conf)
			if err != nil {
				t.Fatal(err)
			}
			opts.NoLog, opts.NoSigs = true, true
			srv, err := server.NewServer(opts)
			if err != nil {
				t.Fatal(err)
			}
			srv.Start()
			defer srv.Shutdown()
			if !srv.ReadyForConnections(5 * time.Second) {
				t.Fatal("not ready")
			}
			nc, err := nats.Connect(srv.ClientURL())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			sub, err := nc.SubscribeSync("evp.>")
			if err != nil {
				t.Fatal(err)
			}
			seen := map[int]int{}
			for i := range 300 {
				sid := rand.Text()
				if l == events.LayoutOwner {
					sid = fmt.Sprintf("worker-%d.%s", i%5, sid)
				}
				if err := nc.Publish(events.Subject("ev", sid, events.KindPreStep), nil); err != nil {
					t.Fatal(err)
				}
				m, err := sub.NextMsg(5 * time.Second)
				if err != nil {
					t.Fatal(err)
				}
				k := events.PartitionOf(l, sid, n)
				want := events.PartitionPrefix("ev", k) + "." + sid + "." + string(events.KindPreStep)
				if m.Subject != want {
					t.Fatalf("session %s: the server mapped it to %s, PartitionOf says %s", sid, m.Subject, want)
				}
				seen[k]++
			}
			if len(seen) != n {
				t.Errorf("300 sessions over %d partitions reached %d of them: %v", n, len(seen), seen)
			}
		})
	}
}

func TestPartitionNames(t *testing.T) {
	if got := events.PartitionStream("SESSIONS", 3); got != "SESSIONS-3" {
		t.Errorf("stream %s", got)
	}
	if got := events.PartitionPrefix("acme.ev", 0); got != "acme.evp.0" || events.ValidatePrefix(got) != nil {
		t.Errorf("prefix %s", got)
	}
	if events.PartitionOf(events.LayoutFlat, "x", 1) != 0 || events.PartitionOf(events.LayoutFlat, "x", 0) != 0 {
		t.Error("one partition is 0")
	}
	for _, n := range []int{-1, events.MaxPartitions + 1} {
		if err := events.CheckPartitions(n); err == nil || !strings.Contains(err.Error(), "partitions") {
			t.Errorf("CheckPartitions(%d): %v", n, err)
		}
	}
}
