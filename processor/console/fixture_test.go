package console_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	wclient "github.com/skillstream/skillstream/events/client"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/processor"
	"github.com/skillstream/skillstream/processor/console"
	"github.com/skillstream/skillstream/processor/usage/projection"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
	"github.com/skillstream/skillstream/providers/search"
)

// fleet is a real processor over a project's skills, with the usage
// projection kept, on an in-process server; the sessions it played are in
// its stream.
type fleet struct {
	srv      *natstest.Server
	reg      *providers.Registry
	cwd      string
	sessions []string
}

// hostile is a description a skill controls: it must show as text.
const hostile = `Deploys "><img src=x onerror=alert(1)> and <script>alert(2)</script>.`

// startFleet writes the project's skills (deploy, review, and idle and archive,
// which are listed and never used), runs the processor with skill search
// and a usage projector, and plays sessions through a worker client:
// each a pre-step and a load of deploy; by turns a search that finds
// deploy then its load, a search that finds nothing, a call of a skill
// that does not exist, and a load of review.
func startFleet(t *testing.T, n int) *fleet {
	t.Helper()
	f := &fleet{srv: natstest.Start(t), cwd: filepath.Join(t.TempDir(), "project")}
	for name, desc := range map[string]string{"deploy": hostile, "review": "Reviews a change.", "idle": "Never asked for.", "archive": "Archives old things."} {
		dir := filepath.Join(f.cwd, ".agents", "skills", name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		body := "---\nname: " + name + "\ndescription: " + strconv.Quote(desc) + "\n---\nDo " + name + " well.\n"
		if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(f.cwd, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	p, err := agentskills.New(agentskills.Config{NoUserDir: true})
	if err != nil {
		t.Fatal(err)
	}
	f.reg = providers.NewRegistry([]providers.Provider{p})
	t.Cleanup(func() { f.reg.Close() })
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	opts := catalog.DefaultOptions()
	opts.SkillSearch = true
	ix := search.New(f.reg, search.Options{})
	t.Cleanup(func() { ix.Close() })
	proc, err := processor.New(f.srv.Conn, f.reg, processor.Config{Catalog: opts}, processor.WithLogger(quiet), processor.WithSearcher(ix))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- proc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("processor: %v", err)
		}
	})
	c, err := wclient.New(f.srv.Conn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	wctx, wcancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer wcancel()
	tools := []events.Tool{wclient.SkillTool(processor.DefaultToolOwner), wclient.SkillSearchTool(processor.DefaultToolOwner)}
	for i := range n {
		sid := "sess-" + strconv.Itoa(i)
		f.sessions = append(f.sessions, sid)
		must := func(err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("%s: %v", sid, err)
			}
		}
		_, err := c.PreStep(wctx, events.PreStep{Session: sid, Step: "1", Cwd: f.cwd, Tools: tools})
		must(err)
		if i%2 == 0 {
			_, err = c.SearchSkills(wctx, events.SkillSearch{Session: sid, Call: "s1", Cwd: f.cwd, Args: events.SearchArgs{Query: "deploy"}})
			must(err)
		}
		_, err = c.CallSkill(wctx, events.SkillCall{Session: sid, Call: "c1", Cwd: f.cwd, Args: events.SkillArgs{Name: "deploy"}})
		must(err)
		_, err = c.PreStep(wctx, events.PreStep{Session: sid, Step: "2", Cwd: f.cwd, Tools: tools})
		must(err)
		if i%3 == 0 {
			_, err = c.SearchSkills(wctx, events.SkillSearch{Session: sid, Call: "s2", Cwd: f.cwd, Args: events.SearchArgs{Query: "quantum chromodynamics"}})
			must(err)
			_, err = c.CallSkill(wctx, events.SkillCall{Session: sid, Call: "c2", Cwd: f.cwd, Args: events.SkillArgs{Name: "nope"}})
			must(err)
		}
		if i%4 == 0 {
			_, err = c.CallSkill(wctx, events.SkillCall{Session: sid, Call: "c3", Cwd: f.cwd, Args: events.SkillArgs{Name: "review"}})
			must(err)
		}
	}
	// The usage projection, kept until it has applied every output.
	proj, err := projection.New(f.srv.JS, f.usageOptions())
	if err != nil {
		t.Fatal(err)
	}
	pctx, pcancel := context.WithCancel(context.Background())
	pdone := make(chan struct{})
	go func() { defer close(pdone); proj.Run(pctx) }()
	t.Cleanup(func() { pcancel(); <-pdone })
	natstest.Eventually(t, 60*time.Second, "the projection caught up", func() error {
		s, err := projection.ReadSeries(context.Background(), f.srv.JS, f.usageOptions(), projection.ByHour, time.Time{}, time.Time{})
		if err != nil {
			return err
		}
		if s.LagRecords != 0 {
			return errBehind(s.LagRecords)
		}
		return nil
	})
	return f
}

type errBehind uint64

func (e errBehind) Error() string { return strconv.FormatUint(uint64(e), 10) + " records behind" }

func (f *fleet) usageOptions() projection.Options {
	return projection.Options{Stream: processor.DefaultStream, Prefix: events.DefaultPrefix, Layout: events.LayoutFlat, FlushWait: 20 * time.Millisecond}
}

// sources are the fleet's, as a console reads them.
func (f *fleet) sources() console.Sources {
	return console.Sources{JS: f.srv.JS, Registry: f.reg, Stream: processor.DefaultStream, Prefix: events.DefaultPrefix, Layout: events.LayoutFlat}
}
