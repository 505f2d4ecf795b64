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

// TestCluster runs a processor against an R3 stream on a real 3-node
// cluster while triggers flow, and stops first a node the processor is not
// connected to, then the one it is. Workers retry unanswered steps as new
// messages. Every step must end up answered, with exactly one catalog.
// It runs with catalogs as they are (small: read in full) and with every
// catalog given a head (read through it, head.go), whose reads any
// replica may answer.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("cluster test skipped in -short mode")
	}
	t.Run("full reads", func(t *testing.T) { testCluster(t, 0) })
	t.Run("head reads", func(t *testing.T) { testCluster(t, 1) })
}

func testCluster(t *testing.T, headMin int) {
	c := natstest.StartCluster(t, 3)

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

	reg := prometheus.NewRegistry()
	p, err := New(c.Connect(0), registry, Config{Replicas: 3, AckWait: time.Second, NakDelay: 100 * time.Millisecond, MaxDeliver: 20, Workers: 8},
		WithLogger(quietLogger()), WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	if headMin > 0 {
		p.headMin = headMin
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()

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
	select {
	case <-p.Ready():
	case <-time.After(waitTimeout):
		t.Fatal("processor not ready")
	}

	// Workers step until told to stop, so that every phase below sees
	// traffic however fast the cluster changes go; stepsDone[s] is how many
	// steps session s completed.
	const sessions = 8
	var published, answered atomic.Int64
	var stepsDone [sessions]int
	stop := make(chan struct{})
	errs := make(chan error, sessions)
	var wg sync.WaitGroup
	for s := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sid := fmt.Sprintf("cl-%d", s)
			for step := 1; ; step++ {
				select {
				case <-stop:
					return
				default:
				}
				tools := ourTool()
				if step%2 == 0 {
					tools = []events.Tool{{Name: "bash", Owner: "agent"}}
				}
				ps := events.PreStep{V: 1, Session: sid, Step: fmt.Sprint(step), Cwd: cwd, Tools: tools}
				d, err := askPatiently(wnc, js, ps, &published)
				if err != nil {
					errs <- err
					return
				}
				if d.Outcome != events.OutcomeAppended || d.Catalog == nil || d.Catalog.Step != ps.Step {
					errs <- fmt.Errorf("%s step %d: %+v", sid, step, d)
					return
				}
				answered.Add(1)
				stepsDone[s] = step
			}
		}()
	}
	progress := func(counter *atomic.Int64, by int64) {
		t.Helper()
		target := counter.Load() + by
		poll(t, func() error {
			if counter.Load() < target {
				return fmt.Errorf("%d of %d", counter.Load(), target)
			}
			return nil
		})
	}

	progress(&answered, sessions)
	c.Stop(2) // not the processor's node
	progress(&answered, sessions)
	c.Restart(2)
	progress(&answered, sessions)
	c.Stop(0) // the processor's node: triggers keep being published meanwhile
	progress(&published, sessions)
	c.Restart(0)
	progress(&answered, sessions)
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
	defer rcancel()
	st, err := rjs.Stream(rctx, DefaultStream)
	if err != nil {
		t.Fatal(err)
	}
	for s := range sessions {
		sid := fmt.Sprintf("cl-%d", s)
		var stepsSeen []string
		var seq uint64
		for {
			m, err := st.GetMsg(rctx, seq+1, jetstream.WithGetMsgSubject(events.Subject(events.DefaultPrefix, sid, events.KindCatalog)))
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
	if n := counter(t, p.m.headReads.WithLabelValues(headHit)); headMin > 0 && n == 0 {
		t.Error("no pre-step was read through a head")
	}
	t.Logf("%d publications for %d steps; head reads: %v hit, %v stale, %v unsure", published.Load(), answered.Load(),
		counter(t, p.m.headReads.WithLabelValues(headHit)), counter(t, p.m.headReads.WithLabelValues(headStale)),
		counter(t, p.m.headReads.WithLabelValues(headUnsure)))
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
