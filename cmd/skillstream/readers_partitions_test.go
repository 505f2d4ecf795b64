package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/processor"
	"github.com/skillstream/skillstream/processor/usage"
	"github.com/skillstream/skillstream/processor/usage/projection"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
)

// partitionedRun is a server that maps the flat sessions under ev over n
// partitions, as a partitioned deployment's server does, a real processor
// per partition (its stream SESSIONS-<k> and prefix evp.<k>), and the
// given sessions played through the mapping by the worker client: each a
// pre-step, a load of b-skill and a second pre-step. Workers publish on
// ev.<session>.<kind> as without partitions.
func partitionedRun(t *testing.T, n int, sids []string) (*natstest.Server, string) {
	t.Helper()
	return partitionedRunIn(t, events.LayoutFlat, n, sids)
}

// partitionedRunIn is partitionedRun in layout l.
func partitionedRunIn(t *testing.T, l events.Layout, n int, sids []string) (*natstest.Server, string) {
	t.Helper()
	srv := natstest.Start(t, natstest.WithTCP())
	src, dest := events.PartitionMapping(events.DefaultPrefix, l, n)
	if err := srv.GlobalAccount().AddMapping(src, dest); err != nil {
		t.Fatal(err)
	}
	cwd := replayProject(t)
	fs, err := agentskills.New(agentskills.Config{NoUserDir: true, NoWatch: true})
	if err != nil {
		t.Fatal(err)
	}
	reg := providers.NewRegistry([]providers.Provider{fs})
	t.Cleanup(func() { reg.Close() })
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	for k := range n {
		cfg := processor.Config{Stream: events.PartitionStream(processor.DefaultStream, k), Prefix: events.PartitionPrefix(events.DefaultPrefix, k),
			Layout: l, AnyOwnerInbox: l == events.LayoutOwner}
		p, err := processor.New(srv.Connect(), reg, cfg, processor.WithLogger(quiet))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		t.Cleanup(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("processor of partition %d: %v", k, err)
			}
		})
		select {
		case <-p.Ready():
		case err := <-done:
			t.Fatalf("processor of partition %d: %v", k, err)
		case <-time.After(30 * time.Second):
			t.Fatalf("processor of partition %d not ready", k)
		}
	}
	c, err := client.New(srv.Connect(), client.WithLayout(l))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tools := []events.Tool{client.SkillTool(processor.DefaultToolOwner)}
	for _, sid := range sids {
		for _, step := range []string{"1", "2"} {
			d, err := c.PreStep(ctx, events.PreStep{V: 1, Session: sid, Step: step, Cwd: cwd, Tools: tools})
			if err != nil {
				t.Fatalf("%s step %s: %v", sid, step, err)
			}
			if step == "1" && d.Outcome != events.OutcomeAppended {
				t.Fatalf("%s step 1: %s", sid, d.Outcome)
			}
			if step == "2" {
				continue
			}
			res, err := c.CallSkill(ctx, events.SkillCall{V: 1, Session: sid, Call: "c1", Cwd: cwd, Args: events.SkillArgs{Name: "b-skill"}})
			if err != nil || res.IsError {
				t.Fatalf("%s load b-skill: %v %+v", sid, err, res.Error)
			}
		}
	}
	return srv, cwd
}

// sessionEvents counts session sid's events in stream under prefix.
func sessionEvents(t *testing.T, js jetstream.JetStream, stream, prefix, sid string) uint64 {
	t.Helper()
	st, err := js.Stream(context.Background(), stream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := st.Info(context.Background(), jetstream.WithSubjectFilter(events.SessionWildcard(prefix, sid)))
	if err != nil {
		t.Fatal(err)
	}
	var n uint64
	for _, c := range info.State.Subjects {
		n += c
	}
	return n
}

// Every session reader finds a session of a partitioned deployment from
// its id alone (--partitions): history, export (and a replay of the
// recording), replay --live, usage --session, and usage and usage --scan
// summed over the partitions' streams.
func TestReadersOverPartitions(t *testing.T) {
	const n = 4
	var sids []string
	for i := range 12 {
		sids = append(sids, "part-"+strconv.Itoa(i))
	}
	srv, _ := partitionedRun(t, n, sids)
	url := srv.URL()

	// The sessions are spread, each kept whole in the partition its id
	// places it in.
	used := map[int]bool{}
	for _, sid := range sids {
		k := events.PartitionOf(events.LayoutFlat, sid, n)
		used[k] = true
		for j := range n {
			got := sessionEvents(t, srv.JS, events.PartitionStream(processor.DefaultStream, j), events.PartitionPrefix(events.DefaultPrefix, j), sid)
			if j == k && got != 5 || j != k && got != 0 {
				t.Fatalf("%s (partition %d): %d events in partition %d", sid, k, got, j)
			}
		}
	}
	if len(used) < 3 {
		t.Fatalf("12 sessions reached only partitions %v", used)
	}

	reader := []string{"--nats-url", url, "--partitions", strconv.Itoa(n)}
	sid := sids[0]
	code, out, stderr := runMain(t, append([]string{"history", "--session", sid}, reader...)...)
	if code != exitOK || !strings.Contains(out, "step 1 (seq") || !strings.Contains(out, "skill c1 (seq") || !strings.Contains(out, "b-skill: ok") {
		t.Errorf("history: exit %d\n%s%s", code, out, stderr)
	}
	rec := filepath.Join(t.TempDir(), sid+".jsonl")
	if code, _, stderr := runMain(t, append([]string{"export", "--session", sid, "--out", rec}, reader...)...); code != exitOK {
		t.Fatalf("export: exit %d\n%s", code, stderr)
	}
	skills := append([]string{"--no-skill-store"}, onlyProject...)
	code, fromFile, stderr := runMain(t, append([]string{"replay", rec}, skills...)...)
	if code != exitOK || !strings.HasSuffix(fromFile, "3 triggers replayed: 3 same, 0 differ\n") {
		t.Errorf("replay of the export: exit %d\n%s%s", code, fromFile, stderr)
	}
	code, live, stderr := runMain(t, append(append([]string{"replay", "--live", "--session", sid}, reader...), skills...)...)
	if code != exitOK || live != fromFile {
		t.Errorf("replay --live: exit %d, differs from the export's replay:\n%s%s", code, live, stderr)
	}

	// eval --since reads every partition's sessions.
	code, out, stderr = runMain(t, append(append([]string{"eval", "--since", "1h"}, reader...), skills...)...)
	if want := fmt.Sprintf("sessions: %d, steps with a catalog in view: %d", len(sids), 2*len(sids)); code != exitOK || !strings.Contains(out, want) {
		t.Errorf("eval --since: exit %d, want %q\n%s%s", code, want, out, stderr)
	}
	code, _, stderr = runMain(t, append(append([]string{"eval", "--since", "1h", "--max-sessions", "5"}, reader...), skills...)...)
	if want := "more sessions in the window than the bound (5 over 4 partitions)"; code == exitOK || !strings.Contains(stderr, want) {
		t.Errorf("eval --since over the bound: exit %d, want %q\n%s", code, want, stderr)
	}

	report := func(args ...string) *usage.Report {
		t.Helper()
		code, out, stderr := runMain(t, append(append([]string{"usage", "--json"}, args...), reader...)...)
		if code != exitOK {
			t.Fatalf("usage %q: exit %d\n%s", args, code, stderr)
		}
		var r usage.Report
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatalf("usage %q: %v\n%s", args, err, out)
		}
		return &r
	}
	loads := func(r *usage.Report) (int, int) {
		for _, s := range r.Skills {
			if s.Name == "b-skill" {
				return s.Loads, s.Sessions
			}
		}
		return 0, 0
	}
	if r := report("--session", sid); r.Stream != events.PartitionStream(processor.DefaultStream, events.PartitionOf(events.LayoutFlat, sid, n)) {
		t.Errorf("usage --session read stream %s", r.Stream)
	} else if l, s := loads(r); l != 1 || s != 1 {
		t.Errorf("usage --session: b-skill %d loads in %d sessions, want 1 in 1", l, s)
	}
	for _, args := range [][]string{{"--scan"}, nil} {
		r := report(args...)
		if l, s := loads(r); l != len(sids) || s != len(sids) || r.Partitions != n || r.Catalogs.Appends["initial"] != len(sids) {
			t.Errorf("usage %q: b-skill %d loads in %d sessions, %d partitions, %d initial catalogs; want %d, %d, %d, %d",
				args, l, s, r.Partitions, r.Catalogs.Appends["initial"], len(sids), len(sids), n, len(sids))
		}
	}
	code, out, _ = runMain(t, append([]string{"usage", "--scan"}, reader...)...)
	if want := "streams SESSIONS-0 to SESSIONS-3 (prefixes evp.0 to evp.3: 4 partitions)"; code != exitOK || !strings.HasPrefix(out, want) {
		t.Errorf("usage --scan: exit %d, want a first line naming the partitions:\n%s", code, out)
	}

	// Each partition's usage projection, in bucket <usage-bucket>-<k>:
	// usage reads and sums them.
	var stops []func()
	for k := range n {
		o := projection.Options{Stream: events.PartitionStream(processor.DefaultStream, k), Prefix: events.PartitionPrefix(events.DefaultPrefix, k),
			Layout: events.LayoutFlat, Bucket: projection.PartitionBucket(projection.DefaultBucket, k), FlushWait: 20 * time.Millisecond}
		proj, err := projection.New(srv.JS, o)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); proj.Run(ctx) }()
		stop := sync.OnceFunc(func() { cancel(); <-done })
		stops = append(stops, stop)
		t.Cleanup(stop)
		natstest.Eventually(t, 30*time.Second, "the projection of partition "+strconv.Itoa(k)+" caught up", func() error {
			r, err := projection.Read(context.Background(), srv.JS, o, time.Time{})
			if err != nil {
				return err
			}
			if r.Projection.LagRecords != 0 || r.Projection.AppliedSeq == 0 {
				return fmt.Errorf("%d records behind", r.Projection.LagRecords)
			}
			return nil
		})
	}
	// serve's use ranking (--catalog-rank use) reads them summed too: a
	// member ranks by the tenant's loads, not its partition's.
	uses := projection.NewUses(srv.JS, projection.Options{Stream: processor.DefaultStream, Prefix: events.DefaultPrefix, Layout: events.LayoutFlat},
		time.Hour, time.Minute).Partitions(n)
	if err := uses.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := uses.Ranking()["b-skill"]; got != len(sids) {
		t.Errorf("the use ranking over %d partitions counts b-skill %d times, want %d", n, got, len(sids))
	}
	r := report()
	if l, s := loads(r); r.Projection == nil || l != len(sids) || s != len(sids) || r.Partitions != n || r.Catalogs.Appends["initial"] != len(sids) {
		t.Errorf("usage from the projections: b-skill %d loads in %d sessions, %d partitions, %d initial catalogs, projection %+v; want %d, %d, %d, %d",
			l, s, r.Partitions, r.Catalogs.Appends["initial"], r.Projection, len(sids), len(sids), n, len(sids))
	}
	// Over time: the partitions' series, summed point by point.
	code, out, stderr = runMain(t, append([]string{"usage", "--by", "hour", "--json"}, reader...)...)
	var series projection.Series
	if code != exitOK {
		t.Fatalf("usage --by hour: exit %d\n%s", code, stderr)
	}
	if err := json.Unmarshal([]byte(out), &series); err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, v := range series.Total.Loads {
		total += v
	}
	if sk := series.Skill("b-skill"); total != len(sids) || series.Partitions != n || sk == nil {
		t.Errorf("usage --by hour: %d loads over %d partitions (b-skill %+v), want %d over %d", total, series.Partitions, sk, len(sids), n)
	}
	// Rebuilt: each partition's projection in turn, and the same sums.
	for _, stop := range stops {
		stop()
	}
	code, out, stderr = runMain(t, append([]string{"usage", "--rebuild"}, reader...)...)
	for k := range n {
		want := fmt.Sprintf("rebuilt the usage projection USAGE-%d from the stream's start: ", k)
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("usage --rebuild: exit %d, want %q\n%s%s", code, want, out, stderr)
		}
	}
	if l, s := loads(report()); l != len(sids) || s != len(sids) {
		t.Errorf("usage after --rebuild: b-skill %d loads in %d sessions, want %d", l, s, len(sids))
	}
	code, out, _ = runMain(t, append([]string{"usage"}, reader...)...)
	if want := "4 partitions), the whole stream: 24 records, 0 unreadable (usage projections USAGE-0 to USAGE-3: 4 hour buckets)"; code != exitOK || !strings.Contains(out, want) {
		t.Errorf("usage: exit %d, want %q:\n%s", code, want, out)
	}
}

// A reader whose partition count does not match the server's streams
// says so and names the count to give, instead of reading the wrong
// stream: no --partitions against partitions, too few, too many, and a
// session found in another partition than its id places it in.
func TestReadersPartitionMismatch(t *testing.T) {
	const n = 4
	srv, _ := partitionedRun(t, n, []string{"mis-0"})
	url := srv.URL()
	sid := "mis-0"
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"history", "--session", sid}, "stream SESSIONS does not exist, but its partitions SESSIONS-0 to SESSIONS-3 do: give --partitions 4"},
		{[]string{"export", "--session", sid}, "give --partitions 4"},
		{[]string{"usage", "--session", sid}, "give --partitions 4"},
		{[]string{"history", "--session", sid, "--partitions", "3"}, "--partitions 3, but stream SESSIONS-3 exists too: the server holds 4 partitions: give --partitions 4"},
		{[]string{"usage", "--scan", "--partitions", "2"}, "give --partitions 4"},
		{[]string{"replay", "--live", "--session", sid, "--partitions", "8", "--no-skill-store"}, "--partitions 8: stream SESSIONS-4 does not exist (the server holds 4 partitions (SESSIONS-0 to SESSIONS-3): give --partitions 4)"},
		{[]string{"history", "--session", sid, "--partitions", "65"}, "--partitions 65: want 0 (none) to 64"},
	} {
		code, out, stderr := runMain(t, append(tc.args, "--nats-url", url)...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, want %d and %q\n%s%s", tc.args, code, exitUsage, tc.want, out, stderr)
		}
	}

	// A session whose events are in another partition than its id's
	// (a server mapping over another count, say).
	stray := ""
	for i := 0; stray == ""; i++ {
		if s := "stray-" + strconv.Itoa(i); events.PartitionOf(events.LayoutFlat, s, n) != 1 {
			stray = s
		}
	}
	if _, err := srv.JS.Publish(context.Background(), events.Subject(events.PartitionPrefix(events.DefaultPrefix, 1), stray, "message.user"), []byte(`{"v":1}`)); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("session %s is not in stream SESSIONS-%d, where --partitions 4 places it, but in stream SESSIONS-1",
		stray, events.PartitionOf(events.LayoutFlat, stray, n))
	for _, args := range [][]string{{"history", "--session", stray}, {"export", "--session", stray}, {"usage", "--session", stray}} {
		code, out, stderr := runMain(t, append(args, "--nats-url", url, "--partitions", "4")...)
		if code != exitUsage || !strings.Contains(stderr, want) {
			t.Errorf("%q: exit %d, want %d and %q\n%s%s", args, code, exitUsage, want, out, stderr)
		}
	}
	// Found nowhere: its partition is named.
	code, _, stderr := runMain(t, "history", "--session", "nowhere", "--nats-url", url, "--partitions", "4")
	if want := fmt.Sprintf("session nowhere has no events in stream SESSIONS-%d (its partition of 4)", events.PartitionOf(events.LayoutFlat, "nowhere", n)); code != exitFailure || !strings.Contains(stderr, want) {
		t.Errorf("history of no session: exit %d, want %q\n%s", code, want, stderr)
	}
}

// In the owner layout a session's partition is the server's partition of
// both its tokens (<owner>.<session>): the readers find it there too.
func TestReadersOverPartitionsOwnerLayout(t *testing.T) {
	const n = 4
	var sids []string
	for i := range 8 {
		sids = append(sids, fmt.Sprintf("w%d.s%d", i%3, i))
	}
	srv, _ := partitionedRunIn(t, events.LayoutOwner, n, sids)
	reader := []string{"--nats-url", srv.URL(), "--partitions", strconv.Itoa(n), "--session-layout", "owner"}
	used := map[int]bool{}
	for _, sid := range sids {
		k := events.PartitionOf(events.LayoutOwner, sid, n)
		used[k] = true
		if got := sessionEvents(t, srv.JS, events.PartitionStream(processor.DefaultStream, k), events.PartitionPrefix(events.DefaultPrefix, k), sid); got != 5 {
			t.Fatalf("%s: %d events in its partition %d", sid, got, k)
		}
		code, out, stderr := runMain(t, append([]string{"history", "--session", sid}, reader...)...)
		if code != exitOK || !strings.Contains(out, "b-skill: ok") {
			t.Errorf("history of %s: exit %d\n%s%s", sid, code, out, stderr)
		}
	}
	if len(used) < 2 {
		t.Errorf("8 sessions reached only partitions %v", used)
	}
	code, out, stderr := runMain(t, append([]string{"usage", "--scan", "--json"}, reader...)...)
	var r usage.Report
	if code != exitOK || json.Unmarshal([]byte(out), &r) != nil || len(r.Skills) != 1 || r.Skills[0].Loads != len(sids) || r.Skills[0].Sessions != len(sids) {
		t.Errorf("usage --scan: exit %d, want %d loads in as many sessions\n%s%s", code, len(sids), out, stderr)
	}
}
