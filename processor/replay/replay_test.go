package replay

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/history"
)

// fixedSkills is a registry answer that does not change: the skills of
// every working directory under root (others see none).
type fixedSkills struct {
	root     string
	skills   []catalog.Skill
	complete bool
}

func (f *fixedSkills) Snapshot(_ context.Context, q catalog.Query) (catalog.Snapshot, error) {
	cwd := q.Cwd
	snap := catalog.Snapshot{Complete: f.complete}
	if cwd == f.root || strings.HasPrefix(cwd, f.root+"/") {
		for _, s := range f.skills {
			snap.Skills = append(snap.Skills, s.Summary)
		}
	}
	return snap, nil
}

func (f *fixedSkills) find(name, cwd string) (catalog.Skill, error) {
	if cwd == f.root || strings.HasPrefix(cwd, f.root+"/") {
		for _, s := range f.skills {
			if s.Name == name {
				return s, nil
			}
		}
	}
	return catalog.Skill{}, fmt.Errorf("%q: %w", name, catalog.ErrNotFound)
}

func (f *fixedSkills) Resolve(_ context.Context, name string, q catalog.Query) (catalog.Summary, error) {
	s, err := f.find(name, q.Cwd)
	return s.Summary, err
}

func (f *fixedSkills) Load(_ context.Context, name string, q catalog.Query) (catalog.Skill, error) {
	return f.find(name, q.Cwd)
}

func skill(root, name, desc string) catalog.Skill {
	return catalog.Skill{
		Summary: catalog.Summary{Name: name, Description: desc, Invocation: catalog.Invocation{ModelInvocable: true, UserInvocable: true},
			Source: catalog.SourceProject, Provider: "agentskills",
			ResourceBase: &catalog.ResourceBase{Kind: catalog.ResourceDirectory, Path: root + "/.agents/skills/" + name}},
		Content: "Instructions of " + name + ".",
	}
}

// session builds a recorded session log the way a worker and a processor
// would have written it, deciding with the catalog package as the
// processor does.
type session struct {
	t     testing.TB
	sid   string
	owner string
	seq   uint64
	at    time.Time
	evs   []Event
	enc   events.Encoding
}

func newSession(t testing.TB, sid string) *session {
	return &session{t: t, sid: sid, owner: "skillstream", at: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)}
}

func (s *session) add(kind events.Kind, v any, hdr map[string][]string) uint64 {
	s.t.Helper()
	b, err := events.Encode(s.enc, v)
	if err != nil {
		s.t.Fatal(err)
	}
	s.seq++
	s.at = s.at.Add(time.Second)
	h := map[string][]string{events.HeaderContentType: {s.enc.ContentType()}}
	for k, v := range hdr {
		h[k] = v
	}
	s.evs = append(s.evs, Event{Seq: s.seq, Subject: events.Subject("ev", s.sid, kind), Time: s.at, Headers: h, Data: b})
	return s.seq
}

func (s *session) skip(n uint64) { s.seq += n }

func ours(owner string) []events.Tool {
	return []events.Tool{{Name: "read"}, {Name: "skill", Owner: owner}}
}

func (s *session) preStep(step, cwd string, tools []events.Tool) uint64 {
	return s.add(events.KindPreStep, events.PreStep{V: 1, Session: s.sid, Step: step, Cwd: cwd, Tools: tools}, nil)
}

func (s *session) catalogFor(trigger uint64, step string, update catalog.Update, skills []catalog.Skill) uint64 {
	var sums []catalog.Summary
	for _, k := range skills {
		sums = append(sums, k.Summary)
	}
	entries := catalog.Entries(sums, catalog.DefaultDescriptionMaxLength)
	wire := []events.Entry{}
	for _, e := range entries {
		wire = append(wire, events.Entry{Name: e.Name, Description: e.Description})
	}
	c := events.Catalog{V: 1, Session: s.sid, Step: step, ID: step, Role: "user", Text: catalog.Render(update, entries),
		Source: events.CatalogSource{Kind: events.SourceKindCatalog, Producer: s.owner, Update: string(update), Entries: wire, Digest: catalog.Digest(entries)}}
	return s.add(events.KindCatalog, c, map[string][]string{events.HeaderCausationSeq: {strconv.FormatUint(trigger, 10)}})
}

func (s *session) compact(retainFrom uint64, keep ...uint64) uint64 {
	return s.add(events.KindCompaction, events.Compaction{V: 1, Session: s.sid, RetainFrom: retainFrom, Keep: keep}, nil)
}

func (s *session) call(id, cwd, name string) uint64 {
	return s.add(events.KindSkillCall, events.SkillCall{V: 1, Session: s.sid, Call: id, Cwd: cwd, Args: events.SkillArgs{Name: name}}, nil)
}

func (s *session) result(trigger uint64, id string, sk *fixedSkills, cwd, name string) uint64 {
	res := catalog.Execute(context.Background(), history.Lookup(sk, catalog.At(cwd)), name, catalog.DefaultOptions())
	tr := events.ToolResult{V: 1, Session: s.sid, Call: id, TriggerSeq: trigger, IsError: res.Err != nil, Text: res.Text()}
	if res.Err != nil {
		tr.Error = &events.ErrorInfo{Code: string(res.Err.Code), Message: res.Err.Message}
	}
	if v := res.Value; v != nil {
		tr.Value = &events.SkillValue{Name: v.Name, Provider: v.Provider, Content: v.Content}
		if t := v.Truncated; t != nil {
			tr.Value.Truncated = &events.Truncated{Kept: int64(t.Kept), Total: int64(t.Total)}
		}
		if rb := v.ResourceBase; rb != nil {
			tr.Value.ResourceBase = &events.ResourceBase{Kind: string(rb.Kind), Path: rb.Path, URL: rb.URL, Description: rb.Description}
		}
	}
	return s.add(events.KindToolResult, tr, map[string][]string{events.HeaderCausationSeq: {strconv.FormatUint(trigger, 10)}})
}

func (s *session) other(kind events.Kind) uint64 {
	return s.add(kind, map[string]any{"v": 1, "session": s.sid, "text": "hello"}, nil)
}

// recording writes the session as a recording, with skills captured for
// the given working directories first.
func (s *session) recording(captures ...SkillSet) []byte {
	s.t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{Session: s.sid, Prefix: "ev", Stream: "SESSIONS"})
	if err != nil {
		s.t.Fatal(err)
	}
	for _, c := range captures {
		if err := w.Skills(c); err != nil {
			s.t.Fatal(err)
		}
	}
	for _, e := range s.evs {
		if err := w.Event(e); err != nil {
			s.t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		s.t.Fatal(err)
	}
	return buf.Bytes()
}

func replayBytes(t testing.TB, rec []byte, opts Options) ([]Step, Summary) {
	t.Helper()
	r, err := NewReader(bytes.NewReader(rec))
	if err != nil {
		t.Fatal(err)
	}
	var steps []Step
	if opts.ToolOwner == "" {
		opts.ToolOwner = "skillstream"
	}
	if opts.Catalog.DescriptionMaxLength == 0 {
		opts.Catalog = catalog.DefaultOptions()
	}
	opts.Emit = func(s Step) error { steps = append(steps, s); return nil }
	sum, err := Run(context.Background(), r, opts)
	if err != nil {
		t.Fatal(err)
	}
	return steps, sum
}

// lifecycle plays a catalog's whole lifecycle with skills sk: initial, unchanged,
// a foreign message, a skill call, a compaction masking the catalog
// (re-established), a keep list retaining it (unchanged), the tool hidden
// (tombstone), hidden again (unchanged: the tombstone is visible).
func lifecycle(t testing.TB, sk *fixedSkills, enc ...events.Encoding) *session {
	s := newSession(t, "sess-1")
	if len(enc) > 0 {
		s.enc = enc[0]
	}
	cwd := sk.root + "/sub"
	p1 := s.preStep("1", cwd, ours(s.owner))
	c1 := s.catalogFor(p1, "1", catalog.UpdateInitial, sk.skills)
	s.other("message.user")
	s.preStep("2", cwd, ours(s.owner))
	call := s.call("c1", cwd, "b-skill")
	s.result(call, "c1", sk, cwd, "b-skill")
	call2 := s.call("c2", cwd, "nope")
	s.result(call2, "c2", sk, cwd, "nope")
	s.other("message.assistant")
	s.compact(s.seq + 1) // masks everything so far, c1 included
	p3 := s.preStep("3", cwd, ours(s.owner))
	c3 := s.catalogFor(p3, "3", catalog.UpdateReplacement, sk.skills)
	s.compact(s.seq+1, c3) // keeps c3
	s.preStep("4", cwd, ours(s.owner))
	p5 := s.preStep("5", cwd, []events.Tool{{Name: "read"}})
	s.catalogFor(p5, "5", catalog.UpdateReplacement, nil)
	s.preStep("6", cwd, []events.Tool{{Name: "skill", Owner: "someone-else"}, {Name: "skill", Owner: s.owner}})
	_ = c1
	return s
}

func testSkills() *fixedSkills {
	return &fixedSkills{root: "/work/app", complete: true, skills: []catalog.Skill{
		skill("/work/app", "a-skill", "Does <a> & more."),
		skill("/work/app", "b-skill", "Does b."),
	}}
}

func outcomes(steps []Step) string {
	var b strings.Builder
	for _, s := range steps {
		fmt.Fprintf(&b, "%d %s %s: %s | %s | differs=%v\n", s.Seq, s.Kind, s.ID, s.Recorded, s.Replayed, s.Differs)
	}
	return b.String()
}

func TestReplayIdentical(t *testing.T) {
	sk := testSkills()
	for _, enc := range []events.Encoding{events.Msgpack, events.JSON} {
		t.Run(enc.String(), func(t *testing.T) {
			s := lifecycle(t, sk, enc)
			steps, sum := replayBytes(t, s.recording(), Options{Skills: sk})
			want := `1 pre-step 1: appended initial (seq 2) | appended initial | differs=false
4 pre-step 2: none | unchanged | differs=false
5 skill-call c1: ok (seq 6) | ok | differs=false
7 skill-call c2: error unknown (seq 8) | error unknown | differs=false
11 pre-step 3: appended replacement (seq 12) | appended replacement | differs=false
14 pre-step 4: none | unchanged | differs=false
15 pre-step 5: appended tombstone (seq 16) | appended tombstone | differs=false
17 pre-step 6: none | unchanged | differs=false
`
			if got := outcomes(steps); got != want {
				t.Errorf("steps:\n%s\nwant:\n%s", got, want)
			}
			if sum != (Summary{Triggers: 8, Same: 8}) {
				t.Errorf("summary = %+v", sum)
			}
			// As recorded, through compaction, keep list and tombstone.
			steps, sum = replayBytes(t, s.recording(), Options{AsRecorded: true})
			if got := outcomes(steps); got != want || sum != (Summary{Triggers: 8, Same: 8}) {
				t.Errorf("as recorded: %+v\n%s\nwant:\n%s", sum, got, want)
			}
		})
	}
}

func TestReplayChangedDescription(t *testing.T) {
	sk := testSkills()
	s := lifecycle(t, sk)
	now := testSkills()
	now.skills[1].Description = "Does b, better."
	steps, sum := replayBytes(t, s.recording(), Options{Skills: now})
	var differ []string
	for _, st := range steps {
		if st.Differs {
			differ = append(differ, st.ID)
		}
	}
	// Steps 1 and 3 append other text; steps 2 and 4 now see a catalog
	// whose digest differs from the recorded one, so they would append a
	// replacement. Calls, the tombstone and step 6 are unaffected.
	if want := []string{"1", "2", "3", "4"}; !slices.Equal(differ, want) {
		t.Errorf("differing steps = %v, want %v\n%s", differ, want, outcomes(steps))
	}
	if sum.Differ != 4 || sum.Same != 4 {
		t.Errorf("summary = %+v", sum)
	}
	wantDiff := "--- recorded\n+++ replayed\n@@ -3,7 +3,7 @@\n \n <available_skills>\n - `a-skill`: Does &lt;a&gt; &amp; more.\n-- `b-skill`: Does b.\n+- `b-skill`: Does b, better.\n </available_skills>\n \n If the user names a skill, or the task clearly matches a skill's description, call the `skill` tool with the exact skill name before taking task actions. Load all applicable skills, then follow their full instructions. This catalog contains summaries only; do not infer or follow a skill's instructions until it has been loaded.\n"
	if steps[0].Diff != wantDiff {
		t.Errorf("diff of step 1:\n%s\nwant:\n%s", steps[0].Diff, wantDiff)
	}
	if steps[1].Recorded.Outcome != OutcomeNone || steps[1].Replayed.Update != UpdateReplacement || !strings.HasPrefix(steps[1].Diff, "--- recorded\n+++ replayed\n@@ -0,0 +1,10 @@\n+<system-reminder>\n") {
		t.Errorf("step 2 = %+v", steps[1])
	}
}

func TestReplayRecordedSkills(t *testing.T) {
	sk := testSkills()
	s := lifecycle(t, sk)
	set, err := CaptureSkills(context.Background(), sk, sk.root+"/sub")
	if err != nil {
		t.Fatal(err)
	}
	rec := s.recording(set)
	// The skills on disk have changed since, but the recording's capture
	// is what this replay uses.
	now := testSkills()
	now.skills = now.skills[:1]
	steps, sum := replayBytes(t, rec, Options{Skills: now, Recorded: true})
	if sum.Differ != 0 || sum.Triggers != 8 {
		t.Errorf("summary = %+v\n%s", sum, outcomes(steps))
	}
	steps, sum = replayBytes(t, rec, Options{Skills: now})
	if sum.Differ == 0 {
		t.Errorf("replay against changed skills found no difference\n%s", outcomes(steps))
	}
}

func TestReplayCwdMap(t *testing.T) {
	sk := testSkills()
	s := lifecycle(t, sk)
	moved := &fixedSkills{root: "/home/me/app", complete: true, skills: []catalog.Skill{
		skill("/home/me/app", "a-skill", "Does <a> & more."),
		skill("/home/me/app", "b-skill", "Does b."),
	}}
	steps, sum := replayBytes(t, s.recording(), Options{Skills: moved})
	if sum.Differ == 0 {
		t.Fatalf("replay without a mapping found no difference\n%s", outcomes(steps))
	}
	m, err := ParseCwdMapping("/work/app=/home/me/app/")
	if err != nil {
		t.Fatal(err)
	}
	steps, sum = replayBytes(t, s.recording(), Options{Skills: moved, CwdMap: []CwdMapping{m}})
	if sum.Differ != 0 {
		t.Errorf("mapped replay differs\n%s", outcomes(steps))
	}
	for _, bad := range []string{"", "a", "=b", "a="} {
		if _, err := ParseCwdMapping(bad); err == nil {
			t.Errorf("ParseCwdMapping(%q) accepted", bad)
		}
	}
}

func TestReplayRetriesAndBadTriggers(t *testing.T) {
	sk := testSkills()
	s := newSession(t, "sess-2")
	cwd := sk.root
	p1 := s.preStep("1", cwd, ours(s.owner))
	s.catalogFor(p1, "1", catalog.UpdateInitial, sk.skills)
	s.preStep("1", cwd, ours(s.owner)) // the worker's retry, answered from seq 2
	// A retry published before the answer arrived.
	call := s.call("c1", cwd, "a-skill")
	s.call("c1", cwd, "a-skill")
	s.result(call, "c1", sk, cwd, "a-skill")
	// Undecodable triggers: rejected, nothing appended.
	s.seq++
	s.evs = append(s.evs, Event{Seq: s.seq, Subject: "ev.sess-2.agent.pre-step", Time: s.at, Data: []byte{0xc1}})
	s.add(events.KindPreStep, events.PreStep{V: 1, Session: "other", Step: "9", Tools: ours(s.owner)}, nil)
	s.preStep("2", cwd, ours(s.owner))
	steps, sum := replayBytes(t, s.recording(), Options{Skills: sk})
	want := `1 pre-step 1: appended initial (seq 2) | appended initial | differs=false
3 pre-step 1: retry | retry | differs=false
4 skill-call c1: ok (seq 6) | ok | differs=false
5 skill-call c1: retry | retry | differs=false
7 pre-step : none | rejected | differs=false
8 pre-step 9: none | rejected | differs=false
9 pre-step 2: none | unchanged | differs=false
`
	if got := outcomes(steps); got != want {
		t.Errorf("steps:\n%s\nwant:\n%s", got, want)
	}
	if sum.Differ != 0 {
		t.Errorf("summary = %+v", sum)
	}
}

func TestHistoryOnly(t *testing.T) {
	sk := testSkills()
	s := lifecycle(t, sk)
	steps, _ := replayBytes(t, s.recording(), Options{HistoryOnly: true})
	var got strings.Builder
	for _, st := range steps {
		if st.Kind != TriggerPreStep {
			continue
		}
		seen := "none"
		if st.Seen != nil {
			seen = fmt.Sprintf("%d %s %d", st.Seen.Seq, st.Seen.Update, len(st.Seen.Entries))
		}
		fmt.Fprintf(&got, "%s: %s published=%v compaction=%d\n", st.ID, seen, st.Published, st.MaskedBy)
	}
	want := `1: 2 initial 2 published=true compaction=0
2: 2 initial 2 published=true compaction=0
3: 12 replacement 2 published=true compaction=10
4: 12 replacement 2 published=true compaction=13
5: 16 tombstone 0 published=true compaction=13
6: 16 tombstone 0 published=true compaction=13
`
	if got.String() != want {
		t.Errorf("history:\n%s\nwant:\n%s", got.String(), want)
	}
}

// TestReplayKeptCatalog: a compaction that masks the newest catalog (a
// tombstone) but keeps an older one leaves that older one visible, as the
// processor's HistoryOf decides.
func TestReplayKeptCatalog(t *testing.T) {
	sk := testSkills()
	for _, keepFirst := range []bool{true, false} {
		s := newSession(t, "kept")
		cwd := sk.root
		p1 := s.preStep("1", cwd, ours(s.owner))
		c1 := s.catalogFor(p1, "1", catalog.UpdateInitial, sk.skills)
		p2 := s.preStep("2", cwd, nil)
		s.catalogFor(p2, "2", catalog.UpdateReplacement, nil)
		s.other("message.user")
		if keepFirst {
			s.compact(s.seq+1, c1)
		} else {
			s.compact(s.seq + 1)
		}
		p3 := s.preStep("3", cwd, ours(s.owner))
		if !keepFirst {
			s.catalogFor(p3, "3", catalog.UpdateReplacement, sk.skills)
		}
		steps, sum := replayBytes(t, s.recording(), Options{Skills: sk})
		if sum.Differ != 0 {
			t.Fatalf("keep=%v: %s", keepFirst, outcomes(steps))
		}
		last := steps[len(steps)-1]
		switch {
		case keepFirst && (last.Replayed.Outcome != string(catalog.OutcomeUnchanged) || last.Seen == nil || last.Seen.Seq != c1):
			t.Errorf("kept catalog: step 3 = %+v", last)
		case !keepFirst && (last.Replayed.Update != UpdateReplacement || last.Seen == nil || last.Seen.Seq != p3+1):
			t.Errorf("nothing kept: step 3 = %+v", last)
		}
	}
}

// FuzzReplay feeds arbitrary payloads under every kind: the replay never
// panics and never fails on them; it settles every trigger.
func FuzzReplay(f *testing.F) {
	s := lifecycle(f, testSkills())
	for _, e := range s.evs {
		f.Add(e.Data, uint8(0), true)
	}
	f.Add([]byte{0xc1}, uint8(1), false)
	f.Add([]byte(`{"v":1,"session":"sess-1","step":"x","tools":[{"name":"skill","owner":"skillstream"}]}`), uint8(0), false)
	kinds := []events.Kind{events.KindPreStep, events.KindSkillCall, events.KindCompaction, events.KindCatalog, events.KindToolResult}
	f.Fuzz(func(t *testing.T, data []byte, kind uint8, asJSON bool) {
		s := lifecycle(t, testSkills())
		ct := events.ContentTypeMsgpack
		if asJSON {
			ct = events.ContentTypeJSON
		}
		k := kinds[int(kind)%len(kinds)]
		s.seq++
		s.evs = append(s.evs, Event{Seq: s.seq, Subject: events.Subject("ev", s.sid, k), Time: s.at,
			Headers: map[string][]string{events.HeaderContentType: {ct}, events.HeaderCausationSeq: {"1"}}, Data: data})
		s.preStep("last", "/work/app", ours(s.owner))
		steps, sum := replayBytes(t, s.recording(), Options{Skills: testSkills()})
		if sum.Triggers != len(steps) || steps[len(steps)-1].ID != "last" {
			t.Fatalf("steps %d, summary %+v", len(steps), sum)
		}
	})
}

// TestReplayAsRecorded replays a session whose skills changed while it
// ran: against the skills of its start the later steps differ; as
// recorded, every trigger gets the skills the session saw then, whatever
// today's skills are (none are given).
func TestReplayAsRecorded(t *testing.T) {
	before := testSkills()
	after := testSkills()
	after.skills[1].Description = "Does b, better."
	after.skills[1].Content = "New body of b-skill."
	hidden := skill(after.root, "hidden", "Not for the model.")
	hidden.Invocation.ModelInvocable = false
	// A body the size limit cuts where a code point straddles it.
	big := skill(after.root, "big", "Long instructions.")
	big.Content = strings.Repeat("a", catalog.DefaultMaxSkillBytes-1) + "€ and more"
	after.skills = append(after.skills, hidden, big)
	s := newSession(t, "sess-1")
	cwd := before.root + "/sub"
	p1 := s.preStep("1", cwd, ours(s.owner))
	s.catalogFor(p1, "1", catalog.UpdateInitial, before.skills)
	c1 := s.call("c1", cwd, "b-skill")
	s.result(c1, "c1", before, cwd, "b-skill")
	p2 := s.preStep("2", cwd, ours(s.owner))
	s.catalogFor(p2, "2", catalog.UpdateReplacement, after.skills[:2])
	s.preStep("3", cwd, ours(s.owner)) // unchanged: no output
	c2 := s.call("c2", cwd, "b-skill")
	s.result(c2, "c2", after, cwd, "b-skill")
	c3 := s.call("c3", cwd, "hidden")
	s.result(c3, "c3", after, cwd, "hidden")
	c4 := s.call("c4", cwd, "gone")
	s.result(c4, "c4", after, cwd, "gone")
	c5 := s.call("c5", cwd, "a-skill")
	s.add(events.KindToolResult, events.ToolResult{V: 1, Session: s.sid, Call: "c5", TriggerSeq: c5, IsError: true, Text: "Error: disk on fire",
		Error: &events.ErrorInfo{Code: events.CodeProvider, Message: "disk on fire"}}, map[string][]string{events.HeaderCausationSeq: {strconv.FormatUint(c5, 10)}})
	c6 := s.call("c6", cwd, "big")
	s.result(c6, "c6", after, cwd, "big")
	s.preStep("4", cwd, []events.Tool{{Name: "read"}}) // hidden: a tombstone...
	s.catalogFor(s.seq, "4", catalog.UpdateReplacement, nil)
	rec := s.recording()

	steps, sum := replayBytes(t, rec, Options{AsRecorded: true})
	if sum != (Summary{Triggers: 10, Same: 10}) {
		t.Errorf("as recorded: %+v\n%s", sum, outcomes(steps))
	}
	// The skills of the session's start: the triggers after the change
	// differ (the catalog, the new body, the not-invocable skill, the
	// provider error, the truncated body); step 3 now sees another catalog
	// than the visible one.
	steps, _ = replayBytes(t, rec, Options{Skills: before})
	var differ []string
	for _, st := range steps {
		if st.Differs {
			differ = append(differ, st.ID)
		}
	}
	if want := []string{"2", "3", "c2", "c3", "c5", "c6"}; !slices.Equal(differ, want) {
		t.Errorf("against the start's skills: differing %v, want %v\n%s", differ, want, outcomes(steps))
	}
	if _, err := NewReplayer(Header{Session: "s"}, Options{ToolOwner: "x", Catalog: catalog.DefaultOptions(), AsRecorded: true, Recorded: true}); err == nil {
		t.Error("as recorded and recorded skills together: no error")
	}
}
