package mcp_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"strings"
	"testing"

	mcpserver "github.com/skillstream/skillstream/processor/mcp"
)

// TestOrigin: a browser origin other than loopback or a configured one is
// refused with 403 before the protocol; loopback and configured origins,
// and requests without Origin, are served.
func TestOrigin(t *testing.T) {
	f := newFixture(t, fixtureOpts{http: mcpserver.HTTPConfig{AllowedOrigins: []string{"https://app.example.com"}}})
	cases := []struct {
		origin string
		want   int
	}{
		{"", http.StatusOK},
		{"http://localhost:3000", http.StatusOK},
		{"http://127.0.0.1", http.StatusOK},
		{"https://[::1]:8443", http.StatusOK},
		{"https://app.example.com", http.StatusOK},
		{"http://evil.example.com", http.StatusForbidden},
		{"https://app.example.com.evil.net", http.StatusForbidden},
		{"http://localhost.evil.net", http.StatusForbidden},
		{"null", http.StatusForbidden},
		{"file://", http.StatusForbidden},
		{"http://127.0.0.1@evil.example.com", http.StatusForbidden},
	}
	for _, c := range cases {
		h := http.Header{}
		if c.origin != "" {
			h.Set("Origin", c.origin)
		}
		_, _, status := rawRPC(t, f.url, "skills/list", map[string]any{}, h)
		if status != c.want {
			t.Errorf("Origin %q: HTTP %d, want %d", c.origin, status, c.want)
		}
	}
	// The SDK refuses a foreign Host on a loopback listener (DNS rebinding).
	req, _ := http.NewRequest(http.MethodPost, f.url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"skills/list"}`))
	req.Host = "evil.example.com"
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("foreign Host: HTTP %d, want 403", resp.StatusCode)
	}
	if n := metricT(t, f, "skillstream_mcp_http_refused_total", "protocol"); n != 1 {
		t.Errorf("refused_total{protocol} = %v, want 1", n)
	}
	if n := metricT(t, f, "skillstream_mcp_http_refused_total", "origin"); n != 6 {
		t.Errorf("refused_total{origin} = %v, want 6", n)
	}
}

// TestToken: with a token, every request needs it (401 otherwise).
func TestToken(t *testing.T) {
	f := newFixture(t, fixtureOpts{http: mcpserver.HTTPConfig{Token: "s3cret-token"}})
	for _, c := range []struct {
		auth string
		want int
	}{
		{"", http.StatusUnauthorized},
		{"Bearer wrong", http.StatusUnauthorized},
		{"Bearer s3cret-toke", http.StatusUnauthorized},
		{"Bearer s3cret-token-", http.StatusUnauthorized},
		{"Basic s3cret-token", http.StatusUnauthorized},
		{"s3cret-token", http.StatusUnauthorized},
		{"Bearer s3cret-token", http.StatusOK},
	} {
		h := http.Header{}
		if c.auth != "" {
			h.Set("Authorization", c.auth)
		}
		_, _, status := rawRPC(t, f.url, "skills/list", map[string]any{}, h)
		if status != c.want {
			t.Errorf("Authorization %q: HTTP %d, want %d", c.auth, status, c.want)
		}
	}
}

// TestBodyBound: a request body over the bound is refused with 413.
func TestBodyBound(t *testing.T) {
	f := newFixture(t, fixtureOpts{http: mcpserver.HTTPConfig{MaxBodyBytes: 1024}})
	_, _, status := rawRPC(t, f.url, "skills/get", map[string]any{"uri": strings.Repeat("x", 4096)}, nil)
	if status != http.StatusRequestEntityTooLarge {
		t.Errorf("large body: HTTP %d, want 413", status)
	}
}

// publicListener reports a non-loopback address for a loopback listener,
// so the refusal can be tested without binding a public interface.
type publicListener struct{ net.Listener }

func (publicListener) Addr() net.Addr { return &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 8080} }

// TestServeNeedsTokenOffLoopback: Serve refuses a non-loopback address
// without a token, and says why.
func TestServeNeedsTokenOffLoopback(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	err = f.srv.Serve(context.Background(), publicListener{ln}, mcpserver.HTTPConfig{})
	if !errors.Is(err, mcpserver.ErrTokenRequired) || !strings.Contains(err.Error(), "192.0.2.1:8080") {
		t.Errorf("Serve on a public address without token: %v", err)
	}
}

func TestLoopback(t *testing.T) {
	for host, want := range map[string]bool{
		"127.0.0.1:80": true, "localhost": true, "[::1]:9": true, "::1": true, "127.1.2.3": true,
		"0.0.0.0:80": false, "": false, "example.com": false, "[::]:1": false, "localhost.example.com": false,
	} {
		if got := mcpserver.Loopback(host); got != want {
			t.Errorf("Loopback(%q) = %v, want %v", host, got, want)
		}
	}
}

// TestSessionBound: an initialize beyond MaxSessions open sessions is
// refused with 503; requests of the stateless revision still pass.
func TestSessionBound(t *testing.T) {
	f := newFixture(t, fixtureOpts{http: mcpserver.HTTPConfig{MaxSessions: 1}})
	f.connect(t, "2025-11-25")
	init := json.RawMessage(`{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}`)
	if _, _, status := rawRPC(t, f.url, "initialize", init, nil); status != http.StatusServiceUnavailable {
		t.Errorf("second session: HTTP %d, want 503", status)
	}
	if _, rerr := f.rpc(t, "skills/list", nil); rerr != nil {
		t.Errorf("stateless request: %+v", rerr)
	}
}
