package replay

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/processor"
	"github.com/skillstream/skillstream/providers/search"
)

// learnedQuery is the search whose ranking the learned terms change.
const learnedQuery = "deploy a service"

// playLearnedSearch runs the processor over project's skills with an
// index that learned learnedQuery for pdf-forms, and plays a session
// that searches for it: its result records the learned terms.
func playLearnedSearch(t testing.TB, srv *natstest.Server, project, sid string) events.ToolResult {
	t.Helper()
	reg := newRegistry(t)
	ix := search.New(reg, search.Options{})
	t.Cleanup(func() { ix.Close() })
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range 40 {
		if err := ix.Learn("pdf-forms", learnedQuery, at.Add(time.Duration(i)*time.Minute)); err != nil {
			t.Fatal(err)
		}
	}
	p, err := processor.New(srv.Conn, reg, processor.Config{Catalog: searchOptions()},
		processor.WithLogger(discardLogger()), processor.WithSearcher(ix))
	if err != nil {
		t.Fatal(err)
	}
	runUntilCleanup(t, p)
	w := &worker{t: t, nc: srv.Conn, js: srv.JS, sid: sid, cwd: project}
	waitStream(t, srv.JS, processor.DefaultStream)
	tools := []events.Tool{{Name: "read", Owner: "host"}, {Name: "skill", Owner: processor.DefaultToolOwner},
		{Name: catalog.SearchToolName, Owner: processor.DefaultToolOwner}}
	if got := w.preStep("1", tools); got != events.OutcomeAppended {
		t.Fatalf("step 1: %s", got)
	}
	return w.search("s1", events.SearchArgs{Query: learnedQuery})
}

// rewriteLearned returns rec with the learned terms of every search
// result passed through f, and the recording's end record made anew.
func rewriteLearned(t testing.TB, rec []byte, f func(*events.SearchValue)) []byte {
	t.Helper()
	h, items, err := readAll(rec)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	w, err := NewWriter(&out, h)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		switch {
		case it.Skills != nil:
			err = w.Skills(*it.Skills)
		case it.Event != nil:
			e := *it.Event
			if enc, eerr := events.EncodingOf(e.Header(events.HeaderContentType)); eerr == nil {
				if r, derr := events.DecodeToolResultIn(h.Layout, enc, e.Data); derr == nil && r.Search != nil {
					f(r.Search)
					if e.Data, err = events.Encode(enc, r); err != nil {
						t.Fatal(err)
					}
				}
			}
			err = w.Event(e)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return out.Bytes()
}

// TestAsRecordedLearnedSearch: a search ranked with learned terms (which
// put pdf-forms, whose text says nothing of deploying, first) records
// them in its result's value; replayed as recorded, its ranking is
// rebuilt over the captured skills with them, identically; with them
// altered, the rebuilt ranking differs (it is rebuilt, not copied); a
// replay against today's skills says the search used learned terms; a
// forged or oversized field is an error naming it, at that step alone.
func TestAsRecordedLearnedSearch(t *testing.T) {
	srv := natstest.Start(t)
	project := searchProject(t)
	r := playLearnedSearch(t, srv, project, "learned-1")
	if r.IsError || r.Search == nil || len(r.Search.Results) == 0 || r.Search.Results[0].Name != "pdf-forms" ||
		r.Search.Learned == "" || len(r.Search.LearnedTerms) == 0 {
		t.Fatalf("learned search: %+v", r.Search)
	}
	for _, lt := range r.Search.LearnedTerms {
		if len(lt.Skills) != 1 || lt.Skills[0].Name != "pdf-forms" || strings.Contains(r.Text, lt.Term+"=") {
			t.Errorf("learned term %+v", lt)
		}
	}
	// Without what it learned, the index ranks k8s-deploy first.
	plain := search.New(newRegistry(t), search.Options{})
	t.Cleanup(func() { plain.Close() })
	if res, err := plain.Search(context.Background(), catalog.At(project), learnedQuery, 5, 0); err != nil || len(res.Matches) == 0 || res.Matches[0].Name == "pdf-forms" {
		t.Fatalf("unlearned ranking: %+v %v", res.Matches, err)
	}

	var buf bytes.Buffer
	if _, err := Export(context.Background(), srv.JS, ExportOptions{Stream: processor.DefaultStream, Session: "learned-1", Skills: newRegistry(t)}, &buf); err != nil {
		t.Fatal(err)
	}
	rec := buf.Bytes()
	base := Options{ToolOwner: processor.DefaultToolOwner, Catalog: searchOptions()}
	asRecorded := base
	asRecorded.AsRecorded = true
	searchStep := func(steps []Step) Step {
		for _, s := range steps {
			if s.Kind == TriggerSkillSearch {
				return s
			}
		}
		t.Fatalf("no search step:\n%s", outcomes(steps))
		return Step{}
	}

	steps, sum := replayBytes(t, rec, asRecorded)
	if s := searchStep(steps); sum.Differ != 0 || !strings.Contains(s.Note, "ranked with the recorded learned search terms (version "+r.Search.Learned+")") {
		t.Fatalf("as recorded: %+v, note %q\n%s", sum, s.Note, outcomes(steps))
	}

	today := base
	today.Skills = newRegistry(t)
	steps, _ = replayBytes(t, rec, today)
	if s := searchStep(steps); !s.Differs || !strings.Contains(s.Note, "recorded with learned search terms (version "+r.Search.Learned+")") {
		t.Errorf("today: differs %v, note %q", s.Differs, s.Note)
	}

	// The learned weights made small: the rebuilt ranking is the text's.
	weak := rewriteLearned(t, rec, func(v *events.SearchValue) {
		for i := range v.LearnedTerms {
			for j := range v.LearnedTerms[i].Skills {
				v.LearnedTerms[i].Skills[j].Weight = 1e-9
			}
		}
	})
	steps, sum = replayBytes(t, weak, asRecorded)
	if s := searchStep(steps); sum.Differ != 1 || !s.Differs || !strings.Contains(s.Diff, "-- `pdf-forms`") {
		t.Errorf("weakened terms: %+v\n%s\n%s", sum, s.Diff, outcomes(steps))
	}

	many := make([]events.LearnedWeight, 33)
	for i := range many {
		many[i] = events.LearnedWeight{Name: "skill-" + strings.Repeat("x", i+1), Weight: 1}
	}
	for _, c := range []struct {
		name, want string
		f          func(*events.SearchValue)
	}{
		{"a term not of the query", `term "quantum" is not a term of the query`, func(v *events.SearchValue) { v.LearnedTerms[0].Term = "quantum" }},
		{"more terms than the query", "3 terms for a query of 2", func(v *events.SearchValue) { v.LearnedTerms = append(v.LearnedTerms, v.LearnedTerms[0]) }},
		{"a term twice", "given twice", func(v *events.SearchValue) { v.LearnedTerms[1].Term = v.LearnedTerms[0].Term }},
		{"too many skills", "names 33 skills, it must name 1 to 32", func(v *events.SearchValue) { v.LearnedTerms[0].Skills = many }},
		{"no skill", "names 0 skills", func(v *events.SearchValue) { v.LearnedTerms[0].Skills = nil }},
		{"a bad name", `"../etc" is not a skill name`, func(v *events.SearchValue) { v.LearnedTerms[0].Skills[0].Name = "../etc" }},
		{"a name twice", "twice", func(v *events.SearchValue) {
			v.LearnedTerms[0].Skills = append(v.LearnedTerms[0].Skills, v.LearnedTerms[0].Skills[0])
		}},
		{"not a number", "must be a finite positive number", func(v *events.SearchValue) { v.LearnedTerms[0].Skills[0].Weight = math.NaN() }},
		{"infinite", "must be a finite positive number", func(v *events.SearchValue) { v.LearnedTerms[0].Skills[0].Weight = math.Inf(1) }},
		{"negative", "must be a finite positive number", func(v *events.SearchValue) { v.LearnedTerms[0].Skills[0].Weight = -1 }},
	} {
		t.Run(c.name, func(t *testing.T) {
			steps, sum := replayBytes(t, rewriteLearned(t, rec, c.f), asRecorded)
			s := searchStep(steps)
			if sum.Differ != 1 || !s.Differs || s.Replayed.Outcome != OutcomeRejected || !strings.Contains(s.Note, "recorded learned search terms: ") || !strings.Contains(s.Note, c.want) {
				t.Errorf("%+v: note %q, want %q in it\n%s", sum, s.Note, c.want, outcomes(steps))
			}
		})
	}
}
