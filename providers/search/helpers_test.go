package search_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/search"
)

// memory is a provider whose skills live in memory and which announces
// each change (a Notifier), as the filesystem provider does for files.
type memory struct {
	mu     sync.Mutex
	skills []catalog.Summary
	ch     chan struct{}
	bodies map[string]string // a skill's body by name; "body" when absent
	fail   map[string]bool   // skills whose Load fails
	loads  int               // Load calls
	onLoad func(n int)       // called with the Load calls so far, the lock held
	pos    map[string]int    // skills' positions by name, made at the first Load
}

func newMemory(skills []catalog.Summary) *memory {
	return &memory{skills: skills, ch: make(chan struct{})}
}

func (m *memory) Name() string { return "memory" }

func (m *memory) List(ctx context.Context, q catalog.Query) ([]providers.Candidate, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]providers.Candidate, len(m.skills))
	for i, s := range m.skills {
		out[i] = providers.Candidate{Summary: s, Rank: providers.RankCustom}
	}
	return out, nil
}

func (m *memory) Load(ctx context.Context, name string, q catalog.Query) (catalog.Skill, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.loads++
	if m.onLoad != nil {
		m.onLoad(m.loads)
	}
	if m.fail[name] {
		return catalog.Skill{}, fmt.Errorf("memory: reading %q failed", name)
	}
	if m.pos == nil {
		m.pos = make(map[string]int, len(m.skills))
		for i, s := range m.skills {
			m.pos[s.Name] = i
		}
	}
	if i, ok := m.pos[name]; ok {
		body, ok := m.bodies[name]
		if !ok {
			body = "body"
		}
		return catalog.Skill{Summary: m.skills[i], Content: body}, nil
	}
	return catalog.Skill{}, fmt.Errorf("no %q: %w", name, catalog.ErrNotFound)
}

func (m *memory) Changes(catalog.Query) <-chan struct{} {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.ch
}

// set replaces skill i and announces the change.
func (m *memory) set(i int, s catalog.Summary) {
	m.mu.Lock()
	if m.pos != nil {
		delete(m.pos, m.skills[i].Name)
		m.pos[s.Name] = i
	}
	m.skills[i] = s
	close(m.ch)
	m.ch = make(chan struct{})
	m.mu.Unlock()
}

// evalSkill and evalQuery are the records of testdata/skills.json and
// testdata/queries.json.
type evalSkill struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	WhenToUse   string `json:"whenToUse"`
}

type evalQuery struct {
	Query  string   `json:"query"`
	Expect []string `json:"expect"`
}

func readJSON[T any](t testing.TB, path string) T {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v T
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

func summary(name, desc, when string) catalog.Summary {
	return catalog.Summary{
		Name: name, Description: desc, WhenToUse: when, Source: catalog.SourceCustom, Provider: "memory",
		Invocation: catalog.Invocation{ModelInvocable: true, UserInvocable: true},
	}
}

// evalSkills returns the evaluation skills as summaries.
func evalSkills(t testing.TB) []catalog.Summary {
	t.Helper()
	var out []catalog.Summary
	for _, s := range readJSON[[]evalSkill](t, "testdata/skills.json") {
		out = append(out, summary(s.Name, s.Description, s.WhenToUse))
	}
	return out
}

// synthetic returns n skills made from the evaluation skills: the
// evaluation skills first, then variants whose names carry a number and
// whose descriptions mix the words of two or three of them, so that the
// vocabulary and the lengths are those of real skills.
func synthetic(t testing.TB, n int) []catalog.Summary {
	t.Helper()
	base := evalSkills(t)
	var vocab []string
	for _, s := range base {
		vocab = append(vocab, strings.Fields(s.Description)...)
	}
	r := rand.New(rand.NewPCG(1, 2))
	out := slices.Clone(base[:min(n, len(base))])
	for i := len(out); i < n; i++ {
		b := base[r.IntN(len(base))]
		w := strings.Fields(b.Description)
		for range 3 + r.IntN(8) {
			w[r.IntN(len(w))] = vocab[r.IntN(len(vocab))]
		}
		when := ""
		if r.IntN(3) == 0 {
			when = strings.Join(vocab[r.IntN(len(vocab)-12):][:4+r.IntN(8)], " ")
		}
		out = append(out, summary(fmt.Sprintf("%s-%d", b.Name, i), strings.Join(w, " "), when))
	}
	slices.SortFunc(out, func(a, b catalog.Summary) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// newIndex returns an index over a registry of ps, closed with the test.
func newIndex(t testing.TB, opts search.Options, ps ...providers.Provider) (*search.Index, *providers.Registry) {
	t.Helper()
	reg := providers.NewRegistry(ps)
	ix := search.New(reg, opts)
	t.Cleanup(func() {
		if err := ix.Close(); err != nil {
			t.Errorf("close index: %v", err)
		}
		if err := reg.Close(); err != nil {
			t.Errorf("close registry: %v", err)
		}
	})
	return ix, reg
}

// names returns the names of a result's matches.
func names(r search.Result) []string {
	var out []string
	for _, s := range r.Matches {
		out = append(out, s.Name)
	}
	return out
}

// syntheticBodies gives each of skills (synthetic's) the body of the
// evaluation skill it was made from (testdata/bodies.json), with its own
// name in the first line so that no two are the same text.
func syntheticBodies(t testing.TB, skills []catalog.Summary) map[string]string {
	t.Helper()
	base := readJSON[map[string]string](t, "testdata/bodies.json")
	out := make(map[string]string, len(skills))
	for _, s := range skills {
		name := s.Name
		if i := strings.LastIndexByte(name, '-'); i > 0 && base[name] == "" {
			name = name[:i]
		}
		out[s.Name] = "# " + s.Name + "\n" + base[name]
	}
	return out
}

// quickMemory is memory answering every load from memory in the caller's
// goroutine (providers.QuickLoader).
type quickMemory struct{ *memory }

func (m quickMemory) LoadQuick(name string, q catalog.Query) (catalog.Skill, bool) {
	sk, err := m.Load(context.Background(), name, q)
	return sk, err == nil
}
