package mcp_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillstream/skillstream/catalog"
	mcpserver "github.com/skillstream/skillstream/processor/mcp"
)

// threeSkills writes the skills the readiness tests serve.
func threeSkills(t testing.TB, root string) {
	for _, n := range []string{"alpha", "beta", "gamma"} {
		writeSkill(t, root, n, map[string]string{"SKILL.md": skillMD(n, "The "+n+" skill.", "Body of "+n+"."), "refs/a.md": "a"})
	}
}

// signal returns a function that sends on ch without blocking, and ch.
func signal() (func(), chan struct{}) {
	ch := make(chan struct{}, 1)
	return func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	}, ch
}

// TestFirstListingWaitsForSnapshot: a host's first tools/list,
// resources/list or skills/list arriving while the server still reads its
// skills is held until the registry's first complete snapshot is served,
// and then answered with every skill: a host keeps the first tool
// description it gets.
func TestFirstListingWaitsForSnapshot(t *testing.T) {
	for _, method := range []string{"tools/list", "resources/list", "skills/list"} {
		t.Run(method, func(t *testing.T) {
			gate := make(chan struct{})
			onWait, waiting := signal()
			f := newFixture(t, fixtureOpts{setup: threeSkills, gate: gate, waiting: onWait})
			cs, _, _ := f.connect(t, "2025-11-25")
			type answer struct {
				text string
				err  error
			}
			answered := make(chan answer, 1)
			go func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				var a answer
				switch method {
				case "tools/list":
					res, err := cs.ListTools(ctx, nil)
					if err == nil && len(res.Tools) == 1 {
						a.text = res.Tools[0].Description
					}
					a.err = err
				case "resources/list":
					res, err := cs.ListResources(ctx, nil)
					if err == nil {
						for _, r := range res.Resources {
							a.text += r.URI + "\n"
						}
					}
					a.err = err
				default: // a stateless request, as the extension's hosts send
					a.text, a.err = post(ctx, f.url, `{"jsonrpc":"2.0","id":1,"method":"`+method+`","params":{}}`)
				}
				answered <- a
			}()
			select {
			case <-waiting:
			case a := <-answered:
				t.Fatalf("%s answered before the server's first complete snapshot: %q (%v)", method, a.text, a.err)
			}
			close(gate)
			a := <-answered
			if a.err != nil {
				t.Fatal(a.err)
			}
			for _, n := range []string{"alpha", "beta", "gamma"} {
				want := "skill://" + n + "/SKILL.md"
				if method == "tools/list" {
					want = "- `" + n + "`: The " + n + " skill."
				}
				if !strings.Contains(a.text, want) {
					t.Errorf("the first %s lacks %s:\n%s", method, n, a.text)
				}
			}
		})
	}
}

// TestFirstListingWaitIsBounded: when the first complete snapshot does
// not come in time, the listing is answered with what has resolved, the
// server says so once at warn, and later listings do not wait.
func TestFirstListingWaitIsBounded(t *testing.T) {
	gate := make(chan struct{})
	t.Cleanup(func() { close(gate) })
	onWait, waiting := signal()
	var logs syncBuf
	f := newFixture(t, fixtureOpts{setup: threeSkills, gate: gate, waiting: onWait,
		config: mcpserver.Config{ReadyTimeout: 200 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))}})
	cs, _, _ := f.connect(t, "2025-11-25")
	tl, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-waiting:
	default:
		t.Fatal("tools/list did not wait for the first complete snapshot")
	}
	if len(tl.Tools) != 1 || tl.Tools[0].Description != catalog.ToolDescription {
		t.Errorf("tools/list past the wait: %+v, want the tool with nothing resolved", tl.Tools)
	}
	if _, err := cs.ListResources(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-waiting:
		t.Error("a second listing waited again")
	default:
	}
	if n := strings.Count(logs.String(), "answering MCP hosts before the registry's first complete snapshot"); n != 1 {
		t.Errorf("warned %d times, want once:\n%s", n, logs.String())
	}
}

// syncBuf is a bytes.Buffer safe for a logger and a test at once.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (w *syncBuf) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuf) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// post sends one JSON-RPC message statelessly (2025-11-25, no session)
// and returns the response body; unlike rpc it may run off the test's
// goroutine.
func post(ctx context.Context, url, msg string) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(msg))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("HTTP %d: %s", resp.StatusCode, b)
	}
	return string(b), err
}
