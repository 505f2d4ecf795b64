package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
	"github.com/skillstream/skillstream/processor/embedded"
)

// partitionOutputs reads the n partition streams of SESSIONS: it checks
// that each holds only subjects of its own partition, of sessions the
// server's mapping places there, and counts the outputs per trigger and
// the sessions per partition.
func partitionOutputs(t testing.TB, js jetstream.JetStream, l events.Layout, n int) (map[string]int, []int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := map[string]int{}
	sessions := make([]int, n)
	for k := range n {
		name := events.PartitionStream("SESSIONS", k)
		st, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatalf("stream %s: %v", name, err)
		}
		info, err := st.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if want := events.PartitionPrefix(events.DefaultPrefix, k) + ".>"; len(info.Config.Subjects) != 1 || info.Config.Subjects[0] != want {
			t.Errorf("stream %s subjects %v, want %s", name, info.Config.Subjects, want)
		}
		seen := map[string]bool{}
		for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
			m, err := st.GetMsg(ctx, seq)
			if err != nil {
				continue // a deleted probe
			}
			sid, kind, err := events.ParseSubjectIn(l, events.PartitionPrefix(events.DefaultPrefix, k), m.Subject)
			if err != nil {
				t.Fatalf("%s seq %d: %v", name, seq, err)
			}
			if got := events.PartitionOf(l, sid, n); got != k {
				t.Errorf("%s holds %s, of partition %d", name, m.Subject, got)
			}
			seen[sid] = true
			switch kind {
			case events.KindCatalog:
				c, err := events.DecodeCatalog(events.Msgpack, m.Data)
				if err != nil {
					t.Fatalf("%s seq %d: %v", name, seq, err)
				}
				out[sid+"/step/"+c.Step]++
			case events.KindToolResult:
				r, err := events.DecodeToolResult(events.Msgpack, m.Data)
				if err != nil {
					t.Fatalf("%s seq %d: %v", name, seq, err)
				}
				out[sid+"/call/"+r.Call]++
			}
		}
		sessions[k] = len(seen)
	}
	return out, sessions
}

// TestServePartitionsOneNode: serve --partitions 4 on its embedded server
// (which maps the sessions itself): sessions land in every partition's
// stream, each stream holds only its own sessions, every trigger is
// answered once, the catalogs and results are those of one stream, and
// each partition has its usage projection.
func TestServePartitionsOneNode(t *testing.T) {
	root := spec4Skills(t)
	cwd := t.TempDir()
	s := startServe(t, t.TempDir(), root, "--partitions", "4")
	var line string
	for l := range strings.SplitSeq(s.stderr.String(), "\n") {
		if strings.Contains(l, `"msg":"skillstream serving"`) {
			line = l
		}
	}
	if !strings.Contains(line, `SESSIONS-0 … SESSIONS-3 (4 partitions)`) || !strings.Contains(line, `evp.{{partition(4,1)}}.{{wildcard(1)}}.>`) {
		t.Errorf("serving line does not name the partitions and the mapping:\n%s", s.stderr)
	}
	_, preview, _ := runMain(t, "catalog", "--no-bundled", "--user-skills-dir=", "--skills-dir", root, "--cwd", cwd)
	_, loaded, _ := runMain(t, "load", "a-skill", "--no-bundled", "--user-skills-dir=", "--skills-dir", root, "--cwd", cwd)

	nc := s.connect(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const sessions = 24
	for i := range sessions {
		w := newTestWorker(t, nc, fmt.Sprintf("part-%d", i))
		d, err := w.PreStep(ctx, "1", cwd)
		if err != nil || d.Outcome != events.OutcomeAppended || d.Catalog == nil {
			t.Fatalf("session %d: %+v, %v", i, d, err)
		}
		if d.Catalog.Text+"\n" != preview {
			t.Errorf("session %d: catalog differs from the preview:\n%s\n---\n%s", i, d.Catalog.Text, preview)
		}
		if d, err := w.PreStep(ctx, "2", cwd); err != nil || d.Outcome != events.OutcomeUnchanged {
			t.Fatalf("session %d second pre-step: %+v, %v", i, d, err)
		}
		r, err := w.Call(ctx, "c1", cwd, "a-skill")
		if err != nil || r.IsError || r.Text+"\n" != loaded {
			t.Fatalf("session %d call: %+v, %v", i, r, err)
		}
		// The same trigger again: answered from the output appended.
		if d, err := w.PreStep(ctx, "1", cwd); err != nil || d.Outcome != events.OutcomeAppended {
			t.Fatalf("session %d retried pre-step: %+v, %v", i, d, err)
		}
		w.Close()
	}
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	outputs, per := partitionOutputs(t, js, events.LayoutFlat, 4)
	if len(outputs) != 2*sessions {
		t.Errorf("%d triggers with outputs, want %d", len(outputs), 2*sessions)
	}
	for k, n := range outputs {
		if n != 1 {
			t.Errorf("%s: %d outputs", k, n)
		}
	}
	for k, n := range per {
		if n == 0 {
			t.Errorf("partition %d holds no session (sessions per partition: %v)", k, per)
		}
	}
	if _, err := js.Stream(ctx, "SESSIONS"); err == nil {
		t.Error("stream SESSIONS exists beside the partitions")
	}
	eventually(t, 30*time.Second, "a usage bucket per partition", func() error {
		for k := range 4 {
			if _, err := js.KeyValue(ctx, fmt.Sprintf("USAGE-%d", k)); err != nil {
				return fmt.Errorf("USAGE-%d: %v", k, err)
			}
		}
		return nil
	})
}

// TestServePartitionsProbe: with --nats-url, serve refuses a server that
// does not map the sessions, or maps them over another partition count,
// and names the mapping to add.
func TestServePartitionsProbe(t *testing.T) {
	for _, tc := range []struct {
		name     string
		mappings [][2]string
		want     string
	}{
		{"no mapping", nil, "no stream took probe ev.probe-"},
		{"two partitions", [][2]string{{"ev.*.>", "evp.{{partition(2,1)}}.{{wildcard(1)}}.>"}}, "not to partition"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := embedded.Start(embedded.Options{Listen: "127.0.0.1:0", StoreDir: t.TempDir(), Mappings: tc.mappings}, slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
			t.Chdir(t.TempDir())
			code, _, stderr := runMain(t, "serve", "--nats-url", embedded.URL(srv), "--no-bundled", "--user-skills-dir=", "--partitions", "4", "--log-format", "json")
			if code == exitOK || !strings.Contains(stderr, tc.want) ||
				!strings.Contains(stderr, `must map ev.*.> to evp.{{partition(4,1)}}.{{wildcard(1)}}.>`) {
				t.Errorf("exit %d, want a failure naming the mapping (%q):\n%s", code, tc.want, stderr)
			}
			if strings.Contains(stderr, "skillstream serving") {
				t.Errorf("serving announced:\n%s", stderr)
			}
		})
	}
}

// TestShippedConfPartitions loads the shipped server configuration with
// its partition mapping uncommented: serve --partitions 4, as the
// processor user, passes its probe, and a worker's triggers, published as
// without partitions, are answered and kept in their partitions.
func TestShippedConfPartitions(t *testing.T) {
	b, err := os.ReadFile(permissionsFile)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "#p mappings") {
		t.Fatalf("%s has no commented partition mapping", permissionsFile)
	}
	conf := filepath.Join(t.TempDir(), "nats-server.conf")
	if err := os.WriteFile(conf, []byte(strings.ReplaceAll(string(b), "#p ", "")), 0o600); err != nil {
		t.Fatal(err)
	}
	pw := setPasswords(t, map[string]string{
		"processor": "SKILLSTREAM_PROCESSOR_PASSWORD",
		"operator":  "SKILLSTREAM_OPERATOR_PASSWORD",
		"worker-a":  "SKILLSTREAM_WORKER_A_PASSWORD",
		"worker-b":  "SKILLSTREAM_WORKER_B_PASSWORD",
	})
	natsURL := confServer(t, conf)
	root := spec4Skills(t)
	t.Chdir(t.TempDir())
	runPermittedServe(t, []string{"serve", "--nats-url", natsURL, "--nats-user", "processor", "--nats-password", pw["processor"],
		"--no-bundled", "--user-skills-dir=", "--skills-dir", root, "--workers", "2", "--partitions", "4", "--max-bytes", "1GiB"}, "skillstream serving")

	a, err := client.Connect(userURL(t, natsURL, "worker-a", pw["worker-a"]), client.WithInboxPrefix("_INBOX.worker-a"),
		client.WithRetryInterval(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cwd := t.TempDir()
	for i := range 8 {
		session := fmt.Sprintf("a-%d-%s", i, randomToken(t))
		d, err := a.PreStep(ctx, events.PreStep{Session: session, Step: "1", Cwd: cwd, Tools: []events.Tool{client.SkillTool("skillstream")}})
		if err != nil || d.Outcome != events.OutcomeAppended || d.Catalog == nil {
			t.Fatalf("pre-step %d: %+v, %v", i, d, err)
		}
		if r, err := a.CallSkill(ctx, events.SkillCall{Session: session, Call: "c1", Cwd: cwd, Args: events.SkillArgs{Name: "a-skill"}}); err != nil || r.IsError {
			t.Fatalf("call %d: %+v, %v", i, r, err)
		}
	}
	op, err := nats.Connect(userURL(t, natsURL, "operator", pw["operator"]))
	if err != nil {
		t.Fatal(err)
	}
	defer op.Close()
	js, err := jetstream.New(op)
	if err != nil {
		t.Fatal(err)
	}
	outputs, _ := partitionOutputs(t, js, events.LayoutFlat, 4)
	if len(outputs) != 16 {
		t.Errorf("%d triggers with outputs, want 16", len(outputs))
	}
	for k, n := range outputs {
		if n != 1 {
			t.Errorf("%s: %d outputs", k, n)
		}
	}
}

// TestServePartitionsCountChanged: the partition streams record their
// count, and serve refuses to start on them with another one (a session
// would move to another stream than the one holding its log); a serve
// without partitions on them warns that their sessions are not served.
func TestServePartitionsCountChanged(t *testing.T) {
	root := spec4Skills(t)
	data := t.TempDir()
	s := startServe(t, data, root, "--partitions", "4")
	if code := s.stop(); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, s.stderr)
	}
	for _, tc := range []struct{ n, want string }{
		{"2", "stream SESSIONS-0 was made for 4 partitions, not 2"},
		{"8", "stream SESSIONS-0 was made for 4 partitions, not 8"},
	} {
		code, _, stderr := runMain(t, "serve", "--listen", fmt.Sprintf("127.0.0.1:%d", freePort(t)), "--data", data,
			"--no-bundled", "--user-skills-dir=", "--skills-dir", root, "--partitions", tc.n)
		if code == exitOK || !strings.Contains(stderr, tc.want) {
			t.Errorf("--partitions %s: exit %d, want %q:\n%s", tc.n, code, tc.want, stderr)
		}
	}
	s = startServe(t, data, root)
	if !strings.Contains(s.stderr.String(), "partition streams exist beside the stream of sessions without partitions") {
		t.Errorf("no warning of the partition streams left:\n%s", s.stderr)
	}
}

// TestShippedTenantsConfPartitions loads the shipped tenants
// configuration with its partition mappings uncommented: serve --tenants
// --partitions 4 passes its probe in each tenant's account, and each
// tenant's workers are answered from the tenant's own partitions.
func TestShippedTenantsConfPartitions(t *testing.T) {
	b, err := os.ReadFile(tenantsConf)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(string(b), "#p mappings") != 2 {
		t.Fatalf("%s: want a commented partition mapping in each tenant account", tenantsConf)
	}
	conf := filepath.Join(t.TempDir(), "tenants.conf")
	if err := os.WriteFile(conf, []byte(strings.ReplaceAll(string(b), "#p ", "")), 0o600); err != nil {
		t.Fatal(err)
	}
	pw := setPasswords(t, tenantUsers)
	t.Setenv("ACME_MCP_TOKEN", randomToken(t))
	t.Setenv("GLOBEX_MCP_TOKEN", randomToken(t))
	natsURL := confServer(t, conf)
	logs := startTenantServe(t, natsURL, "--partitions", "4")
	if n := strings.Count(logs.String(), "tenant serving"); n != 2 {
		t.Errorf("%d tenants serving, want 2:\n%s", n, logs)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cwd := t.TempDir()
	for _, user := range []string{"acme-worker-1", "globex-worker-1"} {
		w := tenantWorker(t, natsURL, user, pw[user])
		for i := range 8 {
			session := fmt.Sprintf("%s-%d-%s", user, i, randomToken(t))
			d, err := w.PreStep(ctx, events.PreStep{Session: session, Step: "1", Cwd: cwd, Tools: []events.Tool{client.SkillTool("skillstream")}})
			// The tenants' stores are empty: answered, with no skills.
			if err != nil || d.Outcome != events.OutcomeEmpty || d.TriggerSeq == 0 {
				t.Fatalf("%s pre-step %d: %+v, %v", user, i, d, err)
			}
		}
	}
}

// TestServePartitionsUsageErrors: a partition count out of range is
// refused at start.
func TestServePartitionsUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--partitions", "65"}, "--partitions 65: want 0 (none) to 64"},
		{[]string{"--partitions", "-1"}, "--partitions -1: want 0 (none) to 64"},
	} {
		code, _, stderr := runMain(t, append([]string{"serve", "--data", t.TempDir(), "--no-bundled", "--user-skills-dir="}, tc.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, want %d and %q:\n%s", tc.args, code, exitUsage, tc.want, stderr)
		}
	}
}
