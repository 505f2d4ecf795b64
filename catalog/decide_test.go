package catalog_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/catalog"
)

const owner = "skillstream"

// record is a catalog.append record as a processor would find it in a
// session log: its producer, its text, and whether compaction left it on the
// model-visible surface.
type record struct {
	producer string
	text     string
	masked   bool
}

// historyOf derives a History the way a processor does, scanning from the
// newest record backward and skipping foreign and unrecognisable records.
func historyOf(log []record) catalog.History {
	var h catalog.History
	for i := len(log) - 1; i >= 0; i-- {
		r := log[i]
		if r.producer != owner {
			continue
		}
		d, ok := catalog.Recognize(r.text)
		if !ok {
			continue
		}
		h.Published = true
		if !r.masked {
			h.Visible, h.Digest = true, d
			break
		}
	}
	return h
}

func mi(name, desc string) catalog.Summary {
	return catalog.Summary{Name: name, Description: desc, Invocation: catalog.Invocation{ModelInvocable: true, UserInvocable: true}, Provider: "fs", Source: catalog.SourceProject}
}

func complete(s ...catalog.Summary) catalog.Snapshot {
	return catalog.Snapshot{Skills: s, Complete: true}
}

func initial(s ...catalog.Summary) string {
	return catalog.Render(catalog.UpdateInitial, catalog.Entries(s, catalog.DefaultDescriptionMaxLength))
}

func replacement(s ...catalog.Summary) string {
	return catalog.Render(catalog.UpdateReplacement, catalog.Entries(s, catalog.DefaultDescriptionMaxLength))
}

func ours(text string) record   { return record{producer: owner, text: text} }
func masked(text string) record { return record{producer: owner, text: text, masked: true} }

var (
	ourTool     = []catalog.Tool{{Name: "read", Owner: "worker"}, {Name: "skill", Owner: owner}}
	hiddenTool  = []catalog.Tool{{Name: "read", Owner: "worker"}}
	shadowTools = []catalog.Tool{{Name: "skill", Owner: "someone-else"}, {Name: "skill", Owner: owner}}
)

func TestDecide(t *testing.T) {
	a, b := mi("a-skill", "Does A."), mi("b-skill", "Does B.")
	aBody := a
	aBody.WhenToUse, aBody.Provider, aBody.Source = "whenever", "other", catalog.SourceUser
	aBody.ResourceBase = &catalog.ResourceBase{Kind: catalog.ResourceDirectory, Path: "/elsewhere"}
	userOnly := catalog.Summary{Name: "u-skill", Description: "User only.", Invocation: catalog.Invocation{UserInvocable: true}}
	long := mi("a-skill", strings.Repeat("x", 600))
	longer := mi("a-skill", strings.Repeat("x", 700))
	tombstone := replacement()

	tests := []struct {
		name     string
		tools    []catalog.Tool
		snap     catalog.Snapshot
		log      []record
		outcome  catalog.Outcome
		wantText string // for appended
		update   catalog.Update
	}{
		{name: "first publication", tools: ourTool, snap: complete(b, a),
			outcome: catalog.OutcomeAppended, update: catalog.UpdateInitial, wantText: initial(a, b)},
		{name: "unchanged", tools: ourTool, snap: complete(a, b), log: []record{ours(initial(a, b))},
			outcome: catalog.OutcomeUnchanged},
		{name: "addition gives a replacement", tools: ourTool, snap: complete(a, b), log: []record{ours(initial(a))},
			outcome: catalog.OutcomeAppended, update: catalog.UpdateReplacement, wantText: replacement(a, b)},
		{name: "description change gives a replacement", tools: ourTool, snap: complete(mi("a-skill", "Does A better.")), log: []record{ours(initial(a))},
			outcome: catalog.OutcomeAppended, update: catalog.UpdateReplacement, wantText: replacement(mi("a-skill", "Does A better."))},
		{name: "removal of all gives the tombstone", tools: ourTool, snap: complete(), log: []record{ours(initial(a))},
			outcome: catalog.OutcomeAppended, update: catalog.UpdateReplacement, wantText: tombstone},
		{name: "only user-invocable skills left gives the tombstone", tools: ourTool, snap: complete(userOnly), log: []record{ours(initial(a))},
			outcome: catalog.OutcomeAppended, update: catalog.UpdateReplacement, wantText: tombstone},
		{name: "no skills and nothing published", tools: ourTool, snap: complete(),
			outcome: catalog.OutcomeEmpty},
		{name: "only user-invocable skills and nothing published", tools: ourTool, snap: complete(userOnly),
			outcome: catalog.OutcomeEmpty},
		{name: "incomplete with changed skills", tools: ourTool, snap: catalog.Snapshot{Skills: []catalog.Summary{a, b}}, log: []record{ours(initial(a))},
			outcome: catalog.OutcomeIncomplete},
		{name: "incomplete and empty after publication", tools: ourTool, snap: catalog.Snapshot{}, log: []record{ours(initial(a))},
			outcome: catalog.OutcomeIncomplete},
		{name: "incomplete before publication", tools: ourTool, snap: catalog.Snapshot{Skills: []catalog.Summary{a}},
			outcome: catalog.OutcomeIncomplete},
		{name: "hidden tool before publication", tools: hiddenTool, snap: complete(a, b),
			outcome: catalog.OutcomeEmpty},
		{name: "hidden tool ignores an incomplete registry", tools: hiddenTool, snap: catalog.Snapshot{Skills: []catalog.Summary{a}},
			outcome: catalog.OutcomeEmpty},
		{name: "shadowed tool before publication", tools: shadowTools, snap: complete(a, b),
			outcome: catalog.OutcomeEmpty},
		{name: "hidden tool after publication gives the tombstone", tools: hiddenTool, snap: complete(a, b), log: []record{ours(initial(a, b))},
			outcome: catalog.OutcomeAppended, update: catalog.UpdateReplacement, wantText: tombstone},
		{name: "shadowed tool after publication gives the tombstone", tools: shadowTools, snap: catalog.Snapshot{}, log: []record{ours(initial(a, b))},
			outcome: catalog.OutcomeAppended, update: catalog.UpdateReplacement, wantText: tombstone},
		{name: "hidden tool after the tombstone", tools: hiddenTool, snap: complete(a), log: []record{ours(initial(a)), ours(tombstone)},
			outcome: catalog.OutcomeUnchanged},
		{name: "tool back after the tombstone", tools: ourTool, snap: complete(a), log: []record{ours(initial(a)), ours(tombstone)},
			outcome: catalog.OutcomeAppended, update: catalog.UpdateReplacement, wantText: replacement(a)},
		{name: "masked by compaction, unchanged view", tools: ourTool, snap: complete(a), log: []record{masked(initial(a))},
			outcome: catalog.OutcomeAppended, update: catalog.UpdateReplacement, wantText: replacement(a)},
		{name: "masked tombstone and still hidden", tools: hiddenTool, snap: complete(a), log: []record{ours(initial(a)), masked(tombstone)},
			outcome: catalog.OutcomeAppended, update: catalog.UpdateReplacement, wantText: tombstone},
		{name: "replacement kept after compaction", tools: ourTool, snap: complete(a, b), log: []record{masked(initial(a)), ours(replacement(a, b))},
			outcome: catalog.OutcomeUnchanged},
		{name: "body-only change", tools: ourTool, snap: complete(aBody), log: []record{ours(initial(a))},
			outcome: catalog.OutcomeUnchanged},
		{name: "user-only skill added", tools: ourTool, snap: complete(a, userOnly), log: []record{ours(initial(a))},
			outcome: catalog.OutcomeUnchanged},
		{name: "change beyond the description cap", tools: ourTool, snap: complete(longer), log: []record{ours(initial(long))},
			outcome: catalog.OutcomeUnchanged},
		{name: "whitespace-only change", tools: ourTool, snap: complete(mi("a-skill", "  Does\t\tA.\n")), log: []record{ours(initial(a))},
			outcome: catalog.OutcomeUnchanged},
		{name: "newest catalog decides", tools: ourTool, snap: complete(a), log: []record{ours(initial(a)), ours(replacement(a, b))},
			outcome: catalog.OutcomeAppended, update: catalog.UpdateReplacement, wantText: replacement(a)},
		{name: "foreign and malformed records are skipped", tools: ourTool, snap: complete(a), log: []record{
			ours(initial(a)),
			{producer: "someone-else", text: initial(b)},
			{producer: "someone-else", text: "garbage"},
			ours("<available_skills>\nnot an entry\n</available_skills>"),
			ours("\x00\xff<available_skills>"),
			ours(""),
		}, outcome: catalog.OutcomeUnchanged},
		{name: "only malformed records of ours count as nothing published", tools: ourTool, snap: complete(a), log: []record{
			ours("<available_skills>\n- `a-skill`: Does A."), ours("no block at all"),
		}, outcome: catalog.OutcomeAppended, update: catalog.UpdateInitial, wantText: initial(a)},
		{name: "a foreign catalog does not count as published", tools: ourTool, snap: complete(), log: []record{
			{producer: "someone-else", text: initial(a)},
		}, outcome: catalog.OutcomeEmpty},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := historyOf(tc.log)
			visible := catalog.Visible(tc.tools, owner)
			d := catalog.Decide(visible, tc.snap, h, catalog.DefaultOptions())
			// A prepared view decides exactly as the snapshot it came from.
			if dv := catalog.DecideView(visible, catalog.Prepare(tc.snap, catalog.DefaultOptions()), h); !reflect.DeepEqual(dv, d) {
				t.Fatalf("DecideView on the prepared snapshot:\n%+v\nDecide:\n%+v", dv, d)
			}
			if d.Outcome != tc.outcome {
				t.Fatalf("outcome = %s, want %s (history %+v)", d.Outcome, tc.outcome, h)
			}
			if tc.outcome == catalog.OutcomeIncomplete {
				if d.Text != "" || d.Digest != "" || d.Entries != nil {
					t.Errorf("incomplete decision carries a catalog: %+v", d)
				}
				return
			}
			if tc.outcome != catalog.OutcomeAppended {
				if d.Text != "" || d.Update != "" || d.Entries != nil {
					t.Errorf("%s decision carries a catalog: %+v", d.Outcome, d)
				}
				if tc.outcome == catalog.OutcomeUnchanged && d.Digest != h.Digest {
					t.Errorf("unchanged digest %s, visible catalog has %s", d.Digest, h.Digest)
				}
				return
			}
			if d.Update != tc.update {
				t.Errorf("update = %s, want %s", d.Update, tc.update)
			}
			if d.Text != tc.wantText {
				t.Errorf("text:\n%s\nwant:\n%s", d.Text, tc.wantText)
			}
			if d.Entries == nil {
				t.Errorf("appended decision has nil entries")
			}
			if got, ok := catalog.Recognize(d.Text); !ok || got != d.Digest || d.Digest != catalog.Digest(d.Entries) {
				t.Errorf("digest %s, entries digest %s, recognised %s (%v)", d.Digest, catalog.Digest(d.Entries), got, ok)
			}
			// Once appended, the same observation is unchanged.
			again := catalog.Decide(catalog.Visible(tc.tools, owner), tc.snap, historyOf(append(tc.log, ours(d.Text))), catalog.DefaultOptions())
			if again.Outcome != catalog.OutcomeUnchanged {
				t.Errorf("after appending, the same observation gives %s, want unchanged", again.Outcome)
			}
		})
	}
}

func TestPrepare(t *testing.T) {
	a, b := mi("b-skill", "Does   B."), mi("a-skill", strings.Repeat("x", 20))
	opts := catalog.Options{DescriptionMaxLength: 10}
	v := catalog.Prepare(complete(a, b), opts)
	want := catalog.Entries([]catalog.Summary{a, b}, 10)
	if !v.Complete || !reflect.DeepEqual(v.Entries, want) || v.Digest != catalog.Digest(want) {
		t.Fatalf("prepared %+v, want entries %+v", v, want)
	}
	if v.Entries[0].Description != "xxxxxxx..." {
		t.Errorf("options not applied: %+v", v.Entries)
	}
	if v := catalog.Prepare(catalog.Snapshot{Skills: []catalog.Summary{a}}, opts); !reflect.DeepEqual(v, catalog.View{}) {
		t.Errorf("incomplete snapshot prepared as %+v", v)
	}
	empty := catalog.Prepare(complete(), opts)
	if empty.Entries == nil || len(empty.Entries) != 0 || empty.Digest != catalog.Digest(nil) {
		t.Errorf("empty snapshot prepared as %+v", empty)
	}
	// A view built by hand, without entries or digest, still decides
	// correctly.
	d := catalog.DecideView(true, catalog.View{Complete: true}, catalog.History{Published: true, Visible: true, Digest: catalog.Digest(nil)})
	if d.Outcome != catalog.OutcomeUnchanged {
		t.Errorf("hand-built empty view: %+v", d)
	}
	d = catalog.DecideView(true, catalog.View{Complete: true}, catalog.History{Published: true})
	if d.Outcome != catalog.OutcomeAppended || d.Entries == nil || d.Text != catalog.Render(catalog.UpdateReplacement, nil) {
		t.Errorf("hand-built empty view after publication: %+v", d)
	}
}

// An empty view with nothing published stays silent at every pre-step.
func TestDecideEmptyRepeatedly(t *testing.T) {
	var log []record
	for step := range 5 {
		d := catalog.Decide(true, complete(), historyOf(log), catalog.DefaultOptions())
		if d.Outcome != catalog.OutcomeEmpty {
			t.Fatalf("step %d: outcome %s, want empty", step, d.Outcome)
		}
		if d.Outcome == catalog.OutcomeAppended {
			log = append(log, ours(d.Text))
		}
	}
}

// A session driven through its life: publication, change, hiding, return,
// compaction.
func TestDecideSession(t *testing.T) {
	a, b := mi("a-skill", "Does A."), mi("b-skill", "Does B.")
	steps := []struct {
		tools []catalog.Tool
		snap  catalog.Snapshot
		mask  bool // compaction masks everything before this step
		want  catalog.Outcome
		upd   catalog.Update
		empty bool // the appended catalog is the tombstone
	}{
		{tools: ourTool, snap: complete(), want: catalog.OutcomeEmpty},
		{tools: ourTool, snap: complete(a), want: catalog.OutcomeAppended, upd: catalog.UpdateInitial},
		{tools: ourTool, snap: complete(a), want: catalog.OutcomeUnchanged},
		{tools: ourTool, snap: catalog.Snapshot{Skills: []catalog.Summary{a, b}}, want: catalog.OutcomeIncomplete},
		{tools: ourTool, snap: complete(a, b), want: catalog.OutcomeAppended, upd: catalog.UpdateReplacement},
		{tools: hiddenTool, snap: complete(a, b), want: catalog.OutcomeAppended, upd: catalog.UpdateReplacement, empty: true},
		{tools: shadowTools, snap: complete(a, b), want: catalog.OutcomeUnchanged},
		{tools: ourTool, snap: complete(a, b), want: catalog.OutcomeAppended, upd: catalog.UpdateReplacement},
		{tools: ourTool, snap: complete(a, b), mask: true, want: catalog.OutcomeAppended, upd: catalog.UpdateReplacement},
		{tools: ourTool, snap: complete(a, b), want: catalog.OutcomeUnchanged},
	}
	var log []record
	for i, s := range steps {
		if s.mask {
			for j := range log {
				log[j].masked = true
			}
		}
		d := catalog.Decide(catalog.Visible(s.tools, owner), s.snap, historyOf(log), catalog.DefaultOptions())
		if d.Outcome != s.want || d.Update != s.upd || (d.Outcome == catalog.OutcomeAppended && (len(d.Entries) == 0) != s.empty) {
			t.Fatalf("step %d: got %s/%s with %d entries, want %s/%s (tombstone %v)", i, d.Outcome, d.Update, len(d.Entries), s.want, s.upd, s.empty)
		}
		if d.Outcome == catalog.OutcomeAppended {
			log = append(log, ours(d.Text))
		}
	}
}

func TestVisible(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tools []catalog.Tool
		want  bool
	}{
		{"no tools", nil, false},
		{"hidden", []catalog.Tool{{Name: "read", Owner: owner}}, false},
		{"ours", []catalog.Tool{{Name: "read", Owner: "w"}, {Name: "skill", Owner: owner}}, true},
		{"shadowed by an earlier tool", []catalog.Tool{{Name: "skill", Owner: "other"}, {Name: "skill", Owner: owner}}, false},
		{"ours first, another later", []catalog.Tool{{Name: "skill", Owner: owner}, {Name: "skill", Owner: "other"}}, true},
		{"only another owner's", []catalog.Tool{{Name: "skill", Owner: "other"}}, false},
		{"owner missing", []catalog.Tool{{Name: "skill"}}, false},
		{"name differs in case", []catalog.Tool{{Name: "Skill", Owner: owner}}, false},
	} {
		if got := catalog.Visible(tc.tools, owner); got != tc.want {
			t.Errorf("%s: Visible = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A prepared view renders each kind of update once and gives every later
// decision the same text: the initial text for a session without a
// catalog, the replacement text for one with another catalog, whatever the
// order in which sessions ask.
func TestPreparedViewRendersEachUpdateOnce(t *testing.T) {
	snap := catalog.Snapshot{Complete: true, Skills: []catalog.Summary{
		{Name: "a-skill", Description: "Does a.", Invocation: catalog.Invocation{ModelInvocable: true}},
		{Name: "b-skill", Description: "Does b.", Invocation: catalog.Invocation{ModelInvocable: true}},
	}}
	v := catalog.Prepare(snap, catalog.Options{})
	fresh := catalog.History{}
	other := catalog.History{Published: true, Visible: true, Digest: "another"}
	wantInitial := catalog.RenderList(catalog.UpdateInitial, v.Entries, v.Omitted)
	wantReplacement := catalog.RenderList(catalog.UpdateReplacement, v.Entries, v.Omitted)
	for i, h := range []catalog.History{other, fresh, other, fresh, fresh, other} {
		d := catalog.DecideView(true, v, h)
		want := wantInitial
		if h.Published {
			want = wantReplacement
		}
		if d.Outcome != catalog.OutcomeAppended || d.Text != want {
			t.Fatalf("decision %d (%+v): %s %q, want appended %q", i, h, d.Outcome, d.Text, want)
		}
	}
	// The tool hidden: the empty list, not the prepared view's text.
	if d := catalog.DecideView(false, v, other); d.Text != catalog.RenderList(catalog.UpdateReplacement, nil, 0) {
		t.Fatalf("hidden tool: %q", d.Text)
	}
}
