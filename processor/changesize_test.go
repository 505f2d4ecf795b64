package processor

import (
	"fmt"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

// TestChangeListRecordBytes measures the record one description edit, one
// added and one removed skill append, as a replacement and as a change
// list, for catalogs of 50, 298 and 1,000 skills with descriptions of
// about 290 characters (the public skills' average: 298 make 88 KB),
// without a size limit. A change list's record must stay under 4 KiB
// whatever the catalog's size.
func TestChangeListRecordBytes(t *testing.T) {
	for _, n := range []int{50, 298, 1000} {
		skills := make([]catalog.Summary, n)
		for i := range skills {
			skills[i] = catalog.Summary{Name: fmt.Sprintf("skill-%04d", i), Invocation: catalog.Invocation{ModelInvocable: true},
				Description: fmt.Sprintf("Skill %d: ", i) + strings.Repeat("does a careful, well-described thing for the agent. ", 5)}
		}
		for _, c := range []struct {
			name   string
			change func([]catalog.Summary) []catalog.Summary
		}{
			{"edit", func(s []catalog.Summary) []catalog.Summary {
				s = append([]catalog.Summary(nil), s...)
				s[n/2].Description += " Now also on Tuesdays."
				return s
			}},
			{"add", func(s []catalog.Summary) []catalog.Summary {
				return append(append([]catalog.Summary(nil), s...), catalog.Summary{Name: "skill-new", Invocation: catalog.Invocation{ModelInvocable: true},
					Description: "A new skill: " + strings.Repeat("does a new thing for the agent. ", 8)})
			}},
			{"remove", func(s []catalog.Summary) []catalog.Summary {
				return append(append([]catalog.Summary(nil), s[:n/2]...), s[n/2+1:]...)
			}},
		} {
			sizes, texts := map[catalog.Updates]int{}, map[catalog.Updates]int{}
			for _, u := range []catalog.Updates{catalog.UpdatesFull, catalog.UpdatesChanges} {
				opts := catalog.DefaultOptions()
				opts.MaxLength, opts.Updates = 0, u
				cur := catalog.Prepare(catalog.Snapshot{Skills: skills, Complete: true}, opts)
				l := catalog.ListOf(cur)
				h := catalog.History{Published: true, Visible: true, Digest: cur.Digest, Current: &l}
				d := catalog.DecideView(true, catalog.Prepare(catalog.Snapshot{Skills: c.change(skills), Complete: true}, opts), h)
				src := events.CatalogSource{Kind: events.SourceKindCatalog, Producer: DefaultToolOwner, Update: string(d.Update),
					Digest: d.Digest, View: &events.View{Revision: 12345, Instance: "host-a-1f2e3d4c"}}
				if d.Update == catalog.UpdateChanges {
					src.Base, src.Changes, src.Count = 123456, wireChanges(d.Changes), len(d.Entries)
				} else {
					src.Entries = wireEntries(d.Entries)
				}
				b, err := events.Encode(events.Msgpack, events.Catalog{V: 1, Session: "session-0123456789", Step: "step-42",
					ID: "session-0123456789:step-42:catalog.append", Role: "user", Text: d.Text, Source: src})
				if err != nil {
					t.Fatal(err)
				}
				sizes[u], texts[u] = len(b), len(d.Text)
				if u == catalog.UpdatesChanges && (d.Update != catalog.UpdateChanges || len(b) > 4<<10) {
					t.Errorf("%d skills, one %s: %s of %d bytes, want a change list of at most 4 KiB", n, c.name, d.Update, len(b))
				}
			}
			t.Logf("%5d skills, one %-6s: full %7d bytes (text %6d, ~%6d tokens), changes %5d bytes (text %4d, ~%4d tokens)", n, c.name,
				sizes[catalog.UpdatesFull], texts[catalog.UpdatesFull], (texts[catalog.UpdatesFull]+3)/4,
				sizes[catalog.UpdatesChanges], texts[catalog.UpdatesChanges], (texts[catalog.UpdatesChanges]+3)/4)
		}
		// What every answer of a session with change lists carries: its
		// whole list (currentList), under the default size limit.
		cur := catalog.Prepare(catalog.Snapshot{Skills: skills, Complete: true}, catalog.DefaultOptions())
		b, err := events.EncodeCurrentList(events.CurrentList{Entries: wireEntries(cur.Entries), Digest: cur.Digest})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%5d skills: a Decision's currentList under the default size limit is %d bytes (%d entries)", n, len(b), len(cur.Entries))
	}
}
