package replay

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/processor"
	"github.com/skillstream/skillstream/providers/search"
)

// searchProject writes a project of ten skills; with a listed maximum of
// four the catalog leaves six out and points to skill_search.
func searchProject(t testing.TB) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "project")
	skills := []struct{ name, desc string }{
		{"api-docs", "Write API reference documentation from handler code."},
		{"changelog", "Draft a changelog entry for a release."},
		{"commit-message", "Write a commit message that explains why."},
		{"db-migrate", "Write and check database schema migrations."},
		{"deploy-preview", "Deploy a preview environment for a pull request."},
		{"incident-review", "Run a blameless incident review after an outage."},
		{"k8s-deploy", "Deploy services to Kubernetes and roll back a bad deploy."},
		{"pdf-forms", "Fill in PDF forms and extract their fields."},
		{"terraform-plan", "Plan infrastructure changes with Terraform."},
		{"unit-tests", "Write unit tests for a Go package."},
	}
	for _, s := range skills {
		dir := filepath.Join(root, ".agents", "skills", s.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		md := "---\nname: " + s.name + "\ndescription: " + s.desc + "\n---\nSteps of " + s.name + ".\n"
		if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	return root
}

// searchOptions are the catalog options of the search session.
func searchOptions() catalog.Options {
	o := catalog.DefaultOptions()
	o.SkillSearch, o.ListedMax = true, 4
	return o
}

// search publishes a skill search and returns its result.
func (w *worker) search(id string, args events.SearchArgs) events.ToolResult {
	w.t.Helper()
	b := w.ask(events.KindSkillSearch, events.Msgpack, events.SkillSearch{V: 1, Session: w.sid, Call: id, Cwd: w.cwd, Args: args})
	r, err := events.DecodeToolResultIn(w.layout, events.Msgpack, b)
	if err != nil {
		w.t.Fatalf("result of search %s: %v", id, err)
	}
	return r
}

// playSearches runs the real processor with search on, over project's
// skills and the search index of its registry, and plays a session of
// searches: a catalog shortened for search, searches that find skills,
// find nothing and have bad arguments, a skill found then loaded.
func playSearches(t testing.TB, srv *natstest.Server, project, sid string) {
	t.Helper()
	reg := newRegistry(t)
	ix := search.New(reg, search.Options{})
	t.Cleanup(func() { ix.Close() })
	p, err := processor.New(srv.Conn, reg, processor.Config{Catalog: searchOptions()},
		processor.WithLogger(discardLogger()), processor.WithSearcher(ix))
	if err != nil {
		t.Fatal(err)
	}
	runUntilCleanup(t, p)
	w := &worker{t: t, nc: srv.Conn, js: srv.JS, sid: sid, cwd: project}
	waitStream(t, srv.JS, processor.DefaultStream)
	tools := []events.Tool{{Name: "read", Owner: "host"}, {Name: "skill", Owner: processor.DefaultToolOwner},
		{Name: catalog.SearchToolName, Owner: processor.DefaultToolOwner}}
	if got := w.preStep("1", tools); got != events.OutcomeAppended {
		t.Fatalf("step 1: %s", got)
	}
	for _, c := range []struct {
		id   string
		args events.SearchArgs
		want string // in the text
	}{
		{"s1", events.SearchArgs{Query: "deploy a service"}, "- `k8s-deploy`: "},
		{"s2", events.SearchArgs{Query: "deploy", Limit: int64(1), Offset: int64(1)}, "shown=\"1\" total=\"2\""},
		{"s3", events.SearchArgs{Query: "quantum chromodynamics"}, "No available skill matches"},
		{"s4", events.SearchArgs{Query: "deploy", Limit: int64(17)}, "Error: invalid search arguments: limit must be"},
	} {
		if r := w.search(c.id, c.args); !strings.Contains(r.Text, c.want) {
			t.Fatalf("search %s: %q, want %q in it", c.id, r.Text, c.want)
		}
	}
	if !w.call("c1", "k8s-deploy") {
		t.Fatal("k8s-deploy did not load")
	}
	if got := w.preStep("2", tools); got != events.OutcomeUnchanged {
		t.Fatalf("step 2: %s", got)
	}
}

// rewriteSkills returns rec with every captured skill passed through f,
// and the recording's end record made anew.
func rewriteSkills(t testing.TB, rec []byte, f func(*RecordedSkill)) []byte {
	t.Helper()
	h, items, err := readAll(rec)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w, err := NewWriter(&out, h)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		switch {
		case it.Skills != nil:
			set := *it.Skills
			set.Skills = slices.Clone(set.Skills)
			for i := range set.Skills {
				f(&set.Skills[i])
			}
			err = w.Skills(set)
		case it.Event != nil:
			err = w.Event(*it.Event)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// searchSteps returns the search steps, as "id:differs".
func searchSteps(steps []Step) []string {
	var out []string
	for _, s := range steps {
		if s.Kind == TriggerSkillSearch {
			out = append(out, fmt.Sprintf("%s:%v", s.ID, s.Differs))
		}
	}
	return out
}

// TestReplaySearches: a session of searches played through the processor
// replays identically against today's skills, the captured ones and the
// skills as recorded (its catalog shortened for search included); a
// changed ranking of the captured skills is a diff at the search it
// changes, and only there; a replay without search refuses the searches.
func TestReplaySearches(t *testing.T) {
	srv := natstest.Start(t)
	project := searchProject(t)
	playSearches(t, srv, project, "search-1")
	var buf bytes.Buffer
	if _, err := Export(context.Background(), srv.JS, ExportOptions{Stream: processor.DefaultStream, Session: "search-1", Skills: newRegistry(t)}, &buf); err != nil {
		t.Fatal(err)
	}
	rec := buf.Bytes()
	base := Options{ToolOwner: processor.DefaultToolOwner, Catalog: searchOptions()}

	for _, c := range []struct {
		name string
		opts func(Options) Options
	}{
		{"today", func(o Options) Options { o.Skills = newRegistry(t); return o }},
		{"recorded", func(o Options) Options { o.Recorded = true; return o }},
		{"as-recorded", func(o Options) Options { o.AsRecorded = true; return o }},
	} {
		t.Run(c.name, func(t *testing.T) {
			steps, sum := replayBytes(t, rec, c.opts(base))
			if sum.Differ != 0 || sum.Triggers != 7 {
				t.Fatalf("replay: %+v\n%s", sum, outcomes(steps))
			}
			if got, want := searchSteps(steps), []string{"s1:false", "s2:false", "s3:false", "s4:false"}; !slices.Equal(got, want) {
				t.Errorf("search steps %v, want %v", got, want)
			}
			s1 := steps[1]
			if s1.Query != "deploy a service" || s1.Search == nil || s1.Search.Results[0].Name != "k8s-deploy" ||
				s1.Recorded.Outcome != OutcomeOK || s1.Replayed.Text != s1.Recorded.Text {
				t.Errorf("search s1: %+v", s1)
			}
			if s4 := steps[4]; s4.Recorded.Outcome != OutcomeError || s4.Recorded.Code != events.CodeBadRequest || s4.Replayed.Text != s4.Recorded.Text {
				t.Errorf("search s4 (bad arguments): %+v", s4)
			}
		})
	}

	// The catalog was shortened for search: as recorded, it is rebuilt
	// from its entries and its count of skills left out.
	steps, _ := replayBytes(t, rec, Options{ToolOwner: base.ToolOwner, HistoryOnly: true})
	if steps[0].Seen == nil || len(steps[0].Seen.Entries) != 4 || !strings.Contains(steps[0].Seen.Text, catalog.SearchNotice(6)) {
		t.Fatalf("step 1 saw %+v", steps[0].Seen)
	}

	// A changed ranking: pdf-forms (left out of the catalog) now speaks
	// of deploying and comes first; the other searches and the catalog
	// are as they were.
	changed := rewriteSkills(t, rec, func(s *RecordedSkill) {
		if s.Name == "pdf-forms" {
			s.Description = "Deploy and deploy again: deploy services, deploy forms."
		}
	})
	steps, sum := replayBytes(t, changed, Options{ToolOwner: base.ToolOwner, Catalog: base.Catalog, Recorded: true})
	if got, want := searchSteps(steps), []string{"s1:true", "s2:true", "s3:false", "s4:false"}; sum.Differ != 2 || !slices.Equal(got, want) {
		t.Fatalf("changed ranking: %+v, search steps %v, want %v\n%s", sum, got, want, outcomes(steps))
	}
	if d := steps[1].Diff; !strings.Contains(d, "\n+- `pdf-forms`: Deploy and deploy again") || !strings.Contains(d, "total=\"2\"") {
		t.Errorf("diff of s1:\n%s", d)
	}

	// A replay without search refuses the searches, as such a processor
	// does: those that got results differ.
	noSearch := base.Catalog
	noSearch.SkillSearch = false
	steps, _ = replayBytes(t, rec, Options{ToolOwner: base.ToolOwner, Catalog: noSearch, Recorded: true})
	if got, want := searchSteps(steps), []string{"s1:true", "s2:true", "s3:true", "s4:true"}; !slices.Equal(got, want) {
		t.Errorf("without search: %v, want %v\n%s", got, want, outcomes(steps))
	}
}

// TestPlaceholders: the placeholders of a catalog shortened for search
// sort after every listed name, are as long as any entry can be, and
// stand aside when a listed name would sort after them.
func TestPlaceholders(t *testing.T) {
	ps := placeholders([]catalog.Entry{{Name: "zz"}}, 3, 1024)
	if len(ps) != 3 {
		t.Fatalf("%d placeholders", len(ps))
	}
	for _, p := range ps {
		if err := catalog.CheckName(p.Name); err != nil || p.Name <= "zz" || len(p.Name) != catalog.MaxNameLength {
			t.Errorf("placeholder name %q: %v", p.Name, err)
		}
		if e := catalog.Entries([]catalog.Summary{p}, 1024); len(e) != 1 || e[0].Description != p.Description {
			t.Errorf("placeholder is not listed as it is: %+v", e)
		}
	}
	if ps := placeholders([]catalog.Entry{{Name: strings.Repeat("z", 64)}}, 3, 1024); ps != nil {
		t.Errorf("placeholders beside a name after them: %v", ps)
	}
}
