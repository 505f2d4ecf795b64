package client

import (
	"testing"

	"github.com/skillstream/skillstream/events"
)

// TestCompactKeepingCatalogSeq: the Decision's CatalogSeq, kept by a
// Compact, keeps the catalog visible: the next pre-step re-sends nothing.
func TestCompactKeepingCatalogSeq(t *testing.T) {
	w := newWorld(t)
	w.startProcessor()
	c := w.client()
	ctx := timeout(t)
	const sid = "keep"
	d, err := c.PreStep(ctx, events.PreStep{Session: sid, Step: "1", Cwd: w.cwd, Tools: tools()})
	if err != nil || d.Outcome != events.OutcomeAppended {
		t.Fatalf("first pre-step: %+v, %v", d, err)
	}
	cats := w.stored(sid, events.KindCatalog)
	if len(cats) != 1 || d.CatalogSeq != cats[0].Sequence {
		t.Fatalf("catalogSeq %d, stored catalogs %d", d.CatalogSeq, len(cats))
	}
	from, err := c.Append(ctx, sid, "message.user", map[string]string{"text": "hello"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compact(ctx, events.Compaction{Session: sid, RetainFrom: from, Keep: []uint64{d.CatalogSeq}}); err != nil {
		t.Fatal(err)
	}
	d, err = c.PreStep(ctx, events.PreStep{Session: sid, Step: "2", Cwd: w.cwd, Tools: tools()})
	if err != nil || d.Outcome != events.OutcomeUnchanged || d.CatalogSeq != cats[0].Sequence {
		t.Fatalf("after a compaction keeping the catalog: %+v, %v; want unchanged naming %d", d, err, cats[0].Sequence)
	}
	if n := len(w.stored(sid, events.KindCatalog)); n != 1 {
		t.Fatalf("%d catalogs stored, want 1", n)
	}
}
