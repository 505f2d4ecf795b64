package agentskills_test

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
)

// freshRounds drives rounds of skill changes on disk, each followed at
// once (no pause) by a snapshot of the registry, and counts the snapshots
// that did not show the change. See TestReadYourWrites.
type freshRounds struct {
	t      testing.TB
	r      *providers.Registry
	repo   string                       // a project root (it holds .git)
	user   string                       // the user skills folder
	skills map[string]map[string]string // cwd -> name -> description expected
	cwds   []string
	n      int
	stale  int
	report []string
	// arrival: each snapshot is asked with the moment its request arrived
	// (catalog.WithArrival), taken after the change was made.
	arrival bool
}

func newFreshRounds(t testing.TB, r *providers.Registry, repo, user string) *freshRounds {
	f := &freshRounds{t: t, r: r, repo: repo, user: user, skills: map[string]map[string]string{}}
	f.addCwd(repo)
	return f
}

// addCwd starts expecting cwd's snapshots to list the user folder's
// skills and its project's.
func (f *freshRounds) addCwd(cwd string) {
	m := map[string]string{}
	for _, c := range f.cwds {
		if projectOf(c) == projectOf(cwd) {
			m = f.skills[c]
			break
		}
	}
	if len(f.cwds) > 0 {
		for name, d := range f.skills[f.cwds[0]] {
			if strings.HasPrefix(name, "u-") {
				m[name] = d
			}
		}
	}
	f.skills[cwd] = m
	f.cwds = append(f.cwds, cwd)
}

func projectOf(cwd string) string {
	root, err := agentskills.ProjectRoot(cwd)
	if err != nil {
		panic(err)
	}
	return root
}

// set records the expected description of name (empty: removed) in every
// cwd that sees folder, whose skills are project skills of project ("" for
// the user folder).
func (f *freshRounds) set(project, name, desc string) {
	for _, c := range f.cwds {
		if project != "" && projectOf(c) != project {
			continue
		}
		if desc == "" {
			delete(f.skills[c], name)
		} else {
			f.skills[c][name] = desc
		}
	}
}

// check takes a snapshot of cwd at once and compares it with what is expected.
func (f *freshRounds) check(cwd, what string) {
	f.t.Helper()
	f.n++
	ctx := context.Background()
	if f.arrival {
		ctx = catalog.WithArrival(ctx, time.Now())
	}
	s, err := f.r.Snapshot(ctx, catalog.At(cwd))
	if err != nil {
		f.t.Fatalf("round %d (%s): Snapshot: %v", f.n, what, err)
	}
	got := summaries(s)
	var want []string
	for _, name := range slices.Sorted(maps.Keys(f.skills[cwd])) {
		want = append(want, name+"="+f.skills[cwd][name])
	}
	if !s.Complete || !slices.Equal(got, want) {
		f.stale++
		if len(f.report) < 5 {
			f.report = append(f.report, fmt.Sprintf("round %d (%s) in %s: complete=%v\n got %v\nwant %v", f.n, what, cwd, s.Complete, got, want))
		}
	}
}

// round makes change i and checks every cwd at once.
func (f *freshRounds) round(i int) {
	f.t.Helper()
	proj := filepath.Join(f.repo, ".agents", "skills")
	name := fmt.Sprintf("s%d", i%7)
	switch i % 10 {
	case 0, 1: // add or re-add a project skill folder
		write(f.t, filepath.Join(proj, name, "SKILL.md"), skillText(name, fmt.Sprintf("added %d", i), "body"))
		f.set(f.repo, name, fmt.Sprintf("added %d", i))
		f.check(f.repo, "add "+name)
	case 2, 3: // edit a description (the skill may be new)
		write(f.t, filepath.Join(proj, name, "SKILL.md"), skillText(name, fmt.Sprintf("edited %d", i), "body"))
		f.set(f.repo, name, fmt.Sprintf("edited %d", i))
		f.check(f.repo, "edit "+name)
	case 4, 5: // delete a skill folder (it may not exist)
		if err := os.RemoveAll(filepath.Join(proj, name)); err != nil {
			f.t.Fatal(err)
		}
		f.set(f.repo, name, "")
		f.check(f.repo, "delete "+name)
	case 6: // a flat skill file in the user folder, added or edited
		n := "u-" + name
		write(f.t, filepath.Join(f.user, n+".md"), skillText(n, fmt.Sprintf("user %d", i), "body"))
		f.set("", n, fmt.Sprintf("user %d", i))
		for _, c := range f.cwds {
			f.check(c, "user "+n)
		}
	case 7: // a user skill removed
		n := "u-" + name
		if err := os.Remove(filepath.Join(f.user, n+".md")); err != nil && !os.IsNotExist(err) {
			f.t.Fatal(err)
		}
		f.set("", n, "")
		f.check(f.repo, "user delete "+n)
	case 8: // a brand-new project, its skills folder made with it
		p := filepath.Join(f.t.TempDir(), fmt.Sprintf("project-%d", i))
		mkdir(f.t, filepath.Join(p, ".git"))
		write(f.t, filepath.Join(p, ".agents", "skills", "fresh", "SKILL.md"), skillText("fresh", "new project", "body"))
		f.addCwd(p)
		f.set(p, "fresh", "new project")
		f.check(p, "new project")
	case 9: // a known project gains its skills folder, nested several levels
		p := filepath.Join(f.t.TempDir(), fmt.Sprintf("later-%d", i))
		mkdir(f.t, filepath.Join(p, ".git"))
		sub := filepath.Join(p, "src", "deep")
		mkdir(f.t, sub)
		f.addCwd(sub)
		f.check(sub, "known project, no skills yet")
		write(f.t, filepath.Join(p, ".agents", "skills", "late", "SKILL.md"), skillText("late", "appeared", "body"))
		f.set(p, "late", "appeared")
		f.check(sub, "skills folder appears")
	}
}

// freshSetup makes a project repository and a user skills folder, a
// watched registry over them, and the rounds that change them.
func freshSetup(t *testing.T) (*agentskills.Provider, *providers.Registry, string, *freshRounds) {
	t.Helper()
	repo := t.TempDir()
	mkdir(t, filepath.Join(repo, ".git"))
	user := filepath.Join(t.TempDir(), "user")
	mkdir(t, user)
	p, r := newWatchedRegistry(t, agentskills.Config{UserDir: user})
	return p, r, repo, newFreshRounds(t, r, repo, user)
}

// TestReadYourWrites: a skill change on disk that completed before a
// snapshot was asked for is in that snapshot, with no pause between the
// two: skills added, descriptions edited, skills removed, a new project
// and a skills folder that appears in a known project, over 1,000 rounds.
func TestReadYourWrites(t *testing.T) {
	_, _, repo, f := freshSetup(t)
	f.check(repo, "empty")
	rounds := 1000
	if testing.Short() {
		rounds = 200
	}
	for i := range rounds {
		f.round(i)
	}
	if f.stale > 0 {
		t.Fatalf("%d of %d snapshots did not show a change made before them:\n%s", f.stale, f.n, strings.Join(f.report, "\n"))
	}
	t.Logf("%d snapshots, all fresh", f.n)
}

// TestReadYourWritesByArrival: the rounds of TestReadYourWrites, each
// snapshot asked with the moment its request arrived, while requests with
// their own arrivals run alongside and share the provider's reads of its
// change queue (a request skips its read when one began after it arrived).
// A change completed before a request arrived is in its snapshot, always.
func TestReadYourWritesByArrival(t *testing.T) {
	p, r, repo, f := freshSetup(t)
	f.arrival = true
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				// A few requests that arrived together.
				ctx := catalog.WithArrival(context.Background(), time.Now())
				for range 4 {
					_, _ = r.Snapshot(ctx, catalog.At(repo))
				}
			}
		})
	}
	rounds := 400
	if testing.Short() {
		rounds = 100
	}
	before := p.Stats().QueueReads
	for i := range rounds {
		f.round(i)
	}
	close(stop)
	wg.Wait()
	if f.stale > 0 {
		t.Fatalf("%d of %d snapshots did not show a change made before they arrived:\n%s", f.stale, f.n, strings.Join(f.report, "\n"))
	}
	t.Logf("%d snapshots, all fresh; %d queue reads", f.n, p.Stats().QueueReads-before)
}

// ChangesSince reads the change queue only when no read began after the
// request arrived: requests that arrived together share one read, while a
// request that arrived after the last read, and Changes, read. (The
// provider's own goroutine also reads when events arrive, say for other
// folders in the watched /tmp: those reads only add, so the sharing is
// checked over a few tries for one free of them.)
func TestChangesSinceSharesReads(t *testing.T) {
	repo := t.TempDir()
	mkdir(t, filepath.Join(repo, ".git"))
	p := newProvider(t, agentskills.Config{NoUserDir: true})
	if p.WatchError() != nil {
		t.Skip("no file watching here: nothing to share")
	}
	q := catalog.At(repo)
	_ = p.Changes(q)
	reads := func() uint64 { return p.Stats().QueueReads }
	shared := false
	for range 50 {
		arrived := time.Now()
		n := reads()
		_ = p.ChangesSince(q, arrived)
		if reads() == n {
			t.Fatal("a request that arrived after every read did not read")
		}
		n = reads()
		for range 5 {
			_ = p.ChangesSince(q, arrived)
		}
		if reads() == n {
			shared = true
			break
		}
	}
	if !shared {
		t.Fatal("requests that arrived before a read began read again, in every try")
	}
	n := reads()
	_ = p.Changes(q)
	if reads() == n {
		t.Fatal("Changes did not read")
	}
}
