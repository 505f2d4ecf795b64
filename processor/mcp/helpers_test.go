package mcp_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/natstest"
	mcpserver "github.com/skillstream/skillstream/processor/mcp"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
	"github.com/skillstream/skillstream/providers/search"
	"github.com/skillstream/skillstream/providers/store"
)

// writeSkill writes a skill folder under root: files by relative path.
func writeSkill(t testing.TB, root, name string, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(root, name)
	for p, data := range files {
		fp := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(fp), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(fp, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func skillMD(name, desc, body string) string {
	return "---\nname: " + name + "\ndescription: " + desc + "\n---\n" + body + "\n"
}

// counting is the real registry, counting the file reads asked of it.
// With a gate, a file read waits until the gate is closed: a registry
// whose skills take long to read (a large folder, a slow store), so that
// the server's first complete snapshot comes when the test says.
type counting struct {
	*providers.Registry
	files atomic.Int64
	loads atomic.Int64
	gate  <-chan struct{}
}

func (c *counting) Load(ctx context.Context, name string, q catalog.Query) (catalog.Skill, error) {
	c.loads.Add(1)
	return c.Registry.Load(ctx, name, q)
}

func (c *counting) Files(ctx context.Context, name string, q catalog.Query, maxFiles int, maxBytes int64) ([]providers.File, error) {
	c.files.Add(1)
	if c.gate != nil {
		select {
		case <-c.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return c.Registry.Files(ctx, name, q, maxFiles, maxBytes)
}

type fixture struct {
	root    string
	reg     *counting
	srv     *mcpserver.Server
	http    *httptest.Server
	url     string
	index   *search.Index       // nil without search
	js      jetstream.JetStream // nil without a store
	pub     *store.Publisher
	metrics *prometheus.Registry
}

type fixtureOpts struct {
	store  bool
	http   mcpserver.HTTPConfig
	config mcpserver.Config
	// setup writes skills under the custom root before the registry
	// reads it.
	setup func(t testing.TB, root string)
	// gate holds the registry's file reads (see counting) until closed;
	// the fixture then does not wait for the server's first sync.
	gate chan struct{}
	// waiting is called when a listing starts waiting for the server's
	// first complete snapshot.
	waiting func()
	// search turns skill search on (over config.Options, the catalog's
	// defaults when zero), with an index of the fixture's registry.
	search bool
	// noRun: the server is not kept current by Run; the fixture syncs it
	// once, and the test syncs it when it wants.
	noRun bool
	// folder tunes the folder provider (its CustomDirs and NoUserDir are
	// the fixture's).
	folder agentskills.Config
	// more are providers served after the folder (and the store).
	more []providers.Provider
}

// newFixture serves a registry of a custom skills folder (and, with
// o.store, a skill store on an embedded NATS server) over real HTTP.
func newFixture(t testing.TB, o fixtureOpts) *fixture {
	t.Helper()
	f := &fixture{root: t.TempDir(), metrics: prometheus.NewRegistry()}
	if o.setup != nil {
		o.setup(t, f.root)
	}
	fc := o.folder
	fc.CustomDirs, fc.NoUserDir = []string{f.root}, true
	fs, err := agentskills.New(fc)
	if err != nil {
		t.Fatal(err)
	}
	ps := []providers.Provider{fs}
	if o.store {
		srv := natstest.Start(t)
		nc := srv.Connect()
		if f.js, err = jetstream.New(nc); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		st, err := store.Open(ctx, f.js, store.Config{})
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, st)
		if f.pub, err = store.NewPublisher(ctx, f.js, store.Config{}); err != nil {
			t.Fatal(err)
		}
	}
	ps = append(ps, o.more...)
	f.reg = &counting{Registry: providers.NewRegistry(ps), gate: o.gate}
	t.Cleanup(func() { f.reg.Close() })
	cfg := o.config
	cfg.Registerer = f.metrics
	if o.search {
		if cfg.Options == (catalog.Options{}) {
			cfg.Options = catalog.DefaultOptions()
		}
		cfg.Options.SkillSearch = true
		f.index = search.New(f.reg.Registry, search.Options{})
		t.Cleanup(func() { f.index.Close() })
		cfg.Search = f.index
	}
	if _, bench := t.(*testing.B); bench && cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	if cfg.Resync == 0 {
		cfg.Resync = 50 * time.Millisecond
	}
	if f.srv, err = mcpserver.New(f.reg, cfg); err != nil {
		t.Fatal(err)
	}
	if o.waiting != nil {
		mcpserver.OnWaiting(f.srv, o.waiting)
	}
	if o.noRun {
		f.sync(t)
	} else {
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- f.srv.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
	}
	if o.gate == nil {
		<-f.srv.Ready()
	}
	f.http = httptest.NewServer(f.srv.Handler(o.http))
	t.Cleanup(f.http.Close)
	f.url = f.http.URL + mcpserver.Path
	return f
}

// push publishes skill folders to the store's global scope, as
// `skillstream skills push` does.
func (f *fixture) push(t testing.TB, dirs ...string) {
	t.Helper()
	var ls []store.Local
	for _, d := range dirs {
		l, err := store.ReadSkill(d, store.Config{})
		if err != nil {
			t.Fatal(err)
		}
		ls = append(ls, l)
	}
	if _, err := f.pub.Push(context.Background(), skillstore.Scope{}, ls, false); err != nil {
		t.Fatal(err)
	}
}

// sync makes the server look at the registry now.
func (f *fixture) sync(t testing.TB) {
	t.Helper()
	if err := f.srv.Sync(context.Background()); err != nil {
		t.Logf("sync: %v", err)
	}
}

// testWriter sends log lines to t.Log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

type rpcError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data"`
}

// rpc sends one JSON-RPC request statelessly (a 2025-11-25 request
// without a session) and returns its result or error. params is sent as
// raw JSON when it is a json.RawMessage.
func (f *fixture) rpc(t testing.TB, method string, params any) (json.RawMessage, *rpcError) {
	t.Helper()
	res, rerr, status := rawRPC(t, f.url, method, params, nil)
	if status != http.StatusOK {
		t.Fatalf("%s: HTTP %d", method, status)
	}
	return res, rerr
}

func rawRPC(t testing.TB, url, method string, params any, hdr http.Header) (json.RawMessage, *rpcError, int) {
	t.Helper()
	var p json.RawMessage
	switch v := params.(type) {
	case json.RawMessage:
		p = v
	case nil:
	default:
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		p = b
	}
	msg := map[string]any{"jsonrpc": "2.0", "id": 1, "method": method}
	if p != nil {
		msg["params"] = p
	}
	body, _ := json.Marshal(msg)
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	for k, vs := range hdr {
		req.Header[k] = vs
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, nil, resp.StatusCode
	}
	var data []byte
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				data = []byte(d)
				break
			}
		}
	} else {
		var b bytes.Buffer
		b.ReadFrom(resp.Body)
		data = b.Bytes()
	}
	var out struct {
		Result json.RawMessage `json:"result"`
		Error  *rpcError       `json:"error"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatalf("%s: undecodable response %q: %v", method, data, err)
	}
	return out.Result, out.Error, resp.StatusCode
}

// entry is a skill entry as a host decodes it.
type entry struct {
	URI         string         `json:"uri"`
	Frontmatter map[string]any `json:"frontmatter"`
	Resources   []struct {
		URI    string `json:"uri"`
		Digest string `json:"digest"`
		Size   int64  `json:"size"`
	} `json:"resources"`
}

type listResult struct {
	ResultType string            `json:"resultType"`
	Skills     []json.RawMessage `json:"skills"`
	NextCursor string            `json:"nextCursor"`
	TTLMs      *int              `json:"ttlMs"`
	CacheScope string            `json:"cacheScope"`
}

// listAll pages through skills/list.
func (f *fixture) listAll(t testing.TB) []entry {
	t.Helper()
	var out []entry
	cursor := ""
	for page := 0; ; page++ {
		if page > 10000 {
			t.Fatal("skills/list does not end")
		}
		params := map[string]any{}
		if cursor != "" {
			params["cursor"] = cursor
		}
		res, rerr := f.rpc(t, "skills/list", params)
		if rerr != nil {
			t.Fatalf("skills/list: %+v", rerr)
		}
		var lr listResult
		if err := json.Unmarshal(res, &lr); err != nil {
			t.Fatal(err)
		}
		if lr.ResultType != "complete" || lr.TTLMs == nil || lr.CacheScope == "" {
			t.Fatalf("skills/list result lacks resultType, ttlMs or cacheScope: %s", res)
		}
		for _, raw := range lr.Skills {
			var e entry
			if err := json.Unmarshal(raw, &e); err != nil {
				t.Fatal(err)
			}
			out = append(out, e)
		}
		if lr.NextCursor == "" {
			return out
		}
		cursor = lr.NextCursor
	}
}

func find(es []entry, name string) (entry, error) {
	for _, e := range es {
		if e.URI == "skill://"+name+"/SKILL.md" {
			return e, nil
		}
	}
	return entry{}, fmt.Errorf("skill %s is not listed", name)
}

// waitFor waits until skills/list lists every name (the watcher may
// report new folders a moment after they are written).
func (f *fixture) waitFor(t testing.TB, names ...string) {
	t.Helper()
	natstest.Eventually(t, 20*time.Second, "skills served", func() error {
		f.sync(t)
		es := f.listAll(t)
		for _, n := range names {
			if _, err := find(es, n); err != nil {
				return err
			}
		}
		return nil
	})
}
