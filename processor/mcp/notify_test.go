package mcp_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// wire records every notification the server sends a client, from the
// first byte on, as the client reads it off the transport: a stdio
// stream or the bodies of HTTP responses (event streams).
type wire struct {
	mu       sync.Mutex
	released bool     // the client's notifications/initialized was let through
	early    []string // notifications read before it
	late     []string // notifications read after it
	arrived  chan struct{}
}

func newWire() *wire { return &wire{arrived: make(chan struct{}, 64)} }

// line looks at one line the server sent: a JSON-RPC message (stdio) or
// an event stream's "data: " line (HTTP).
func (w *wire) line(l []byte) {
	l = bytes.TrimPrefix(l, []byte("data: "))
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if json.Unmarshal(l, &m) != nil || m.Method == "" || m.ID != nil {
		return
	}
	w.mu.Lock()
	if w.released {
		w.late = append(w.late, m.Method)
	} else {
		w.early = append(w.early, m.Method)
	}
	w.mu.Unlock()
	select {
	case w.arrived <- struct{}{}:
	default:
	}
}

func (w *wire) release() {
	w.mu.Lock()
	w.released = true
	w.mu.Unlock()
}

// seen returns the notifications read so far, before and after the
// client's notifications/initialized.
func (w *wire) seen() (early, late []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.early...), append([]string(nil), w.late...)
}

// tap passes r through, showing each line to w.
type tap struct {
	r   io.ReadCloser
	w   *wire
	buf []byte
}

func (t *tap) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.buf = append(t.buf, p[:n]...)
	for {
		i := bytes.IndexByte(t.buf, '\n')
		if i < 0 {
			break
		}
		t.w.line(t.buf[:i])
		t.buf = t.buf[i+1:]
	}
	return n, err
}

func (t *tap) Close() error { return t.r.Close() }

// hold lets the client's notifications/initialized through only once
// release is closed, telling held when it has it: the test acts between a
// session's initialize and its initialized.
type hold struct {
	held, release chan struct{}
	once          sync.Once
	w             *wire
}

func (h *hold) wait(body []byte) {
	if bytes.Contains(body, []byte(`"notifications/initialized"`)) {
		h.once.Do(func() { close(h.held) })
		<-h.release
		h.w.release()
	}
}

// holdWriter is a stdio client's output through a hold.
type holdWriter struct {
	*hold
	out io.WriteCloser
}

func (h holdWriter) Write(p []byte) (int, error) {
	h.wait(p)
	return h.out.Write(p)
}

func (h holdWriter) Close() error { return h.out.Close() }

// holdTransport is an HTTP client's transport through a hold, tapping
// every response body.
type holdTransport struct{ *hold }

func (h holdTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		body, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		req.Body.Close()
		h.wait(body)
		req.Body = io.NopCloser(bytes.NewReader(body))
	}
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err == nil {
		resp.Body = &tap{r: resp.Body, w: h.w}
	}
	return resp, err
}

// quiet fails when a notification arrives within d.
func quiet(t *testing.T, w *wire, d time.Duration, when string) {
	t.Helper()
	select {
	case <-w.arrived:
		early, late := w.seen()
		t.Fatalf("%s: notifications %q before initialized, %q after", when, early, late)
	case <-time.After(d):
	}
}

// TestNotifications, over stdio and HTTP with the SDK's client: a session
// hears of no change before its notifications/initialized (the server's
// first complete snapshot lands between its initialize and its
// initialized), of none after start when nothing changed (the file
// watcher's events at start included), and of one real change once: one
// tools/list_changed (the catalog changed) and one
// resources/list_changed.
func TestNotifications(t *testing.T) {
	for _, transport := range []string{"stdio", "http"} {
		t.Run(transport, func(t *testing.T) {
			gate := make(chan struct{})
			f := newFixture(t, fixtureOpts{setup: threeSkills, gate: gate})
			w := newWire()
			h := &hold{held: make(chan struct{}), release: make(chan struct{}), w: w}
			var releaseOnce sync.Once
			release := func() { releaseOnce.Do(func() { close(h.release) }) }
			t.Cleanup(release) // a failed test lets the held request end
			var tr sdk.Transport
			switch transport {
			case "stdio":
				inR, inW := io.Pipe()
				outR, outW := io.Pipe()
				ctx, cancel := context.WithCancel(context.Background())
				served := make(chan error, 1)
				go func() { served <- f.srv.ServeStdio(ctx, inR, outW) }()
				t.Cleanup(func() {
					cancel()
					inW.Close()
					outR.Close()
					if err := <-served; err != nil {
						t.Errorf("ServeStdio: %v", err)
					}
				})
				tr = &sdk.IOTransport{Reader: &tap{r: outR, w: w}, Writer: holdWriter{hold: h, out: inW}}
			case "http":
				tr = &sdk.StreamableClientTransport{Endpoint: f.url, HTTPClient: &http.Client{Transport: holdTransport{h}}}
			}
			tools, resources := make(chan struct{}, 16), make(chan struct{}, 16)
			c := sdk.NewClient(&sdk.Implementation{Name: "test-host", Version: "1"}, &sdk.ClientOptions{
				ToolListChangedHandler:     func(context.Context, *sdk.ToolListChangedRequest) { tools <- struct{}{} },
				ResourceListChangedHandler: func(context.Context, *sdk.ResourceListChangedRequest) { resources <- struct{}{} },
			})
			type conn struct {
				cs  *sdk.ClientSession
				err error
			}
			connected := make(chan conn, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				cs, err := c.Connect(ctx, tr, &sdk.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
				connected <- conn{cs, err}
			}()
			<-h.held
			// The first complete snapshot is served between the
			// session's initialize and its initialized: the skills it
			// brings are news to nobody yet.
			close(gate)
			<-f.srv.Complete()
			quiet(t, w, 500*time.Millisecond, "first snapshot served before initialized")
			release()
			cn := <-connected
			if cn.err != nil {
				t.Fatal(cn.err)
			}
			cs := cn.cs
			t.Cleanup(func() { cs.Close() })
			tl, err := cs.ListTools(context.Background(), nil)
			if err != nil || len(tl.Tools) != 1 || !strings.Contains(tl.Tools[0].Description, "- `beta`: The beta skill.") {
				t.Fatalf("tools/list: %+v %v", tl, err)
			}
			if _, err := cs.ListResources(context.Background(), nil); err != nil {
				t.Fatal(err)
			}
			quiet(t, w, 2*time.Second, "nothing changed since start")

			// A real change: beta's SKILL.md replaced at once, as
			// editors save.
			tmp := filepath.Join(t.TempDir(), "SKILL.md")
			if err := os.WriteFile(tmp, []byte(skillMD("beta", "The beta skill, revised.", "New body.")), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(tmp, filepath.Join(f.root, "beta", "SKILL.md")); err != nil {
				t.Fatal(err)
			}
			wait(t, tools, "notifications/tools/list_changed")
			wait(t, resources, "notifications/resources/list_changed")
			select {
			case <-tools:
				t.Error("a second tools/list_changed for one change")
			case <-resources:
				t.Error("a second resources/list_changed for one change")
			case <-time.After(time.Second):
			}
			early, late := w.seen()
			if len(early) != 0 {
				t.Errorf("notifications before initialized: %q", early)
			}
			if len(late) != 2 || !strings.Contains(strings.Join(late, " "), "tools/list_changed") ||
				!strings.Contains(strings.Join(late, " "), "resources/list_changed") {
				t.Errorf("notifications after initialized: %q, want one of each list", late)
			}
			tl, err = cs.ListTools(context.Background(), nil)
			if err != nil || !strings.Contains(tl.Tools[0].Description, "- `beta`: The beta skill, revised.") {
				t.Errorf("tools/list after the change: %+v %v", tl, err)
			}
		})
	}
}
