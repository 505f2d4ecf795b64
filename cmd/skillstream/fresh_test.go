package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
)

// Read-your-writes through serve, as a worker sees it with the Go client:
// a skill written, edited or removed in a project's folder or in a
// --skills-dir root just before a pre-step is in that pre-step's decision;
// a skill pushed to the store is in the decision of a pre-step carrying
// the revision push --json printed.
func TestServeReadYourWrites(t *testing.T) {
	root := t.TempDir()
	project := t.TempDir()
	if err := os.Mkdir(filepath.Join(project, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	s := startServe(t, t.TempDir(), root)
	c, err := client.New(s.connect(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	want := map[string]string{}
	visible := map[string]string{}
	step := 0
	preStep := func(ps events.PreStep) events.Decision {
		t.Helper()
		step++
		ps.Session, ps.Step, ps.Cwd, ps.Tools = "rywserve", fmt.Sprint(step), project, []events.Tool{client.SkillTool("skillstream")}
		cctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		d, err := c.PreStep(cctx, ps)
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if d.Outcome == events.OutcomeAppended {
			clear(visible)
			for _, e := range d.Catalog.Source.Entries {
				visible[e.Name] = e.Description
			}
		}
		return d
	}
	rounds := 1000
	if testing.Short() {
		rounds = 200
	}
	stale := 0
	var report []string
	for i := range rounds {
		dir := filepath.Join(project, ".agents", "skills")
		if i%2 == 1 {
			dir = root
		}
		name := fmt.Sprintf("d%d-s%d", i%2, i%5)
		switch i % 3 {
		case 0, 1:
			desc := fmt.Sprintf("Version %d.", i)
			writeFile(t, dir, name+"/SKILL.md", skillMD("Body.", "name: "+name, "description: "+desc))
			want[name] = desc
		default:
			if err := os.RemoveAll(filepath.Join(dir, name)); err != nil {
				t.Fatal(err)
			}
			delete(want, name)
		}
		d := preStep(events.PreStep{})
		if fmt.Sprint(visible) != fmt.Sprint(want) {
			stale++
			if len(report) < 5 {
				report = append(report, fmt.Sprintf("round %d: %s, sees %v, want %v", i, d.Outcome, visible, want))
			}
		}
	}
	if stale > 0 {
		t.Fatalf("%d of %d pre-steps through serve did not reflect the change made before them:\n%s", stale, rounds, strings.Join(report, "\n"))
	}

	// The store: push --json gives the revision to ask for.
	store := t.TempDir()
	for i := range 10 {
		desc := fmt.Sprintf("Pushed %d.", i)
		writeFile(t, store, "pushed/SKILL.md", skillMD("Body.", "name: pushed", "description: "+desc))
		code, stdout, stderr := runMain(t, "skills", "push", store, "--json", "--nats-url", s.url)
		if code != 0 {
			t.Fatalf("push: exit %d\n%s", code, stderr)
		}
		var out struct {
			Revision uint64 `json:"revision"`
			Skills   []struct {
				Name     string `json:"name"`
				Change   string `json:"change"`
				Revision uint64 `json:"revision"`
				Digest   string `json:"digest"`
			} `json:"skills"`
		}
		if err := json.Unmarshal([]byte(stdout), &out); err != nil {
			t.Fatalf("push --json: %v\n%s", err, stdout)
		}
		wantChange := "updated"
		if i == 0 {
			wantChange = "added"
		}
		if len(out.Skills) != 1 || out.Skills[0].Name != "pushed" || out.Skills[0].Change != wantChange ||
			out.Skills[0].Revision != out.Revision || len(out.Skills[0].Digest) != 64 || out.Revision == 0 {
			t.Fatalf("push --json:\n%s", stdout)
		}
		want["pushed"] = desc
		d := preStep(events.PreStep{MinStoreRevision: out.Revision})
		if visible["pushed"] != desc || d.Catalog == nil || d.Catalog.Source.View.Revision < out.Revision {
			t.Fatalf("push %d (revision %d) not in the next decision: %+v", i, out.Revision, d)
		}
	}
	// A revision no push has reached yet: answered unavailable, in time.
	start := time.Now()
	cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c.RequireStoreRevision(1 << 40)
	step++
	_, err = c.PreStep(cctx, events.PreStep{Session: "rywserve", Step: fmt.Sprint(step), Cwd: project, Tools: []events.Tool{client.SkillTool("skillstream")}})
	if !errors.Is(err, client.ErrUnavailable) || !strings.Contains(err.Error(), "store revision") {
		t.Fatalf("a revision not reached: %v", err)
	}
	t.Logf("a revision not reached was answered in %v", time.Since(start).Round(time.Millisecond))
}
