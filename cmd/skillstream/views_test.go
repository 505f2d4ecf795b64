package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillstream/skillstream/events"
)

// Two serve members whose --skills-dir differ: the session keeps its first
// catalog (no alternation), and the member that met the other's catalog
// says so in its /readyz body (still ready, and without the session's id)
// and its view_divergence gauge.
func TestServeViewDivergence(t *testing.T) {
	rootA, rootB := t.TempDir(), t.TempDir()
	writeFile(t, rootA, "a-skill/SKILL.md", skillMD("A.", "name: a-skill", "description: Everywhere."))
	writeFile(t, rootB, "a-skill/SKILL.md", skillMD("A.", "name: a-skill", "description: Everywhere."))
	writeFile(t, rootB, "b-skill/SKILL.md", skillMD("B.", "name: b-skill", "description: Only on B."))
	a := startServe(t, t.TempDir(), rootA, "--instance", "member-a", "--workers", "2")

	mport := freePort(t)
	b := &served{t: t, url: a.url, metrics: fmt.Sprintf("http://127.0.0.1:%d", mport), stderr: &syncBuffer{}, done: make(chan int, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	b.cancel = cancel
	args := []string{"serve", "--nats-url", a.url, "--metrics-listen", "127.0.0.1:" + strconv.Itoa(mport),
		"--no-bundled", "--user-skills-dir=", "--skills-dir", rootB, "--instance", "member-b", "--workers", "2", "--log-format", "json"}
	go func() { b.done <- Main(ctx, args, io.Discard, b.stderr) }()
	t.Cleanup(func() { b.stop() })
	eventually(t, 30*time.Second, "second member ready", func() error {
		err := b.ready()
		if err != nil {
			select {
			case code := <-b.done:
				b.done <- code
				return fmt.Errorf("second member exited %d:\n%s", code, b.stderr)
			default:
			}
		}
		return err
	})

	nc, err := nats.Connect(a.url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	const session = "diverging-session-7f3a9c21d4e8b605"
	w := newTestWorker(t, nc, session)
	reqCtx, reqCancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer reqCancel()
	appended, diverged := 0, 0
	for step := 1; step <= 40 && diverged == 0; step++ {
		d, err := w.PreStep(reqCtx, fmt.Sprint(step), "")
		if err != nil {
			t.Fatal(err)
		}
		switch d.Outcome {
		case events.OutcomeAppended:
			appended++
		case events.OutcomeDiverged:
			diverged++
		}
	}
	if appended != 1 || diverged != 1 {
		t.Fatalf("%d catalogs appended, %d steps diverged: want the first catalog only, then a divergence", appended, diverged)
	}
	// /readyz is worked out at most once a second: look until it shows.
	var reporter *served
	eventually(t, 10*time.Second, "a member shows the divergence in /readyz", func() error {
		for _, s := range []*served{a, b} {
			code, body, err := s.get("/readyz")
			if err != nil || code != 200 || !strings.HasPrefix(body, "ready\n") {
				t.Fatalf("/readyz: %d %q %v", code, body, err)
			}
			if strings.Contains(body, session) {
				t.Fatalf("/readyz shows the session id, which lets whoever reads it write to the session: %q", body)
			}
			if strings.Contains(body, "view divergence") {
				reporter = s
				if !strings.Contains(body, "member-a") || !strings.Contains(body, "member-b") {
					t.Fatalf("/readyz body: %q", body)
				}
				return nil
			}
		}
		return errors.New("no member shows it yet")
	})
	_, metrics, err := reporter.get("/metrics")
	if err != nil || !strings.Contains(metrics, "\nskillstream_view_divergence 1\n") {
		t.Fatalf("metrics: %v\n%s", err, metrics)
	}
	if !strings.Contains(reporter.stderr.String(), `"level":"ERROR","msg":"members see different skills`) {
		t.Fatalf("no divergence error in the logs:\n%s", reporter.stderr)
	}
}
