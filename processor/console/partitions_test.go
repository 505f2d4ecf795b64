package console_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	wclient "github.com/skillstream/skillstream/events/client"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/processor"
	"github.com/skillstream/skillstream/processor/console"
	"github.com/skillstream/skillstream/processor/partition"
	"github.com/skillstream/skillstream/processor/usage/projection"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
)

// TestSessionPagesOverPartitions: with sessions spread over 4 partition
// streams by the server's mapping (a real processor per partition), the
// sessions page lists the recent sessions of every partition, and each
// session's timeline, export and replay are read from the partition its
// id places it in; a session that is nowhere is not found in its own.
func TestSessionPagesOverPartitions(t *testing.T) {
	const n = 4
	srv := natstest.Start(t)
	src, dest := events.PartitionMapping(events.DefaultPrefix, events.LayoutFlat, n)
	if err := srv.GlobalAccount().AddMapping(src, dest); err != nil {
		t.Fatal(err)
	}
	cwd := filepath.Join(t.TempDir(), "project")
	if err := os.MkdirAll(filepath.Join(cwd, ".agents", "skills", "deploy"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cwd, ".agents", "skills", "deploy", "SKILL.md"), []byte("---\nname: deploy\ndescription: Deploys.\n---\nDo it well.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(cwd, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	fs, err := agentskills.New(agentskills.Config{NoUserDir: true})
	if err != nil {
		t.Fatal(err)
	}
	reg := providers.NewRegistry([]providers.Provider{fs})
	t.Cleanup(func() { reg.Close() })
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	places := partition.Places(processor.DefaultStream, events.DefaultPrefix, n)
	for k, p := range places {
		proc, err := processor.New(srv.Connect(), reg, processor.Config{Stream: p.Stream, Prefix: p.Prefix, Catalog: catalog.DefaultOptions()}, processor.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- proc.Run(ctx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("processor of partition %d: %v", k, err)
			}
		})
	}
	c, err := wclient.New(srv.Connect())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wctx, wcancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer wcancel()
	tools := []events.Tool{wclient.SkillTool(processor.DefaultToolOwner)}
	var sids []string
	used := map[int]bool{}
	for i := range 8 {
		sid := "psess-" + strconv.Itoa(i)
		sids = append(sids, sid)
		used[events.PartitionOf(events.LayoutFlat, sid, n)] = true
		if _, err := c.PreStep(wctx, events.PreStep{Session: sid, Step: "1", Cwd: cwd, Tools: tools}); err != nil {
			t.Fatalf("%s: %v", sid, err)
		}
		if _, err := c.CallSkill(wctx, events.SkillCall{Session: sid, Call: "c1", Cwd: cwd, Args: events.SkillArgs{Name: "deploy"}}); err != nil {
			t.Fatalf("%s: %v", sid, err)
		}
	}
	if len(used) < 3 {
		t.Fatalf("8 sessions reached only partitions %v", used)
	}
	sources := console.Sources{JS: srv.JS, Registry: reg, Stream: processor.DefaultStream, Prefix: events.DefaultPrefix, Layout: events.LayoutFlat,
		Place: func(sid string) (string, string) {
			p := partition.Of(processor.DefaultStream, events.DefaultPrefix, events.LayoutFlat, sid, n)
			return p.Stream, p.Prefix
		},
		Partitions: places}
	ts := startConsole(t, console.Config{Sources: sources})
	hc := client(t)
	signIn(t, hc, ts.URL, viewerToken)

	code, body := get(t, hc, ts.URL+"/sessions")
	if code != http.StatusOK {
		t.Fatalf("sessions: %d\n%s", code, body)
	}
	for _, sid := range sids {
		if !strings.Contains(body, `href="/sessions/`+sid+`">`+sid+`</a>`) {
			t.Errorf("recent sessions lack %s\n%s", sid, body)
		}
	}
	for _, sid := range sids[:3] {
		code, body := get(t, hc, ts.URL+"/sessions/"+sid)
		if want := `load deploy (call <span class="mono">c1</span>): ok`; code != http.StatusOK || !strings.Contains(body, want) {
			t.Errorf("timeline of %s: %d, want %s\n%s", sid, code, want, body)
		}
		code, body = get(t, hc, ts.URL+"/sessions/"+sid+"/export")
		if lines := strings.Count(body, "\n"); code != http.StatusOK || !strings.Contains(body, `"`+sid+`"`) || lines < 6 {
			t.Errorf("export of %s: %d, %d lines\n%s", sid, code, lines, body)
		}
		code, body = get(t, hc, ts.URL+"/sessions/"+sid+"/replay")
		if code != http.StatusOK || !strings.Contains(body, "c1") {
			t.Errorf("replay of %s: %d\n%s", sid, code, body)
		}
	}
	// The usage page sums each partition's projection (bucket
	// USAGE-<k>): 8 loads of deploy in all.
	for k, p := range places {
		o := projection.Options{Stream: p.Stream, Prefix: p.Prefix, Layout: events.LayoutFlat, Bucket: projection.PartitionBucket(projection.DefaultBucket, k), FlushWait: 20 * time.Millisecond}
		proj, err := projection.New(srv.JS, o)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); proj.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
		natstest.Eventually(t, 30*time.Second, "the projection of "+p.Stream+" caught up", func() error {
			r, err := projection.Read(context.Background(), srv.JS, o, time.Time{})
			if err == nil && (r.Projection.LagRecords != 0 || r.Projection.AppliedSeq == 0) {
				err = errBehind(r.Projection.LagRecords)
			}
			return err
		})
	}
	sources.UsageBucket = projection.DefaultBucket
	ts = startConsole(t, console.Config{Sources: sources})
	signIn(t, hc, ts.URL, viewerToken)
	code, body = get(t, hc, ts.URL+"/usage?by=hour&skill=deploy")
	if code != http.StatusOK {
		t.Fatalf("usage: %d\n%s", code, body)
	}
	loads := -1
	for _, l := range plots(t, body)["plot-total"].Series {
		if l.Label == "loads" {
			loads = total(l.Values)
		}
	}
	if loads != 8 {
		t.Errorf("usage over the partitions: %d loads, want 8\n%s", loads, body)
	}

	// The fleet: the 4 partitions' processors are the group's members,
	// and each partition stream's use is shown.
	code, body = get(t, hc, ts.URL+"/fleet")
	if code != http.StatusOK || !strings.Contains(body, `<p id="fleet-summary">4 members answer;`) || !strings.Contains(body, `<table id="partitions">`) {
		t.Errorf("fleet: %d\n%s", code, body)
	}
	for _, p := range places {
		if !strings.Contains(body, `<td class="mono">`+p.Stream+`</td>`) {
			t.Errorf("fleet lacks %s", p.Stream)
		}
	}

	code, body = get(t, hc, ts.URL+"/sessions/nowhere")
	if want := "session nowhere has no events in stream " + partition.Of(processor.DefaultStream, events.DefaultPrefix, events.LayoutFlat, "nowhere", n).Stream; code != http.StatusNotFound || !strings.Contains(body, want) {
		t.Errorf("a session that is nowhere: %d, want 404 and %q\n%s", code, want, body)
	}
}

// TestLiveSessionsOverPartitions: the live sessions an action reaches are
// counted over every partition's stream (and only theirs), within the
// same bound in all.
func TestLiveSessionsOverPartitions(t *testing.T) {
	srv := natstest.Start(t)
	e := newSkillEnv(t, srv.JS, nil) // s1 and s2 in SESSIONS: not a partition
	ctx := context.Background()
	places := partition.Places("SESSIONS", "ev", 3)
	for k, p := range places {
		if _, err := srv.JS.CreateStream(ctx, jetstream.StreamConfig{Name: p.Stream, Subjects: []string{events.StreamSubjects(p.Prefix)}}); err != nil {
			t.Fatal(err)
		}
		for i := range k + 2 { // 2, 3 and 4 sessions
			if _, err := srv.JS.Publish(ctx, events.Subject(p.Prefix, fmt.Sprintf("p%d-%d", k, i), events.KindPreStep), []byte(`{}`)); err != nil {
				t.Fatal(err)
			}
		}
	}
	for _, c := range []struct {
		max  int
		want string
	}{
		{0, "9 live sessions"},
		{4, "at least 4 live sessions"}, // 2 of the first partition, 2 of the second
	} {
		cfg := e.cfg
		cfg.Sources.Partitions = places
		cfg.Sources.Skills.MaxLiveScan = c.max
		ts := startConsole(t, cfg)
		cl := client(t)
		signIn(t, cl, ts.URL, operatorToken)
		if _, body := fetchPage(t, cl, ts.URL+"/skills/report/rollback?in=global&rev=1"); !strings.Contains(body, `<strong class="reach">`+c.want+`</strong>`) {
			t.Errorf("bound %d: want %q:\n%s", c.max, c.want, body)
		}
	}
}
