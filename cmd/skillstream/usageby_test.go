package main

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
	"github.com/skillstream/skillstream/processor/usage/projection"
)

// TestUsageBy: usage --by hour|day prints the projection's series (the
// points the console plots), whose sums are the window's report; with a
// skill name, that skill's series alone; --by with a stream read, or a
// step other than hour or day, is a usage error.
func TestUsageBy(t *testing.T) {
	root := searchRoot(t)
	cwd := t.TempDir()
	s := startServe(t, t.TempDir(), root, "--skill-search", "--usage-projection")
	c, err := client.New(s.connect(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	tools := []events.Tool{client.SkillTool("skillstream"), client.SkillSearchTool("skillstream")}
	for i := range 6 {
		sid := "b" + strconv.Itoa(i)
		if _, err := c.PreStep(ctx, events.PreStep{Session: sid, Step: "1", Cwd: cwd, Tools: tools}); err != nil {
			t.Fatal(err)
		}
		if i%2 == 0 {
			if _, err := c.SearchSkills(ctx, events.SkillSearch{Session: sid, Call: "s1", Cwd: cwd, Args: events.SearchArgs{Query: "deploy a service"}}); err != nil {
				t.Fatal(err)
			}
			if _, err := c.SearchSkills(ctx, events.SkillSearch{Session: sid, Call: "s2", Cwd: cwd, Args: events.SearchArgs{Query: "quantum chromodynamics"}}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := c.CallSkill(ctx, events.SkillCall{Session: sid, Call: "c1", Cwd: cwd, Args: events.SkillArgs{Name: "k8s-deploy"}}); err != nil {
			t.Fatal(err)
		}
		if i%3 == 0 {
			if _, err := c.CallSkill(ctx, events.SkillCall{Session: sid, Call: "c2", Cwd: cwd, Args: events.SkillArgs{Name: "nope"}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	c.Close()
	rep := caughtUpUsage(t, 30*time.Second, s.url)

	series := func(args ...string) *projection.Series {
		t.Helper()
		code, stdout, stderr := runMain(t, append([]string{"usage", "--nats-url", s.url, "--json"}, args...)...)
		if code != exitOK {
			t.Fatalf("usage %q: exit %d\n%s", args, code, stderr)
		}
		var v projection.Series
		if err := json.Unmarshal([]byte(stdout), &v); err != nil {
			t.Fatalf("usage %q: %v\n%s", args, err, stdout)
		}
		return &v
	}
	total := func(xs []int) (n int) {
		for _, x := range xs {
			n += x
		}
		return n
	}
	hours := series("--by", "hour")
	if len(hours.Times) != 48 || hours.Step != projection.ByHour || len(hours.Total.Loads) != 48 {
		t.Fatalf("--by hour: %d points, step %q", len(hours.Times), hours.Step)
	}
	loads, errs := 0, 0
	for _, r := range rep.Skills {
		loads += r.Loads
		for _, n := range r.Errors {
			errs += n
		}
	}
	for _, n := range rep.Searches.Errors {
		errs += n
	}
	tt := hours.Total
	if total(tt.Loads) != loads || total(tt.Searches) != rep.Searches.Searches || total(tt.NoMatch) != rep.Searches.NoMatch || total(tt.Errors) != errs ||
		loads != 6 || rep.Searches.NoMatch != 3 || errs != 2 {
		t.Errorf("--by hour sums: %+v; the report: %d loads, %+v, %d errors", tt, loads, rep.Searches, errs)
	}
	if got := total(tt.SearchThenLoad); got != 3 {
		t.Errorf("search then load: %d, want 3 (k8s-deploy found, then loaded, in three sessions)", got)
	}
	days := series("--by", "day", "--since", "3d")
	if len(days.Times) != 4 || total(days.Total.Loads) != loads {
		t.Errorf("--by day --since 3d: %d points, %d loads", len(days.Times), total(days.Total.Loads))
	}
	one := series("k8s-deploy", "--by", "hour")
	if len(one.Skills) != 1 || one.Skills[0].Name != "k8s-deploy" || total(one.Skills[0].Loads) != 6 || total(one.Skills[0].Found) != 3 {
		t.Errorf("usage k8s-deploy --by hour: %+v", one.Skills)
	}

	code, out, stderr := runMain(t, "usage", "--nats-url", s.url, "--by", "day")
	if code != exitOK || !strings.Contains(out, "usage by day (UTC)") || !strings.Contains(out, "SEARCH-THEN-LOAD") {
		t.Errorf("--by day: exit %d\n%s%s", code, out, stderr)
	}
	today := time.Now().UTC().Format("2006-01-02")
	if !hasRow(out, []string{today, strconv.Itoa(loads), strconv.Itoa(rep.Searches.Searches), "3", "3", strconv.Itoa(errs)}) {
		t.Errorf("--by day: no row for today:\n%s", out)
	}
	for _, bad := range [][]string{{"--by", "week"}, {"--by", "hour", "--scan"}, {"--by", "day", "--rebuild"}} {
		code, _, stderr := runMain(t, append([]string{"usage", "--nats-url", s.url}, bad...)...)
		if code != exitUsage || !strings.Contains(stderr, "--by") {
			t.Errorf("usage %q: exit %d\n%s", bad, code, stderr)
		}
	}
}

// TestUsageHelp keeps usage's manual as a golden file.
func TestUsageHelp(t *testing.T) {
	code, out, _ := runMain(t, "usage", "--help")
	if code != exitOK {
		t.Fatalf("usage --help: exit %d", code)
	}
	golden(t, "help_usage.golden", out)
}
