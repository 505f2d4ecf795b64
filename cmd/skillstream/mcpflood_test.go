package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	mcpserver "github.com/skillstream/skillstream/processor/mcp"
)

// TestTenantMCPUnauthenticatedFlood: serve --mcp-listen with the shipped
// tenants files, beside more unauthenticated keep-alive connections on
// `GET /x` than it has connection slots (2,000), still answers each
// tenant's MCP host. Before, the token was checked on /mcp only: each
// `GET /x` got 404 and kept its connection, the 2,000 held every slot,
// and the hosts of every tenant timed out.
func TestTenantMCPUnauthenticatedFlood(t *testing.T) {
	natsURL, pw := tenantServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	pushAs(t, ctx, natsURL, "acme-admin", pw["acme-admin"], "SKILLS", skillDir(t, "acme-deploy", "Deploy Acme's services."))
	addr := "127.0.0.1:" + strconv.Itoa(freePort(t))
	startTenantServe(t, natsURL, "--mcp-listen", addr)
	endpoint := "http://" + addr + "/mcp"
	tokens := map[string]string{"acme": os.Getenv("ACME_MCP_TOKEN"), "globex": os.Getenv("GLOBEX_MCP_TOKEN")}
	eventually(t, 30*time.Second, "acme's host offered its skill", func() error {
		got, _, err := mcpSkills(ctx, endpoint, tokens["acme"])
		if err != nil {
			return err
		}
		if len(got) == 0 || got[0] != "acme-deploy" {
			return fmt.Errorf("offered %v", got)
		}
		return nil
	})

	// The flood comes from another loopback address than the hosts.
	const hostile = mcpserver.DefaultMaxConns + 100
	var (
		settled, notFound, unauthorized, refused atomic.Int64
		wg                                       sync.WaitGroup
		conns                                    = make(chan net.Conn, hostile)
	)
	t.Cleanup(func() {
		close(conns)
		for c := range conns {
			c.Close()
		}
	})
	d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 2)}, Timeout: 10 * time.Second}
	if probe, err := d.DialContext(ctx, "tcp", addr); err != nil {
		t.Skipf("cannot dial from 127.0.0.2, the flood's address: %v", err)
	} else {
		probe.Close()
	}
	sem := make(chan struct{}, 64)
	for range hostile {
		sem <- struct{}{}
		conn, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			<-sem
			settled.Add(1) // refused before the dial returned
			refused.Add(1)
			continue
		}
		conns <- conn
		wg.Go(func() {
			defer func() { <-sem }()
			br := bufio.NewReader(conn)
			if _, err := io.WriteString(conn, "GET /x HTTP/1.1\r\nHost: "+addr+"\r\n\r\n"); err != nil {
				settled.Add(1)
				refused.Add(1)
				return
			}
			conn.SetReadDeadline(time.Now().Add(2 * time.Second)) // past the cap: waits to be accepted
			resp, err := http.ReadResponse(br, nil)
			settled.Add(1)
			if err != nil {
				refused.Add(1) // closed unanswered, or still waiting
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			switch resp.StatusCode {
			case http.StatusNotFound:
				notFound.Add(1) // kept alive: it holds a slot
			case http.StatusUnauthorized:
				unauthorized.Add(1)
			}
		})
	}
	wg.Wait()
	t.Logf("%d hostile connections: %d answered 404 and kept, %d answered 401 and closed, %d closed or unanswered",
		settled.Load(), notFound.Load(), unauthorized.Load(), refused.Load())
	for _, tenant := range []string{"acme", "globex"} {
		hctx, hcancel := context.WithTimeout(ctx, 15*time.Second)
		start := time.Now()
		_, _, err := mcpSkills(hctx, endpoint, tokens[tenant])
		hcancel()
		t.Logf("%s's host (initialize, resources/list, tools/list) beside %d hostile connections: %v in %v", tenant, hostile, err, time.Since(start).Round(time.Millisecond))
		if err != nil {
			t.Errorf("%s's host beside %d unauthenticated keep-alive connections: %v", tenant, hostile, err)
		}
	}
	if n := notFound.Load(); n != 0 {
		t.Errorf("%d unauthenticated requests for /x were answered 404 and kept alive", n)
	}
}
