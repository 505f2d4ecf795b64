package providertest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"sync"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers"
)

// Revision is one revision of a Released skill: its number in the skill's
// history, its description and body, and whether only users may invoke it
// (the model's calls of it then fail: a bad revision, for tests).
type Revision struct {
	Rev         uint64
	Description string
	Body        string
	UserOnly    bool
}

// digest is a revision's digest: its body's, enough to tell revisions
// apart in tests.
func (r Revision) digest() string {
	sum := sha256.Sum256([]byte(r.Description + "\x00" + r.Body))
	return hex.EncodeToString(sum[:])
}

// Released is a skill as a releasing provider holds it: the revision every
// session gets (Stable, nil for a skill new in its release) and a release
// in progress (Candidate, nil for none) offered to Share basis points of
// sessions (catalog.FullShare: all).
type Released struct {
	Name      string
	Stable    *Revision
	Candidate *Revision
	Share     int
}

// Releases is a provider whose skills can be released to a share of
// sessions first, for tests of what serves them (the processor, the MCP
// front door, replay): a providers.Provider, Notifier and Releaser that
// answers List and Load with each skill's candidate for a Query whose
// Canary names it (catalog.TakesCandidate) and its stable revision
// otherwise, every answer carrying Summary.Origin. It keeps everything in
// memory; Set changes a skill and announces the change.
type Releases struct {
	name string
	rank int

	mu     sync.Mutex
	skills map[string]Released
	rels   []catalog.Release // kept as skills change: Releases answers from memory
	ch     chan struct{}
}

// NewReleases returns a releasing provider called name offering skills,
// ranked as the store's global scope.
func NewReleases(name string, skills ...Released) *Releases {
	p := &Releases{name: name, rank: providers.RankStoreGlobal, skills: map[string]Released{}, ch: make(chan struct{})}
	for _, s := range skills {
		p.skills[s.Name] = s
	}
	p.rels = p.releases()
	return p
}

// Set replaces (or adds) a skill and announces the change.
func (p *Releases) Set(s Released) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.skills[s.Name] = s
	p.rels = p.releases()
	close(p.ch)
	p.ch = make(chan struct{})
}

// Name implements providers.Provider.
func (p *Releases) Name() string { return p.name }

// served is the revision of s a session of q gets, and its channel.
func served(s Released, q catalog.Query) (*Revision, string) {
	if s.Candidate != nil && catalog.TakesCandidate(q.Canary, s.Name) {
		return s.Candidate, catalog.ChannelCanary
	}
	return s.Stable, catalog.ChannelStable
}

func (p *Releases) summary(s Released, r *Revision, channel string) catalog.Summary {
	return catalog.Summary{Name: s.Name, Description: r.Description,
		Invocation: catalog.Invocation{ModelInvocable: !r.UserOnly, UserInvocable: true},
		Source:     "store", Provider: p.name,
		Origin: catalog.Origin{Rev: r.Rev, Digest: r.digest(), Channel: channel}}
}

// List implements providers.Provider.
func (p *Releases) List(ctx context.Context, q catalog.Query) ([]providers.Candidate, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []providers.Candidate
	for _, s := range p.skills {
		if r, ch := served(s, q); r != nil {
			out = append(out, providers.Candidate{Summary: p.summary(s, r, ch), Rank: p.rank})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// Load implements providers.Provider: the same revision as List for q.
func (p *Releases) Load(ctx context.Context, name string, q catalog.Query) (catalog.Skill, error) {
	if err := ctx.Err(); err != nil {
		return catalog.Skill{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	s, ok := p.skills[name]
	if !ok {
		return catalog.Skill{}, fmt.Errorf("%w: %q", catalog.ErrNotFound, name)
	}
	r, ch := served(s, q)
	if r == nil {
		return catalog.Skill{}, fmt.Errorf("%w: %q", catalog.ErrNotFound, name)
	}
	return catalog.Skill{Summary: p.summary(s, r, ch), Content: r.Body, Digest: r.digest()}, nil
}

// Changes implements providers.Notifier.
func (p *Releases) Changes(catalog.Query) <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ch
}

// Releases implements providers.Releaser: every skill with a candidate.
func (p *Releases) Releases(catalog.Query) []catalog.Release {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.rels
}

// releases lists the skills with a candidate, sorted by name.
func (p *Releases) releases() []catalog.Release {
	var out []catalog.Release
	for _, s := range p.skills {
		if s.Candidate != nil {
			out = append(out, catalog.NewRelease(s.Name, s.Candidate.digest(), s.Share))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

var (
	_ providers.Provider = (*Releases)(nil)
	_ providers.Notifier = (*Releases)(nil)
	_ providers.Releaser = (*Releases)(nil)
)
