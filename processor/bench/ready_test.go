package bench

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/processor"
	"github.com/skillstream/skillstream/providers"
)

// gatedSkills holds the listing of the skills without a project (what a
// processor prepares before it says it is ready) until open is closed.
type gatedSkills struct {
	*providers.Registry
	entered chan struct{}
	open    chan struct{}
}

func (g *gatedSkills) wait(ctx context.Context, q catalog.Query) error {
	if q.Cwd != "" {
		return nil
	}
	select {
	case g.entered <- struct{}{}:
	default:
	}
	select {
	case <-g.open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *gatedSkills) Snapshot(ctx context.Context, q catalog.Query) (catalog.Snapshot, error) {
	if err := g.wait(ctx, q); err != nil {
		return catalog.Snapshot{}, err
	}
	return g.Registry.Snapshot(ctx, q)
}

func (g *gatedSkills) Prepared(ctx context.Context, q catalog.Query, opts catalog.Options) (catalog.View, error) {
	if err := g.wait(ctx, q); err != nil {
		return catalog.View{}, err
	}
	return g.Registry.Prepared(ctx, q, opts)
}

// StartProcessor returns once the processor is ready, not as soon as it
// answers the tool definition: a load started earlier would measure the
// member listing its skills at start-up as well.
func TestStartProcessorWaitsUntilReady(t *testing.T) {
	srv := natstest.Start(t)
	skills := &gatedSkills{Registry: generateSkills(t, 3).reg, entered: make(chan struct{}, 1), open: make(chan struct{})}
	ctx := context.Background()
	type started struct {
		p   Proc
		err error
	}
	done := make(chan started, 1)
	go func() {
		pnc := srv.Connect()
		p, err := StartProcessor(ctx, pnc, skills, processor.Config{}.WithDefaults(), slog.New(slog.NewTextHandler(io.Discard, nil)), pnc.Close)
		done <- started{p, err}
	}()
	select {
	case <-skills.entered:
	case s := <-done:
		t.Fatalf("StartProcessor returned (err %v) before the processor listed its skills", s.err)
	}
	entered := time.Now()
	// The processor answers the tool definition while it still lists.
	nc := srv.Connect()
	natstest.Eventually(t, 10*time.Second, "the tool definition answered", func() error {
		_, err := nc.Request(events.ToolDefinitionSubject, nil, time.Second)
		return err
	})
	time.Sleep(100 * time.Millisecond) // room for a StartProcessor that does not wait to return
	// A processor gives up listing before it serves after 2 s (and is then
	// ready); past that, a return proves nothing either way.
	if waited := time.Since(entered); waited < 1500*time.Millisecond {
		select {
		case s := <-done:
			t.Fatalf("StartProcessor returned (err %v) while the processor was not ready", s.err)
		default:
		}
	} else {
		t.Logf("the machine took %v to answer the tool definition: not ready-checked this time", waited)
	}
	close(skills.open)
	s := <-done
	if s.err != nil {
		t.Fatal(s.err)
	}
	if _, err := s.p.Stop(); err != nil {
		t.Fatal(err)
	}
}
