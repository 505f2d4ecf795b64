//go:build unix

package processor

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/providers/store"
)

// BenchmarkUnchangedPreStepReleases is the cost of releases on the
// common pre-step, end to end: a worker publishes a pre-step whose
// catalog is unchanged and waits for the answer, through a real processor
// on a real in-process nats-server, the skills coming from the skill
// store (1,000 global skills, a catalog shortened to its size limit as in
// skillstream bench). "none" has no release; "canary-100" has 100 of the
// 1,000 skills each released to 10% of the sessions. Each sub-benchmark
// starts 1,000 sessions (their first catalogs, not measured; "lists" is
// how many distinct lists they show: 1 without a release, about one per
// cohort with the canaries), then plays b.N unchanged pre-steps spread
// over them, 8 at a time, so that every cohort is exercised. It reports
// the p50 and p99 of a pre-step's round trip and the CPU of the whole
// process per pre-step (nats-server, processor and worker alike): compare
// the two sub-benchmarks of one run, never across runs or machines.
//
//	go test ./processor -run XXX -bench UnchangedPreStepReleases -benchtime 10000x
func BenchmarkUnchangedPreStepReleases(b *testing.B) {
	const (
		skills      = 1000
		sessions    = 1000
		concurrency = 8
	)
	for _, tc := range []struct {
		name     string
		canaries int
	}{{"none", 0}, {"canary-100", 100}} {
		b.Run(tc.name, func(b *testing.B) {
			e := newEnv(b)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			pb, err := store.NewPublisher(ctx, e.js, store.Config{})
			if err != nil {
				b.Fatal(err)
			}
			root := b.TempDir()
			read := func(name, desc string) store.Local {
				l, err := store.ReadSkill(storeSkill(b, root, name, desc, "Steps of "+desc), store.Config{})
				if err != nil {
					b.Fatal(err)
				}
				return l
			}
			var locals []store.Local
			for i := range skills {
				locals = append(locals, read(fmt.Sprintf("skill-%04d", i), "Does task "+strconv.Itoa(i)+"."))
			}
			if _, err := pb.Push(ctx, skillstore.Global, locals, false); err != nil {
				b.Fatal(err)
			}
			var drafts []store.Local
			for i := range tc.canaries {
				drafts = append(drafts, read(fmt.Sprintf("skill-%04d", i*(skills/tc.canaries)), "Does task "+strconv.Itoa(i)+" better."))
			}
			if len(drafts) > 0 {
				cs, err := pb.PushWith(ctx, skillstore.Global, drafts, store.PushOptions{Draft: true, By: "bench"})
				if err != nil {
					b.Fatal(err)
				}
				for _, ch := range cs {
					if _, err := pb.Release(ctx, skillstore.Global, ch.Name, ch.Rev, catalog.FullShare/10, "bench"); err != nil {
						b.Fatal(err)
					}
				}
			}
			e.withStore()
			e.start(func(c *Config, _ *options) { c.Workers = 4 })
			if err := e.registry.CatchUp(ctx, storeIndexSeq(b, e)); err != nil {
				b.Fatal(err)
			}
			if got := len(e.registry.Releases(catalog.Query{Cwd: e.cwd})); got != tc.canaries {
				b.Fatalf("%d releases served, want %d", got, tc.canaries)
			}
			c, err := client.New(e.srv.Connect())
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			tools := ourTool()
			sid := func(i int) string { return "bench-" + strconv.Itoa(i) }
			// lists counts the sessions by the list their first catalog
			// shows: one list without a release, about one per cohort with
			// the canaries.
			var mu sync.Mutex
			lists := map[string]int{}
			step := func(i int, n string, want string) time.Duration {
				start := time.Now()
				d, err := c.PreStep(ctx, events.PreStep{Session: sid(i), Step: n, Cwd: e.cwd, Tools: tools})
				took := time.Since(start)
				if err != nil || d.Outcome != want {
					b.Errorf("%s step %s: %+v, %v; want %s", sid(i), n, d, err, want)
				} else if n == "0" {
					mu.Lock()
					lists[d.Catalog.Source.Digest]++
					mu.Unlock()
				}
				return took
			}
			// spread runs pre-steps over the sessions, concurrency at a
			// time, as long as next hands out numbers (k: the k-th
			// pre-step, of session k%sessions), and returns each one's
			// round trip.
			spread := func(next <-chan int, stepOf func(k int) string, want string) []time.Duration {
				var mu sync.Mutex
				var took []time.Duration
				var wg sync.WaitGroup
				for range concurrency {
					wg.Add(1)
					go func() {
						defer wg.Done()
						var mine []time.Duration
						for k := range next {
							if !b.Failed() {
								mine = append(mine, step(k%sessions, stepOf(k), want))
							}
						}
						mu.Lock()
						took = append(took, mine...)
						mu.Unlock()
					}()
				}
				wg.Wait()
				return took
			}
			first := make(chan int, sessions)
			for i := range sessions {
				first <- i
			}
			close(first)
			spread(first, func(int) string { return "0" }, events.OutcomeAppended)
			if b.Failed() {
				b.FailNow()
			}
			if (len(lists) > 1) != (tc.canaries > 0) {
				b.Fatalf("%d distinct first catalogs over %d sessions with %d canaries", len(lists), sessions, tc.canaries)
			}

			next := make(chan int)
			var took []time.Duration
			done := make(chan struct{})
			go func() {
				defer close(done)
				took = spread(next, func(k int) string { return strconv.Itoa(1 + k/sessions) }, events.OutcomeUnchanged)
			}()
			runtime.GC() // the set-up's garbage is not the pre-steps' CPU
			cpu := processCPU()
			n := 0
			for b.Loop() {
				next <- n
				n++
			}
			close(next)
			<-done
			cpu = processCPU() - cpu
			if b.Failed() {
				b.FailNow()
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Microseconds()), "p50-µs")
			b.ReportMetric(float64(took[len(took)*99/100].Microseconds()), "p99-µs")
			b.ReportMetric(float64(cpu.Microseconds())/float64(n), "cpu-µs/trigger")
			b.ReportMetric(float64(len(lists)), "lists")
		})
	}
}

// storeIndexSeq is the skill store index's newest revision.
func storeIndexSeq(tb testing.TB, e *env) uint64 {
	tb.Helper()
	s, err := e.js.Stream(context.Background(), "KV_"+skillstore.DefaultBucket)
	if err != nil {
		tb.Fatal(err)
	}
	info, err := s.Info(context.Background())
	if err != nil {
		tb.Fatal(err)
	}
	return info.State.LastSeq
}

// processCPU is this process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
