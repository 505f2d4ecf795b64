package bundled

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
)

// DefaultName is the provider name of the built-in skills.
const DefaultName = "bundled"

//go:embed skills
var builtin embed.FS

// Option tunes a Provider.
type Option func(*options)

type options struct {
	name string
	fsys fs.FS
}

// WithName sets the provider name (default "bundled").
func WithName(name string) Option { return func(o *options) { o.name = name } }

// WithFS serves the skills of fsys instead of the built-in ones. fsys holds
// <name>/SKILL.md files at its top level.
func WithFS(fsys fs.FS) Option { return func(o *options) { o.fsys = fsys } }

// Provider serves skills compiled into the binary. Its answers never change
// and do not depend on the working directory.
type Provider struct {
	name   string
	skills []catalog.Skill // by name
	raw    [][]byte        // the SKILL.md of each skill, as read
}

// New parses the skills once. A skill that does not parse is an error: the
// built-in set is tested, so this only fails for a bad WithFS.
func New(opts ...Option) (*Provider, error) {
	o := options{name: DefaultName}
	for _, opt := range opts {
		opt(&o)
	}
	fsys := o.fsys
	if fsys == nil {
		sub, err := fs.Sub(builtin, "skills")
		if err != nil {
			return nil, fmt.Errorf("bundled skills: %w", err)
		}
		fsys = sub
	}
	p := &Provider{name: o.name}
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, fmt.Errorf("bundled skills: %w", err)
	}
	seen := make(map[string]bool)
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		file := path.Join(e.Name(), agentskills.SkillFile)
		data, err := fs.ReadFile(fsys, file)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("bundled skills: %w", err)
		}
		sk, err := agentskills.ParseFile(file, data)
		if err != nil {
			return nil, fmt.Errorf("bundled skills: %w", err)
		}
		if seen[sk.Name] {
			return nil, fmt.Errorf("bundled skills: %s: skill %q is defined twice", file, sk.Name)
		}
		seen[sk.Name] = true
		sk.Source, sk.Provider = catalog.SourceBundled, p.name
		sk.ResourceBase = &catalog.ResourceBase{
			Kind:        catalog.ResourceOpaque,
			Description: fmt.Sprintf("built into skillstream; skill %q has no separate resource files", sk.Name),
		}
		p.skills = append(p.skills, sk)
		p.raw = append(p.raw, data)
	}
	sort.Sort(byName{p})
	return p, nil
}

// Name returns the provider name.
func (p *Provider) Name() string { return p.name }

// List returns every bundled skill, ranked after the user folder.
func (p *Provider) List(ctx context.Context, _ catalog.Query) ([]providers.Candidate, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([]providers.Candidate, len(p.skills))
	for i, sk := range p.skills {
		out[i] = providers.Candidate{Summary: copySummary(sk.Summary), Rank: providers.RankBundled}
	}
	return out, nil
}

// Load returns a bundled skill.
func (p *Provider) Load(ctx context.Context, name string, _ catalog.Query) (catalog.Skill, error) {
	if err := ctx.Err(); err != nil {
		return catalog.Skill{}, err
	}
	i := sort.Search(len(p.skills), func(i int) bool { return p.skills[i].Name >= name })
	if i == len(p.skills) || p.skills[i].Name != name {
		return catalog.Skill{}, fmt.Errorf("skill %q: %w", name, catalog.ErrNotFound)
	}
	sk := p.skills[i]
	sk.Summary = copySummary(sk.Summary)
	return sk, nil
}

// Files implements providers.Filer: a bundled skill is its SKILL.md alone.
func (p *Provider) Files(ctx context.Context, name string, _ catalog.Query, _ int, maxBytes int64) ([]providers.File, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	i := sort.Search(len(p.skills), func(i int) bool { return p.skills[i].Name >= name })
	if i == len(p.skills) || p.skills[i].Name != name {
		return nil, fmt.Errorf("skill %q: %w", name, catalog.ErrNotFound)
	}
	if maxBytes > 0 && int64(len(p.raw[i])) > maxBytes {
		return nil, fmt.Errorf("skill %q: SKILL.md is larger than %d bytes", name, maxBytes)
	}
	return []providers.File{{Path: agentskills.SkillFile, Data: p.raw[i]}}, nil
}

// byName sorts a provider's skills and their files together.
type byName struct{ p *Provider }

func (b byName) Len() int           { return len(b.p.skills) }
func (b byName) Less(i, j int) bool { return b.p.skills[i].Name < b.p.skills[j].Name }
func (b byName) Swap(i, j int) {
	b.p.skills[i], b.p.skills[j] = b.p.skills[j], b.p.skills[i]
	b.p.raw[i], b.p.raw[j] = b.p.raw[j], b.p.raw[i]
}

// Changes implements providers.Notifier: bundled skills never change.
func (p *Provider) Changes(catalog.Query) <-chan struct{} { return nil }

func copySummary(s catalog.Summary) catalog.Summary {
	if s.ResourceBase != nil {
		rb := *s.ResourceBase
		s.ResourceBase = &rb
	}
	return s
}
