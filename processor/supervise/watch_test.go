package supervise

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/skillstream/skillstream/natstest"
)

// stoppable is a started unit that, asked to stop, finishes its work in
// flight first: Run returns only once release is closed.
type stoppable struct {
	*serving
	stopping chan struct{}
	release  chan struct{}
}

func (s *stoppable) Run(ctx context.Context) error {
	<-ctx.Done()
	close(s.stopping)
	<-s.release
	return nil
}

// TestWatchAddsAndRemoves: units named by a real file, edited while the
// supervisor runs: a unit added is started without touching the others;
// one removed is stopped, Remove waiting for it to finish what it has in
// flight; a bad edit changes nothing; a changed unit is started again.
func TestWatchAddsAndRemoves(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "units")
	write := func(s string) {
		t.Helper()
		// Replaced by a rename, as an editor saves.
		tmp := filepath.Join(dir, ".units.tmp")
		if err := os.WriteFile(tmp, []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, path); err != nil {
			t.Fatal(err)
		}
	}
	write("a=1\n")
	var mu sync.Mutex
	started := map[string]int{}
	units := map[string]*stoppable{}
	makeUnit := func(name string) Unit {
		return Unit{Name: name, Start: func(context.Context) (Serving, error) {
			s := &stoppable{serving: newServing(), stopping: make(chan struct{}), release: make(chan struct{})}
			close(s.ready)
			mu.Lock()
			started[name]++
			units[name] = s
			mu.Unlock()
			return s, nil
		}}
	}
	load := func() ([]Wanted, error) {
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		var out []Wanted
		for line := range strings.Lines(string(b)) {
			name, key, ok := strings.Cut(strings.TrimSpace(line), "=")
			if !ok {
				return nil, fmt.Errorf("line %q: want name=key", strings.TrimSpace(line))
			}
			out = append(out, Wanted{Name: name, Key: key, Make: func() (Unit, error) { return makeUnit(name), nil }})
		}
		return out, nil
	}
	reg := prometheus.NewRegistry()
	sup, err := New(Config{Logger: quiet(), Registerer: reg}, []Unit{makeUnit("a")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	runDone, watchDone := make(chan error, 1), make(chan error, 1)
	go func() { runDone <- sup.Run(ctx) }()
	type applied struct {
		added, removed []string
		err            error
	}
	appliedc := make(chan applied, 16)
	var stopped []string
	go func() {
		watchDone <- sup.Watch(ctx, WatchConfig{Path: path, Load: load, Settle: 20 * time.Millisecond, Logger: quiet(),
			Stopped: func(name string) { mu.Lock(); stopped = append(stopped, name); mu.Unlock() },
			Applied: func(a, r []string, err error) { appliedc <- applied{a, r, err} }}, map[string]string{"a": "1"})
	}()
	defer func() {
		cancel()
		mu.Lock()
		for _, u := range units {
			select {
			case <-u.release:
			default:
				close(u.release)
			}
		}
		mu.Unlock()
		if err := <-runDone; err != nil {
			t.Error(err)
		}
		if err := <-watchDone; err != nil {
			t.Error(err)
		}
	}()
	next := func(what string) applied {
		t.Helper()
		select {
		case a := <-appliedc:
			return a
		case <-time.After(20 * time.Second):
			t.Fatalf("%s: the file's edit was not applied", what)
			return applied{}
		}
	}
	ready := func(names ...string) {
		t.Helper()
		natstest.Eventually(t, 10*time.Second, "units ready", func() error {
			r := sup.Readiness(context.Background())
			var got []string
			for _, u := range r.Units {
				if u.Ready {
					got = append(got, u.Name)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, names) {
				return fmt.Errorf("ready: %v, want %v", got, names)
			}
			return nil
		})
	}
	ready("a")

	// Added: b starts, a untouched.
	write("a=1\nb=1\n")
	if a := next("add b"); a.err != nil || !slices.Equal(a.added, []string{"b"}) || len(a.removed) != 0 {
		t.Fatalf("add b: %+v", a)
	}
	ready("a", "b")
	if testutil.ToFloat64(sup.up.WithLabelValues("b")) != 1 {
		t.Error("b's tenant_up is not 1")
	}

	// A bad edit: nothing changes.
	write("a=1\nnot a unit\n")
	if a := next("bad edit"); a.err == nil || !strings.Contains(a.err.Error(), "not a unit") || len(a.added)+len(a.removed) != 0 {
		t.Fatalf("bad edit: %+v", a)
	}
	ready("a", "b")

	// Removed: b is asked to stop, and Remove waits until it finished.
	mu.Lock()
	b := units["b"]
	mu.Unlock()
	write("a=1\n")
	<-b.stopping
	select {
	case a := <-appliedc:
		t.Fatalf("removal applied before b finished its work in flight: %+v", a)
	default:
	}
	close(b.release)
	if a := next("remove b"); a.err != nil || !slices.Equal(a.removed, []string{"b"}) {
		t.Fatalf("remove b: %+v", a)
	}
	ready("a")
	mu.Lock()
	if !slices.Equal(stopped, []string{"b"}) || started["a"] != 1 {
		t.Errorf("stopped %v, a started %d times", stopped, started["a"])
	}
	a := units["a"]
	mu.Unlock()
	if n := testutil.CollectAndCount(sup.up); n != 1 {
		t.Errorf("tenant_up has %d series after b's removal, want a's only", n)
	}

	// Changed: a is stopped and started again.
	write("a=2\n")
	<-a.stopping
	close(a.release)
	if r := next("change a"); r.err != nil || !slices.Equal(r.added, []string{"a"}) || len(r.removed) != 0 {
		t.Fatalf("change a: %+v", r)
	}
	ready("a")
	mu.Lock()
	if started["a"] != 2 {
		t.Errorf("a started %d times, want 2", started["a"])
	}
	mu.Unlock()

	// A file naming nothing removes nothing.
	write("")
	if r := next("empty file"); r.err == nil || len(r.removed) != 0 {
		t.Fatalf("empty file: %+v", r)
	}
	if err := sup.Remove(context.Background(), "nope"); !errors.Is(err, ErrUnknownUnit) {
		t.Errorf("removing an unknown unit: %v", err)
	}
}
