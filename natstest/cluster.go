package natstest

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Cluster is a real JetStream cluster of n servers on 127.0.0.1. Each node has
// a fixed client port, a fixed route port and its own store directory, so a
// node stopped with Stop comes back with Restart under the same identity and
// clients connected to it reconnect.
type Cluster struct {
	t     testing.TB
	mu    sync.Mutex
	opts  []*server.Options
	nodes []*server.Server // nil while stopped
}

// StartCluster starts an n-node JetStream cluster and waits until it has a
// meta leader and every node is current. Everything is shut down at cleanup.
// opts change every node's configuration (e.g. WithMappings).
func StartCluster(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	if n < 1 {
		t.Fatalf("natstest: cluster of %d nodes", n)
	}
	ports, err := freePorts(2 * n)
	if err != nil {
		t.Fatalf("natstest: %v", err)
	}
	routes := make([]*url.URL, n)
	for i := range n {
		routes[i] = &url.URL{Scheme: "nats", Host: fmt.Sprintf("127.0.0.1:%d", ports[n+i])}
	}
	c := &Cluster{t: t, opts: make([]*server.Options, n), nodes: make([]*server.Server, n)}
	for i := range n {
		c.opts[i] = &server.Options{
			ServerName: fmt.Sprintf("n%d", i),
			Host:       "127.0.0.1",
			Port:       ports[i],
			JetStream:  true,
			// Storage is accounted against this, not against 75% of the disk
			// that happens to be free: the session stream reserves its byte
			// limit (10 GiB by default) when it is created.
			JetStreamMaxStore: server.JetStreamMaxStoreDefault,
			StoreDir:          t.TempDir(),
			NoLog:             true,
			NoSigs:            true,
			Cluster: server.ClusterOpts{
				Name: "natstest",
				Host: "127.0.0.1",
				Port: ports[n+i],
			},
			Routes: routes,
		}
		for _, o := range opts {
			o(c.opts[i])
		}
	}
	t.Cleanup(c.shutdown)
	for i := range n {
		c.start(i)
	}
	c.WaitReady()
	return c
}

// Size is the number of nodes, running or not.
func (c *Cluster) Size() int { return len(c.opts) }

func (c *Cluster) start(i int) {
	c.t.Helper()
	srv, err := server.NewServer(c.opts[i].Clone())
	if err != nil {
		c.t.Fatalf("natstest: new server %d: %v", i, err)
	}
	srv.Start()
	if !srv.ReadyForConnections(readyTimeout) {
		srv.Shutdown()
		c.t.Fatalf("natstest: node %d not ready within %v", i, readyTimeout)
	}
	c.mu.Lock()
	c.nodes[i] = srv
	c.mu.Unlock()
}

func (c *Cluster) shutdown() {
	c.mu.Lock()
	nodes := append([]*server.Server(nil), c.nodes...)
	clear(c.nodes)
	c.mu.Unlock()
	for _, s := range nodes {
		if s != nil {
			s.Shutdown()
		}
	}
	for _, s := range nodes {
		if s != nil {
			s.WaitForShutdown()
		}
	}
}

// Server returns node i, or nil while it is stopped.
func (c *Cluster) Server(i int) *server.Server {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nodes[i]
}

// Stop shuts node i down and waits until it is gone. Its store is kept.
func (c *Cluster) Stop(i int) {
	c.t.Helper()
	c.mu.Lock()
	s := c.nodes[i]
	c.nodes[i] = nil
	c.mu.Unlock()
	if s == nil {
		c.t.Fatalf("natstest: node %d is not running", i)
	}
	s.Shutdown()
	s.WaitForShutdown()
}

// Restart starts node i again with its store directory and ports, then waits
// until the cluster is ready.
func (c *Cluster) Restart(i int) {
	c.t.Helper()
	if c.Server(i) != nil {
		c.t.Fatalf("natstest: node %d is already running", i)
	}
	c.start(i)
	c.WaitReady()
}

// URL is node i's client URL.
func (c *Cluster) URL(i int) string {
	return fmt.Sprintf("nats://127.0.0.1:%d", c.opts[i].Port)
}

// URLs lists every node's client URL, comma separated, for nats.Connect.
func (c *Cluster) URLs() string {
	urls := make([]string, len(c.opts))
	for i := range c.opts {
		urls[i] = c.URL(i)
	}
	return strings.Join(urls, ",")
}

// Connect opens a client connection to node i only (no other servers are
// tried, so the connection stays with that node), closed at cleanup.
// Reconnection to node i is retried indefinitely.
func (c *Cluster) Connect(i int, opts ...nats.Option) *nats.Conn {
	c.t.Helper()
	base := []nats.Option{
		nats.DontRandomize(),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(50 * time.Millisecond),
		nats.IgnoreDiscoveredServers(),
	}
	nc, err := nats.Connect(c.URL(i), append(base, opts...)...)
	if err != nil {
		c.t.Fatalf("natstest: connect to node %d: %v", i, err)
	}
	c.t.Cleanup(nc.Close)
	return nc
}

// WaitReady waits until the running nodes agree on a JetStream meta leader,
// each of them is current with it, and the leader sees every running node
// online with its JetStream statistics: the leader places new streams and
// consumers only on peers it has heard from, so before that a stream of
// several replicas fails with "no suitable peers for placement, peer
// offline".
func (c *Cluster) WaitReady() {
	c.t.Helper()
	var why string
	ok := waitFor(readyTimeout, func() bool {
		why = c.notReady()
		return why == ""
	})
	if !ok {
		c.t.Fatalf("natstest: cluster not ready within %v: %s", readyTimeout, why)
	}
}

// notReady says what WaitReady still waits for, or "" when nothing.
func (c *Cluster) notReady() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	var leader *server.Server
	var running []string
	for i, s := range c.nodes {
		if s == nil {
			continue
		}
		running = append(running, c.opts[i].ServerName)
		if !s.JetStreamIsCurrent() {
			return fmt.Sprintf("node %d is not current with the meta leader", i)
		}
		if s.JetStreamIsLeader() {
			leader = s
		}
	}
	if leader == nil {
		return "no JetStream meta leader"
	}
	online := leader.JetStreamClusterPeers()
	for _, name := range running {
		if !slices.Contains(online, name) {
			return fmt.Sprintf("meta leader %s does not see %s online yet (online: %v)", leader.Name(), name, online)
		}
	}
	return ""
}

// Leader returns the index of the node that is the JetStream meta leader, or
// -1 when there is none right now.
func (c *Cluster) Leader() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, s := range c.nodes {
		if s != nil && s.JetStreamIsLeader() {
			return i
		}
	}
	return -1
}

// ConsumerLeader returns the index of the node leading the consumer of the
// stream in the account (natstest's clients use the global account,
// server.DEFAULT_GLOBAL_ACCOUNT), or -1 when no running node does right now.
func (c *Cluster) ConsumerLeader(account, stream, consumer string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, s := range c.nodes {
		if s != nil && s.JetStreamIsConsumerLeader(account, stream, consumer) {
			return i
		}
	}
	return -1
}

// StepDownConsumer makes the consumer's leader step down, as the API's
// consumer leader stepdown request does, and waits until another node
// leads it. The pull requests the old leader held are gone with its
// leadership. It returns the old and the new leader's index.
func (c *Cluster) StepDownConsumer(account, stream, consumer string) (was, now int) {
	c.t.Helper()
	was = -1
	if !waitFor(readyTimeout, func() bool { was = c.ConsumerLeader(account, stream, consumer); return was >= 0 }) {
		c.t.Fatalf("natstest: consumer %s > %s has no leader", stream, consumer)
	}
	if err := c.Server(was).JetStreamStepdownConsumer(account, stream, consumer); err != nil {
		c.t.Fatalf("natstest: step down consumer %s > %s on node %d: %v", stream, consumer, was, err)
	}
	now = -1
	if !waitFor(readyTimeout, func() bool {
		now = c.ConsumerLeader(account, stream, consumer)
		return now >= 0 && now != was
	}) {
		c.t.Fatalf("natstest: consumer %s > %s got no new leader after node %d stepped down", stream, consumer, was)
	}
	return was, now
}
