package replay

import (
	"strconv"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

// changesFor records the change list a processor with change lists on
// appends at trigger for step: from the list of the full catalog at base
// (after the change lists since, cur) to skills.
func (s *session) changesFor(trigger uint64, step string, base uint64, cur catalog.List, skills []catalog.Skill) (uint64, catalog.List) {
	s.t.Helper()
	var sums []catalog.Summary
	for _, k := range skills {
		sums = append(sums, k.Summary)
	}
	opts := catalog.DefaultOptions()
	opts.Updates = catalog.UpdatesChanges
	v := catalog.Prepare(catalog.Snapshot{Skills: sums, Complete: true}, opts)
	d := catalog.DecideView(true, v, catalog.History{Published: true, Visible: true, Digest: cur.Digest(), Current: &cur})
	if d.Update != catalog.UpdateChanges {
		s.t.Fatalf("decided %s", d.Update)
	}
	changes := make([]events.Change, len(d.Changes))
	for i, c := range d.Changes {
		changes[i] = events.Change{Name: c.Name, Change: string(c.Kind), Description: c.Description}
	}
	c := events.Catalog{V: 1, Session: s.sid, Step: step, ID: step, Role: "user", Text: d.Text,
		Source: events.CatalogSource{Kind: events.SourceKindCatalog, Producer: s.owner, Update: events.UpdateChanges,
			Base: base, Changes: changes, Count: len(d.Entries), Digest: d.Digest}}
	return s.add(events.KindCatalog, c, map[string][]string{events.HeaderCausationSeq: {strconv.FormatUint(trigger, 10)}}), catalog.ListOf(v)
}

// TestReplayChangeLists: a recording with change lists replays as
// recorded with no difference, and against today's skills a change list
// is decided again where one was recorded; the session's list is shown at
// each step.
func TestReplayChangeLists(t *testing.T) {
	before, after, later := testSkills(), testSkills(), testSkills()
	after.skills[1].Description = "Does b, better."
	later.skills[1].Description = "Does b, better."
	later.skills = append(later.skills, skill(later.root, "c-skill", "Does c."))
	s := newSession(t, "sess-1")
	cwd := before.root + "/sub"
	p1 := s.preStep("1", cwd, ours(s.owner))
	base := s.catalogFor(p1, "1", catalog.UpdateInitial, before.skills)
	var sums []catalog.Summary
	for _, k := range before.skills {
		sums = append(sums, k.Summary)
	}
	cur := catalog.ListOf(catalog.Prepare(catalog.Snapshot{Skills: sums, Complete: true}, catalog.DefaultOptions()))
	p2 := s.preStep("2", cwd, ours(s.owner))
	_, cur = s.changesFor(p2, "2", base, cur, after.skills)
	s.preStep("3", cwd, ours(s.owner)) // unchanged
	p4 := s.preStep("4", cwd, ours(s.owner))
	s.changesFor(p4, "4", base, cur, later.skills)
	s.preStep("5", cwd, ours(s.owner)) // unchanged
	rec := s.recording()

	opts := catalog.DefaultOptions()
	opts.Updates = catalog.UpdatesChanges
	steps, sum := replayBytes(t, rec, Options{AsRecorded: true, Catalog: opts})
	if sum != (Summary{Triggers: 5, Same: 5}) {
		t.Errorf("as recorded: %+v\n%s", sum, outcomes(steps))
	}
	// Today's skills are the end's: step 1 lists them, step 4's change
	// list is decided again as recorded.
	steps, _ = replayBytes(t, rec, Options{Skills: later, Catalog: opts})
	want := map[string]bool{"1": true, "2": true, "3": true, "4": false, "5": false}
	for _, st := range steps {
		if st.Differs != want[st.ID] {
			t.Errorf("step %s differs %v, want %v\n%s", st.ID, st.Differs, want[st.ID], outcomes(steps))
		}
		if st.ID == "4" && st.Replayed.Update != events.UpdateChanges {
			t.Errorf("step 4 replayed %+v, want a change list", st.Replayed)
		}
	}
	// The list at the end is the chain's.
	if last := steps[len(steps)-1]; last.Seen == nil || last.Seen.Update != events.UpdateChanges || len(last.Seen.Entries) != 3 || last.Seen.Entries[1].Description != "Does b, better." {
		t.Errorf("seen at the end: %+v", last.Seen)
	}
}
