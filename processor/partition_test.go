package processor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
)

// partitionSessions are session ids, two or more in each of n partitions.
func partitionSessions(n, each int) []string {
	count := make([]int, n)
	var out []string
	for i := 0; ; i++ {
		sid := fmt.Sprintf("pt-%d", i)
		k := events.PartitionOf(events.LayoutFlat, sid, n)
		if count[k] < each {
			count[k]++
			out = append(out, sid)
		}
		if len(out) == n*each {
			return out
		}
	}
}

// partitionMember runs one member of the group of every partition: a
// processor per partition on nc, sharing one registry, until stop is
// called (or the test ends).
func partitionMember(t *testing.T, nc *nats.Conn, registry *providers.Registry, base Config, n int) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	for k := range n {
		cfg := base.Partition(k, n)
		p, err := New(nc, registry, cfg, WithLogger(quietLogger()), WithRegisterer(prometheus.NewRegistry()))
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		wg.Go(func() {
			err := p.Run(ctx)
			done <- err
			if err != nil {
				t.Errorf("partition %d: Run: %v", k, err)
			}
		})
		select {
		case <-p.Ready():
		case err := <-done:
			t.Fatalf("partition %d: Run: %v", k, err)
		case <-time.After(waitTimeout):
			t.Fatalf("partition %d: not ready", k)
		}
	}
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); wg.Wait() }) }
	t.Cleanup(stop)
	return stop
}

// projectRegistry is a registry serving one project skill from a new cwd.
func projectRegistry(t *testing.T) (*providers.Registry, string) {
	t.Helper()
	cwd := t.TempDir()
	if err := os.MkdirAll(filepath.Join(cwd, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(cwd, ".agents", "skills", "a-skill")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: a-skill\ndescription: A skill.\n---\nBody.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs, err := agentskills.New(agentskills.Config{NoUserDir: true})
	if err != nil {
		t.Fatal(err)
	}
	registry := providers.NewRegistry([]providers.Provider{fs}, providers.WithLogger(quietLogger()))
	t.Cleanup(func() { registry.Close() })
	return registry, cwd
}

// streamLeader is the node leading stream, or -1.
func streamLeader(c *natstest.Cluster, stream string) int {
	for i := range c.Size() {
		if s := c.Server(i); s != nil && s.JetStreamIsStreamLeader("$G", stream) {
			return i
		}
	}
	return -1
}

// TestPartitionsCluster runs two members over 4 partitions of R3 streams
// on a real 3-node cluster whose servers map the sessions: the partition
// streams' leaders spread over the nodes, sessions published as without
// partitions are answered from their partitions, and through a node kill
// (the node leading most partitions, with a member on it or not) and a
// member kill every step is answered with exactly one catalog, kept in the
// session's partition only.
func TestPartitionsCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test skipped in -short mode")
	}
	const n = 4
	src, dest := events.PartitionMapping(events.DefaultPrefix, events.LayoutFlat, n)
	c := natstest.StartCluster(t, 3, natstest.WithMappings([2]string{src, dest}))
	registry, cwd := projectRegistry(t)
	base := Config{Replicas: 3, AckWait: time.Second, NakDelay: 100 * time.Millisecond, MaxDeliver: 20, Workers: 8}
	base.Instance = "m0"
	partitionMember(t, c.Connect(0), registry, base, n)
	base.Instance = "m1"
	stopM1 := partitionMember(t, c.Connect(1), registry, base, n)

	wnc, err := nats.Connect(c.URLs(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer wnc.Close()
	js, err := jetstream.New(wnc)
	if err != nil {
		t.Fatal(err)
	}

	// The leaders spread: where they all landed on one or two nodes, an
	// operator steps one down (the server elects another replica) until
	// every node leads a partition.
	natstest.Eventually(t, waitTimeout, "partition leaders on every node", func() error {
		leads := map[int][]string{}
		for k := range n {
			s := events.PartitionStream(DefaultStream, k)
			leads[streamLeader(c, s)] = append(leads[streamLeader(c, s)], s)
		}
		if len(leads) == c.Size() && leads[-1] == nil {
			return nil
		}
		for _, ss := range leads {
			if len(ss) > 1 {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				_, _ = wnc.RequestWithContext(ctx, "$JS.API.STREAM.LEADER.STEPDOWN."+ss[0], nil)
				cancel()
				break
			}
		}
		return fmt.Errorf("leaders: %v", leads)
	})

	sessions := partitionSessions(n, 2)
	w := startStepping(wnc, js, sessions, cwd)
	answered, stepsDone, stop, errs, wg := &w.answered, w.done, w.stop, w.errs, &w.wg
	progress := func(counter *atomic.Int64, by int64, what string) { t.Helper(); waitCount(t, counter, by, what) }
	all := int64(len(sessions))
	progress(answered, all, "steps answered at first")

	// The node leading the most partitions goes, and comes back.
	count := map[int]int{}
	for k := range n {
		count[streamLeader(c, events.PartitionStream(DefaultStream, k))]++
	}
	kill := 0
	for node, m := range count {
		if node >= 0 && m > count[kill] {
			kill = node
		}
	}
	c.Stop(kill)
	// With a member's node down, the other member answers.
	progress(answered, all, fmt.Sprintf("steps answered with node %d down", kill))
	c.Restart(kill)
	progress(answered, all, fmt.Sprintf("steps answered after node %d came back", kill))

	// A member goes: the other answers every partition.
	stopM1()
	progress(answered, 2*all, "steps answered by the member left")
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// Exactly one catalog per step, in the session's partition, none
	// elsewhere.
	rjs, err := jetstream.New(c.Connect(2))
	if err != nil {
		t.Fatal(err)
	}
	for s, sid := range sessions {
		for k := range n {
			ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
			st, err := rjs.Stream(ctx, events.PartitionStream(DefaultStream, k))
			cancel()
			if err != nil {
				t.Fatal(err)
			}
			var steps []string
			var seq uint64
			for {
				gctx, gcancel := context.WithTimeout(context.Background(), waitTimeout)
				m, err := st.GetMsg(gctx, seq+1, jetstream.WithGetMsgSubject(events.Subject(events.PartitionPrefix(events.DefaultPrefix, k), sid, events.KindCatalog)))
				gcancel()
				if errors.Is(err, jetstream.ErrMsgNotFound) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				cat, err := events.DecodeCatalog(events.Msgpack, m.Data)
				if err != nil {
					t.Fatal(err)
				}
				steps = append(steps, cat.Step)
				seq = m.Sequence
			}
			if k != events.PartitionOf(events.LayoutFlat, sid, n) {
				if len(steps) > 0 {
					t.Errorf("%s: catalogs in partition %d, not its own", sid, k)
				}
				continue
			}
			if len(steps) != stepsDone[s] {
				t.Fatalf("%s: catalogs for steps %v, want one for each of %d steps", sid, steps, stepsDone[s])
			}
			for i, st := range steps {
				if st != fmt.Sprint(i+1) {
					t.Fatalf("%s: catalogs for steps %v", sid, steps)
				}
			}
		}
	}
	t.Logf("%d publications for %d steps over %d sessions", w.published.Load(), answered.Load(), len(sessions))
}
