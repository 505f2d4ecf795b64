package main

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
	"github.com/skillstream/skillstream/processor/usage"
	"github.com/skillstream/skillstream/processor/usage/projection"
)

// TestUsageMadeUpNames: a worker calling the skill tool with more made-up
// names than an hour of the usage projection has rows (and the metrics
// labels) leaves the real skills loaded afterwards their own rows and
// series: the made-up names are counted in one row and one label,
// _unknown, and nothing is reported partial. Before, each made-up name
// took a row and a label of its own, and the real skills were counted
// under _other, unseen.
func TestUsageMadeUpNames(t *testing.T) {
	const madeUp = projection.HourSkills + 100
	real := []string{"changelog", "git-review", "k8s-deploy"}
	s := startServe(t, t.TempDir(), searchRoot(t), "--usage-projection")
	c, err := client.New(s.connect(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	cwd := t.TempDir()
	// The hostile loop, from a few sessions at once.
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Go(func() {
			sid := "flood" + strconv.Itoa(w)
			for i := w; i < madeUp; i += 4 {
				name := "made-up-" + strconv.Itoa(i)
				if _, err := c.CallSkill(ctx, events.SkillCall{Session: sid, Call: "m" + strconv.Itoa(i), Cwd: cwd, Args: events.SkillArgs{Name: name}}); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i, name := range real {
		r, err := c.CallSkill(ctx, events.SkillCall{Session: "honest", Call: "c" + strconv.Itoa(i), Cwd: cwd, Args: events.SkillArgs{Name: name}})
		if err != nil || r.IsError {
			t.Fatalf("load %s: %+v %v", name, r, err)
		}
	}

	visible := func(rep *usage.Report) (n int, unknown int) {
		for _, row := range rep.Skills {
			for _, name := range real {
				if row.Name == name && row.Loads == 1 {
					n++
				}
			}
			if row.Name == usage.UnknownSkill {
				unknown = row.Errors[events.CodeUnknown]
			}
		}
		return n, unknown
	}
	proj := caughtUpUsage(t, 60*time.Second, s.url)
	scan, _ := usageJSON(t, "--nats-url", s.url, "--scan")
	_, metrics, err := s.get("/metrics")
	if err != nil {
		t.Fatal(err)
	}
	series := 0
	for _, name := range real {
		if strings.Contains(metrics, `skillstream_skill_loads_total{outcome="ok",skill="`+name+`"} 1`) {
			series++
		}
	}
	pv, pu := visible(proj)
	sv, su := visible(scan)
	t.Logf("after %d made-up names: %d of %d real skills have a row in the projection's report (%d rows, _unknown %d), %d in the scan's (%d rows, _unknown %d), %d a series in /metrics",
		madeUp, pv, len(real), len(proj.Skills), pu, sv, len(scan.Skills), su, series)
	for _, c := range []struct {
		what             string
		rep              *usage.Report
		visible, unknown int
	}{{"projection", proj, pv, pu}, {"scan", scan, sv, su}} {
		if c.visible != len(real) || c.unknown != madeUp || len(c.rep.Skills) != len(real)+1 {
			t.Errorf("%s: %d of %d real skills with a row, %d made-up names under _unknown (want %d), %d rows (want %d)",
				c.what, c.visible, len(real), c.unknown, madeUp, len(c.rep.Skills), len(real)+1)
		}
		if len(c.rep.Partial) != 0 {
			t.Errorf("%s: partial %q, want none", c.what, c.rep.Partial)
		}
	}
	if series != len(real) || !strings.Contains(metrics, `skillstream_skill_loads_total{outcome="unknown",skill="_unknown"} `+strconv.Itoa(madeUp)) {
		t.Errorf("/metrics: %d of %d real skills with a series, or the made-up names not under _unknown:\n%s", series, len(real), grepLines(metrics, "skill_loads_total"))
	}
}

// grepLines are the lines of s holding sub.
func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}
