package store_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
	"github.com/skillstream/skillstream/providers/store"
)

// BenchmarkWarmSnapshot1000 takes snapshots of 1,000 store skills from a
// warm registry; objects-read (after the load) must stay 0. open-ms is
// how long Open took to load and check the 1,000 records.
func BenchmarkWarmSnapshot1000(b *testing.B) {
	srv := natstest.Start(b)
	pb := publisher(b, srv.JS, store.Config{})
	root := b.TempDir()
	var ls []store.Local
	for i := range 1000 {
		l, err := store.ReadSkill(writeSkill(b, root, fmt.Sprintf("skill-%04d", i), "Skill.", "Body.", nil), store.Config{})
		if err != nil {
			b.Fatal(err)
		}
		ls = append(ls, l)
	}
	if _, err := pb.Push(context.Background(), skillstore.Global, ls, false); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	p := open(b, srv.JS, store.Config{})
	opened := time.Since(start) // each record's object checked once
	loaded := p.Fetches()
	reg := providers.NewRegistry([]providers.Provider{p})
	defer reg.Close()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		s, err := reg.Snapshot(ctx, catalog.Query{})
		if err != nil || len(s.Skills) != 1000 || !s.Complete {
			b.Fatal(len(s.Skills), err)
		}
	}
	b.ReportMetric(float64(p.Fetches()-loaded), "objects-read")
	b.ReportMetric(float64(opened.Milliseconds()), "open-ms")
}

// BenchmarkLoad compares a skill call's load of the same skill from the
// store and from disk (both warm).
func BenchmarkLoad(b *testing.B) {
	srv := natstest.Start(b)
	pb := publisher(b, srv.JS, store.Config{})
	root := b.TempDir()
	dir := writeSkill(b, root, "a-skill", "A.", "Body of the skill, a few lines long.\n\n1. Step.\n2. Step.", map[string]string{"ref.md": "ref"})
	push(b, pb, skillstore.Global, false, dir)
	sp := open(b, srv.JS, store.Config{})
	fs, err := agentskills.New(agentskills.Config{NoUserDir: true, CustomDirs: []string{root}})
	if err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		p    providers.Provider
	}{{"store", sp}, {"disk", fs}} {
		b.Run(tc.name, func(b *testing.B) {
			reg := providers.NewRegistry([]providers.Provider{tc.p})
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				sk, err := reg.Load(ctx, "a-skill", catalog.Query{})
				if err != nil || sk.Digest == "" {
					b.Fatal(err)
				}
			}
		})
	}
	fs.Close()
}

// BenchmarkPushToSnapshot measures the time from a push returning to the
// next snapshot of two members that shows it (p50 and p99 over b.N
// pushes).
func BenchmarkPushToSnapshot(b *testing.B) {
	srv := natstest.Start(b)
	pb := publisher(b, srv.JS, store.Config{})
	root := b.TempDir()
	var regs []*providers.Registry
	for range 2 {
		js, _ := jetstream.New(srv.Connect())
		r := providers.NewRegistry([]providers.Provider{open(b, js, store.Config{})})
		defer r.Close()
		regs = append(regs, r)
	}
	ctx := context.Background()
	var lat []time.Duration
	i := 0
	for b.Loop() {
		i++
		push(b, pb, skillstore.Global, false, writeSkill(b, root, "a-skill", fmt.Sprintf("Version %d.", i), "Body.", nil))
		start := time.Now()
		for _, r := range regs {
			for {
				s, err := r.Snapshot(ctx, catalog.Query{})
				if err == nil && s.Complete && len(s.Skills) == 1 && s.Skills[0].Description == fmt.Sprintf("Version %d.", i) {
					break
				}
			}
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// BenchmarkCohortSnapshot1000 is a trigger's path through a warm registry
// of 1,000 store skills: the session's cohort (catalog.Cohort over the
// registry's Releases), then its snapshot, for sessions drawn from 1,000
// ids; with no release, and with 100 of the skills in a 10% canary.
// views is how many distinct cohorts (cached views) the sessions had.
func BenchmarkCohortSnapshot1000(b *testing.B) {
	srv := natstest.Start(b)
	pb := publisher(b, srv.JS, store.Config{})
	root := b.TempDir()
	var ls, drafts []store.Local
	for i := range 1000 {
		dir := writeSkill(b, root, fmt.Sprintf("skill-%04d", i), "Skill.", "Body.", nil)
		l, err := store.ReadSkill(dir, store.Config{})
		if err != nil {
			b.Fatal(err)
		}
		ls = append(ls, l)
		if i%10 == 0 {
			l, err := store.ReadSkill(writeSkill(b, root, fmt.Sprintf("skill-%04d", i), "Skill, new.", "Body two.", nil), store.Config{})
			if err != nil {
				b.Fatal(err)
			}
			drafts = append(drafts, l)
		}
	}
	ctx := context.Background()
	if _, err := pb.Push(ctx, skillstore.Global, ls, false); err != nil {
		b.Fatal(err)
	}
	p := open(b, srv.JS, store.Config{})
	reg := providers.NewRegistry([]providers.Provider{p})
	defer reg.Close()
	run := func(b *testing.B, want int) {
		views := map[string]bool{}
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			session := fmt.Sprintf("session-%d", i%1000)
			i++
			q := catalog.Query{}
			q.Canary = catalog.Cohort("", session, reg.Releases(q))
			views[q.Canary] = true
			s, err := reg.Snapshot(ctx, q)
			if err != nil || len(s.Skills) != 1000 {
				b.Fatal(len(s.Skills), err)
			}
		}
		if got := len(reg.Releases(catalog.Query{})); got != want {
			b.Fatalf("%d releases, want %d", got, want)
		}
		b.ReportMetric(float64(len(views)), "views")
	}
	b.Run("none", func(b *testing.B) { run(b, 0) })
	cs, err := pb.PushWith(ctx, skillstore.Global, drafts, store.PushOptions{Draft: true})
	if err != nil {
		b.Fatal(err)
	}
	var last uint64
	for _, c := range cs {
		if _, err := pb.Release(ctx, skillstore.Global, c.Name, c.Rev, 1000, ""); err != nil {
			b.Fatal(err)
		}
	}
	last = lastSeqB(b, srv.JS)
	eventually(b, "releases applied", func() bool { return p.Revision() >= last })
	b.Run("canary-100-of-1000", func(b *testing.B) { run(b, 100) })
	// The store's own share of it: List alone, for a canary session.
	b.Run("canary-list-only", func(b *testing.B) {
		i := 0
		b.ReportAllocs()
		for b.Loop() {
			q := catalog.Query{}
			q.Canary = catalog.Cohort("", fmt.Sprintf("session-%d", i%1000), p.Releases(q))
			i++
			if cs, err := p.List(ctx, q); err != nil || len(cs) != 1000 {
				b.Fatal(len(cs), err)
			}
		}
	})
}

func lastSeqB(b *testing.B, js jetstream.JetStream) uint64 {
	s, err := js.Stream(context.Background(), "KV_"+skillstore.DefaultBucket)
	if err != nil {
		b.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	return info.State.LastSeq
}
