package client

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/processor"
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

// TestCompactKeepingChangeLists: with change lists, a Decision names
// every record of the list the model has (CatalogSeqs) and the whole list
// (CurrentList); a compaction keeping CatalogKeep's records keeps it, one
// keeping only CatalogSeq does not.
func TestCompactKeepingChangeLists(t *testing.T) {
	w := newWorld(t)
	w.configure = func(c *processor.Config) {
		c.Catalog = catalog.DefaultOptions()
		c.Catalog.Updates = catalog.UpdatesChanges
	}
	for _, n := range []string{"b-skill", "c-skill"} {
		writeSkill(t, w, n, "Does "+n+".")
	}
	waitDescription(t, w, "c-skill", "Does c-skill.")
	w.startProcessor()
	c := w.client()
	ctx := timeout(t)
	const sid = "keep-changes"
	step := 0
	pre := func() events.Decision {
		t.Helper()
		step++
		d, err := c.PreStep(ctx, events.PreStep{Session: sid, Step: strconv.Itoa(step), Cwd: w.cwd, Tools: tools()})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := pre(); d.Outcome != events.OutcomeAppended || len(CatalogKeep(d)) != 1 {
		t.Fatalf("first pre-step: %+v", d)
	}
	writeSkill(t, w, "b-skill", "Does b-skill, better.")
	waitDescription(t, w, "b-skill", "Does b-skill, better.")
	d := pre()
	cats := w.stored(sid, events.KindCatalog)
	if d.Catalog == nil || d.Catalog.Source.Update != events.UpdateChanges || len(cats) != 2 ||
		!slices.Equal(CatalogKeep(d), []uint64{cats[0].Sequence, cats[1].Sequence}) ||
		d.CurrentList == nil || len(d.CurrentList.Entries) != 3 || d.CurrentList.Entries[1].Description != "Does b-skill, better." {
		t.Fatalf("change list: %+v", d)
	}
	from, err := c.Append(ctx, sid, "message.user", map[string]string{"text": "hello"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Compact(ctx, events.Compaction{Session: sid, RetainFrom: from, Keep: CatalogKeep(d)}); err != nil {
		t.Fatal(err)
	}
	if d := pre(); d.Outcome != events.OutcomeUnchanged || !slices.Equal(d.CatalogSeqs, CatalogKeep(d)) {
		t.Fatalf("after keeping every record: %+v", d)
	}
	from, _ = c.Append(ctx, sid, "message.user", map[string]string{"text": "again"})
	if _, err := c.Compact(ctx, events.Compaction{Session: sid, RetainFrom: from, Keep: []uint64{d.CatalogSeq}}); err != nil {
		t.Fatal(err)
	}
	if d := pre(); d.Outcome != events.OutcomeAppended || d.Catalog.Source.Update != "replacement" {
		t.Fatalf("after keeping the newest only: %+v", d)
	}
}

// writeSkill writes skill name with description into the world's project.
func writeSkill(t *testing.T, w *world, name, description string) {
	t.Helper()
	dir := filepath.Join(w.cwd, ".agents", "skills", name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	md := "---\nname: " + name + "\ndescription: " + strconv.Quote(description) + "\n---\n\nDo it.\n"
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
}

// waitDescription waits until the registry shows skill name with
// description.
func waitDescription(t *testing.T, w *world, name, description string) {
	t.Helper()
	natstest.Eventually(t, waitTimeout, "skill "+name+" never read as "+strconv.Quote(description), func() error {
		snap, err := w.registry.Snapshot(context.Background(), catalog.At(w.cwd))
		if err != nil {
			return err
		}
		for _, s := range snap.Skills {
			if s.Name == name && s.Description == description {
				return nil
			}
		}
		return fmt.Errorf("not yet")
	})
}
