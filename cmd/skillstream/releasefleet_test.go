package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/providers/store"
)

// fleetMember is one `serve` of a consumer group on a shared NATS server,
// with its own skills folder and metrics port, started again by restart.
type fleetMember struct {
	t     *testing.T
	args  []string
	mport int
	s     *served
}

func startFleetMember(t *testing.T, url string, i int) *fleetMember {
	t.Helper()
	m := &fleetMember{t: t, mport: freePort(t)}
	m.args = []string{"serve", "--nats-url", url,
		"--metrics-listen", "127.0.0.1:" + strconv.Itoa(m.mport),
		"--no-bundled", "--user-skills-dir=", "--skills-dir", t.TempDir(),
		"--instance", "member" + strconv.Itoa(i), "--catalog-updates", "changes",
		"--log-format", "json"}
	m.start()
	return m
}

func (m *fleetMember) start() {
	m.t.Helper()
	m.s = runServe(m.t, 0, m.mport, "serve ready", func(ctx context.Context, stderr io.Writer) int {
		return Main(ctx, m.args, io.Discard, stderr)
	})
}

func (m *fleetMember) restart() {
	m.t.Helper()
	if code := m.s.stop(); code != exitOK {
		m.t.Fatalf("restart: exit %d\n%s", code, m.s.stderr)
	}
	m.start()
}

// The acceptance run of releases: three serve members in one consumer
// group, 1,000 sessions, a store skill released to 10% of them with the
// commands a user runs. The sessions that get the candidate are the ones
// catalog.InCanary names (so every member decided alike), about 10% of
// them; a member restart changes no session's catalog; a promote is one
// change list for every session that did not have the candidate and
// nothing for those that did; a rollback of a new canary is one change
// list for its sessions and nothing for the others; a global pin holds
// every session through a release, a promote and a rollback.
//
// 1,000 sessions make eight rounds of 1,000 pre-steps, 32 in flight;
// each pre-step is cheap (one store skill, one project view, a catalog of
// one entry). The pinned phase checks the pin through a release promoted
// and a release rolled back with one round each (not one round per
// command) to keep the run near half a minute under the race detector on
// two cores.
func TestReleaseFleetCanaryPromoteRollbackPin(t *testing.T) {
	const (
		sessions = 1000
		skill    = "commit-message"
	)
	srv := natstest.Start(t, natstest.WithTCP())
	url := srv.URL()
	run := func(args ...string) string {
		t.Helper()
		code, stdout, stderr := runMain(t, append(append([]string{"skills"}, args...), "--nats-url", url)...)
		if code != exitOK {
			t.Fatalf("skills %v: exit %d\n%s%s", args, code, stdout, stderr)
		}
		return stdout + stderr
	}
	status := func() store.Status {
		t.Helper()
		var st store.Status
		if out := run("status", skill, "--json"); json.Unmarshal([]byte(out), &st) != nil {
			t.Fatalf("status --json:\n%s", out)
		}
		return st
	}
	pushed := t.TempDir()
	push := func(desc string, flags ...string) {
		t.Helper()
		writeFile(t, pushed, skill+"/SKILL.md", skillMD("Steps for: "+desc, "name: "+skill, "description: "+desc))
		run(append([]string{"push", pushed}, flags...)...)
	}
	descs := []string{"", "Writes commit messages.", "Writes commit messages, subject and body.", "Writes commit messages as haiku."}
	push(descs[1])
	push(descs[2], "--draft")
	run("release", skill, "2", "--canary", "10%")
	st := status()
	if st.Channel != "canary" || st.Share != 1000 || st.Candidate == nil || st.Candidate.Rev != 2 {
		t.Fatalf("status after the release: %+v", st)
	}
	rel2 := catalog.NewRelease(skill, st.Candidate.Digest, st.Share)

	members := []*fleetMember{startFleetMember(t, url, 0), startFleetMember(t, url, 1), startFleetMember(t, url, 2)}
	nc := srv.Connect()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	// indexSeq is the store index's newest revision: a pre-step asking for
	// it is decided on a view of the store that has applied every command
	// run so far, on whichever member takes it.
	indexSeq := func() uint64 {
		t.Helper()
		s, err := js.Stream(context.Background(), "KV_"+skillstore.DefaultBucket)
		if err != nil {
			t.Fatal(err)
		}
		info, err := s.Info(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return info.State.LastSeq
	}
	c, err := client.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cwd := t.TempDir()
	tools := []events.Tool{client.SkillTool("skillstream")}
	sid := func(i int) string { return fmt.Sprintf("fleet-%04d", i) }
	// round is one pre-step of every session, 32 at a time.
	round := func(step int) []events.Decision {
		t.Helper()
		out := make([]events.Decision, sessions)
		errs := make([]error, sessions)
		minRev := indexSeq()
		next := make(chan int)
		var wg sync.WaitGroup
		for range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range next {
					out[i], errs[i] = c.PreStep(ctx, events.PreStep{Session: sid(i), Step: strconv.Itoa(step), Cwd: cwd, Tools: tools, MinStoreRevision: minRev})
				}
			}()
		}
		for i := range sessions {
			next <- i
		}
		close(next)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Fatalf("%s step %d: %v", sid(i), step, err)
			}
			if d := out[i]; d.Error != nil || d.Outcome == events.OutcomeBehind || d.Outcome == events.OutcomeDiverged {
				t.Fatalf("%s step %d: %+v", sid(i), step, d)
			}
		}
		return out
	}
	// origin is the revision and channel a decision's catalog names for
	// the skill.
	origin := func(d events.Decision) events.EntryOrigin {
		if d.Catalog != nil {
			for _, o := range d.Catalog.Source.Origins {
				if o.Name == skill {
					return o
				}
			}
		}
		return events.EntryOrigin{}
	}
	// expectChanges checks a round: the sessions changed(i) says get
	// exactly one change list naming the skill changed to desc, the others
	// nothing.
	expectChanges := func(what string, ds []events.Decision, changed func(i int) bool, desc string) int {
		t.Helper()
		n, bad := 0, 0
		for i, d := range ds {
			if !changed(i) {
				if d.Outcome != events.OutcomeUnchanged {
					bad++
					if bad <= 3 {
						t.Errorf("%s: %s should be unchanged: %+v", what, sid(i), d)
					}
				}
				continue
			}
			n++
			if d.Outcome != events.OutcomeAppended || d.Catalog == nil || d.Catalog.Source.Update != events.UpdateChanges ||
				len(d.Catalog.Source.Changes) != 1 || d.Catalog.Source.Changes[0].Name != skill ||
				d.Catalog.Source.Changes[0].Change != events.ChangeChanged || !strings.Contains(d.Catalog.Text, desc) {
				bad++
				if bad <= 3 {
					t.Errorf("%s: %s should get one change list to %q: %+v", what, sid(i), desc, d)
				}
			}
		}
		if bad > 0 {
			t.Fatalf("%s: %d of %d sessions wrong", what, bad, sessions)
		}
		return n
	}

	// Step 1: every session's first catalog, the candidate for those
	// InCanary names.
	ds := round(1)
	inCanary := make([]bool, sessions)
	canary := 0
	served := map[string]int{}
	for i, d := range ds {
		inCanary[i] = catalog.InCanary("", sid(i), rel2)
		o := origin(d)
		if d.Outcome != events.OutcomeAppended || d.Catalog.Source.Update != "initial" {
			t.Fatalf("%s step 1: %+v", sid(i), d)
		}
		if d.Catalog.Source.View != nil {
			served[d.Catalog.Source.View.Instance]++
		}
		want := events.EntryOrigin{Name: skill, Rev: 1, Digest: o.Digest, Channel: "stable"}
		if inCanary[i] {
			canary++
			want = events.EntryOrigin{Name: skill, Rev: 2, Digest: rel2.Candidate, Channel: "canary"}
		}
		if o != want {
			t.Fatalf("%s (in the canary: %v) got %+v, want %+v", sid(i), inCanary[i], o, want)
		}
	}
	margin := 3 * math.Sqrt(sessions*0.1*0.9)
	t.Logf("%d of %d sessions in the 10%% canary (100 ± %.1f); first catalogs by member: %v", canary, sessions, margin, served)
	if math.Abs(float64(canary)-100) > margin {
		t.Fatalf("%d sessions in a 10%% canary of %d, outside 100 ± %.1f", canary, sessions, margin)
	}
	if len(served) != len(members) {
		t.Errorf("first catalogs appended by %v, want all %d members", served, len(members))
	}

	// A member restarts: no session's catalog changes.
	members[1].restart()
	expectChanges("after a restart", round(2), func(int) bool { return false }, "")

	// Promote: one change list for every session that had the stable
	// revision, nothing for the canary.
	run("promote", skill)
	if n := expectChanges("promote", round(3), func(i int) bool { return !inCanary[i] }, descs[2]); n != sessions-canary {
		t.Fatalf("promote changed %d sessions, want %d", n, sessions-canary)
	}

	// A new canary, then its rollback: its sessions change twice, the
	// others never.
	push(descs[3], "--draft")
	run("release", skill, "3", "--canary", "10%")
	st = status()
	rel3 := catalog.NewRelease(skill, st.Candidate.Digest, st.Share)
	in3 := func(i int) bool { return catalog.InCanary("", sid(i), rel3) }
	n3 := expectChanges("a second canary", round(4), in3, descs[3])
	t.Logf("%d sessions in the second canary", n3)
	if math.Abs(float64(n3)-100) > margin {
		t.Fatalf("%d sessions in the second 10%% canary, outside 100 ± %.1f", n3, margin)
	}
	run("rollback", skill, "--scope", "global")
	expectChanges("rollback", round(5), in3, descs[2])

	// A global pin to rev 1: every session goes back to it, then holds
	// through a release, its promote, and a release rolled back.
	run("pin", skill+"@1", "--scope", "global")
	ds = expectChangesAll(t, expectChanges, round(6), descs[1])
	for i, d := range ds {
		if o := origin(d); o.Rev != 1 || o.Channel != "pin" {
			t.Fatalf("%s pinned: origin %+v", sid(i), o)
		}
	}
	none := func(int) bool { return false }
	push(descs[3], "--draft")
	run("release", skill, strconv.FormatUint(status().Candidate.Rev, 10), "--canary", "50%")
	run("promote", skill)
	expectChanges("pinned, a canary promoted", round(7), none, "")
	push(descs[2], "--draft")
	run("release", skill, strconv.FormatUint(status().Candidate.Rev, 10), "--canary", "50%")
	run("rollback", skill, "--scope", "global")
	expectChanges("pinned, a canary rolled back", round(8), none, "")
	if st := status(); len(st.Pins) != 1 || st.Pins[0].Scope != "global" || st.Pins[0].Rev != 1 || st.Channel != "stable" {
		t.Errorf("status after the pinned releases: %+v", st)
	}
}

// expectChangesAll is expect over every session, returning the decisions.
func expectChangesAll(t *testing.T, expect func(string, []events.Decision, func(int) bool, string) int, ds []events.Decision, desc string) []events.Decision {
	t.Helper()
	if n := expect("every session", ds, func(int) bool { return true }, desc); n != len(ds) {
		t.Fatalf("%d of %d sessions changed", n, len(ds))
	}
	return ds
}
