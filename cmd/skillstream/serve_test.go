package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/processor/demo"
)

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// freePort returns a loopback port nobody listens on right now.
func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// eventually polls cond until it returns nil or the deadline passes.
func eventually(t testing.TB, timeout time.Duration, what string, cond func() error) {
	t.Helper()
	natstest.Eventually(t, timeout, what, cond)
}

// served is a `skillstream serve` running in-process.
type served struct {
	t       testing.TB
	url     string // NATS client URL
	metrics string // base URL of the metrics server
	stderr  *syncBuffer
	cancel  context.CancelFunc
	done    chan int // receives the exit status
}

// startServe runs Main("serve", ...) with an embedded server on a free
// loopback port and waits until it is ready.
func startServe(t testing.TB, dataDir, skillsRoot string, extra ...string) *served {
	t.Helper()
	return startServeAt(t, freePort(t), dataDir, skillsRoot, extra...)
}

// startServeAt is startServe on a given NATS port.
func startServeAt(t testing.TB, port int, dataDir, skillsRoot string, extra ...string) *served {
	t.Helper()
	mport := freePort(t)
	args := []string{"serve",
		"--listen", "127.0.0.1:" + strconv.Itoa(port), "--data", dataDir,
		"--metrics-listen", "127.0.0.1:" + strconv.Itoa(mport),
		"--no-bundled", "--user-skills-dir=", "--skills-dir", skillsRoot,
		"--log-format", "json",
	}
	args = append(args, extra...)
	return runServe(t, port, mport, "serve ready", func(ctx context.Context, stderr io.Writer) int {
		return Main(ctx, args, io.Discard, stderr)
	})
}

// runServe runs a serve (run, until the test ends) whose NATS server
// listens on port and metrics on mport, and waits until it is ready.
func runServe(t testing.TB, port, mport int, what string, run func(ctx context.Context, stderr io.Writer) int) *served {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &served{
		t: t, url: fmt.Sprintf("nats://127.0.0.1:%d", port), metrics: fmt.Sprintf("http://127.0.0.1:%d", mport),
		stderr: &syncBuffer{}, cancel: cancel, done: make(chan int, 1),
	}
	go func() { s.done <- run(ctx, s.stderr) }()
	t.Cleanup(func() { s.stop() })
	eventually(t, 30*time.Second, what, func() error {
		select {
		case code := <-s.done:
			s.done <- code
			t.Fatalf("serve exited early with %d:\n%s", code, s.stderr)
		default:
		}
		return s.ready()
	})
	return s
}

var plainHTTP = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}, Timeout: 5 * time.Second}

func (s *served) get(path string) (int, string, error) {
	resp, err := plainHTTP.Get(s.metrics + path)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

func (s *served) ready() error {
	code, body, err := s.get("/readyz")
	if err != nil {
		return err
	}
	if code != http.StatusOK {
		return fmt.Errorf("/readyz: %d %s", code, body)
	}
	return nil
}

// stop cancels serve and returns its exit status; it is idempotent.
func (s *served) stop() int {
	s.t.Helper()
	s.cancel()
	select {
	case code := <-s.done:
		s.done <- code
		return code
	case <-time.After(60 * time.Second):
		s.t.Fatalf("serve did not stop within 60s:\n%s", s.stderr)
		return -1
	}
}

// wait waits for serve to exit by itself (after a signal).
func (s *served) wait() int {
	s.t.Helper()
	select {
	case code := <-s.done:
		s.done <- code
		return code
	case <-time.After(60 * time.Second):
		s.t.Fatalf("serve did not exit within 60s:\n%s", s.stderr)
		return -1
	}
}

func (s *served) connect(t testing.TB, opts ...nats.Option) *nats.Conn {
	t.Helper()
	nc, err := nats.Connect(s.url, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc
}

func newTestWorker(t testing.TB, nc *nats.Conn, session string) *demo.Worker {
	t.Helper()
	w, err := demo.NewWorker(nc, events.DefaultPrefix, session, "skillstream")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close() })
	return w
}

// goroutineBaseline counts the goroutines running before a test starts
// serve. It first starts the runtime's signal loop, which lives for the rest
// of the process once any signal is watched.
func goroutineBaseline() int {
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGWINCH)
	signal.Stop(c)
	return runtime.NumGoroutine()
}

// checkGoroutines waits until no more goroutines run than before the test
// started serve, and dumps them if some are left.
func checkGoroutines(t testing.TB, baseline int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for runtime.NumGoroutine() > baseline {
		if time.Now().After(deadline) {
			var b strings.Builder
			pprof.Lookup("goroutine").WriteTo(&b, 1)
			t.Fatalf("%d goroutines left running, %d before serve started:\n%s", runtime.NumGoroutine(), baseline, b.String())
		}
		<-tick.C
	}
}

// TestServeEndToEnd runs the real program, drives it as a worker over TCP,
// compares what it sends with what `catalog` and `load` preview, and stops
// it by cancelling: exit 0, nothing left running.
func TestServeEndToEnd(t *testing.T) {
	root := spec4Skills(t)
	cwd := t.TempDir()
	baseline := goroutineBaseline()

	s := startServe(t, t.TempDir(), root, "--catalog-description-max-length", "50")
	if first := strings.SplitN(s.stderr.String(), "\n", 2)[0]; !strings.Contains(first, `"msg":"skillstream serving"`) ||
		!strings.Contains(first, s.url) || !strings.Contains(first, `"stream":"SESSIONS"`) || !strings.Contains(first, `"consumer":"skillstream"`) {
		t.Errorf("first log line does not say where it listens and what it serves:\n%s", first)
	}

	nc := s.connect(t)
	w := newTestWorker(t, nc, "e2e")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// The preview commands, with the same skills flags.
	_, preview, _ := runMain(t, "catalog", "--catalog-description-max-length", "50", "--no-bundled", "--user-skills-dir=", "--skills-dir", root, "--cwd", cwd)
	_, loaded, _ := runMain(t, "load", "a-skill", "--no-bundled", "--user-skills-dir=", "--skills-dir", root, "--cwd", cwd)

	d, err := w.PreStep(ctx, "1", cwd)
	if err != nil {
		t.Fatal(err)
	}
	if d.Outcome != events.OutcomeAppended || d.Catalog == nil {
		t.Fatalf("first pre-step: %+v", d)
	}
	if d.Catalog.Text+"\n" != preview {
		t.Errorf("served catalog differs from `catalog` preview:\n%s\n---\n%s", d.Catalog.Text, preview)
	}
	if d.Catalog.Source.Update != string(catalog.UpdateInitial) || d.Catalog.Source.Producer != "skillstream" || len(d.Catalog.Source.Entries) != 3 {
		t.Errorf("catalog source = %+v", d.Catalog.Source)
	}

	d, err = w.PreStep(ctx, "2", cwd)
	if err != nil {
		t.Fatal(err)
	}
	if d.Outcome != events.OutcomeUnchanged || d.Catalog != nil {
		t.Errorf("second pre-step: %+v", d)
	}

	r, err := w.Call(ctx, "call-1", cwd, "a-skill")
	if err != nil {
		t.Fatal(err)
	}
	if r.IsError || r.Text+"\n" != loaded || r.Value == nil || r.Value.Name != "a-skill" {
		t.Errorf("skill call: %+v\nwant text %q", r, loaded)
	}
	r, err = w.Call(ctx, "call-2", cwd, "user-only-skill")
	if err != nil {
		t.Fatal(err)
	}
	if !r.IsError || r.Error == nil || r.Error.Code != events.CodeNotModelInvocable {
		t.Errorf("call of a user-only skill: %+v", r)
	}

	// The tool definition, over core NATS.
	msg, err := nc.Request(events.ToolDefinitionSubject, nil, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var def struct{ Name, Description string }
	if err := json.Unmarshal(msg.Data, &def); err != nil || def.Name != catalog.ToolName || def.Description != catalog.ToolDescription {
		t.Errorf("tool definition %s: %v", msg.Data, err)
	}

	code, body, err := s.get("/metrics")
	if err != nil || code != http.StatusOK || !strings.Contains(body, "skillstream_triggers_total") || !strings.Contains(body, "go_goroutines") {
		t.Errorf("/metrics: %d %v\n%.500s", code, err, body)
	}
	if code, body, _ := s.get("/healthz"); code != http.StatusOK {
		t.Errorf("/healthz: %d %s", code, body)
	}

	w.Close()
	nc.Close()
	if code := s.stop(); code != exitOK {
		t.Fatalf("exit %d after cancel:\n%s", code, s.stderr)
	}
	if c, err := net.DialTimeout("tcp", strings.TrimPrefix(s.url, "nats://"), time.Second); err == nil {
		c.Close()
		t.Error("NATS port still open after serve returned")
	}
	if !strings.Contains(s.stderr.String(), `"msg":"skillstream stopped"`) {
		t.Errorf("no stop line in the log:\n%s", s.stderr)
	}
	plainHTTP.CloseIdleConnections()
	checkGoroutines(t, baseline)
}

// TestServeRestartContinuesSessions stops and restarts serve on the same
// store: the session continues, and a pre-step with nothing new answers
// unchanged.
func TestServeRestartContinuesSessions(t *testing.T) {
	root := spec4Skills(t)
	data, cwd := t.TempDir(), t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	s := startServe(t, data, root)
	nc := s.connect(t)
	w := newTestWorker(t, nc, "restart")
	d, err := w.PreStep(ctx, "1", cwd)
	if err != nil || d.Outcome != events.OutcomeAppended {
		t.Fatalf("before restart: %+v, %v", d, err)
	}
	nc.Close()
	if code := s.stop(); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, s.stderr)
	}

	s = startServe(t, data, root)
	nc = s.connect(t)
	w = newTestWorker(t, nc, "restart")
	d, err = w.PreStep(ctx, "2", cwd)
	if err != nil {
		t.Fatal(err)
	}
	if d.Outcome != events.OutcomeUnchanged {
		t.Errorf("after restart: outcome %q, want unchanged (%+v)", d.Outcome, d)
	}
	// A different session still gets its first catalog.
	w2 := newTestWorker(t, nc, "fresh")
	if d, err := w2.PreStep(ctx, "1", cwd); err != nil || d.Outcome != events.OutcomeAppended {
		t.Errorf("new session after restart: %+v, %v", d, err)
	}
	if code := s.stop(); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, s.stderr)
	}
}

func TestServeConfigErrors(t *testing.T) {
	data := t.TempDir()
	// The port is taken: a clear error, exit 1, nothing left running.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	code, _, stderr := runMain(t, "serve", "--listen", ln.Addr().String(), "--data", data, "--no-bundled", "--user-skills-dir=")
	if code != exitFailure || !strings.Contains(stderr, "skillstream serve: embedded NATS server:") || !strings.Contains(stderr, "address already in use") {
		t.Errorf("port in use: exit %d, stderr:\n%s", code, stderr)
	}

	// Infrastructure-managed stream missing.
	port := freePort(t)
	code, _, stderr = runMain(t, "serve", "--listen", "127.0.0.1:"+strconv.Itoa(port), "--data", data, "--no-bundled", "--user-skills-dir=", "--no-provision")
	if code != exitFailure || !strings.Contains(stderr, "stream SESSIONS does not exist") {
		t.Errorf("--no-provision without a stream: exit %d, stderr:\n%s", code, stderr)
	}

	// Unreachable cluster.
	code, _, stderr = runMain(t, "serve", "--nats-url", "nats://127.0.0.1:"+strconv.Itoa(freePort(t)), "--no-bundled", "--user-skills-dir=")
	if code != exitFailure || !strings.Contains(stderr, "connect to nats://127.0.0.1") {
		t.Errorf("unreachable --nats-url: exit %d, stderr:\n%s", code, stderr)
	}
}

// streamOutputs counts, per trigger key, the outputs in the session log.
func streamOutputs(t testing.TB, js jetstream.JetStream) (map[string]int, jetstream.StreamState) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, "SESSIONS")
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := st.GetMsg(ctx, seq)
		if err != nil {
			t.Fatalf("read seq %d: %v", seq, err)
		}
		sid, kind, err := events.ParseSubject(events.DefaultPrefix, m.Subject)
		if err != nil {
			t.Fatalf("seq %d: %v", seq, err)
		}
		switch kind {
		case events.KindCatalog:
			c, err := events.DecodeCatalog(events.Msgpack, m.Data)
			if err != nil {
				t.Fatalf("seq %d: %v", seq, err)
			}
			out[sid+"/step/"+c.Step]++
		case events.KindToolResult:
			r, err := events.DecodeToolResult(events.Msgpack, m.Data)
			if err != nil {
				t.Fatalf("seq %d: %v", seq, err)
			}
			out[sid+"/call/"+r.Call]++
		}
	}
	return out, info.State
}

// A fresh serve exports its build, every counter at 0 and the consumer's
// gauges, and its micro service reports the binary's version.
func TestServeMetricsFromTheStart(t *testing.T) {
	s := startServe(t, t.TempDir(), spec4Skills(t))
	_, body, err := s.get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b := thisBuild()
	for _, want := range []string{
		fmt.Sprintf(`skillstream_build_info{goversion=%q,revision=%q,version=%q} 1`, runtime.Version(), b.revision, b.version),
		`skillstream_triggers_total{kind="pre-step",outcome="appended"} 0`,
		`skillstream_triggers_total{kind="skill-call",outcome="ok"} 0`,
		`skillstream_rejects_total{reason="inbox"} 0`,
		`skillstream_dead_letters_total{kind="skill-call"} 0`,
		"skillstream_triggers_in_flight 0",
		"skillstream_consumer_pending 0",
		"skillstream_consumer_ack_pending 0",
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	nc := s.connect(t)
	msg, err := nc.Request("$SRV.INFO.skillstream", nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	var info struct {
		Version string `json:"version"`
	}
	if err := json.Unmarshal(msg.Data, &info); err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimPrefix(b.version, "v"); info.Version != want && !(b.version == "(devel)" && info.Version == "0.0.0-devel") {
		t.Errorf("micro service version %q, binary %q", info.Version, b.version)
	}
}
