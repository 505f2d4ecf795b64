package replay

import (
	"bytes"
	"context"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/processor"
	"github.com/skillstream/skillstream/providers"
)

// recordedTexts counts the recorded pre-step texts for which has holds.
func recordedTexts(steps []Step, has func(string) bool) int {
	n := 0
	for _, s := range steps {
		if s.Kind == TriggerPreStep && s.Recorded.Text != "" && has(s.Recorded.Text) {
			n++
		}
	}
	return n
}

const limitNotice = "(Shortened to fit the catalog size limit: "

// A session of 300 skills under the default options: the size limit lists
// many without their description, while skills are edited, added and
// removed. Every step replays as recorded.
func TestAsRecordedSizeLimited(t *testing.T) {
	steps := checkRandomSession(t, 7, func(s *shape) {
		s.opts = catalog.DefaultOptions()
		s.skills, s.edits = 300, true
	})
	if n := recordedTexts(steps, func(text string) bool {
		return strings.Contains(text, limitNotice) && !strings.Contains(text, "size limit: 0 skills listed without")
	}); n < 2 {
		t.Fatalf("%d catalogs with entries listed without their description, want a few\n%s", n, outcomes(steps))
	}
}

// A limit so small that skills are left out entirely, not only their
// descriptions: the stand-ins leave out as many.
func TestAsRecordedSizeLimitLeavesOut(t *testing.T) {
	steps := checkRandomSession(t, 8, func(s *shape) {
		s.opts = catalog.DefaultOptions()
		s.opts.MaxLength = catalog.MinMaxLength
		s.skills, s.edits = 120, true
	})
	if n := recordedTexts(steps, func(text string) bool {
		return strings.Contains(text, limitNotice) && !strings.Contains(text, ", 0 skills not listed.")
	}); n < 2 {
		t.Fatalf("%d catalogs leaving skills out, want a few\n%s", n, outcomes(steps))
	}
}

// Change lists of a size-limited list: no invented "changed" lines for
// entries listed without their description, no change list replayed as
// a replacement.
func TestAsRecordedChangeListsSizeLimited(t *testing.T) {
	steps := checkRandomSession(t, 9, func(s *shape) {
		s.opts = catalog.DefaultOptions()
		s.opts.MaxLength, s.opts.Updates = 8000, catalog.UpdatesChanges
		s.skills, s.edits = 200, true
	})
	if n := recordedTexts(steps, func(text string) bool { return strings.Contains(text, "<skill_catalog_changes>") }); n < 2 {
		t.Fatalf("%d change lists, want a few\n%s", n, outcomes(steps))
	}
}

// Change lists of a list shortened for search whose notice did not change:
// their text does not say how many skills were left out, the record does.
func TestAsRecordedSearchChangeLists(t *testing.T) {
	// The first of a few seeds whose session has such a change list.
	for seed := uint64(10); ; seed++ {
		steps := checkRandomSession(t, seed, func(s *shape) {
			s.opts = catalog.DefaultOptions()
			s.opts.SkillSearch, s.opts.ListedMax, s.opts.Updates = true, 40, catalog.UpdatesChanges
			s.skills, s.edits, s.alwaysSearch = 60, true, true
		})
		if recordedTexts(steps, func(text string) bool {
			return strings.Contains(text, "<skill_catalog_changes>") && !strings.Contains(text, "more skills are available but not listed here")
		}) > 0 {
			break
		}
		if seed == 20 {
			t.Fatalf("no change list without the search notice\n%s", outcomes(steps))
		}
	}
}

// Catalogs listed by use, the ranking drawn again at every step: with
// search (names fill the size limit after the listed max) and without
// (the size limit alone), every step replays as recorded, and against the
// unchanged skills, with the rankings the recording holds.
func TestAsRecordedRankUse(t *testing.T) {
	for i, c := range []struct {
		search  bool
		updates catalog.Updates
	}{{true, catalog.UpdatesFull}, {false, catalog.UpdatesFull}, {true, catalog.UpdatesChanges}} {
		search := c.search
		steps := checkRandomSession(t, uint64(30+i), func(s *shape) {
			s.opts = catalog.DefaultOptions()
			s.opts.Rank, s.opts.Updates = catalog.RankUse, c.updates
			s.opts.MaxLength = 3000
			if search {
				// Names fill part of the list, the rest is left out.
				s.opts.SkillSearch, s.opts.ListedMax, s.opts.MaxLength = true, 5, 1500
			}
			s.skills, s.edits, s.alwaysSearch, s.ranked = 80, true, search, true
		})
		if n := recordedTexts(steps, func(text string) bool { return strings.Contains(text, "`\n") }); n < 1 {
			t.Errorf("search %v: no catalog lists a name without its description\n%s", search, outcomes(steps))
		}
	}
}

// The expiry note: a recorded step that appended nothing while the replay
// appends is said to have perhaps expired only when its deadline may have
// passed before the processor answered, which the worker's next step
// bounds.
func TestReplayExpiryNote(t *testing.T) {
	sk := testSkills()
	for _, tc := range []struct {
		name     string
		deadline time.Duration // after the trigger's time
		nextAt   time.Duration // the next step's time after the trigger's
		note     string
	}{
		{"answered in time", time.Minute, time.Second, ""},
		{"deadline passed before the next step", time.Second, time.Minute, "deadline passed before the worker's next step"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newSession(t, "s1")
			at := s.at.Add(time.Second) // the time add gives the trigger
			// Step 1 recorded without a catalog, though the skills would
			// give one: it differs.
			s.add(events.KindPreStep, events.PreStep{V: 1, Session: "s1", Step: "1", Cwd: "/work/app", Tools: ours(s.owner),
				DeadlineMs: at.Add(tc.deadline).UnixMilli()}, nil)
			s.at = at.Add(tc.nextAt - time.Second)
			s.preStep("2", "/work/app", ours(s.owner))
			steps, _ := replayBytes(t, s.recording(), Options{ToolOwner: s.owner, Catalog: catalog.DefaultOptions(), Skills: sk})
			if !steps[0].Differs {
				t.Fatalf("step 1 does not differ: %s", outcomes(steps))
			}
			if got := steps[0].Note; (tc.note == "") != (got == "") || !strings.Contains(got, tc.note) {
				t.Errorf("note %q, want %q", got, tc.note)
			}
		})
	}
}

// A session that compacts at every step has its catalog re-sent until the
// output budget refuses: those steps append nothing, and the replay,
// following the budget the recording says, reports them the same.
func TestAsRecordedOverBudget(t *testing.T) {
	srv := natstest.Start(t)
	skills := &mutableSkills{skills: map[string]catalog.Skill{}}
	for _, n := range []string{"a-skill", "b-skill"} {
		skills.set(catalog.Skill{Summary: catalog.Summary{Name: n, Description: "Does " + n + ".", Source: catalog.SourceProject,
			Invocation: catalog.Invocation{ModelInvocable: true}}})
	}
	reg := providers.NewRegistry([]providers.Provider{skills})
	t.Cleanup(func() { reg.Close() })
	p, err := processor.New(srv.Conn, reg, processor.Config{CatalogResends: 1}, processor.WithLogger(discardLogger()))
	if err != nil {
		t.Fatal(err)
	}
	runUntilCleanup(t, p)
	waitStream(t, srv.JS, processor.DefaultStream)
	w := &worker{t: t, nc: srv.Conn, js: srv.JS, sid: "budget-1", cwd: "/work/app"}
	tools := []events.Tool{{Name: "skill", Owner: processor.DefaultToolOwner}}
	var outcomes []string
	for step := 1; step <= 4; step++ {
		outcomes = append(outcomes, w.preStep(strconv.Itoa(step), tools))
		seq := w.publish("message.user", events.JSON, map[string]any{"v": 1, "text": "hello"}, "")
		w.publish(events.KindCompaction, events.JSON, events.Compaction{V: 1, Session: w.sid, RetainFrom: seq + 1}, "")
	}
	// The first catalog, one re-send, then refusals.
	if want := []string{"appended", "appended", "incomplete", "incomplete"}; !slices.Equal(outcomes, want) {
		t.Fatalf("outcomes %v, want %v", outcomes, want)
	}
	var rec bytes.Buffer
	if err := Record(context.Background(), srv.JS, processor.DefaultStream, events.DefaultPrefix, w.sid, &rec); err != nil {
		t.Fatal(err)
	}
	r, err := NewReader(bytes.NewReader(rec.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	recOpts, err := RecordedOptions(r)
	if err != nil || recOpts == nil || recOpts.ResendsPerMinute != 1 {
		t.Fatalf("recorded options %+v, %v", recOpts, err)
	}
	opts, _ := MergeOptions(catalog.DefaultOptions(), nil, recOpts)
	steps, sum := replayBytes(t, rec.Bytes(), Options{ToolOwner: processor.DefaultToolOwner, Catalog: opts, AsRecorded: true, Recording: recOpts})
	if sum.Differ != 0 || !strings.Contains(steps[2].Note, "output budget (catalog re-sends per minute)") {
		t.Errorf("as recorded: %+v\n%s", sum, differing(steps))
	}
	// Without what the recording says of its budget, the refusals differ.
	if _, sum := replayBytes(t, rec.Bytes(), Options{ToolOwner: processor.DefaultToolOwner, Catalog: opts, AsRecorded: true}); sum.Differ != 2 {
		t.Errorf("without the budget: %+v, want 2 steps differing", sum)
	}
}

// A replay against today's skills rebuilds each catalog listed by use with
// the ranking it recorded (0 differences), and notes the steps whose
// recorded ranking today's use (Options.Ranking) would not give; an
// as-recorded replay does not.
func TestReplayRankUseToday(t *testing.T) {
	rec, changed, skills, played := playRandomSession(t, 40, func(s *shape) {
		s.opts = catalog.DefaultOptions()
		s.opts.Rank, s.opts.SkillSearch, s.opts.ListedMax = catalog.RankUse, true, 3
		s.skills, s.edits, s.alwaysSearch, s.ranked = 30, false, true, true
	})
	if changed {
		t.Fatal("the skills changed")
	}
	reg := providers.NewRegistry([]providers.Provider{skills})
	defer reg.Close()
	today := catalog.Ranking{"no-such-skill": 3}
	for _, name := range skills.names() {
		today[name] = 1000 // every skill used alike: no recorded ranking says so
	}
	steps, sum := replayBytes(t, rec, Options{ToolOwner: processor.DefaultToolOwner, Catalog: played, Skills: reg, Ranking: today})
	if sum.Differ != 0 {
		t.Fatalf("%d of %d triggers differ\n%s", sum.Differ, sum.Triggers, differing(steps))
	}
	notes := 0
	for _, s := range steps {
		if strings.Contains(s.Note, "today's use ranks the skills otherwise") {
			notes++
		}
	}
	if notes == 0 {
		t.Errorf("no step notes today's ranking\n%s", outcomes(steps))
	}
	steps, _ = replayBytes(t, rec, Options{ToolOwner: processor.DefaultToolOwner, Catalog: played, AsRecorded: true, Ranking: today})
	for _, s := range steps {
		if strings.Contains(s.Note, "today's use") {
			t.Errorf("as recorded, a step notes today's ranking: %+v", s)
		}
	}
}
