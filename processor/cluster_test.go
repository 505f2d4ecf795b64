package processor

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
)

// clusterRounds is how many rounds of chaos TestCluster runs with full
// reads. CI runs the default; a longer run (-cluster-rounds 20) is how a
// change to the pull loop is checked before it lands.
var clusterRounds = flag.Int("cluster-rounds", 2, "rounds of node stops, meta and consumer leader changes in TestCluster")

// TestCluster runs a processor against an R3 stream on a real 3-node
// cluster while triggers flow and every CPU is kept busy by loops beside
// it (a loaded host), and in each round stops the meta leader, stops the
// node the processor is connected to, and makes the consumer's leader step
// down, each followed by a restart. Workers retry unanswered steps as new
// messages. After each disruption the processor must pull again (the
// consumer has waiting pull requests) and answer steps; at the end every
// step must be answered with exactly one catalog.
// It runs with catalogs as they are (small: read in full) and with every
// catalog given a head (read through it, head.go), whose reads any
// replica may answer.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test skipped in -short mode")
	}
	t.Run("full reads", func(t *testing.T) { testCluster(t, 0, *clusterRounds) })
	// Heads change how a pre-step reads, not how the processor pulls: one
	// round of chaos is enough for them.
	t.Run("head reads", func(t *testing.T) { testCluster(t, 1, 1) })
}

// clusterProcessor is a processor of an R3 stream on node 0 of a cluster,
// serving one project skill from cwd, run until the test ends.
func clusterProcessor(t *testing.T, c *natstest.Cluster, cfg Config, headMin int) (p *Processor, reg *prometheus.Registry, cwd string) {
	t.Helper()
	cwd = t.TempDir()
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

	reg = prometheus.NewRegistry()
	p, err = New(c.Connect(0), registry, cfg, WithLogger(quietLogger()), WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	if headMin > 0 {
		p.headMin = headMin
	}
	done := runUntilCleanup(t, p)
	select {
	case <-p.Ready():
	case err := <-done:
		done <- err
		t.Fatalf("Run: %v", err)
	case <-time.After(waitTimeout):
		t.Fatal("processor not ready")
	}
	return p, reg, cwd
}

// busy keeps every CPU busy with spinning goroutines until the test ends,
// so that the servers and the processor run as on a loaded host.
func busy(t *testing.T) {
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range runtime.NumCPU() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				if n%1024 == 0 {
					select {
					case <-stop:
						return
					default:
					}
				}
			}
		}()
	}
	t.Cleanup(func() { close(stop); wg.Wait() })
}

// waitingPulls waits until the consumer holds a pull request of a
// processor again.
func waitingPulls(t *testing.T, js jetstream.JetStream, what string) {
	t.Helper()
	natstest.Eventually(t, waitTimeout, "a waiting pull request after "+what, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		c, err := js.Consumer(ctx, DefaultStream, DefaultConsumer)
		if err != nil {
			return err
		}
		info, err := c.Info(ctx)
		if err != nil {
			return err
		}
		if info.NumWaiting == 0 {
			return fmt.Errorf("no waiting pull request; %d pending, %d ack pending", info.NumPending, info.NumAckPending)
		}
		return nil
	})
}

func testCluster(t *testing.T, headMin, rounds int) {
	c := natstest.StartCluster(t, 3)
	busy(t)
	p, _, cwd := clusterProcessor(t, c, Config{Replicas: 3, AckWait: time.Second, NakDelay: 100 * time.Millisecond, MaxDeliver: 20, Workers: 8}, headMin)

	// Workers talk to every node and survive any one stopping.
	wnc, err := nats.Connect(c.URLs(), nats.MaxReconnects(-1), nats.ReconnectWait(50*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer wnc.Close()
	js, err := jetstream.New(wnc)
	if err != nil {
		t.Fatal(err)
	}

	// Workers step until told to stop, so that every phase below sees
	// traffic however fast the cluster changes go; stepsDone[s] is how many
	// steps session s completed.
	const sessions = 8
	sids := make([]string, sessions)
	for s := range sids {
		sids[s] = fmt.Sprintf("cl-%d", s)
	}
	w := startStepping(wnc, js, sids, cwd)
	published, answered, stepsDone, stop, errs, wg := &w.published, &w.answered, w.done, w.stop, w.errs, &w.wg
	progress := func(counter *atomic.Int64, by int64, what string) { t.Helper(); waitCount(t, counter, by, what) }

	progress(answered, sessions, "steps answered at first")
	for round := 1; round <= rounds; round++ {
		start := time.Now()
		// The meta leader goes: a meta-leader election, the stream's and
		// consumer's leaders maybe with it.
		leader := c.Leader()
		if leader < 0 {
			t.Fatalf("round %d: no meta leader", round)
		}
		c.Stop(leader)
		if leader == 0 { // the processor's node: it answers once it is back
			progress(published, sessions, fmt.Sprintf("round %d: steps published with node 0 (meta leader) down", round))
		} else {
			progress(answered, sessions, fmt.Sprintf("round %d: steps answered with node %d (meta leader) down", round, leader))
		}
		c.Restart(leader)
		waitingPulls(t, js, fmt.Sprintf("round %d: restart of node %d", round, leader))
		progress(answered, sessions, fmt.Sprintf("round %d: steps answered after node %d came back", round, leader))
		// The processor's own node goes: triggers keep being published
		// meanwhile, and are answered once it is back.
		if c.Server(0) != nil {
			c.Stop(0)
			progress(published, sessions, fmt.Sprintf("round %d: steps published with node 0 down", round))
			c.Restart(0)
			waitingPulls(t, js, fmt.Sprintf("round %d: restart of node 0", round))
			progress(answered, sessions, fmt.Sprintf("round %d: steps answered after node 0 came back", round))
		}
		// The consumer's leader steps down: the pull requests it held are
		// gone with it.
		c.StepDownConsumer(server.DEFAULT_GLOBAL_ACCOUNT, DefaultStream, DefaultConsumer)
		waitingPulls(t, js, fmt.Sprintf("round %d: consumer leader stepdown", round))
		progress(answered, sessions, fmt.Sprintf("round %d: steps answered after the consumer leader stepped down", round))
		t.Logf("round %d: %v; %d steps answered so far", round, time.Since(start).Round(time.Millisecond), answered.Load())
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// Exactly one catalog per step, read through a node that was restarted.
	rjs, err := jetstream.New(c.Connect(0))
	if err != nil {
		t.Fatal(err)
	}
	rctx, rcancel := context.WithTimeout(context.Background(), waitTimeout)
	st, err := rjs.Stream(rctx, DefaultStream)
	rcancel()
	if err != nil {
		t.Fatal(err)
	}
	for s := range sessions {
		sid := fmt.Sprintf("cl-%d", s)
		var stepsSeen []string
		var seq uint64
		for {
			gctx, gcancel := context.WithTimeout(context.Background(), waitTimeout)
			m, err := st.GetMsg(gctx, seq+1, jetstream.WithGetMsgSubject(events.Subject(events.DefaultPrefix, sid, events.KindCatalog)))
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
			stepsSeen = append(stepsSeen, cat.Step)
			seq = m.Sequence
		}
		if len(stepsSeen) != stepsDone[s] {
			t.Fatalf("%s: catalogs for steps %v, want one for each of %d steps", sid, stepsSeen, stepsDone[s])
		}
		for i, st := range stepsSeen {
			if st != fmt.Sprint(i+1) {
				t.Fatalf("%s: catalogs for steps %v", sid, stepsSeen)
			}
		}
	}
	var restarts []string
	for _, r := range pullRestartReasons {
		restarts = append(restarts, fmt.Sprintf("%s %v", r, counter(t, p.m.pullRestarts.WithLabelValues(r))))
	}
	t.Logf("pull restarts: %s", strings.Join(restarts, ", "))
	if n := counter(t, p.m.headReads.WithLabelValues(headHit)); headMin > 0 && n == 0 {
		t.Error("no pre-step was read through a head")
	}
	t.Logf("%d rounds; %d publications for %d steps; head reads: %v hit, %v stale, %v unsure", rounds, published.Load(), answered.Load(),
		counter(t, p.m.headReads.WithLabelValues(headHit)), counter(t, p.m.headReads.WithLabelValues(headStale)),
		counter(t, p.m.headReads.WithLabelValues(headUnsure)))
}

// stepping is workers that step sessions until stop closes, alternating
// whether the tool view holds skillstream's tool, so that every step
// appends a catalog (initial or tombstone); each answered step counts in
// answered, and done[s] is the last step session s completed.
type stepping struct {
	published, answered atomic.Int64
	done                []int
	stop                chan struct{}
	errs                chan error
	wg                  sync.WaitGroup
}

// startStepping starts a worker per session of sids.
func startStepping(wnc *nats.Conn, js jetstream.JetStream, sids []string, cwd string) *stepping {
	st := &stepping{done: make([]int, len(sids)), stop: make(chan struct{}), errs: make(chan error, len(sids))}
	for s, sid := range sids {
		st.wg.Go(func() {
			for step := 1; ; step++ {
				select {
				case <-st.stop:
					return
				default:
				}
				tools := ourTool()
				if step%2 == 0 {
					tools = []events.Tool{{Name: "bash", Owner: "agent"}}
				}
				ps := events.PreStep{V: 1, Session: sid, Step: fmt.Sprint(step), Cwd: cwd, Tools: tools}
				d, err := askPatiently(wnc, js, ps, &st.published)
				if err != nil {
					st.errs <- err
					return
				}
				if d.Outcome != events.OutcomeAppended || d.Catalog == nil || d.Catalog.Step != ps.Step {
					st.errs <- fmt.Errorf("%s step %d: %+v", sid, step, d)
					return
				}
				st.answered.Add(1)
				st.done[s] = step
			}
		})
	}
	return st
}

// waitCount waits until counter grew by by.
func waitCount(t *testing.T, counter *atomic.Int64, by int64, what string) {
	t.Helper()
	target := counter.Load() + by
	natstest.Eventually(t, waitTimeout, what, func() error {
		if counter.Load() < target {
			return fmt.Errorf("%d of %d", counter.Load(), target)
		}
		return nil
	})
}

// askPatiently publishes a pre-step and waits for its answer, publishing
// the same step again as a new message whenever no answer comes within two
// seconds or the publication fails (a node is down, a leader is elected).
func askPatiently(nc *nats.Conn, js jetstream.JetStream, ps events.PreStep, published *atomic.Int64) (events.Decision, error) {
	data, err := events.Encode(events.Msgpack, ps)
	if err != nil {
		return events.Decision{}, err
	}
	inbox := nc.NewInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return events.Decision{}, err
	}
	defer sub.Unsubscribe()
	deadline := time.Now().Add(2 * waitTimeout)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		_, err := js.PublishMsg(ctx, &nats.Msg{
			Subject: events.Subject(events.DefaultPrefix, ps.Session, events.KindPreStep),
			Header:  nats.Header{events.HeaderReplyInbox: []string{inbox}},
			Data:    data,
		})
		cancel()
		if err == nil {
			published.Add(1)
		}
		reply, err := sub.NextMsg(2 * time.Second)
		if errors.Is(err, nats.ErrTimeout) {
			continue
		}
		if err != nil {
			return events.Decision{}, err
		}
		return events.DecodeDecision(events.Msgpack, reply.Data)
	}
	return events.Decision{}, fmt.Errorf("%s/%s: no answer", ps.Session, ps.Step)
}
