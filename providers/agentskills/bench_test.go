package agentskills_test

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
)

const benchSkills = 1000

// benchTree writes 1,000 directory skills into a project folder and returns
// the project root.
func benchTree(b *testing.B) string {
	b.Helper()
	repo := b.TempDir()
	mkdir(b, filepath.Join(repo, ".git"))
	body := "Steps:\n1. Read the task.\n2. Do the thing carefully.\n3. Check the result.\n"
	for i := range benchSkills {
		name := fmt.Sprintf("skill-%04d", i)
		write(b, filepath.Join(repo, ".agents/skills", name, "SKILL.md"),
			skillText(name, "Benchmark skill number "+fmt.Sprint(i)+" that does one specific thing well.", body))
	}
	return repo
}

func benchRegistry(b *testing.B, cfg agentskills.Config, opts ...providers.RegistryOption) (*agentskills.Provider, *providers.Registry) {
	b.Helper()
	cfg.NoUserDir = true
	p, err := agentskills.New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	r := providers.NewRegistry([]providers.Provider{p}, opts...)
	return p, r
}

func mustSnapshot(b *testing.B, r *providers.Registry, cwd string) {
	s, err := r.Snapshot(context.Background(), catalog.At(cwd))
	if err != nil || !s.Complete || len(s.Skills) != benchSkills {
		b.Fatalf("snapshot: %d skills, complete %v, %v", len(s.Skills), s.Complete, err)
	}
}

func reportWork(b *testing.B, p *agentskills.Provider, before agentskills.Stats) {
	after := p.Stats()
	n := float64(b.N)
	b.ReportMetric(float64(after.Reads-before.Reads)/n, "reads/op")
	b.ReportMetric(float64(after.Scans-before.Scans)/n, "scans/op")
	b.ReportMetric(float64(after.DigestWalks-before.DigestWalks)/n, "digest-walks/op")
}

// BenchmarkSnapshotCold: a fresh provider and registry each time: list,
// read, parse and watch 1,000 skills.
func BenchmarkSnapshotCold(b *testing.B) {
	for _, watch := range []bool{true, false} {
		b.Run(fmt.Sprintf("watch=%v", watch), func(b *testing.B) {
			repo := benchTree(b)
			b.ReportAllocs()
			var reads uint64
			for b.Loop() {
				p, r := benchRegistry(b, agentskills.Config{NoWatch: !watch})
				mustSnapshot(b, r, repo)
				reads += p.Stats().Reads
				b.StopTimer()
				_ = r.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(reads)/float64(b.N), "reads/op")
		})
	}
}

// BenchmarkSnapshotWarm: the same tree again, unchanged. "registry" is the
// registry's cached snapshot (what the processor sees); "provider" disables
// the registry cache so every snapshot runs List over the provider's cached
// parses; "stat" has no watcher and validates every file by stat.
func BenchmarkSnapshotWarm(b *testing.B) {
	cases := []struct {
		name string
		cfg  agentskills.Config
		opts []providers.RegistryOption
	}{
		{"registry", agentskills.Config{}, nil},
		{"provider", agentskills.Config{}, []providers.RegistryOption{providers.WithCacheSize(0)}},
		{"stat", agentskills.Config{NoWatch: true}, nil},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			repo := benchTree(b)
			p, r := benchRegistry(b, c.cfg, c.opts...)
			defer r.Close()
			mustSnapshot(b, r, repo)
			before := p.Stats()
			b.ReportAllocs()
			for b.Loop() {
				mustSnapshot(b, r, repo)
			}
			reportWork(b, p, before)
		})
	}
}

// BenchmarkLoad: load one skill's body through the registry (a warm
// snapshot to resolve, then one file read).
func BenchmarkLoad(b *testing.B) {
	repo := benchTree(b)
	p, r := benchRegistry(b, agentskills.Config{})
	defer r.Close()
	mustSnapshot(b, r, repo)
	before := p.Stats()
	b.ReportAllocs()
	for b.Loop() {
		sk, err := r.Load(context.Background(), "skill-0500", catalog.At(repo))
		if err != nil || sk.Content == "" {
			b.Fatal(err)
		}
	}
	reportWork(b, p, before)
}

// BenchmarkLoadFolder: load, warm, one folder skill of 20 files (SKILL.md,
// top-level and nested resources) straight from the provider: the body
// and the digest of its folder, both cached.
func BenchmarkLoadFolder(b *testing.B) {
	for _, watch := range []bool{true, false} {
		b.Run(fmt.Sprintf("watch=%v", watch), func(b *testing.B) {
			repo := b.TempDir()
			mkdir(b, filepath.Join(repo, ".git"))
			dir := filepath.Join(repo, ".agents/skills/big")
			write(b, filepath.Join(dir, "SKILL.md"), skillText("big", "A skill with resources.", "Use the scripts."))
			for i := range 19 {
				sub := []string{"", "scripts", "references/deep"}[i%3]
				write(b, filepath.Join(dir, sub, fmt.Sprintf("file-%02d.txt", i)), fmt.Sprintf("resource %d\n", i))
			}
			p, err := agentskills.New(agentskills.Config{NoUserDir: true, NoWatch: !watch})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			want, err := agentskills.Digest(dir)
			if err != nil {
				b.Fatal(err)
			}
			q := catalog.At(repo)
			if sk, err := p.Load(context.Background(), "big", q); err != nil || sk.Digest != want {
				b.Fatalf("Load: digest %q, want %q, %v", sk.Digest, want, err)
			}
			before := p.Stats()
			b.ReportAllocs()
			for b.Loop() {
				sk, err := p.Load(context.Background(), "big", q)
				if err != nil || sk.Digest != want {
					b.Fatalf("Load: digest %q, want %q, %v", sk.Digest, want, err)
				}
			}
			reportWork(b, p, before)
		})
	}
}

// registryLookup is the skill tool's lookup over the registry: the
// registry's own binding when it has one, else Resolve and Load.
func registryLookup(r *providers.Registry, q catalog.Query) catalog.Lookup {
	if l, ok := any(r).(interface {
		Lookup(catalog.Query) catalog.Lookup
	}); ok {
		return l.Lookup(q)
	}
	return plainLookup{r, q}
}

type plainLookup struct {
	r *providers.Registry
	q catalog.Query
}

func (l plainLookup) Resolve(ctx context.Context, name string) (catalog.Summary, error) {
	return l.r.Resolve(ctx, name, l.q)
}

func (l plainLookup) Load(ctx context.Context, name string) (catalog.Skill, error) {
	return l.r.Load(ctx, name, l.q)
}

// BenchmarkSkillCall: one call of the skill tool (catalog.Execute: resolve,
// then load) for a warm folder skill among 1,000, through the registry, as
// the processor makes it for every tool.call.skill.
func BenchmarkSkillCall(b *testing.B) {
	repo := benchTree(b)
	p, r := benchRegistry(b, agentskills.Config{})
	defer r.Close()
	mustSnapshot(b, r, repo)
	q := catalog.At(repo)
	if res := catalog.Execute(context.Background(), registryLookup(r, q), "skill-0500", catalog.Options{}); res.Value == nil {
		b.Fatalf("skill call: %+v", res.Err)
	}
	before := p.Stats()
	b.ReportAllocs()
	for b.Loop() {
		res := catalog.Execute(context.Background(), registryLookup(r, q), "skill-0500", catalog.Options{})
		if res.Value == nil || res.Value.Content == "" || res.Value.Digest == "" {
			b.Fatalf("skill call: %+v", res.Err)
		}
	}
	reportWork(b, p, before)
}

// BenchmarkSkillCallParallel: BenchmarkSkillCall from many goroutines at
// once, as a processor's workers make them (8 per CPU), over 8 skills.
func BenchmarkSkillCallParallel(b *testing.B) {
	repo := benchTree(b)
	p, r := benchRegistry(b, agentskills.Config{})
	defer r.Close()
	mustSnapshot(b, r, repo)
	q := catalog.At(repo)
	names := make([]string, 8)
	for i := range names {
		names[i] = fmt.Sprintf("skill-%04d", 100*i)
		if res := catalog.Execute(context.Background(), registryLookup(r, q), names[i], catalog.Options{}); res.Value == nil {
			b.Fatalf("skill call: %+v", res.Err)
		}
	}
	before := p.Stats()
	b.ReportAllocs()
	b.SetParallelism(8)
	var next atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		name := names[next.Add(1)%int64(len(names))]
		for pb.Next() {
			res := catalog.Execute(context.Background(), registryLookup(r, q), name, catalog.Options{})
			if res.Value == nil || res.Value.Content == "" || res.Value.Digest == "" {
				b.Errorf("skill call: %+v", res.Err)
				return
			}
		}
	})
	reportWork(b, p, before)
}
