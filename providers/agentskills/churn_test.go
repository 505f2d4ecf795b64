package agentskills_test

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
)

// TestManyProjectsNeverIncomplete: far more active projects than the
// provider tracks (it forgets the least recently used ones), asked for at
// full concurrency through the registry as the processor does, with nothing
// changing on disk: forgetting a project is not a change, so every snapshot
// is complete.
func TestManyProjectsNeverIncomplete(t *testing.T) {
	for _, n := range []int{1000, 5000} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			if n > 1000 && testing.Short() {
				t.Skip("short")
			}
			base := t.TempDir()
			cwds := make([]string, n)
			for i := range cwds {
				proj := filepath.Join(base, fmt.Sprintf("p%05d", i))
				if i%2 == 0 { // half are repositories, half plain folders
					mkdir(t, filepath.Join(proj, ".git"))
				}
				name := fmt.Sprintf("s%d", i)
				write(t, filepath.Join(proj, ".agents/skills", name, "SKILL.md"), skillText(name, "d", "b"))
				cwds[i] = proj
				if i%2 == 0 {
					cwds[i] = filepath.Join(proj, "src") // found by walking up to .git
					mkdir(t, cwds[i])
				}
			}
			p := newProvider(t, agentskills.Config{})
			if err := p.WatchError(); err != nil {
				t.Fatalf("watcher did not start: %v", err)
			}
			var reasons sync.Map // why snapshots were incomplete, from the registry's log
			log := slog.New(slog.NewTextHandler(&reasonWriter{m: &reasons}, nil))
			r := providers.NewRegistry([]providers.Provider{p}, providers.WithLogger(log))
			t.Cleanup(func() { _ = r.Close() })

			const workers = 256
			var next, incomplete, wrong atomic.Int64
			var wg sync.WaitGroup
			total := int64(n) // every cwd once
			for range workers {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						k := next.Add(1) - 1
						if k >= total {
							return
						}
						i := int(k*7919) % n // spread: neighbours are not asked together
						s, err := r.Snapshot(context.Background(), catalog.At(cwds[i]))
						if err != nil {
							t.Errorf("Snapshot: %v", err)
							return
						}
						if !s.Complete {
							incomplete.Add(1)
						}
						if len(s.Skills) != 1 || s.Skills[0].Name != fmt.Sprintf("s%d", i) {
							wrong.Add(1)
						}
					}
				}()
			}
			wg.Wait()
			if c := incomplete.Load(); c != 0 {
				var why []string
				reasons.Range(func(k, _ any) bool { why = append(why, k.(string)); return len(why) < 5 })
				t.Errorf("%d of %d snapshots incomplete; logged: %q", c, total, why)
			}
			if c := wrong.Load(); c != 0 {
				t.Errorf("%d of %d snapshots listed the wrong skills", c, total)
			}
		})
	}
}

// reasonWriter keeps the distinct err= values of log lines.
type reasonWriter struct{ m *sync.Map }

var errField = regexp.MustCompile(`err="?([^"]*)"?`)

func (w *reasonWriter) Write(b []byte) (int, error) {
	if m := errField.FindSubmatch(b); m != nil {
		w.m.Store(string(m[1]), true)
	}
	return len(b), nil
}
