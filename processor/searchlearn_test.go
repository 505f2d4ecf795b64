package processor

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/processor/usage"
	"github.com/skillstream/skillstream/providers/search"
)

// TestSkillSearchLearnsFromSessions: a session searches with words no
// skill holds, finds nothing, then loads a skill; the index, fed the
// session stream's searches followed by loads, ranks that skill for those
// words in another session, and the search's result records the version
// of what the index learned (absent before it learned anything); the
// text the model reads is the catalog package's for the same index.
func TestSkillSearchLearnsFromSessions(t *testing.T) {
	e := newEnv(t)
	e.fleetOnDisk()
	ix := search.New(e.registry, search.Options{})
	t.Cleanup(func() { ix.Close() })
	p := e.start(func(c *Config, o *options) {
		c.Catalog = catalog.DefaultOptions()
		c.Catalog.SkillSearch = true
		o.search = ix
	})
	w := e.worker()
	const query = "black friday changelog"
	r := w.search(events.SkillSearch{Session: "a", Call: "s1", Cwd: e.cwd, Args: events.SearchArgs{Query: "black friday"}})
	if r.IsError || r.Search == nil || len(r.Search.Results) != 0 || r.Search.Learned != "" {
		t.Fatalf("before learning: %+v", r.Search)
	}
	r = w.call(events.SkillCall{Session: "a", Call: "c1", Cwd: e.cwd, Args: events.SkillArgs{Name: "release-notes"}})
	if r.IsError {
		t.Fatalf("load: %+v", r)
	}
	w.search(events.SkillSearch{Session: "b", Call: "s1", Cwd: e.cwd, Args: events.SearchArgs{Query: query}})
	w.call(events.SkillCall{Session: "b", Call: "c1", Cwd: e.cwd, Args: events.SkillArgs{Name: "release-notes"}})

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- usage.FollowSearchLoads(ctx, e.js, usage.FollowOptions{Stream: p.Config().Stream, Prefix: p.Config().Prefix, Layout: p.Config().Layout},
			func(sl usage.SearchLoad) {
				if err := ix.Learn(sl.Skill, sl.Query, sl.At); err != nil {
					t.Errorf("learn %+v: %v", sl, err)
				}
			})
	}()
	natstest.Eventually(t, waitTimeout, "the index learns both sessions' searches", func() error {
		if v, _ := ix.Learned(); v.Pairs != 2 {
			return fmt.Errorf("learned %d pairs", v.Pairs)
		}
		return nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	v, _ := ix.Learned()
	r = w.search(events.SkillSearch{Session: "c", Call: "s1", Cwd: e.cwd, Args: events.SearchArgs{Query: "ready for black friday?"}})
	if r.IsError || r.Search == nil || len(r.Search.Results) == 0 || r.Search.Results[0].Name != "release-notes" || r.Search.Learned != v.String() {
		t.Fatalf("after learning %s: %+v", v, r.Search)
	}
	want := catalog.Search(context.Background(), p.search.Searcher(catalog.At(e.cwd)), catalog.SearchArgs{Query: "ready for black friday?"}, p.cfg.Catalog)
	if r.Text != want.Text() || strings.Contains(r.Text, v.String()) {
		t.Errorf("text:\n%s\nwant:\n%s", r.Text, want.Text())
	}
	stored := e.storedResults("c")
	if len(stored) != 1 || stored[0].Search == nil || stored[0].Search.Learned != v.String() {
		t.Errorf("stored %+v", stored)
	}
}
