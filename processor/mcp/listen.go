package mcp

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// The listener of Serve admits connections in two stages, so that clients
// without the token cannot take the places of those with it.
//
// A connection accepted is unauthenticated until one of its requests
// passes the front door's checks (token and origin). Unauthenticated
// connections are bounded per remote address (an IPv4 address, or the /64
// of an IPv6 one: MaxUnauthenticatedPerAddr) and in all
// (MaxUnauthenticated); one beyond either is closed as soon as it is
// accepted, unread. Each lasts no longer than its first request's headers
// take to arrive (the read-header timeout), and a request refused closes
// its connection. A connection takes one of the MaxConns slots only once a
// request on it is authenticated, and keeps it until it closes; a request
// that finds every slot taken waits for one (at most slotWait, then 503).
//
// Accept never waits: what the listener bounds is decided per connection,
// so that the system's queue of connections to accept never fills with a
// flood that the server would take one by one.

// slotWait bounds how long an authenticated request waits for a free slot.
const slotWait = 30 * time.Second

// errNoSlot reports a request that found no free slot within slotWait.
var errNoSlot = errors.New("every connection slot is taken")

// connMetrics count what the listener refuses and what it holds.
type connMetrics struct {
	refused *prometheus.CounterVec // reason
	open    *prometheus.GaugeVec   // state
}

// Reasons a connection is closed unserved (connections_refused_total).
const (
	// connAddress: its address had MaxUnauthenticatedPerAddr
	// unauthenticated connections open already.
	connAddress = "address"
	// connUnauthenticated: MaxUnauthenticated unauthenticated connections
	// were open already.
	connUnauthenticated = "unauthenticated"
	// connSlots: authenticated, it found no free slot within slotWait.
	connSlots = "slots"
)

func newConnMetrics(r prometheus.Registerer) (*connMetrics, error) {
	m := &connMetrics{
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "skillstream_mcp_connections_refused_total",
			Help: "MCP HTTP connections closed unserved, by reason: address (its address had too many unauthenticated connections open), unauthenticated (too many open in all), slots (authenticated, no connection slot freed in time).",
		}, []string{"reason"}),
		open: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "skillstream_mcp_connections",
			Help: "MCP HTTP connections open, by state: unauthenticated (no request authenticated yet), authenticated (holding a connection slot).",
		}, []string{"state"}),
	}
	for _, reason := range []string{connAddress, connUnauthenticated, connSlots} {
		m.refused.WithLabelValues(reason)
	}
	if r == nil {
		return m, nil
	}
	var err error
	m.refused = registerOrExisting(r, m.refused, &err)
	m.open = registerOrExisting(r, m.open, &err)
	return m, err
}

// registerOrExisting registers c, or returns the collector registered
// already under its name (a second Serve on the same registry).
func registerOrExisting[C prometheus.Collector](r prometheus.Registerer, c C, errp *error) C {
	err := r.Register(c)
	var are prometheus.AlreadyRegisteredError
	switch {
	case err == nil:
		return c
	case errors.As(err, &are):
		if existing, ok := are.ExistingCollector.(C); ok {
			return existing
		}
	}
	if *errp == nil {
		*errp = err
	}
	return c
}

// gate is the listener of Serve (see above).
type gate struct {
	net.Listener
	slots              chan struct{} // one element per authenticated connection
	perAddr, maxUnauth int
	m                  *connMetrics
	done               chan struct{} // closed by Close
	closeOnce          sync.Once

	mu      sync.Mutex
	unauth  map[netip.Prefix]int // unauthenticated connections by address
	nUnauth int
}

func newGate(ln net.Listener, cfg HTTPConfig, m *connMetrics) *gate {
	return &gate{Listener: ln, slots: make(chan struct{}, cfg.MaxConns), perAddr: cfg.MaxUnauthenticatedPerAddr,
		maxUnauth: cfg.MaxUnauthenticated, m: m, done: make(chan struct{}), unauth: map[netip.Prefix]int{}}
}

// Accept returns the next connection within the bounds on unauthenticated
// ones, closing those beyond them.
func (g *gate) Accept() (net.Conn, error) {
	for {
		c, err := g.Listener.Accept()
		if err != nil {
			return nil, err
		}
		key := addrKey(c.RemoteAddr())
		g.mu.Lock()
		reason := ""
		switch {
		case g.nUnauth >= g.maxUnauth:
			reason = connUnauthenticated
		case g.unauth[key] >= g.perAddr:
			reason = connAddress
		default:
			g.unauth[key]++
			g.nUnauth++
		}
		g.mu.Unlock()
		if reason != "" {
			g.m.refused.WithLabelValues(reason).Inc()
			closeNow(c)
			continue
		}
		g.m.open.WithLabelValues("unauthenticated").Inc()
		return &gateConn{Conn: c, g: g, key: key}, nil
	}
}

// closeNow closes c without waiting for what the client still sends.
func closeNow(c net.Conn) {
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetLinger(0)
	}
	_ = c.Close()
}

// leave removes an unauthenticated connection of key from the counts.
func (g *gate) leave(key netip.Prefix) {
	g.mu.Lock()
	if g.unauth[key]--; g.unauth[key] <= 0 {
		delete(g.unauth, key)
	}
	g.nUnauth--
	g.mu.Unlock()
	g.m.open.WithLabelValues("unauthenticated").Dec()
}

func (g *gate) Close() error {
	err := g.Listener.Close()
	g.closeOnce.Do(func() { close(g.done) })
	return err
}

// addrKey is what the per-address bound counts by: the IPv4 address, or
// the /64 of an IPv6 one (a host is given a /64 at least, and would
// otherwise have 2^64 addresses to spread its connections over).
func addrKey(a net.Addr) netip.Prefix {
	var ip netip.Addr
	if ta, ok := a.(*net.TCPAddr); ok {
		ip, _ = netip.AddrFromSlice(ta.IP)
	} else if ap, err := netip.ParseAddrPort(a.String()); err == nil {
		ip = ap.Addr()
	}
	ip = ip.Unmap()
	bits := 32
	if ip.Is6() {
		bits = 64
	}
	p, _ := ip.Prefix(bits)
	return p
}

// gateConn is a connection of the gate: unauthenticated until admitted,
// then holding a slot until it closes.
type gateConn struct {
	net.Conn
	g   *gate
	key netip.Prefix

	mu       sync.Mutex
	admitted bool // authenticated, holding a slot
	left     bool // no longer counted as unauthenticated
	closed   bool
}

// admit marks the connection authenticated and takes a slot for it,
// waiting for one at most slotWait (or until ctx ends). A connection
// admitted already returns at once.
func (c *gateConn) admit(ctx context.Context) error {
	c.mu.Lock()
	if c.admitted {
		c.mu.Unlock()
		return nil
	}
	if !c.left {
		c.left = true
		c.g.leave(c.key) // waiting, it no longer counts against its address
	}
	c.mu.Unlock()
	t := time.NewTimer(slotWait)
	defer t.Stop()
	select {
	case c.g.slots <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	case <-c.g.done:
		return net.ErrClosed
	case <-t.C:
		c.g.m.refused.WithLabelValues(connSlots).Inc()
		return errNoSlot
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		<-c.g.slots
		return net.ErrClosed
	}
	c.admitted = true
	c.g.m.open.WithLabelValues("authenticated").Inc()
	return nil
}

func (c *gateConn) Close() error {
	err := c.Conn.Close()
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return err
	}
	c.closed = true
	if c.admitted {
		<-c.g.slots
		c.g.m.open.WithLabelValues("authenticated").Dec()
	}
	if !c.left {
		c.left = true
		c.g.leave(c.key)
	}
	return err
}

// CloseWrite passes a half close through, which net/http uses to end a
// response cleanly before it closes a connection whose body it did not
// read.
func (c *gateConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// connKey is the context key under which Serve's server keeps a request's
// connection.
type connKey struct{}

// admit admits the connection of r (see gateConn.admit); a request not
// served by Serve (a Handler mounted elsewhere) has none, and passes.
func admit(r *http.Request) error {
	c, _ := r.Context().Value(connKey{}).(*gateConn)
	if c == nil {
		return nil
	}
	return c.admit(r.Context())
}
