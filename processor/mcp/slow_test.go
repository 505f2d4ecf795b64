package mcp_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skillstream/skillstream/natstest"
	mcpserver "github.com/skillstream/skillstream/processor/mcp"
)

const testToken = "s3cret-token"

// serveReal runs Serve (the server serve runs, with its timeouts and
// connection cap) on a loopback listener and returns its address.
func serveReal(t *testing.T, f *fixture, cfg mcpserver.HTTPConfig) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.srv.Serve(ctx, ln, cfg) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return ln.Addr().String()
}

// slowClient sends a request's headers at once, then its body a byte a
// second (the whole body would take Content-Length seconds), until the
// server closes the connection or the test ends.
type slowClient struct {
	conn net.Conn
	br   *bufio.Reader
}

func dialSlow(t *testing.T, addr string, header string) *slowClient {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	req := "POST /mcp HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\n" +
		"Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n" + header + "\r\n"
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	t.Cleanup(func() { close(stop); conn.Close(); <-done })
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			if _, err := conn.Write([]byte("{")); err != nil {
				return
			}
			select {
			case <-tick.C:
			case <-stop:
				return
			}
		}
	}()
	return &slowClient{conn: conn, br: bufio.NewReader(conn)}
}

// answer reads the response, then waits for the server to close the
// connection: it fails when either takes until the bound (well before
// the server's 30 s read timeout, which used to hold such connections).
func (c *slowClient) answer(t *testing.T, bound time.Duration) *http.Response {
	t.Helper()
	c.conn.SetReadDeadline(time.Now().Add(bound))
	resp, err := http.ReadResponse(c.br, nil)
	if err != nil {
		t.Fatalf("no answer: %v", err)
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	_, err = c.br.ReadByte()
	if err == nil {
		t.Fatal("the server sent more after its answer")
	}
	if errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("connection still open %v after the headers were sent", bound)
	}
	return resp // io.EOF, or a reset of the writes that were still coming
}

// TestRefusedSlowBodyIsCutOff: a request refused by the front door (no
// token, a foreign origin, a body declared too large) is answered and its
// connection closed at once, however slowly its body arrives: nothing
// waits for the body.
func TestRefusedSlowBodyIsCutOff(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	addr := serveReal(t, f, mcpserver.HTTPConfig{Token: testToken, MaxBodyBytes: 500})
	auth := "Authorization: Bearer " + testToken + "\r\n"
	for _, c := range []struct {
		name, header string
		want         int
	}{
		{"no token", "", http.StatusUnauthorized},
		{"wrong token", "Authorization: Bearer nope\r\n", http.StatusUnauthorized},
		{"foreign origin", auth + "Origin: https://evil.example.com\r\n", http.StatusForbidden},
		{"body declared too large", auth, http.StatusRequestEntityTooLarge},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp := dialSlow(t, addr, c.header).answer(t, 10*time.Second)
			if resp.StatusCode != c.want || !resp.Close {
				t.Errorf("HTTP %d, Connection: close %v; want %d and close", resp.StatusCode, resp.Close, c.want)
			}
		})
	}
}

// TestAuthorizedSlowBodyTimesOut: an accepted request's body has its own
// deadline, shorter than the server's read timeout.
func TestAuthorizedSlowBodyTimesOut(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	addr := serveReal(t, f, mcpserver.HTTPConfig{Token: testToken, BodyTimeout: time.Second})
	resp := dialSlow(t, addr, "Authorization: Bearer "+testToken+"\r\n").answer(t, 10*time.Second)
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("HTTP %d, want 400", resp.StatusCode)
	}
}

// authorizedList sends one authorized skills/list and returns its status;
// a client that gets no answer within the bound fails.
func authorizedList(addr string, bound time.Duration) (int, error) {
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+mcpserver.Path,
		strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"skills/list"}`))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	req.Header.Set("Authorization", "Bearer "+testToken)
	client := &http.Client{Timeout: bound, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// TestSlowUnauthorizedDoNotStarve: more slow unauthorized clients than
// the connection cap leave an authorized request served, since each is
// refused and closed as soon as its headers are in.
func TestSlowUnauthorizedDoNotStarve(t *testing.T) {
	const maxConns = 3
	f := newFixture(t, fixtureOpts{})
	addr := serveReal(t, f, mcpserver.HTTPConfig{Token: testToken, MaxConns: maxConns})
	for range maxConns + 1 {
		dialSlow(t, addr, "")
	}
	status, err := authorizedList(addr, 15*time.Second)
	if err != nil || status != http.StatusOK {
		t.Fatalf("authorized request behind %d slow unauthorized ones: HTTP %d, %v", maxConns+1, status, err)
	}
}

// TestConnectionCap: Serve keeps at most MaxConns connections open; one
// more is accepted when another closes.
func TestConnectionCap(t *testing.T) {
	const maxConns = 2
	f := newFixture(t, fixtureOpts{})
	addr := serveReal(t, f, mcpserver.HTTPConfig{Token: testToken, MaxConns: maxConns, BodyTimeout: time.Minute})
	var holders []*slowClient
	for range maxConns {
		holders = append(holders, dialSlow(t, addr, "Authorization: Bearer "+testToken+"\r\n"))
	}
	if _, err := authorizedList(addr, 300*time.Millisecond); err == nil {
		t.Fatalf("a request was served beside %d open connections, over the cap", maxConns)
	}
	holders[0].conn.Close()
	status, err := authorizedList(addr, 15*time.Second)
	if err != nil || status != http.StatusOK {
		t.Fatalf("once a connection closed: HTTP %d, %v", status, err)
	}
}

// TestStalledStreamIsClosed: an event stream whose client stops reading
// is closed once a write has waited WriteTimeout, and its connection with
// it, instead of holding both (and the goroutine writing) for ever. The
// stream is the answer to a resources/read of a 15 MiB file, far more
// than the sockets buffer; with a connection cap of one, another request
// is served only once the stalled connection is closed.
func TestStalledStreamIsClosed(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	writeSkill(t, f.root, "big", map[string]string{"SKILL.md": skillMD("big", "A large file.", "B."),
		"blob.bin": strings.Repeat("\xff", 15<<20)})
	f.waitFor(t, "big")
	addr := serveReal(t, f, mcpserver.HTTPConfig{Token: testToken, MaxConns: 1, WriteTimeout: time.Second})
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if err := conn.(*net.TCPConn).SetReadBuffer(4096); err != nil {
		t.Fatal(err)
	}
	body := `{"jsonrpc":"2.0","id":1,"method":"resources/read","params":{"uri":"skill://big/blob.bin"}}`
	req := "POST /mcp HTTP/1.1\r\nHost: " + addr + "\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\n" +
		"MCP-Protocol-Version: 2025-11-25\r\nAuthorization: Bearer " + testToken + "\r\nContent-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	// The client never reads its answer.
	natstest.Eventually(t, 60*time.Second, "a request served beside the stalled stream", func() error {
		status, err := authorizedList(addr, 5*time.Second)
		if err != nil {
			return err
		}
		if status != http.StatusOK {
			return fmt.Errorf("HTTP %d", status)
		}
		return nil
	})
}
