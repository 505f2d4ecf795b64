package mcp_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skillstream/skillstream/natstest"
	mcpserver "github.com/skillstream/skillstream/processor/mcp"
)

// hostileAddr is the loopback address hostile clients dial from, so that
// they are another remote address than the honest client's 127.0.0.1.
var hostileAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}

// flood keeps n connections from hostileAddr on addr, each sending
// `GET /x` with keep-alive and no token, reading the answer, and holding
// the connection open as long as the server does (dialling again once
// the server closed it), until the test ends. answered counts the
// answers and refusals received.
type flood struct {
	answered atomic.Int64
	statuses sync.Map // HTTP status -> *atomic.Int64
}

// needHostileAddr skips t where hostileAddr cannot be dialled from (a
// system whose loopback interface holds 127.0.0.1 alone).
func needHostileAddr(t *testing.T, addr string) {
	t.Helper()
	// Dialled on a listener of its own, not addr's: a probe connection the
	// server under test accepts late would count against the address.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := (&net.Dialer{LocalAddr: hostileAddr}).Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Skipf("cannot dial from %v, the hostile clients' address: %v", hostileAddr.IP, err)
	}
	c.Close()
}

func startFlood(t *testing.T, addr string, n int) *flood {
	t.Helper()
	needHostileAddr(t, addr)
	f := &flood{}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	d := net.Dialer{LocalAddr: hostileAddr}
	for range n {
		wg.Go(func() {
			for ctx.Err() == nil {
				conn, err := d.DialContext(ctx, "tcp", addr)
				if err != nil {
					return
				}
				stop := context.AfterFunc(ctx, func() { conn.Close() })
				f.hold(conn, addr)
				stop()
				conn.Close()
			}
		})
	}
	return f
}

// hold sends requests on conn, one at a time, as long as the server keeps
// it open (a keep-alive client that asks again now and then).
func (f *flood) hold(conn net.Conn, addr string) {
	br := bufio.NewReader(conn)
	for {
		if _, err := io.WriteString(conn, "GET /x HTTP/1.1\r\nHost: "+addr+"\r\n\r\n"); err != nil {
			f.answered.Add(1) // closed before its request
			return
		}
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			f.answered.Add(1) // closed unanswered
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		v, _ := f.statuses.LoadOrStore(resp.StatusCode, &atomic.Int64{})
		v.(*atomic.Int64).Add(1)
		f.answered.Add(1)
		if resp.Close {
			return
		}
		// Keep the connection, idle, as a pooled client does; the server
		// keeps it until its idle timeout.
		if _, err := br.Peek(1); err != nil {
			return
		}
	}
}

func (f *flood) status(code int) int64 {
	v, ok := f.statuses.Load(code)
	if !ok {
		return 0
	}
	return v.(*atomic.Int64).Load()
}

// TestUnauthenticatedFloodLeavesSlots: more unauthenticated keep-alive
// connections on a path other than /mcp than the server has connection
// slots leave an honest client's call served. Each is refused (401, not
// 404: every path is authenticated before routing) and closed, and none
// takes a slot. Before, the front door checked the token on /mcp only:
// `GET /x` got 404 and kept its connection, and MaxConns of them held
// every slot until their idle timeout.
func TestUnauthenticatedFloodLeavesSlots(t *testing.T) {
	const maxConns, hostile = 4, 40
	f := newFixture(t, fixtureOpts{})
	addr := serveReal(t, f, mcpserver.HTTPConfig{Token: testToken, MaxConns: maxConns})
	fl := startFlood(t, addr, hostile)
	natstest.Eventually(t, 30*time.Second, "the hostile clients answered", func() error {
		if n := fl.answered.Load(); n < maxConns {
			return fmt.Errorf("%d answered", n)
		}
		return nil
	})
	start := time.Now()
	status, err := authorizedList(addr, 10*time.Second)
	t.Logf("honest skills/list beside %d hostile keep-alive connections (%d slots): HTTP %d, %v, in %v; hostile answers: %d 401, %d 404",
		hostile, maxConns, status, err, time.Since(start).Round(time.Millisecond), fl.status(http.StatusUnauthorized), fl.status(http.StatusNotFound))
	if err != nil || status != http.StatusOK {
		t.Fatalf("honest call beside %d unauthenticated keep-alive connections: HTTP %d, %v", hostile, status, err)
	}
	if n := fl.status(http.StatusNotFound); n != 0 {
		t.Errorf("%d unauthenticated requests for /x were answered 404: the path was routed before the token was checked", n)
	}
}

// rawGet sends one request for path with auth (an Authorization header
// line, or none) on a fresh connection and returns the answer, and
// whether the server closed the connection after it.
func rawGet(t *testing.T, addr, path, auth string) (*http.Response, bool) {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "GET "+path+" HTTP/1.1\r\nHost: "+addr+"\r\n"+auth+"\r\n"); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	conn.SetReadDeadline(time.Now().Add(10 * time.Second))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if !resp.Close {
		return resp, false
	}
	// The server says it closes: it must, well before its idle timeout.
	_, err = br.ReadByte()
	return resp, err != nil
}

// TestEveryPathAuthenticated: a request for any path without the token
// (or with a wrong one, or from a foreign origin) is refused before
// routing, with Connection: close, and its connection closed; with the
// token, an unknown path is 404 on a connection kept alive.
func TestEveryPathAuthenticated(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	addr := serveReal(t, f, mcpserver.HTTPConfig{Token: testToken})
	auth := "Authorization: Bearer " + testToken + "\r\n"
	for _, c := range []struct {
		path, header string
		want         int
		closed       bool
	}{
		{"/x", "", http.StatusUnauthorized, true},
		{"/", "Authorization: Bearer nope\r\n", http.StatusUnauthorized, true},
		{"/mcp/../metrics", "", http.StatusUnauthorized, true},
		{"/x", auth + "Origin: https://evil.example.com\r\n", http.StatusForbidden, true},
		{"/x", auth, http.StatusNotFound, false},
	} {
		resp, closed := rawGet(t, addr, c.path, c.header)
		if resp.StatusCode != c.want || closed != c.closed {
			t.Errorf("GET %s with %q: HTTP %d, closed %v; want %d, closed %v", c.path, c.header, resp.StatusCode, closed, c.want, c.closed)
		}
	}
}

// TestUnauthenticatedPerAddress: the connections of one address that no
// request has authenticated are bounded: one more is closed as soon as it
// is accepted (and counted), while another address's are accepted and an
// honest call is served.
func TestUnauthenticatedPerAddress(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	reg := prometheus.NewRegistry()
	addr := serveReal(t, f, mcpserver.HTTPConfig{Token: testToken, MaxConns: 4, MaxUnauthenticatedPerAddr: 2, Registerer: reg,
		HeaderTimeout: time.Minute}) // the silent connections stay until the test ends
	needHostileAddr(t, addr)
	natstest.Eventually(t, 10*time.Second, "the probe's connection gone", func() error {
		if open := gathered(t, reg, "skillstream_mcp_connections", "unauthenticated"); open != 0 {
			return fmt.Errorf("open{unauthenticated} %v", open)
		}
		return nil
	})
	d := net.Dialer{LocalAddr: hostileAddr}
	var silent []net.Conn
	for i := range 3 { // silent: they send nothing
		c, err := d.Dial("tcp", addr)
		if err != nil {
			if i == 2 {
				break // reset already: refused before the dial returned
			}
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		silent = append(silent, c)
	}
	gauge := func(reg *prometheus.Registry, name, label string) float64 { return gathered(t, reg, name, label) }
	natstest.Eventually(t, 10*time.Second, "the third silent connection refused", func() error {
		refused, open := gauge(reg, "skillstream_mcp_connections_refused_total", "address"), gauge(reg, "skillstream_mcp_connections", "unauthenticated")
		if refused != 1 || open != 2 {
			return fmt.Errorf("refused{address} %v, open{unauthenticated} %v; want 1 and 2", refused, open)
		}
		return nil
	})
	// Closed by the server, unread: the client sees its end.
	if len(silent) == 3 {
		silent[2].SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := silent[2].Read(make([]byte, 1)); err == nil {
			t.Error("the refused connection was answered")
		}
	}
	if status, err := authorizedList(addr, 10*time.Second); err != nil || status != http.StatusOK {
		t.Fatalf("honest call from another address: HTTP %d, %v", status, err)
	}
	if n := gauge(reg, "skillstream_mcp_connections", "authenticated"); n > 1 {
		t.Errorf("authenticated connections %v, want at most 1", n)
	}
	// One closed, the address may open another.
	silent[0].Close()
	natstest.Eventually(t, 10*time.Second, "a place of the address freed", func() error {
		if open := gauge(reg, "skillstream_mcp_connections", "unauthenticated"); open != 1 {
			return fmt.Errorf("open{unauthenticated} %v, want 1", open)
		}
		return nil
	})
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	natstest.Eventually(t, 10*time.Second, "the new connection accepted", func() error {
		if open := gauge(reg, "skillstream_mcp_connections", "unauthenticated"); open != 2 {
			return fmt.Errorf("open{unauthenticated} %v, want 2", open)
		}
		return nil
	})
	if n := gauge(reg, "skillstream_mcp_connections_refused_total", "address"); n != 1 {
		t.Errorf("refused{address} %v, want still 1", n)
	}
}

// gathered is the value of the series of name with label value label in
// reg: a counter's or a gauge's; 0 when there is none.
func gathered(t *testing.T, reg *prometheus.Registry, name, label string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if len(m.GetLabel()) != 1 || m.GetLabel()[0].GetValue() != label {
				continue
			}
			if g := m.GetGauge(); g != nil {
				return g.GetValue()
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}
