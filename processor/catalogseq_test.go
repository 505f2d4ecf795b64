package processor

import (
	"testing"
	"time"

	"github.com/skillstream/skillstream/events"
)

// TestCatalogSeq: a Decision names the catalog the model sees after the
// step (the one appended, found on a retry, or kept when unchanged), and a
// compaction that keeps that sequence keeps the catalog: the next pre-step
// appends nothing. A compaction without it masks the catalog, which is
// appended again, so the test tells the two apart.
// It runs with full reads and with every catalog given a head (read
// through it): catalogSeq names the catalog.append either way.
func TestCatalogSeq(t *testing.T) {
	for name, mutate := range map[string][]func(*Config, *options){"full reads": nil, "heads": {headsOn}} {
		t.Run(name, func(t *testing.T) { testCatalogSeq(t, mutate...) })
	}
}

func testCatalogSeq(t *testing.T, mutate ...func(*Config, *options)) {
	e := newEnv(t)
	e.writeSkill("a-skill", "A skill.")
	e.waitSkills("a-skill")
	e.start(mutate...)
	w := e.worker()
	const sid = "seq"
	pre := func(step string) events.Decision {
		return w.preStep(events.PreStep{Session: sid, Step: step, Cwd: e.cwd, Tools: ourTool()})
	}
	newest := func() uint64 {
		cats := e.outputs(sid, events.KindCatalog)
		return cats[len(cats)-1].Sequence
	}

	d := pre("1")
	e.expect(d, events.OutcomeAppended, 1)
	first := newest()
	if d.CatalogSeq != first {
		t.Fatalf("appended: catalogSeq %d, want the catalog's sequence %d", d.CatalogSeq, first)
	}
	// A retry of the step finds the same catalog and names it.
	if d := pre("1"); d.Outcome != events.OutcomeAppended || d.CatalogSeq != first {
		t.Fatalf("retried step: %s catalogSeq %d, want appended %d", d.Outcome, d.CatalogSeq, first)
	}
	d = pre("2")
	e.expect(d, events.OutcomeUnchanged, 1)
	if d.CatalogSeq != first {
		t.Fatalf("unchanged: catalogSeq %d, want %d", d.CatalogSeq, first)
	}

	// Compacted away, but kept by its sequence: nothing is re-sent.
	w.note(sid, "after the catalog")
	w.compact(sid, w.note(sid, "retained"), d.CatalogSeq)
	d = pre("3")
	e.expect(d, events.OutcomeUnchanged, 1)
	if d.CatalogSeq != first {
		t.Fatalf("after a compaction keeping it: catalogSeq %d, want %d", d.CatalogSeq, first)
	}

	// Compacted away without keeping it: the catalog is appended again.
	w.compact(sid, w.note(sid, "retained again"))
	d = pre("4")
	e.expect(d, events.OutcomeAppended, 2)
	if again := newest(); d.CatalogSeq != again || again == first {
		t.Fatalf("after a compaction masking it: catalogSeq %d, want the new catalog %d", d.CatalogSeq, again)
	}

	// No catalog visible, or an expired trigger: no catalogSeq.
	if d := w.preStep(events.PreStep{Session: "seq-none", Step: "1", Cwd: e.cwd}); d.Outcome != events.OutcomeEmpty || d.CatalogSeq != 0 {
		t.Fatalf("no tool: %s catalogSeq %d, want empty without one", d.Outcome, d.CatalogSeq)
	}
	past := time.Now().Add(-time.Minute).UnixMilli()
	if d := w.preStep(events.PreStep{Session: sid, Step: "5", Cwd: e.cwd, Tools: ourTool(), DeadlineMs: past}); d.Outcome != events.OutcomeExpired || d.CatalogSeq != 0 {
		t.Fatalf("expired: %s catalogSeq %d, want expired without one", d.Outcome, d.CatalogSeq)
	}
}
