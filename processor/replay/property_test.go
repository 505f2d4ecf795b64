package replay

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/processor"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/search"
)

var replaySeeds = flag.Int("replay-seeds", 0, "random sessions the replay property test plays (0: the few of every run)")

// mutableSkills is a provider whose skills a test edits between steps. It
// tells the registry not to cache (its Changes channel is closed), so the
// next step sees each edit at once.
type mutableSkills struct {
	mu     sync.Mutex
	skills map[string]catalog.Skill
}

var closedChanges = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

func (*mutableSkills) Name() string                          { return "mutable" }
func (*mutableSkills) Changes(catalog.Query) <-chan struct{} { return closedChanges }
func (m *mutableSkills) set(s catalog.Skill)                 { m.mu.Lock(); m.skills[s.Name] = s; m.mu.Unlock() }
func (m *mutableSkills) remove(name string)                  { m.mu.Lock(); delete(m.skills, name); m.mu.Unlock() }
func (m *mutableSkills) get(name string) (catalog.Skill, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.skills[name]
	return s, ok
}
func (m *mutableSkills) names() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return sortedKeys(m.skills)
}
func sortedKeys(m map[string]catalog.Skill) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}
func (m *mutableSkills) List(context.Context, catalog.Query) ([]providers.Candidate, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]providers.Candidate, 0, len(m.skills))
	for _, k := range sortedKeys(m.skills) {
		out = append(out, providers.Candidate{Summary: m.skills[k].Summary})
	}
	return out, nil
}
func (m *mutableSkills) Load(_ context.Context, name string, _ catalog.Query) (catalog.Skill, error) {
	if s, ok := m.get(name); ok {
		return s, nil
	}
	return catalog.Skill{}, fmt.Errorf("skill %q: %w", name, catalog.ErrNotFound)
}

// randomWords are the words random descriptions are made of: some escape
// (&, <, >), some are not ASCII.
var randomWords = strings.Fields("deploy review release notes commit test lint build docker k8s pdf forms & <b> x>y café naïve 😀 — " +
	"database migrate schema query index cache invalidate monitor alert trace log parse format render translate summarise")

func randomDescription(rng *rand.Rand) string {
	if rng.IntN(20) == 0 {
		return "" // a skill without a description
	}
	n := 1 + rng.IntN(40)
	if rng.IntN(6) == 0 {
		n += rng.IntN(150) // long: the description cap cuts it
	}
	ws := make([]string, n)
	for i := range ws {
		ws[i] = randomWords[rng.IntN(len(randomWords))]
	}
	return strings.Join(ws, " ")
}

var randomSources = []string{catalog.SourceProject, catalog.SourceUser, catalog.SourceCustom, catalog.SourceBundled}

func randomSkill(rng *rand.Rand, name string) catalog.Skill {
	return catalog.Skill{Summary: catalog.Summary{Name: name, Description: randomDescription(rng),
		Source: randomSources[rng.IntN(len(randomSources))], Provider: "mutable",
		Invocation: catalog.Invocation{ModelInvocable: rng.IntN(15) != 0, UserInvocable: true}},
		Content: "# " + name + "\n\nDo the thing."}
}

// randomOptions are catalog options at random: the size limit, the
// description cap, search and its listed max, change lists and user
// invocation, each on or off.
func randomOptions(rng *rand.Rand) catalog.Options {
	o := catalog.DefaultOptions()
	o.MaxLength = []int{0, catalog.MinMaxLength, 600, 2000, 8000, catalog.DefaultMaxLength}[rng.IntN(6)]
	o.DescriptionMaxLength = []int{catalog.DefaultDescriptionMaxLength, 40, catalog.MinDescriptionMaxLength}[rng.IntN(3)]
	o.SkillSearch = rng.IntN(2) == 0
	if o.SkillSearch {
		o.ListedMax = []int{0, 1, 7, 60}[rng.IntN(4)]
	}
	o.Updates = catalog.UpdatesFull
	if rng.IntN(2) == 0 {
		o.Updates = catalog.UpdatesChanges
	}
	o.UserInvocation = rng.IntN(2) == 0
	return o
}

// playRandomSession plays one random session through the real processor
// and returns its recording and whether its skills changed during it.
// shape is what a targeted test may fix of a random session: its options,
// how many skills it starts with, whether they change, whether every step
// offers search (when it is on), and its session layout.
type shape struct {
	opts         catalog.Options
	skills       int
	edits        bool
	alwaysSearch bool
	layout       events.Layout
	// ranked: a use ranking (Options.Rank use) drawn again at every step
	ranked bool
}

// A targeted test may fix the session's shape (fix, nil for none).
func playRandomSession(t *testing.T, seed uint64, fix func(*shape)) ([]byte, bool, *mutableSkills, catalog.Options) {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	sh := shape{opts: randomOptions(rng), skills: rng.IntN(401), edits: rng.IntN(3) != 0} // a third of the sessions keep their skills
	if rng.IntN(2) == 0 {
		sh.layout = events.LayoutOwner
	}
	if fix != nil {
		fix(&sh)
	}
	opts, n, edits := sh.opts, sh.skills, sh.edits
	skills := &mutableSkills{skills: map[string]catalog.Skill{}}
	next := 0
	newName := func() string {
		next++
		return fmt.Sprintf("s%04d-%s", next, []string{"a", "tool", "helper", "x"}[rng.IntN(4)])
	}
	for range n {
		skills.set(randomSkill(rng, newName()))
	}
	srv := natstest.Start(t)
	reg := providers.NewRegistry([]providers.Provider{skills})
	t.Cleanup(func() { reg.Close() })
	ix := search.New(reg, search.Options{})
	t.Cleanup(func() { ix.Close() })
	popts := []processor.Option{processor.WithLogger(discardLogger()), processor.WithSearcher(ix)}
	ranker := &stepRanker{}
	if sh.ranked {
		popts = append(popts, processor.WithRanker(ranker))
	}
	p, err := processor.New(srv.Conn, reg, processor.Config{Catalog: opts, Layout: sh.layout, AnyOwnerInbox: true}, popts...)
	if err != nil {
		t.Fatal(err)
	}
	runUntilCleanup(t, p)
	waitStream(t, srv.JS, processor.DefaultStream)
	sid := fmt.Sprintf("prop-%d", seed)
	if sh.layout == events.LayoutOwner {
		sid = "agent-7." + sid
	}
	w := &worker{t: t, nc: srv.Conn, js: srv.JS, sid: sid, cwd: "/work/app", layout: sh.layout}
	tools := []events.Tool{{Name: "read", Owner: "host"}, {Name: "skill", Owner: processor.DefaultToolOwner}}
	withSearch := append(slices.Clone(tools), events.Tool{Name: catalog.SearchToolName, Owner: processor.DefaultToolOwner})
	hidden := tools[:1]
	changed := false
	steps := 4 + rng.IntN(8)
	compactions := 0
	for step := 1; step <= steps; step++ {
		if edits && step > 1 && rng.IntN(3) != 0 {
			changed = true
			names := skills.names()
			for range rng.IntN(4) { // edits
				if len(names) > 0 {
					s, _ := skills.get(names[rng.IntN(len(names))])
					if rng.IntN(2) == 0 {
						s.Description = randomDescription(rng)
					} else {
						s.Source = randomSources[rng.IntN(len(randomSources))]
					}
					skills.set(s)
				}
			}
			for range rng.IntN(3) { // removals
				if len(names) > 0 {
					skills.remove(names[rng.IntN(len(names))])
				}
			}
			for range rng.IntN(4) { // additions
				skills.set(randomSkill(rng, newName()))
			}
		}
		if sh.ranked {
			use := catalog.Ranking{}
			for _, name := range skills.names() {
				if rng.IntN(3) == 0 {
					use[name] = 1 + rng.IntN(50)
				}
			}
			ranker.set(use)
		}
		view := tools
		switch r := rng.IntN(10); {
		case (r < 6 || sh.alwaysSearch) && opts.SkillSearch:
			view = withSearch
		case r == 9:
			view = hidden
		}
		ps := events.PreStep{V: 1, Session: sid, Step: fmt.Sprint(step), Cwd: w.cwd, Tools: view}
		if opts.UserInvocation && rng.IntN(3) == 0 {
			if names := skills.names(); len(names) > 0 {
				ps.UserText = []string{"please /" + names[rng.IntN(len(names))] + " now"}
			}
		}
		b := w.ask(events.KindPreStep, events.JSON, ps)
		if _, err := events.DecodeDecisionIn(sh.layout, events.JSON, b); err != nil {
			t.Fatalf("decision for step %d: %v", step, err)
		}
		for range rng.IntN(3) {
			names := skills.names()
			name := "no-such-skill"
			if len(names) > 0 && rng.IntN(5) != 0 {
				name = names[rng.IntN(len(names))]
			}
			w.call(fmt.Sprintf("c%d-%d", step, rng.IntN(1000)), name)
		}
		if opts.SkillSearch && slices.Equal(view, withSearch) && rng.IntN(2) == 0 {
			q := randomWords[rng.IntN(len(randomWords))] + " " + randomWords[rng.IntN(len(randomWords))]
			w.search(fmt.Sprintf("q%d", step), events.SearchArgs{Query: q})
		}
		if compactions < 3 && rng.IntN(5) == 0 {
			compactions++
			seq := w.publish("message.user", events.JSON, map[string]any{"v": 1, "text": "hello"}, "")
			w.publish(events.KindCompaction, events.JSON, events.Compaction{V: 1, Session: sid, RetainFrom: seq + 1}, "")
		}
	}
	var rec bytes.Buffer
	if _, err := Export(context.Background(), srv.JS, ExportOptions{Stream: processor.DefaultStream, Prefix: events.DefaultPrefix,
		Session: sid, Layout: sh.layout}, &rec); err != nil {
		t.Fatal(err)
	}
	return rec.Bytes(), changed, skills, opts
}

// TestReplayPropertyRandomSessions: random sessions (0 to 400 skills,
// edited, added and removed between steps, random options, either session
// layout, compactions)
// played through the real processor replay with 0 differences as
// recorded, under the options the recording says; those whose skills did
// not change replay with 0 differences against the skills too. A few
// seeds run every time; -replay-seeds N runs N more.
func TestReplayPropertyRandomSessions(t *testing.T) {
	seeds := []uint64{1, 2, 3}
	for i := range *replaySeeds {
		seeds = append(seeds, uint64(1000+i))
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			checkRandomSession(t, seed, nil)
		})
	}
}

// checkRandomSession plays the session of seed (fix as for
// playRandomSession), replays it and returns the steps replayed as
// recorded.
func checkRandomSession(t *testing.T, seed uint64, fix func(*shape)) []Step {
	t.Helper()
	rec, changed, skills, played := playRandomSession(t, seed, fix)
	r, err := NewReader(bytes.NewReader(rec))
	if err != nil {
		t.Fatal(err)
	}
	recOpts, err := RecordedOptions(r)
	if err != nil {
		t.Fatal(err)
	}
	// A session that appended no catalog says nothing: the
	// options it was played with stand in.
	opts, _ := MergeOptions(catalog.DefaultOptions(), nil, recOpts)
	if played.Updates == "" {
		played.Updates = catalog.UpdatesFull
	}
	if recOpts != nil && opts != played {
		t.Fatalf("recorded options %+v, played with %+v", opts, played)
	}
	if recOpts == nil {
		opts = played
	}
	steps, sum := replayBytes(t, rec, Options{ToolOwner: processor.DefaultToolOwner, Catalog: opts, AsRecorded: true, Recording: recOpts})
	t.Logf("seed %d: %d triggers, %s", seed, sum.Triggers, coverage(steps))
	if sum.Differ != 0 {
		t.Errorf("seed %d (options %+v): as recorded, %d of %d triggers differ\n%s", seed, played, sum.Differ, sum.Triggers, differing(steps))
	}
	if !changed {
		reg := providers.NewRegistry([]providers.Provider{skills})
		defer reg.Close()
		steps, sum := replayBytes(t, rec, Options{ToolOwner: processor.DefaultToolOwner, Catalog: opts, Skills: reg})
		if sum.Differ != 0 {
			t.Errorf("seed %d (options %+v): against the unchanged skills, %d of %d triggers differ\n%s", seed, played, sum.Differ, sum.Triggers, differing(steps))
		}
	}
	return steps
}

// coverage counts what the recorded catalogs of steps show: shortened
// by the size limit, shortened for search, change lists.
func coverage(steps []Step) string {
	limit, forSearch, changes, bare := 0, 0, 0, 0
	for _, s := range steps {
		text := s.Recorded.Text
		if s.Kind != TriggerPreStep || text == "" {
			continue
		}
		if strings.Contains(text, "(Shortened to fit the catalog size limit: ") {
			limit++
			if !strings.Contains(text, "size limit: 0 skills listed without") {
				bare++
			}
		}
		if strings.Contains(text, "more skills are available but not listed here") {
			forSearch++
		}
		if strings.Contains(text, "<skill_catalog_changes>") {
			changes++
		}
	}
	return fmt.Sprintf("catalogs shortened by the size limit %d (with bare entries %d), for search %d, change lists %d", limit, bare, forSearch, changes)
}

// differing prints the steps that differ, with their diffs.
func differing(steps []Step) string {
	var b strings.Builder
	for _, s := range steps {
		if s.Differs {
			fmt.Fprintf(&b, "%s %s: recorded %s, replayed %s %s\n%s", s.Kind, s.ID, s.Recorded, s.Replayed, s.Note, s.Diff)
		}
	}
	return b.String()
}

// stepRanker is a processor.VersionedRanker whose use a session draws at
// each step (a new version each time, so the processor's ranked views
// kept per snapshot and version are exercised too).
type stepRanker struct {
	mu      sync.Mutex
	use     catalog.Ranking
	version uint64
}

func (r *stepRanker) set(use catalog.Ranking) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.use = use
	r.version++
}

func (r *stepRanker) Ranking() catalog.Ranking {
	use, _ := r.VersionedRanking()
	return use
}

func (r *stepRanker) VersionedRanking() (catalog.Ranking, uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.use, r.version
}
