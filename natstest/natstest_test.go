package natstest_test

import (
	"context"
	"fmt"

	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/natstest"
)

func TestStart(t *testing.T) {
	s := natstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := s.JS.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}}); err != nil {
		t.Fatal(err)
	}
	ack, err := s.JS.Publish(ctx, "t.a", []byte("hello"))
	if err != nil {
		t.Fatal(err)
	}
	if ack.Sequence != 1 {
		t.Fatalf("seq = %d, want 1", ack.Sequence)
	}
	// A second connection sees the same server.
	nc := s.Connect()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	st, err := js.Stream(ctx, "T")
	if err != nil {
		t.Fatal(err)
	}
	m, err := st.GetMsg(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	if string(m.Data) != "hello" {
		t.Fatalf("data = %q", m.Data)
	}
	if s.Server.Addr() != nil {
		t.Fatalf("server listens on %v without WithTCP", s.Server.Addr())
	}
}

func TestStartTCP(t *testing.T) {
	s := natstest.Start(t, natstest.WithTCP())
	nc, err := nats.Connect(s.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
}

func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test skipped in -short mode")
	}
	c := natstest.StartCluster(t, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	nc := c.Connect(0)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "T", Subjects: []string{"t.>"}, Replicas: 3}); err != nil {
		t.Fatal(err)
	}
	sent := 0
	publish := func(n int) {
		t.Helper()
		for range n {
			sent++
			id := fmt.Sprint("m", sent)
			// A publish may fail, or go unanswered, while a leader is being
			// elected: retry until the deadline.
			poll(t, ctx, func(ctx context.Context) error {
				_, err := js.Publish(ctx, "t.a", []byte(id), jetstream.WithMsgID(id))
				return err
			})
		}
	}
	publish(10)
	c.Stop(2)
	publish(10)
	c.Restart(2)
	// A connection to node 1 made before it stops reconnects after its restart.
	js1, err := jetstream.New(c.Connect(1))
	if err != nil {
		t.Fatal(err)
	}
	c.Stop(1)
	publish(10)
	c.Restart(1)
	// The restarted node catches up: all 30 messages readable via node 1.
	poll(t, ctx, func(ctx context.Context) error {
		st, err := js1.Stream(ctx, "T")
		if err != nil {
			return err
		}
		if n := st.CachedInfo().State.Msgs; n != 30 {
			return fmt.Errorf("stream has %d messages, want 30", n)
		}
		return nil
	})
	if got := c.Leader(); got < 0 {
		t.Fatal("no meta leader")
	}
}

// poll calls f every 20ms until it returns nil; it fails the test with f's
// last error when ctx ends first. Each attempt gets its own context of at most
// two seconds: a request that no stream leader answers (one is being elected)
// would otherwise wait out the whole deadline in its first attempt.
func poll(t *testing.T, ctx context.Context, f func(context.Context) error) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		actx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := f(actx)
		cancel()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("gave up: %v", err)
		case <-tick.C:
		}
	}
}

// Right after StartCluster and Restart return, the meta leader sees every
// running node online, so that placing a stream of three replicas cannot
// fail with "peer offline".
func TestClusterReadyMeansPeersOnline(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test skipped in -short mode")
	}
	c := natstest.StartCluster(t, 3)
	check := func(when string) {
		t.Helper()
		l := c.Leader()
		if l < 0 {
			t.Fatalf("%s: no meta leader", when)
		}
		if peers := c.Server(l).JetStreamClusterPeers(); len(peers) != c.Size() {
			t.Fatalf("%s: meta leader sees %v online, want %d peers", when, peers, c.Size())
		}
	}
	check("after StartCluster")
	c.Stop(1)
	c.Restart(1)
	check("after Restart")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	js, err := jetstream.New(c.Connect(2))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "R3", Subjects: []string{"r3.>"}, Replicas: 3}); err != nil {
		t.Fatalf("create an R3 stream right after Restart: %v", err)
	}
}
