package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
)

// lineWatch is a log writer that closes seen at the first write holding
// want, from the logging goroutine itself: whoever waits on seen acts
// before serve has done anything more.
type lineWatch struct {
	syncBuffer
	want []byte
	once sync.Once
	seen chan struct{}
}

func (w *lineWatch) Write(p []byte) (int, error) {
	n, err := w.syncBuffer.Write(p)
	if bytes.Contains(p, w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return n, err
}

// A worker that connects the moment serve logs that it serves, over TCP,
// and at once asks for the tool definition and takes a first step, is
// answered: the tool definition never gets "no responders", the pre-step
// gets its catalog. Each round is a fresh serve, with a fresh data folder,
// an embedded server on a free port and the skill store.
func TestServeReadyMeansReady(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "first/SKILL.md", skillMD("Body.", "name: first", "description: The first skill."))
	const starts = 40
	noResponders := 0
	for i := range starts {
		port, mport := freePort(t), freePort(t)
		args := []string{"serve",
			"--listen", "127.0.0.1:" + strconv.Itoa(port), "--data", t.TempDir(),
			"--metrics-listen", "127.0.0.1:" + strconv.Itoa(mport),
			"--no-bundled", "--user-skills-dir=", "--skills-dir", root, "--log-format", "json",
		}
		log := &lineWatch{want: []byte(`"msg":"skillstream serving"`), seen: make(chan struct{})}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan int, 1)
		go func() { done <- Main(ctx, args, io.Discard, log) }()
		stop := func() int {
			cancel()
			select {
			case code := <-done:
				return code
			case <-time.After(60 * time.Second):
				t.Fatalf("start %d: serve did not stop within 60s:\n%s", i, log)
				return -1
			}
		}
		select {
		case <-log.seen:
		case code := <-done:
			t.Fatalf("start %d: serve exited with %d before it served:\n%s", i, code, log)
		case <-time.After(30 * time.Second):
			stop()
			t.Fatalf("start %d: serve did not log that it serves within 30s:\n%s", i, log)
		}

		s := &served{metrics: "http://127.0.0.1:" + strconv.Itoa(mport)}
		if err := s.ready(); err != nil {
			t.Errorf("start %d: right after the serving line: %v", i, err)
		}
		nc, err := nats.Connect("nats://127.0.0.1:"+strconv.Itoa(port), nats.NoReconnect())
		if err != nil {
			stop()
			t.Fatalf("start %d: connect: %v", i, err)
		}
		c, err := client.New(nc)
		if err != nil {
			nc.Close()
			stop()
			t.Fatal(err)
		}
		rctx, rcancel := context.WithTimeout(context.Background(), 20*time.Second)
		def, err := c.ToolDefinition(rctx)
		switch {
		case errors.Is(err, nats.ErrNoResponders):
			noResponders++
			t.Errorf("start %d: tool definition at once after the serving line: %v", i, err)
		case err != nil:
			t.Errorf("start %d: tool definition: %v", i, err)
		case def.Name != "skill":
			t.Errorf("start %d: tool definition %+v", i, def)
		}
		d, err := c.PreStep(rctx, events.PreStep{Session: "ready" + strconv.Itoa(i), Step: "1", Cwd: t.TempDir(),
			Tools: []events.Tool{client.SkillTool("skillstream")}})
		switch {
		case err != nil:
			t.Errorf("start %d: first pre-step: %v", i, err)
		case d.Outcome != events.OutcomeAppended || d.Catalog == nil || len(d.Catalog.Source.Entries) != 1:
			t.Errorf("start %d: first pre-step answered %s, catalog %+v", i, d.Outcome, d.Catalog)
		}
		rcancel()
		c.Close()
		nc.Close()
		if code := stop(); code != exitOK {
			t.Fatalf("start %d: serve exit %d:\n%s", i, code, log)
		}
	}
	if noResponders > 0 {
		t.Errorf("%d of %d fresh starts answered the tool definition with no responders", noResponders, starts)
	}
}
