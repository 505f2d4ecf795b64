package search_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
	"github.com/skillstream/skillstream/providers/search"
)

// disk is a project and a user skills folder on disk, served by the
// filesystem provider (watching with fsnotify) through a registry.
type disk struct {
	project, user string // the skills folders
	q             catalog.Query
	ix            *search.Index
}

func newDisk(t *testing.T) *disk {
	t.Helper()
	root := t.TempDir()
	d := &disk{
		project: filepath.Join(root, "repo", ".agents", "skills"),
		user:    filepath.Join(root, "home", "skills"),
		q:       catalog.At(filepath.Join(root, "repo")),
	}
	for _, dir := range []string{filepath.Join(root, "repo", ".git"), d.project, d.user} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p, err := agentskills.New(agentskills.Config{UserDir: d.user})
	if err != nil {
		t.Fatal(err)
	}
	d.ix, _ = newIndex(t, search.Options{}, p) // the registry closes p
	return d
}

// write writes the skill name into folder with the given frontmatter
// lines after name.
func (d *disk) write(t *testing.T, folder, name string, lines ...string) {
	t.Helper()
	dir := filepath.Join(folder, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	text := "---\nname: " + name + "\n" + strings.Join(lines, "\n") + "\n---\nThe body.\n"
	// Write and rename, so a watcher never reads half a file.
	tmp := filepath.Join(dir, ".SKILL.md.tmp")
	if err := os.WriteFile(tmp, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, filepath.Join(dir, "SKILL.md")); err != nil {
		t.Fatal(err)
	}
}

func (d *disk) search(t *testing.T, text string, limit, offset int) search.Result {
	t.Helper()
	r, err := d.ix.Search(context.Background(), d.q, text, limit, offset)
	if err != nil {
		t.Fatalf("Search(%q): %v", text, err)
	}
	return r
}

// eventually polls cond until it holds or 10 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not reached within 10s: %s", what)
		}
		<-tick.C
	}
}

func TestSearchWinnersOnly(t *testing.T) {
	d := newDisk(t)
	d.write(t, d.project, "deploy-checklist", "description: Steps before shipping a release to production.")
	d.write(t, d.user, "deploy-checklist", "description: Walrus pelican giraffe.")
	d.write(t, d.user, "zoo-keeper", "description: Feed the walrus and the pelican.")
	d.write(t, d.user, "hidden-helper", "description: Walrus helper the model never sees.", "disable-model-invocation: true")

	r := d.search(t, "walrus", 8, 0)
	if got := names(r); !reflect.DeepEqual(got, []string{"zoo-keeper"}) || r.Total != 1 || !r.Complete {
		t.Fatalf("walrus: %v (total %d, complete %v); want only zoo-keeper: the shadowed and the non-model-invocable never match", got, r.Total, r.Complete)
	}
	r = d.search(t, "shipping a release", 8, 0)
	if len(r.Matches) != 1 || r.Matches[0].Name != "deploy-checklist" || r.Matches[0].Source != catalog.SourceProject {
		t.Fatalf("the winner: %+v", r.Matches)
	}
	if r := d.search(t, "hidden helper", 8, 0); r.Total != 0 {
		t.Fatalf("a skill the model may not invoke matched: %v", names(r))
	}
}

func TestSearchFollowsChanges(t *testing.T) {
	d := newDisk(t)
	d.write(t, d.project, "animal-care", "description: Groom the walrus every morning.")
	d.write(t, d.project, "other-skill", "description: Something else entirely.")
	if r := d.search(t, "walrus", 8, 0); r.Total != 1 {
		t.Fatalf("walrus before the change: %v", names(r))
	}
	d.write(t, d.project, "animal-care", "description: Groom the pelican every evening.", "whenToUse: The flamingo needs attention.")
	eventually(t, "the new description is searched", func() bool {
		return d.search(t, "pelican", 8, 0).Total == 1
	})
	if r := d.search(t, "walrus", 8, 0); r.Total != 0 {
		t.Fatalf("the old description still matches: %v", names(r))
	}
	if r := d.search(t, "flamingo", 8, 0); r.Total != 1 {
		t.Fatalf("whenToUse is not searched: %v", names(r))
	}
	// Removed: no longer found; added: found.
	if err := os.RemoveAll(filepath.Join(d.project, "animal-care")); err != nil {
		t.Fatal(err)
	}
	d.write(t, d.user, "bird-watch", "description: Count every pelican in the bay.")
	eventually(t, "the removal and the addition are searched", func() bool {
		got := names(d.search(t, "pelican", 8, 0))
		return reflect.DeepEqual(got, []string{"bird-watch"})
	})
}

func TestSearchTiesAndPaging(t *testing.T) {
	d := newDisk(t)
	var want []string
	for i := range 12 {
		name := fmt.Sprintf("tied-%02d", 11-i) // written in reverse
		d.write(t, d.project, name, "description: Review the quarterly budget.")
		want = append(want, name)
	}
	d.write(t, d.project, "budget-owner", "description: Own the budget; the budget is yours.", "whenToUse: Budget questions.")
	slices.Sort(want)
	want = append([]string{"budget-owner"}, want...)

	full := d.search(t, "budget", 100, 0)
	if got := names(full); !reflect.DeepEqual(got, want) || full.Total != 13 {
		t.Fatalf("budget: %v (total %d); want the strongest first, then the ties by name: %v", got, full.Total, want)
	}
	var paged []string
	for off := 0; off < 13; off += 5 {
		r := d.search(t, "budget", 5, off)
		if r.Total != 13 || len(r.Matches) != min(5, 13-off) {
			t.Fatalf("offset %d: %d matches, total %d", off, len(r.Matches), r.Total)
		}
		paged = append(paged, names(r)...)
	}
	if !reflect.DeepEqual(paged, want) {
		t.Fatalf("pages %v; want %v", paged, want)
	}
	for _, c := range []struct{ limit, offset int }{{5, 13}, {5, 1000}, {0, 0}, {-1, 0}} {
		if r := d.search(t, "budget", c.limit, c.offset); len(r.Matches) != 0 || r.Total != 13 {
			t.Errorf("limit %d offset %d: %v, total %d; want none of 13", c.limit, c.offset, names(r), r.Total)
		}
	}
	if r := d.search(t, "budget", 2, -3); !reflect.DeepEqual(names(r), want[:2]) {
		t.Errorf("a negative offset: %v", names(r))
	}
	// Deterministic: the same query, the same answer, every time.
	for range 5 {
		if got := names(d.search(t, "quarterly budget review", 100, 0)); !reflect.DeepEqual(got, names(d.search(t, "quarterly budget review", 100, 0))) {
			t.Fatalf("two searches disagree: %v", got)
		}
	}
	if r := d.search(t, "the of and", 8, 0); r.Total != 0 {
		t.Errorf("stop words alone matched %v", names(r))
	}
	if r := d.search(t, "nothing-like-it", 8, 0); r.Total != 0 {
		t.Errorf("unknown words matched %v", names(r))
	}
}

func TestSearchIncompleteSnapshot(t *testing.T) {
	d := newDisk(t)
	d.write(t, d.project, "still-here", "description: The walrus is still here.")
	// A SKILL.md that is a folder cannot be read: the folder's answer is
	// an error and the snapshot incomplete, with what was read.
	if err := os.MkdirAll(filepath.Join(d.user, "broken", "SKILL.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	r := d.search(t, "walrus", 8, 0)
	if r.Complete || names(r) == nil || r.Matches[0].Name != "still-here" {
		t.Fatalf("incomplete snapshot: %v (complete %v); want still-here, incomplete", names(r), r.Complete)
	}
}

func TestSearchErrors(t *testing.T) {
	ix, _ := newIndex(t, search.Options{}, newMemory(evalSkills(t)))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ix.Search(ctx, catalog.At("/w"), "pdf", 8, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled: %v", err)
	}
	if err := ix.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := ix.Search(context.Background(), catalog.At("/w"), "pdf", 8, 0); !errors.Is(err, search.ErrClosed) {
		t.Fatalf("closed: %v", err)
	}
}

// TestSearchCandidatesPerQuery searches two working directories of one
// registry: each sees its own winners.
func TestSearchCandidatesPerQuery(t *testing.T) {
	root := t.TempDir()
	user := filepath.Join(root, "user")
	var projects []string
	for _, p := range []string{"a", "b"} {
		dir := filepath.Join(root, p)
		projects = append(projects, dir)
		if err := os.MkdirAll(filepath.Join(dir, ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	p, err := agentskills.New(agentskills.Config{UserDir: user})
	if err != nil {
		t.Fatal(err)
	}
	ix, _ := newIndex(t, search.Options{}, p)
	d := &disk{ix: ix}
	d.write(t, filepath.Join(projects[0], ".agents", "skills"), "shared-name", "description: Walrus notes of project a.")
	d.write(t, filepath.Join(projects[1], ".agents", "skills"), "shared-name", "description: Pelican notes of project b.")
	d.write(t, user, "common-skill", "description: Walrus and pelican for everyone.")
	for i, query := range []string{"walrus", "pelican"} {
		d.q = catalog.At(projects[i])
		r := d.search(t, query, 8, 0)
		if got := slices.Sorted(slices.Values(names(r))); !reflect.DeepEqual(got, []string{"common-skill", "shared-name"}) {
			t.Errorf("project %d, %q: %v; want common-skill and its own shared-name", i, query, got)
		}
		for _, m := range r.Matches {
			if m.Name == "shared-name" && !strings.Contains(m.Description, "project "+"ab"[i:i+1]) {
				t.Errorf("project %d sees %q", i, m.Description)
			}
		}
		other := []string{"pelican", "walrus"}[i]
		if got := names(d.search(t, other, 8, 0)); !reflect.DeepEqual(got, []string{"common-skill"}) {
			t.Errorf("project %d, %q: %v; want only common-skill", i, other, got)
		}
	}
}

var _ providers.Provider = (*memory)(nil)

// TestSearchConcurrently searches from several goroutines, in several
// working directories, while skills change; run it with -race.
func TestSearchConcurrently(t *testing.T) {
	skills := evalSkills(t)
	m := newMemory(slices.Clone(skills))
	ix, _ := newIndex(t, search.Options{MaxCorpora: 2}, m)
	queries := readJSON[[]evalQuery](t, "testdata/queries.json")
	done := make(chan struct{})
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				r, err := ix.Search(context.Background(), catalog.At(fmt.Sprint("/w", (g+i)%3)), queries[(g*31+i)%len(queries)].Query, 8, 0)
				if err != nil || len(r.Matches) > 8 || r.Total < len(r.Matches) {
					t.Errorf("search: %d matches of %d, %v", len(r.Matches), r.Total, err)
					return
				}
			}
		})
	}
	for i := range 50 {
		s := skills[i%len(skills)]
		s.Description += fmt.Sprintf(" revision %d", i)
		m.set(i%len(skills), s)
	}
	close(done)
	wg.Wait()
	if r, err := ix.Search(context.Background(), catalog.At("/w"), "revision 49", 8, 0); err != nil || r.Total == 0 {
		t.Fatalf("the last change is not searched: %v, %v", names(r), err)
	}
}

// TestSearcher runs the search tool (catalog.Search) on the index bound
// to a session.
func TestSearcher(t *testing.T) {
	d := newDisk(t)
	d.write(t, d.project, "walrus-care", "description: Groom the walrus.")
	d.write(t, d.project, "walrus-feed", "description: Feed the walrus <fish>.")
	d.write(t, d.project, "pelican-care", "description: Groom the pelican.")
	res := catalog.Search(context.Background(), d.ix.Searcher(d.q), catalog.SearchArgs{Query: " walrus ", Limit: 1.0}, catalog.DefaultOptions())
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	v := res.Value
	if v.Query != "walrus" || v.Total != 2 || len(v.Results) != 1 || v.Results[0].Name != "walrus-care" {
		t.Fatalf("value %+v", v)
	}
}
