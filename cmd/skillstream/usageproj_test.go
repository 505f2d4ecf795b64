package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/processor/usage"
)

// usageJSON runs usage with args and --json and decodes its report.
func usageJSON(t *testing.T, args ...string) (*usage.Report, string) {
	t.Helper()
	code, stdout, stderr := runMain(t, append(append([]string{"usage"}, args...), "--json")...)
	if code != exitOK {
		t.Fatalf("usage %q: exit %d\n%s", args, code, stderr)
	}
	var rep usage.Report
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("usage %q: %v\n%s", args, err, stdout)
	}
	return &rep, stderr
}

// caughtUpUsage waits until usage reads a projection that lags nothing
// from the server at url, and returns that report.
func caughtUpUsage(t *testing.T, timeout time.Duration, url string) *usage.Report {
	t.Helper()
	var proj *usage.Report
	eventually(t, timeout, "the projection caught up", func() error {
		r, stderr := usageJSON(t, "--nats-url", url)
		if r.Projection == nil {
			return fmt.Errorf("no projection read: %s", stderr)
		}
		if r.Projection.LagRecords != 0 {
			return fmt.Errorf("%d records behind", r.Projection.LagRecords)
		}
		proj = r
		return nil
	})
	return proj
}

// sameUsage fails t where two reports differ in what the projection
// keeps; distinct sessions marked estimated only within 15%.
func sameUsage(t *testing.T, proj, scan *usage.Report) {
	t.Helper()
	if proj.Records != scan.Records || proj.Unreadable != scan.Unreadable || len(proj.Skills) != len(scan.Skills) {
		t.Fatalf("projection %d records, %d unreadable, %d rows; scan %d, %d, %d", proj.Records, proj.Unreadable, len(proj.Skills),
			scan.Records, scan.Unreadable, len(scan.Skills))
	}
	for i, p := range proj.Skills {
		s := scan.Skills[i]
		if p.Name != s.Name || p.Loads != s.Loads || p.Invocations != s.Invocations || fmt.Sprint(p.Errors) != fmt.Sprint(s.Errors) ||
			!p.First.Equal(s.First) || !p.Last.Equal(s.Last) || fmt.Sprint(p.Digests) != fmt.Sprint(s.Digests) {
			t.Errorf("row %d: projection %+v, scan %+v", i, p, s)
		}
		if d := p.Sessions - s.Sessions; (!p.SessionsEstimated && d != 0) || d*d > s.Sessions*s.Sessions/44 {
			t.Errorf("%s: %d sessions (estimated %v), the scan %d", p.Name, p.Sessions, p.SessionsEstimated, s.Sessions)
		}
	}
	if fmt.Sprint(proj.Catalogs) != fmt.Sprint(scan.Catalogs) || fmt.Sprint(proj.ListedNeverUsed) != fmt.Sprint(scan.ListedNeverUsed) {
		t.Errorf("catalogs %+v %v, the scan %+v %v", proj.Catalogs, proj.ListedNeverUsed, scan.Catalogs, scan.ListedNeverUsed)
	}
	ps, ss := proj.Searches, scan.Searches
	if ps.Searches != ss.Searches || ps.Found != ss.Found || ps.NoMatch != ss.NoMatch || fmt.Sprint(ps.Errors) != fmt.Sprint(ss.Errors) ||
		fmt.Sprint(ps.NoMatchQueries) != fmt.Sprint(ss.NoMatchQueries) || ps.Sessions != ss.Sessions {
		t.Errorf("searches %+v, the scan %+v", ps, ss)
	}
}

// TestUsageProjectionThroughServe plays sessions through serve, whose
// projector keeps the usage projection: usage reads it (the same counts
// as --scan, the estimated sessions marked ~, what it does not keep
// said), --since 7d reads a week of hours, --rebuild counts the stream
// again, and the metrics show the projector at work.
func TestUsageProjectionThroughServe(t *testing.T) {
	root := searchRoot(t)
	data := t.TempDir()
	cwd := t.TempDir()
	s := startServe(t, data, root, "--skill-search", "--catalog-listed-max", "3", "--usage-projection")
	c, err := client.New(s.connect(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tools := []events.Tool{client.SkillTool("skillstream"), client.SkillSearchTool("skillstream")}
	for i := range 40 {
		sid := "p" + strconv.Itoa(i)
		if _, err := c.PreStep(ctx, events.PreStep{Session: sid, Step: "1", Cwd: cwd, Tools: tools}); err != nil {
			t.Fatalf("%s: %v", sid, err)
		}
		if _, err := c.CallSkill(ctx, events.SkillCall{Session: sid, Call: "c1", Cwd: cwd, Args: events.SkillArgs{Name: "k8s-deploy"}}); err != nil {
			t.Fatal(err)
		}
		if i%4 == 0 {
			if _, err := c.SearchSkills(ctx, events.SkillSearch{Session: sid, Call: "s1", Cwd: cwd, Args: events.SearchArgs{Query: "deploy a service"}}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.SearchSkills(ctx, events.SkillSearch{Session: sid, Call: "s2", Cwd: cwd, Args: events.SearchArgs{Query: "quantum chromodynamics"}}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.CallSkill(ctx, events.SkillCall{Session: sid, Call: "c2", Cwd: cwd, Args: events.SkillArgs{Name: "nope"}}); err != nil {
				t.Fatal(err)
			}
		}
		if i%10 == 0 {
			if _, err := c.CallSkill(ctx, events.SkillCall{Session: sid, Call: "c3", Cwd: cwd, Args: events.SkillArgs{Name: "git-review"}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	c.Close()

	proj := caughtUpUsage(t, 30*time.Second, s.url)
	scan, _ := usageJSON(t, "--nats-url", s.url, "--scan")
	if scan.Projection != nil || scan.Records < 100 {
		t.Fatalf("--scan: %+v", scan)
	}
	sameUsage(t, proj, scan)
	for _, r := range proj.Skills {
		// 40 sessions of k8s-deploy: within the exact range.
		if r.SessionsEstimated {
			t.Errorf("%s: sessions estimated (%d sessions)", r.Name, r.Sessions)
		}
	}
	if p := proj.Projection; p.Bucket != "USAGE" || len(p.NotKept) == 0 || p.AppliedSeq == 0 || p.Read < 1 {
		t.Errorf("projection %+v", p)
	}

	code, out, stderr := runMain(t, "usage", "--nats-url", s.url)
	if code != exitOK {
		t.Fatalf("usage: exit %d\n%s", code, stderr)
	}
	for _, want := range []string{
		"(usage projection USAGE: ",
		"skills found then loaded: not kept by the projection",
		"from the usage projection; --scan reads the stream",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "~: an estimate") {
		t.Errorf("table says it estimates, counting exactly:\n%s", out)
	}
	if !hasRow(out, []string{"k8s-deploy", "40", "0", "0", "40"}) || !hasRow(out, []string{"_unknown", "0", "0", "unknown=10", "10"}) {
		t.Errorf("table rows:\n%s", out)
	}

	week, _ := usageJSON(t, "--nats-url", s.url, "--since", "7d")
	if week.Projection == nil || week.Projection.Hours < 168 || week.Records != proj.Records || week.Since.Minute() != 0 {
		t.Errorf("--since 7d: %d records over %+v, since %v", week.Records, week.Projection, week.Since)
	}

	code, out, stderr = runMain(t, "usage", "--nats-url", s.url, "--rebuild")
	if want := fmt.Sprintf("rebuilt the usage projection USAGE from the stream's start: %d output records applied (0 unreadable)", scan.Records); code != exitOK || !strings.Contains(out, want) {
		t.Errorf("--rebuild: exit %d, want %q\n%s%s", code, want, out, stderr)
	}
	again, _ := usageJSON(t, "--nats-url", s.url)
	sameUsage(t, again, scan)

	_, metrics, err := s.get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(metrics, `skillstream_usage_projection_records_total{result="applied"}`) || !strings.Contains(metrics, "skillstream_usage_projection_applied_seq") {
		t.Errorf("metrics lack the projector's:\n%s", metrics)
	}
	if !strings.Contains(s.stderr.String(), "usage projection: active") {
		t.Errorf("serve did not log the projector's start:\n%s", s.stderr)
	}
}

// TestUsageProjectionFallbackAndRebuild: without a projection usage reads
// the stream and says so; --rebuild builds one; records appended after it
// (no projector running) are read from the stream and counted, the report
// saying how far behind the projection is; bad combinations are refused.
func TestUsageProjectionFallbackAndRebuild(t *testing.T) {
	l, url := newUsageLog(t)
	l.recordWorkload()

	rep, stderr := usageJSON(t, "--nats-url", url)
	if rep.Projection != nil || !strings.Contains(stderr, "no usage projection: bucket USAGE does not exist: reading the stream instead") {
		t.Errorf("without a projection: %+v, stderr %q", rep.Projection, stderr)
	}
	scan := rep

	code, out, stderr := runMain(t, "usage", "--nats-url", url, "--rebuild")
	if code != exitOK || !strings.Contains(out, "rebuilt the usage projection USAGE from the stream's start: 15 output records applied (2 unreadable)") {
		t.Fatalf("--rebuild: exit %d\n%s%s", code, out, stderr)
	}
	proj, _ := usageJSON(t, "--nats-url", url)
	if proj.Projection == nil || proj.Projection.LagRecords != 0 {
		t.Fatalf("after --rebuild: %+v", proj.Projection)
	}
	sameUsage(t, proj, scan)

	l.load("s3", "c9", "a", "d1aaaaaaaaaaaaaaaa", 7)
	code, out, stderr = runMain(t, "usage", "--nats-url", url)
	if code != exitOK || !strings.Contains(out, "the projection is 1 output record (") || !strings.Contains(out, "read from the stream, they are counted") {
		t.Errorf("a record after the projection: exit %d\n%s%s", code, out, stderr)
	}
	proj, _ = usageJSON(t, "--nats-url", url)
	scan, _ = usageJSON(t, "--nats-url", url, "--scan")
	sameUsage(t, proj, scan)
	if !proj.Projection.LagCounted || proj.Projection.LagRecords != 1 {
		t.Errorf("lag %+v", proj.Projection)
	}

	// --session and --project read the stream, without a word.
	rep, stderr = usageJSON(t, "--nats-url", url, "--session", "s1")
	if rep.Projection != nil || rep.Session != "s1" || strings.Contains(stderr, "projection") {
		t.Errorf("--session: %+v, stderr %q", rep.Projection, stderr)
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--rebuild", "--scan"}, "--rebuild rebuilds the whole projection"},
		{[]string{"--rebuild", "--session", "s1"}, "--rebuild rebuilds the whole projection"},
		{[]string{"--since", "7x"}, `--since "7x": want a duration (24h, 7d)`},
		{[]string{"--usage-bucket", "a.b"}, "bucket name"},
	} {
		code, _, stderr := runMain(t, append([]string{"usage", "--nats-url", url}, tt.args...)...)
		if code == exitOK || !strings.Contains(stderr, tt.want) {
			t.Errorf("usage %q: exit %d, stderr %q; want %q", tt.args, code, stderr, tt.want)
		}
	}
}

// TestUsageProjectionSinceDays: --since takes whole days before a
// duration.
func TestUsageProjectionSinceDays(t *testing.T) {
	now := time.Date(2026, 11, 8, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"7d":    now.Add(-7 * 24 * time.Hour),
		"1d12h": now.Add(-36 * time.Hour),
		"90m":   now.Add(-90 * time.Minute),
	} {
		got, err := parseSince(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("--since %s: %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"d", "-1d", "7d5", "0d", "1.5d"} {
		if _, err := parseSince(in, now); err == nil {
			t.Errorf("--since %s accepted", in)
		}
	}
}

// TestUsageProjectionOwnerLayout: serve --session-layout owner keeps the
// projection of its owner sessions, and usage --session-layout owner
// reads it, counting what --scan counts; read with the flat layout, the
// bucket is refused as another stream's and the stream is read instead.
func TestUsageProjectionOwnerLayout(t *testing.T) {
	root := searchRoot(t)
	// One client for two owners (a trusted deployment): answers on its
	// inboxes, whatever the session's owner.
	s := startServe(t, t.TempDir(), root, "--session-layout", "owner", "--any-owner-inbox", "--usage-projection")
	c, err := client.New(s.connect(t), client.WithLayout(events.LayoutOwner))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cwd := t.TempDir()
	for _, sid := range []string{"a1.s1", "a1.s2", "a2.s1"} {
		if _, err := c.PreStep(ctx, events.PreStep{Session: sid, Step: "1", Cwd: cwd, Tools: []events.Tool{client.SkillTool("skillstream")}}); err != nil {
			t.Fatal(err)
		}
		if _, err := c.CallSkill(ctx, events.SkillCall{Session: sid, Call: "c1", Cwd: cwd, Args: events.SkillArgs{Name: "unit-tests"}}); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	owner := []string{"--nats-url", s.url, "--session-layout", "owner"}
	var proj *usage.Report
	eventually(t, 30*time.Second, "the projection caught up", func() error {
		r, stderr := usageJSON(t, owner...)
		if r.Projection == nil || r.Projection.LagRecords != 0 {
			return fmt.Errorf("not yet: %+v %s", r.Projection, stderr)
		}
		proj = r
		return nil
	})
	scan, _ := usageJSON(t, append(owner, "--scan")...)
	sameUsage(t, proj, scan)
	if len(proj.Skills) != 1 || proj.Skills[0].Loads != 3 || proj.Skills[0].Sessions != 3 {
		t.Errorf("owner sessions: %+v", proj.Skills)
	}
	flat, stderr := usageJSON(t, "--nats-url", s.url)
	if flat.Projection != nil || !strings.Contains(stderr, "projects stream SESSIONS, prefix ev, owner layout") {
		t.Errorf("the flat layout on an owner projection: %+v, stderr %q", flat.Projection, stderr)
	}
}

// TestUsageProjectionProcessorKilled: a serve member keeping the
// projection is killed (SIGKILL: no cleanup, its lease left to expire)
// while sessions run; a second member takes the triggers in flight and
// the lease over, and the projection then counts what a scan of the
// stream counts, outputs read from their Usage-Summary headers included.
func TestUsageProjectionProcessorKilled(t *testing.T) {
	srv := natstest.Start(t, natstest.WithTCP())
	root := searchRoot(t)
	cwd := t.TempDir()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"serve", "--nats-url", srv.ClientURL(), "--no-bundled", "--user-skills-dir=", "--skills-dir", root,
		"--usage-projection", "--ack-wait", "2s", "--log-format", "json"}
	victim := exec.Command(exe, args...)
	victim.Env = append(os.Environ(), benchExecMain+"=1")
	var victimLog syncBuffer
	victim.Stderr = &victimLog
	if err := victim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = victim.Process.Kill(); _ = victim.Wait() })
	eventually(t, 30*time.Second, "the first member projects", func() error {
		if !strings.Contains(victimLog.String(), "usage projection: active") {
			return fmt.Errorf("not yet:\n%s", victimLog.String())
		}
		return nil
	})

	c, err := client.New(srv.Connect(), client.WithRetryInterval(time.Second), client.WithMaxAttempts(30))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	tools := []events.Tool{client.SkillTool("skillstream")}
	session := func(i int) error {
		sid := "k" + strconv.Itoa(i)
		if _, err := c.PreStep(ctx, events.PreStep{Session: sid, Step: "1", Cwd: cwd, Tools: tools}); err != nil {
			return fmt.Errorf("%s: %w", sid, err)
		}
		if _, err := c.CallSkill(ctx, events.SkillCall{Session: sid, Call: "c1", Cwd: cwd, Args: events.SkillArgs{Name: "k8s-deploy"}}); err != nil {
			return err
		}
		if i%5 == 0 {
			if _, err := c.CallSkill(ctx, events.SkillCall{Session: sid, Call: "c2", Cwd: cwd, Args: events.SkillArgs{Name: "nope"}}); err != nil {
				return err
			}
		}
		return nil
	}
	for i := range 20 {
		if err := session(i); err != nil {
			t.Fatal(err)
		}
	}
	// Sessions in flight when the member dies.
	var wg sync.WaitGroup
	errs := make(chan error, 40)
	for i := 20; i < 60; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := session(i); err != nil {
				errs <- err
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	if err := victim.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = victim.Wait()
	mport := freePort(t)
	heir := runServe(t, 0, mport, "the second member serves", func(ctx context.Context, stderr io.Writer) int {
		return Main(ctx, append(args, "--metrics-listen", "127.0.0.1:"+strconv.Itoa(mport)), io.Discard, stderr)
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	// The victim's lease expires; the heir takes it and catches up.
	proj := caughtUpUsage(t, 60*time.Second, srv.ClientURL())
	scan, _ := usageJSON(t, "--nats-url", srv.ClientURL(), "--scan")
	if scan.Records < 60*2+12 {
		t.Fatalf("--scan: %d records", scan.Records)
	}
	sameUsage(t, proj, scan)
	_, metrics, err := heir.get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`skillstream_usage_projection_reads_total\{from="header"\} [1-9]`).MatchString(metrics) {
		t.Errorf("the heir counted nothing from a Usage-Summary header:\n%s", metrics)
	}
	if !strings.Contains(heir.stderr.String(), "usage projection: active") {
		t.Errorf("the heir never took the projection over:\n%s", heir.stderr)
	}
	// The reports above (tens of them while the heir caught up) left no
	// consumer behind: a server keeps 1,000 per stream at most.
	st, err := srv.JS.Stream(ctx, "SESSIONS")
	if err != nil {
		t.Fatal(err)
	}
	for name := range st.ConsumerNames(ctx).Name() {
		if name != "skillstream" && name != "skillstream-usage" {
			t.Errorf("a usage report left consumer %s behind", name)
		}
	}
}

// TestUsageTableMarksEstimates: a row whose distinct sessions the
// projection estimated prints ~N, and the table's footnote says past how
// many sessions it estimates, and how closely.
func TestUsageTableMarksEstimates(t *testing.T) {
	r := &usage.Report{Stream: "SESSIONS", Prefix: "ev", Projection: &usage.ProjectionInfo{Bucket: "USAGE", Read: 1},
		Skills: []usage.SkillUsage{{Name: "busy", Loads: 9000, Sessions: 2513, SessionsEstimated: true}, {Name: "quiet", Loads: 3, Sessions: 2}}}
	var b strings.Builder
	printUsage(&b, r)
	out := b.String()
	for _, want := range []string{"~2513", "~: an estimate: distinct sessions past 1024 per skill and hour (8,192 in all) are counted by a HyperLogLog sketch, within about 0.6% (one standard error)"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if !hasRow(out, []string{"quiet", "3", "0", "0", "2"}) {
		t.Errorf("quiet row:\n%s", out)
	}
}

// TestUsageProjectionByDefault: under the shipped permission file, serve
// connected as its processor user with no projection flag keeps the
// usage projection (its bucket filled with the sessions' loads, usage
// reading it as the operator, serve refused nothing), and with
// --no-usage-projection creates neither the bucket nor its consumer.
func TestUsageProjectionByDefault(t *testing.T) {
	for _, off := range []bool{false, true} {
		t.Run(fmt.Sprintf("off=%v", off), func(t *testing.T) {
			natsURL, pw := permServer(t)
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			args := []string{"serve", "--nats-url", natsURL, "--nats-user", "processor", "--nats-password", pw["processor"],
				"--no-bundled", "--user-skills-dir=", "--skills-dir", searchRoot(t), "--workers", "2"}
			if off {
				args = append(args, "--no-usage-projection")
			}
			t.Chdir(t.TempDir())
			logs := runPermittedServe(t, args, "processor started")

			a, err := client.Connect(userURL(t, natsURL, "worker-a", pw["worker-a"]), client.WithInboxPrefix("_INBOX.worker-a"))
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			cwd := t.TempDir()
			for i := range 3 {
				sid := "d" + strconv.Itoa(i)
				if _, err := a.PreStep(ctx, events.PreStep{Session: sid, Step: "1", Cwd: cwd, Tools: []events.Tool{client.SkillTool("skillstream")}}); err != nil {
					t.Fatal(err)
				}
				if r, err := a.CallSkill(ctx, events.SkillCall{Session: sid, Call: "c1", Cwd: cwd, Args: events.SkillArgs{Name: "k8s-deploy"}}); err != nil || r.IsError {
					t.Fatalf("%s: %+v, %v", sid, r, err)
				}
			}

			operator := userURL(t, natsURL, "operator", pw["operator"])
			if !off {
				proj := caughtUpUsage(t, 30*time.Second, operator)
				if len(proj.Skills) == 0 || proj.Skills[0].Name != "k8s-deploy" || proj.Skills[0].Loads != 3 || proj.Skills[0].Sessions != 3 {
					t.Errorf("projection's skills %+v", proj.Skills)
				}
				if !strings.Contains(logs.String(), "usage projection: active") {
					t.Errorf("serve did not log the projector's start:\n%s", logs)
				}
				return
			}
			rep, stderr := usageJSON(t, "--nats-url", operator)
			if rep.Projection != nil || len(rep.Skills) == 0 || rep.Skills[0].Loads != 3 {
				t.Errorf("usage with no projection: %+v, %s", rep, stderr)
			}
			nc, err := nats.Connect(operator)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			js, _ := jetstream.New(nc)
			if _, err := js.KeyValue(ctx, "USAGE"); !errors.Is(err, jetstream.ErrBucketNotFound) {
				t.Errorf("bucket USAGE with --no-usage-projection: %v", err)
			}
			st, err := js.Stream(ctx, "SESSIONS")
			if err != nil {
				t.Fatal(err)
			}
			for name := range st.ConsumerNames(ctx).Name() {
				if strings.HasSuffix(name, "-usage") {
					t.Errorf("consumer %s with --no-usage-projection", name)
				}
			}
			if strings.Contains(logs.String(), "usage projection") {
				t.Errorf("serve logged a projector:\n%s", logs)
			}
		})
	}
}
