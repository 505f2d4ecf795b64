package bench

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/processor"
	"github.com/skillstream/skillstream/providers/search"
)

// TestMeasureSearches: a workload of searches per step runs against the
// real processor with search on, and against the baseline: every search
// is answered, timed as a series of its own, counted and rated, and the
// report compares a search's round trip with a skill call's.
func TestMeasureSearches(t *testing.T) {
	srv := natstest.Start(t)
	g := generateSkills(t, 12)
	reg, names, sums, body := g.reg, g.names, g.summary, g.body
	ix := search.New(reg, search.Options{})
	defer ix.Close()
	cfg := processor.Config{}.WithDefaults()
	cfg.Catalog.SkillSearch = true
	ctx := context.Background()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	proc := Consumer{Role: RoleProcessor, Mode: ModeInProcess, InProcess: func() (Proc, error) {
		pnc := srv.Connect()
		return StartProcessor(ctx, pnc, reg, cfg, log, pnc.Close, processor.WithSearcher(ix))
	}}
	plan := Plan{RunID: "t", Sessions: 2, Steps: 2, Calls: 1, Searches: 3, Queries: Queries(10), Concurrency: 2,
		Enc: events.Msgpack, Owner: cfg.ToolOwner, Skills: names, Timeout: 10 * time.Second, Tries: 3}

	p := plan
	p.Prefix = cfg.Prefix
	ph, err := Measure(ctx, srv.Connect(), proc, p, time.Minute, NewChanges(0, 4, nil), func(Progress) {})
	if err != nil {
		t.Fatal(err)
	}
	if !ph.Complete || ph.PreSteps != 4 || ph.SkillCalls != 4 || ph.Searches != 12 || ph.Errors != 0 {
		t.Fatalf("processor: complete %v, %d pre-steps, %d calls, %d searches, %d errors (%v); want 4, 4, 12, none",
			ph.Complete, ph.PreSteps, ph.SkillCalls, ph.Searches, ph.Errors, ph.ErrorSamples)
	}
	if ph.Outcomes["search found"] == 0 || ph.Outcomes["search found"]+ph.Outcomes["search nothing"] != 12 {
		t.Errorf("search outcomes %v", ph.Outcomes)
	}
	if l := ph.Latency[SeriesSkillSearch]; l.N != 12 || l.P50 <= 0 || l.P99 < l.P50 {
		t.Errorf("search latency %+v", l)
	}
	if ph.SearchesPerSec <= 0 || ph.Appends < 2+4+12 {
		t.Errorf("%v searches/s, %d appends", ph.SearchesPerSec, ph.Appends)
	}

	base := plan
	base.Prefix, base.MarkAppends = BaselinePrefix+"-t", true
	bl := Consumer{Role: RoleBaseline, Mode: ModeInProcess, InProcess: func() (Proc, error) {
		return StartBaseline(ctx, srv.Connect(), &BaselineSpec{Stream: BaselineStream + "_t", Prefix: base.Prefix, Workers: 4,
			AckWait: 30 * time.Second, Owner: cfg.ToolOwner, Skills: sums, Body: body, Catalog: catalog.DefaultOptions()})
	}}
	bph, err := Measure(ctx, srv.Connect(), bl, base, time.Minute, NewChanges(0, 4, nil), func(Progress) {})
	if err != nil {
		t.Fatal(err)
	}
	if !bph.Complete || bph.Searches != 12 || bph.Errors != 0 || bph.Latency[SeriesSkillSearch].N != 12 {
		t.Fatalf("baseline: complete %v, %d searches, %d errors (%v)", bph.Complete, bph.Searches, bph.Errors, bph.ErrorSamples)
	}

	r := &Report{Workload: Workload{Sessions: 2, Steps: 2, Calls: 1, Searches: 3}, Processor: ph, Baseline: bph}
	r.ComputeRatios()
	if r.Ratios["skill_searches_per_second"] <= 0 || r.Ratios["skill_search_p50"] <= 0 {
		t.Errorf("search ratios missing: %v", r.Ratios)
	}
	text := FormatReport(r)
	for _, want := range []string{"1 skill calls, 3 skill searches per step", "skill searches/s", "skill search p50", "skill search p99",
		"\nskill search: a search took p50 "} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q:\n%s", want, text)
		}
	}
}
