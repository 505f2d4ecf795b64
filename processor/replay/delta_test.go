package replay

import (
	"reflect"
	"testing"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/history"
)

func entries(kv ...string) []events.Entry {
	var out []events.Entry
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, events.Entry{Name: kv[i], Description: kv[i+1]})
	}
	return out
}

// TestDeltaDiff: the entry changes from one list to the next.
func TestDeltaDiff(t *testing.T) {
	for _, tc := range []struct {
		name        string
		before, now []events.Entry
		want        Delta
	}{
		{name: "nothing to nothing"},
		{name: "first list: all added, the bare ones named",
			now:  entries("a", "A.", "b", ""),
			want: Delta{Added: entries("a", "A.", "b", ""), Undescribed: []string{"b"}}},
		{name: "the same",
			before: entries("a", "A.", "b", "B."), now: entries("a", "A.", "b", "B.")},
		{name: "added, removed, changed",
			before: entries("a", "A.", "b", "B.", "c", "C."), now: entries("a", "A!", "c", "C.", "d", "D."),
			want: Delta{Added: entries("d", "D."), Removed: []string{"b"}, Changed: []Change{{Name: "a", Before: "A.", After: "A!"}}}},
		{name: "description dropped by the size limit",
			before: entries("a", "A.", "b", "B."), now: entries("a", "", "b", "B."),
			want: Delta{Undescribed: []string{"a"}}},
		{name: "description back",
			before: entries("a", ""), now: entries("a", "A."),
			want: Delta{Changed: []Change{{Name: "a", Before: "", After: "A."}}}},
		{name: "still without a description",
			before: entries("a", ""), now: entries("a", "")},
		{name: "reordered",
			before: entries("a", "A.", "b", "B.", "c", "C."), now: entries("c", "C.", "a", "A.", "b", "B."),
			want: Delta{Reordered: true}},
		{name: "order kept around an addition and a removal",
			before: entries("a", "A.", "b", "B.", "c", "C."), now: entries("a", "A.", "x", "X.", "c", "C."),
			want: Delta{Added: entries("x", "X."), Removed: []string{"b"}}},
		{name: "everything removed (a tombstone)",
			before: entries("a", "A.", "b", "B."), now: nil,
			want: Delta{Removed: []string{"a", "b"}}},
		{name: "a name listed twice counts once",
			before: entries("a", "A.", "a", "other"), now: entries("a", "A.", "a", "again", "b", "B.", "b", ""),
			want: Delta{Added: entries("b", "B.")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got Delta
			got.diff(tc.before, tc.now)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("diff(%v, %v)\n got %+v\nwant %+v", tc.before, tc.now, got, tc.want)
			}
		})
	}
}

func view(seq uint64, kv ...string) *CatalogView {
	return &CatalogView{Seq: seq, Step: "x", Update: UpdateReplacement, Entries: entries(kv...)}
}

// TestDeltas: steps in, deltas out: against the previous step's list,
// against nothing when a compaction hid it, with the searches and loads
// of each step.
func TestDeltas(t *testing.T) {
	comp := &history.Surface{Seq: 20, RetainFrom: 20}
	steps := []Step{
		{Seq: 1, Kind: TriggerSkillSearch, ID: "s0", Query: "early", Recorded: Outcome{Outcome: OutcomeError, Code: "bad_request"}},
		{Seq: 2, Kind: TriggerPreStep, ID: "1", Seen: view(3, "a", "A.", "b", "B."), Published: true,
			Recorded: Outcome{Invocations: []Invoked{{Name: "a", Seq: 4}}}},
		{Seq: 5, Kind: TriggerSkillSearch, ID: "s1", Query: "bee", Recorded: Outcome{Outcome: OutcomeOK},
			Search: &events.SearchValue{Query: "bee", Total: 3, Results: entries("b", "B.", "c", "C.")}},
		{Seq: 7, Kind: TriggerSkillCall, ID: "c1", Skill: "b", Recorded: Outcome{Outcome: OutcomeOK}},
		{Seq: 9, Kind: TriggerPreStep, ID: "2", Seen: view(3, "a", "A.", "b", "B."), Published: true},
		{Seq: 10, Kind: TriggerPreStep, ID: "3", Seen: view(11, "a", "A.", "c", "C."), Published: true},
		{Seq: 21, Kind: TriggerPreStep, ID: "4", Seen: nil, Published: true, MaskedBy: 20, surface: comp},
		{Seq: 22, Kind: TriggerPreStep, ID: "5", Seen: view(23, "a", "A.", "c", "C2."), Published: true, MaskedBy: 20, surface: comp},
		{Seq: 24, Kind: TriggerSkillCall, ID: "c2", Skill: "zz", Recorded: Outcome{Outcome: OutcomeError, Code: "unknown"}},
		{Seq: 30, Kind: TriggerPreStep, ID: "6", Seen: view(23, "a", "A.", "c", "C2."), Published: true,
			MaskedBy: 29, surface: &history.Surface{Seq: 29, RetainFrom: 29, Keep: []uint64{23}}},
	}
	var got []Delta
	var d Deltas
	for _, s := range steps {
		if dl := d.Add(s); dl != nil {
			got = append(got, *dl)
		}
	}
	if dl := d.Finish(); dl != nil {
		got = append(got, *dl)
	}
	ref := func(seq uint64, n int) *CatalogRef {
		return &CatalogRef{Seq: seq, Step: "x", Update: UpdateReplacement, Entries: n}
	}
	want := []Delta{
		{Searches: []Search{{Seq: 1, Call: "s0", Query: "early", Outcome: OutcomeError, Code: "bad_request"}}},
		{Seq: 2, Step: "1", Catalog: ref(3, 2), Published: true, Added: entries("a", "A.", "b", "B."),
			Searches: []Search{{Seq: 5, Call: "s1", Query: "bee", Outcome: OutcomeOK, Total: 3, Shown: []string{"b", "c"}, Found: true}},
			Loads: []Load{{Seq: 4, Name: "a", By: ByUser, Outcome: OutcomeInvoked},
				{Seq: 7, Name: "b", By: ByModel, Call: "c1", Outcome: OutcomeOK}}},
		{Seq: 9, Step: "2", Catalog: ref(3, 2), Published: true},
		{Seq: 10, Step: "3", Catalog: ref(11, 2), Published: true, Added: entries("c", "C."), Removed: []string{"b"}},
		// The compaction hid the list and nothing replaced it yet.
		{Seq: 21, Step: "4", Published: true, Compaction: 20, Hidden: 11},
		// The list re-established: new to the model (the base is nothing).
		{Seq: 22, Step: "5", Catalog: ref(23, 2), Published: true, Compaction: 20, Added: entries("a", "A.", "c", "C2."),
			Loads: []Load{{Seq: 24, Name: "zz", By: ByModel, Call: "c2", Outcome: OutcomeError, Code: "unknown"}}},
		// A compaction that keeps the catalog hides nothing.
		{Seq: 30, Step: "6", Catalog: ref(23, 2), Published: true, Compaction: 29},
	}
	if len(got) != len(want) {
		t.Fatalf("%d deltas, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("delta %d:\n got %+v\nwant %+v", i, got[i], want[i])
		}
	}
	if !got[2].Empty() || got[3].Empty() || got[4].Empty() || !got[6].Empty() {
		t.Errorf("Empty: %v %v %v %v, want true false false true", got[2].Empty(), got[3].Empty(), got[4].Empty(), got[6].Empty())
	}
}

// TestDeltasHiddenThenRelisted: a compaction that hides the list and a
// catalog re-established in the same step: every entry is new to the
// model, and SinceHidden compares it with the hidden list.
func TestDeltasHiddenThenRelisted(t *testing.T) {
	comp := &history.Surface{Seq: 5, RetainFrom: 5}
	var d Deltas
	d.Add(Step{Seq: 1, Kind: TriggerPreStep, ID: "1", Seen: view(2, "a", "A.", "b", "B.")})
	got := d.Add(Step{Seq: 6, Kind: TriggerPreStep, ID: "2", Seen: view(7, "a", "", "c", "C."), MaskedBy: 5, surface: comp})
	if got == nil {
		t.Fatal("no delta for step 1")
	}
	got = d.Finish()
	want := Delta{Seq: 6, Step: "2", Catalog: &CatalogRef{Seq: 7, Step: "x", Update: UpdateReplacement, Entries: 2},
		Compaction: 5, Hidden: 2, SinceHidden: &Counts{Added: 1, Removed: 1, Undescribed: 1},
		Added: entries("a", "", "c", "C."), Undescribed: []string{"a"}}
	if !reflect.DeepEqual(*got, want) {
		t.Errorf("\n got %+v\nwant %+v", *got, want)
	}
}

// TestDeltasChainHidden: a change list stays in sight but the compaction
// hid the catalog it changes: the model no longer knows the list (no
// catalog is visible), which counts as the list hidden.
func TestDeltasChainHidden(t *testing.T) {
	var d Deltas
	d.Add(Step{Seq: 4, Kind: TriggerPreStep, ID: "2", Seen: view(5, "a", "A.")})
	d.Add(Step{Seq: 7, Kind: TriggerPreStep, ID: "3", Published: true, MaskedBy: 6, surface: &history.Surface{Seq: 6, RetainFrom: 4}})
	got := d.Finish()
	if got == nil || got.Hidden != 5 || got.Catalog != nil || len(got.Added)+len(got.Removed) != 0 {
		t.Errorf("got %+v, want catalog seq 5 hidden and nothing visible", got)
	}
}
