// Package eval judges a change to the skills or the catalog options on
// sessions already recorded: what would each session's model have been
// shown, which of its recorded skill loads would now fail, and would its
// searches still have found the skill it then loaded? It drives replay's
// own code (a replay.Replayer per recording, against the candidate) and
// compares each trigger's recorded side, the baseline, with the
// candidate's.
//
// # Baseline and candidate
//
// The baseline is what the recording shows: the catalog the model saw at
// each pre-step, the results its skill calls and searches got, the skills
// its users invoked. The candidate is a set of skills (history.Skills: a
// registry over a skills folder or a store, as serve's skill flags give
// it) and the catalog options it would run with. Each recording is
// replayed against the candidate (replay.Options.Skills, not as recorded)
// with one search index of the candidate's skills shared by every
// recording (replay.NewIndex), over Workers goroutines.
//
// # What is reported
//
// Per pre-step whose recorded catalog is in view (replay.Step.Seen): the
// entries the candidate's catalog would add, remove, change (same name,
// other description) or list without a description that the recorded one
// listed with one; and the bytes of the catalog in view before (the
// recorded catalog's text) and after (the candidate's catalog for the
// step's working directory and tools, rendered with the same template);
// where a change list is in view, both count as their entries rendered
// whole with the replacement template (leaving out the notice of skills
// left out and the user invocation line, which the recorded list does not
// keep), with tokens estimated as the catalog command estimates them (characters
// divided by four, rounded up, per step: a rule of thumb, not a
// tokenizer). A session sums the bytes and tokens of its steps and counts
// each name once.
//
// Per skill call the recording shows loaded: a candidate that answers it
// with an error now fails it; one that loads other text changes it. The
// same for each skill a user invoked (/name) at a pre-step: the candidate
// no longer invoking it is a failure (so is a candidate with user
// invocation off). A call the recording shows failing that the candidate
// loads is counted as fixed.
//
// # Search-then-load pairs
//
// A recorded search answered with matches, followed in the same session by
// a skill call the recording shows loaded, with at most Window pre-steps
// between them and no other search answered in between, is a pair: the
// session's model searched, then loaded that skill. The loaded skill is
// the relevance label the fleet wrote itself. Its rank before is its
// place among the matches the recorded search showed (offset + position,
// from 1); its rank after its place among the matches the candidate's
// search for the same arguments (query, limit, offset) shows. A skill
// not shown ranks 0: a miss. Over the pairs: hit@1 (rank 1), hit@5 (rank
// 1 to 5) and MRR (the mean of 1/rank, 0 for a miss), before and after.
// Both sides count only what the model was or would be shown, so an
// unchanged candidate reports the same figures before and after.
//
// # Sources
//
// A Source is a recording: a file, or a session of the stream (Sessions
// lists those with a pre-step in a Window of time, StreamSource reads
// one whole, as export does). A source that cannot be read, or whose
// recording is truncated or corrupt, ends the run with a *SourceError
// naming it.
//
// # Left to the caller
//
// Choosing the recordings and the candidate's registry and options, the
// gates (see Gate), printing and exit statuses.
package eval

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sort"
	"unicode/utf8"

	"golang.org/x/sync/errgroup"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/history"
	"github.com/skillstream/skillstream/processor/replay"
)

// DefaultWindow is how many pre-steps may lie between a search and the
// load it is paired with.
const DefaultWindow = 3

// Candidate is the change judged: the skills and catalog options a
// processor would run with.
type Candidate struct {
	ToolOwner string
	Catalog   catalog.Options
	Skills    history.Skills
	// CwdMap rewrites the recorded working directories before asking
	// Skills (replay.Options.CwdMap).
	CwdMap []replay.CwdMapping
	// Bodies: the candidate's search index holds the skills' bodies
	// (search.Options.Bodies, serve's --search-bodies).
	Bodies bool
}

// Options configure an evaluation.
type Options struct {
	Candidate Candidate
	// Window is how many pre-steps may lie between a search and the load
	// paired with it; 0 means DefaultWindow.
	Window int
	// Workers replay that many recordings at once; 0 means GOMAXPROCS.
	Workers int
	// Steps keeps every pre-step's figures in Session.StepRows.
	Steps bool
}

// Source is one recording to evaluate: its name (a file name, a session
// id) and how to open it.
type Source struct {
	Name string
	Open func(context.Context) (io.ReadCloser, error)
}

// Bytes are the catalog bytes in view, summed over pre-steps, and the
// tokens estimated from them.
type Bytes struct {
	Bytes  int64 `json:"bytes"`
	Tokens int64 `json:"tokens"`
}

// Tokens estimates the tokens of model text as the catalog command does:
// its characters (code points) divided by four, rounded up. A rule of
// thumb, not a tokenizer.
func Tokens(text string) int { return (utf8.RuneCountInString(text) + 3) / 4 }

// Entries are the names of a catalog's entries the candidate changes.
type Entries struct {
	Added   []string `json:"added,omitempty"`
	Removed []string `json:"removed,omitempty"`
	Changed []string `json:"changed,omitempty"`
	// Bare: listed with a description before, without one after.
	Bare []string `json:"bare,omitempty"`
}

func (e Entries) empty() bool {
	return len(e.Added)+len(e.Removed)+len(e.Changed)+len(e.Bare) == 0
}

// StepRow is one pre-step's catalog, before and after.
type StepRow struct {
	Seq          uint64 `json:"seq"`
	Step         string `json:"step"`
	Before       int    `json:"bytesBefore"`
	After        int    `json:"bytesAfter"`
	TokensBefore int    `json:"tokensBefore"`
	TokensAfter  int    `json:"tokensAfter"`
	Entries
}

// Load verdicts.
const (
	// Fails: recorded loaded, the candidate answers with an error (or,
	// for an invocation, invokes nothing).
	Fails = "fails"
	// OtherText: both load, the text differs.
	OtherText = "other-text"
	// Fixed: recorded failed, the candidate loads.
	Fixed = "fixed"
)

// Load is a recorded skill call or user invocation the candidate answers
// otherwise.
type Load struct {
	// Seq is the trigger's stream sequence, ID the call or step id.
	Seq uint64 `json:"seq"`
	ID  string `json:"id"`
	// Kind is replay.TriggerSkillCall or "invocation".
	Kind    string `json:"kind"`
	Skill   string `json:"skill"`
	Verdict string `json:"verdict"`
	// Code is the candidate's error code for a failing call.
	Code string `json:"code,omitempty"`
}

// KindInvocation is a Load's kind for a user's /name invocation.
const KindInvocation = "invocation"

// Pair is a recorded search and the skill loaded after it.
type Pair struct {
	// Search is the search trigger's stream sequence, Load the call's.
	Search uint64 `json:"search"`
	Load   uint64 `json:"load"`
	Query  string `json:"query"`
	Skill  string `json:"skill"`
	// Before and After are the loaded skill's ranks (from 1), 0 when not
	// shown.
	Before int `json:"before"`
	After  int `json:"after"`
}

// Session is the evaluation of one recording.
type Session struct {
	Name    string `json:"name"`
	Session string `json:"session"`
	// Steps counts the pre-steps compared (those with a catalog in view).
	Steps  int   `json:"steps"`
	Before Bytes `json:"before"`
	After  Bytes `json:"after"`
	// Entries: each name once per session.
	Entries
	// Incomplete counts pre-steps at which the candidate's skills were
	// incomplete (a provider failed): their after is empty.
	Incomplete int       `json:"incomplete,omitempty"`
	Loads      []Load    `json:"loads,omitempty"`
	Pairs      []Pair    `json:"pairs,omitempty"`
	StepRows   []StepRow `json:"stepRows,omitempty"`
}

// Ranks are the search-then-load figures of one side.
type Ranks struct {
	Hit1 float64 `json:"hit1"`
	Hit5 float64 `json:"hit5"`
	MRR  float64 `json:"mrr"`
}

// Summary sums the sessions.
type Summary struct {
	Sessions   int   `json:"sessions"`
	Steps      int   `json:"steps"`
	Before     Bytes `json:"before"`
	After      Bytes `json:"after"`
	Added      int   `json:"added"`
	Removed    int   `json:"removed"`
	Changed    int   `json:"changed"`
	Bare       int   `json:"bare"`
	Incomplete int   `json:"incomplete"`
	// Failures, OtherText and Fixed count the Loads by verdict.
	Failures  int `json:"failures"`
	OtherText int `json:"otherText"`
	Fixed     int `json:"fixed"`
	// Pairs counts the search-then-load pairs; Window is the most
	// pre-steps between a search and its load.
	Pairs       int   `json:"pairs"`
	Window      int   `json:"window"`
	RanksBefore Ranks `json:"ranksBefore"`
	RanksAfter  Ranks `json:"ranksAfter"`
}

// ByteGrowth is the relative growth of the catalog bytes in view:
// (after - before) / before; 0 when nothing was in view before.
func (s Summary) ByteGrowth() float64 {
	if s.Before.Bytes == 0 {
		return 0
	}
	return float64(s.After.Bytes-s.Before.Bytes) / float64(s.Before.Bytes)
}

// Report is an evaluation: its sessions in the order given, and their sum.
type Report struct {
	Sessions []Session `json:"sessions"`
	Summary  Summary   `json:"summary"`
}

// SourceError is a recording that could not be evaluated.
type SourceError struct {
	Name string
	Err  error
}

func (e *SourceError) Error() string { return e.Name + ": " + e.Err.Error() }
func (e *SourceError) Unwrap() error { return e.Err }

// Run evaluates the candidate of opts on every source. The first source
// that cannot be read or replayed ends the run with a *SourceError.
func Run(ctx context.Context, sources []Source, opts Options) (*Report, error) {
	c := opts.Candidate
	if c.Skills == nil {
		return nil, errors.New("eval: no candidate skills")
	}
	if err := c.Catalog.Validate(); err != nil {
		return nil, fmt.Errorf("eval: %w", err)
	}
	if opts.Window <= 0 {
		opts.Window = DefaultWindow
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	// Every session sees the same skills, asked once per working
	// directory and name, and one search index of them.
	skills := replay.Memo(c.Skills)
	ix := replay.NewIndex(skills, opts.Candidate.Bodies)
	defer ix.Close()
	e := &evaluator{opts: opts, ix: ix, skills: skills}
	out := make([]Session, len(sources))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(workers)
	for i, src := range sources {
		g.Go(func() error {
			s, err := e.session(gctx, src)
			if err != nil {
				return &SourceError{Name: src.Name, Err: err}
			}
			out[i] = s
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	rep := &Report{Sessions: out, Summary: sum(out, opts.Window)}
	return rep, nil
}

// evaluator is what every session's evaluation shares.
type evaluator struct {
	opts   Options
	ix     *replay.Index
	skills history.Skills
}

// sessionEval is the evaluation of one recording in progress.
type sessionEval struct {
	e        *evaluator
	h        replay.Header
	out      Session
	preSteps map[uint64]events.PreStep
	searches map[uint64]events.SkillSearch
	names    map[string]map[string]bool // entry kind → names seen
	open     *opened                    // the newest search answered with matches, not yet paired
	since    int                        // pre-steps since open
}

func (e *evaluator) session(ctx context.Context, src Source) (Session, error) {
	f, err := src.Open(ctx)
	if err != nil {
		return Session{}, err
	}
	defer f.Close()
	r, err := replay.NewReader(f)
	if err != nil {
		return Session{}, err
	}
	h := r.Header()
	se := &sessionEval{e: e, h: h, out: Session{Name: src.Name, Session: h.Session},
		preSteps: map[uint64]events.PreStep{}, searches: map[uint64]events.SkillSearch{},
		names: map[string]map[string]bool{}}
	c := e.opts.Candidate
	rp, err := replay.NewReplayer(h, replay.Options{
		ToolOwner: c.ToolOwner,
		Catalog:   c.Catalog,
		Skills:    e.skills,
		Index:     e.ix,
		CwdMap:    c.CwdMap,
		Emit:      func(s replay.Step) error { return se.step(ctx, s) },
	})
	if err != nil {
		return Session{}, err
	}
	for {
		it, err := r.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			rp.Finish(ctx) // releases what it holds; the error is the file's
			return Session{}, err
		}
		if it.Event != nil {
			se.keep(*it.Event)
		}
		if err := rp.Add(ctx, it); err != nil {
			rp.Finish(ctx)
			return Session{}, err
		}
	}
	if _, err := rp.Finish(ctx); err != nil {
		return Session{}, err
	}
	se.out.Added, se.out.Removed = se.sorted("added"), se.sorted("removed")
	se.out.Changed, se.out.Bare = se.sorted("changed"), se.sorted("bare")
	return se.out, nil
}

// keep decodes the triggers whose arguments a step does not carry: a
// pre-step's tools and query, a search's limit. Kept until the step is
// emitted.
func (se *sessionEval) keep(e replay.Event) {
	sid, kind, err := events.ParseSubjectIn(se.h.Layout, se.h.Prefix, e.Subject)
	if err != nil || sid != se.h.Session || (kind != events.KindPreStep && kind != events.KindSkillSearch) {
		return
	}
	enc, err := events.EncodingOf(e.Header(events.HeaderContentType))
	if err != nil {
		return
	}
	if kind == events.KindPreStep {
		if ps, err := events.DecodePreStepIn(se.h.Layout, enc, e.Data); err == nil {
			se.preSteps[e.Seq] = ps
		}
		return
	}
	if ss, err := events.DecodeSkillSearchIn(se.h.Layout, enc, e.Data); err == nil {
		se.searches[e.Seq] = ss
	}
}

func (se *sessionEval) note(kind string, names []string) {
	if len(names) == 0 {
		return
	}
	m := se.names[kind]
	if m == nil {
		m = map[string]bool{}
		se.names[kind] = m
	}
	for _, n := range names {
		m[n] = true
	}
}

func (se *sessionEval) sorted(kind string) []string {
	var out []string
	for n := range se.names[kind] {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// opened is a recorded search answered with matches, waiting for a load.
type opened struct {
	step    replay.Step
	trigger events.SkillSearch
}

// step takes one replayed trigger, in trigger order.
func (se *sessionEval) step(ctx context.Context, s replay.Step) error {
	switch s.Kind {
	case replay.TriggerPreStep:
		ps, ok := se.preSteps[s.Seq]
		delete(se.preSteps, s.Seq)
		if se.open != nil {
			if se.since++; se.since > se.e.opts.Window {
				se.open = nil
			}
		}
		se.invocations(s)
		if ok && s.Seen != nil {
			return se.catalog(ctx, s, ps)
		}
	case replay.TriggerSkillCall:
		se.call(ctx, s)
	case replay.TriggerSkillSearch:
		ss, ok := se.searches[s.Seq]
		delete(se.searches, s.Seq)
		if ok && s.Recorded.Outcome == replay.OutcomeOK && s.Search != nil {
			se.open, se.since = &opened{step: s, trigger: ss}, 0
		}
	}
	return nil
}

// catalog compares the catalog in view at a pre-step with the
// candidate's.
func (se *sessionEval) catalog(ctx context.Context, s replay.Step, ps events.PreStep) error {
	c := se.e.opts.Candidate
	seen := s.Seen
	u := catalog.UpdateReplacement
	if seen.Update == replay.UpdateInitial {
		u = catalog.UpdateInitial
	}

	opts := history.Offer(c.Catalog, ps.Tools, c.ToolOwner)
	view := catalog.View{UserInvocation: opts.UserInvocation} // a hidden tool: the tombstone
	if history.Visible(ps.Tools, c.ToolOwner) {
		q := history.PreStepQuery(ps)
		q.Cwd, _ = replay.MapCwd(c.CwdMap, q.Cwd)
		v, err := history.Prepare(ctx, se.e.skills, q, opts)
		if err != nil {
			return fmt.Errorf("step %s: skills of %q: %w", ps.Step, q.Cwd, err)
		}
		if !v.Complete {
			se.out.Incomplete++
			return nil
		}
		view = v
	}
	before, after := seen.Text, view.Text(u)
	if seen.Update == events.UpdateChanges {
		// A change list is not the list the model has: both sides count
		// as their entries rendered whole.
		es := make([]catalog.Entry, len(seen.Entries))
		for i, e := range seen.Entries {
			es[i] = catalog.Entry{Name: e.Name, Description: e.Description, Bare: e.Description == ""}
		}
		before = catalog.RenderList(catalog.UpdateReplacement, es, 0)
		after = catalog.RenderList(catalog.UpdateReplacement, view.Entries, 0)
	}
	row := StepRow{Seq: s.Seq, Step: s.ID, Before: len(before), After: len(after),
		TokensBefore: Tokens(before), TokensAfter: Tokens(after), Entries: compare(seen.Entries, view.Entries)}
	se.out.Steps++
	se.out.Before.Bytes += int64(row.Before)
	se.out.After.Bytes += int64(row.After)
	se.out.Before.Tokens += int64(row.TokensBefore)
	se.out.After.Tokens += int64(row.TokensAfter)
	se.note("added", row.Added)
	se.note("removed", row.Removed)
	se.note("changed", row.Changed)
	se.note("bare", row.Bare)
	if se.e.opts.Steps {
		se.out.StepRows = append(se.out.StepRows, row)
	}
	return nil
}

// compare lists what after changes of before's entries.
func compare(before []events.Entry, after []catalog.Entry) Entries {
	var d Entries
	was := make(map[string]events.Entry, len(before))
	for _, e := range before {
		was[e.Name] = e
	}
	is := make(map[string]bool, len(after))
	for _, e := range after {
		is[e.Name] = true
		b, ok := was[e.Name]
		switch {
		case !ok:
			d.Added = append(d.Added, e.Name)
		case e.Bare && b.Description != "":
			d.Bare = append(d.Bare, e.Name)
		case !e.Bare && b.Description != e.Description:
			d.Changed = append(d.Changed, e.Name)
		}
	}
	for _, e := range before {
		if !is[e.Name] {
			d.Removed = append(d.Removed, e.Name)
		}
	}
	return d
}

// call judges a recorded skill call.
func (se *sessionEval) call(ctx context.Context, s replay.Step) {
	rec, rep := s.Recorded.Outcome, s.Replayed.Outcome
	switch {
	case rec == replay.OutcomeOK && rep == replay.OutcomeError:
		se.out.Loads = append(se.out.Loads, Load{Seq: s.Seq, ID: s.ID, Kind: s.Kind, Skill: s.Skill, Verdict: Fails, Code: s.Replayed.Code})
	case rec == replay.OutcomeOK && rep == replay.OutcomeOK && s.Differs && s.Recorded.Text != s.Replayed.Text:
		// (The same text from another revision is no other text: the
		// model reads the same instructions.)
		se.out.Loads = append(se.out.Loads, Load{Seq: s.Seq, ID: s.ID, Kind: s.Kind, Skill: s.Skill, Verdict: OtherText})
	case rec == replay.OutcomeError && rep == replay.OutcomeOK:
		se.out.Loads = append(se.out.Loads, Load{Seq: s.Seq, ID: s.ID, Kind: s.Kind, Skill: s.Skill, Verdict: Fixed})
	}
	if rec == replay.OutcomeOK && se.open != nil {
		se.pair(ctx, s)
	}
}

// invocations judges the skills users invoked at a pre-step.
func (se *sessionEval) invocations(s replay.Step) {
	rep := map[string]string{}
	for _, inv := range s.Replayed.Invocations {
		if _, ok := rep[inv.Name]; !ok {
			rep[inv.Name] = inv.Text
		}
	}
	for _, inv := range s.Recorded.Invocations {
		if inv.Name == "" {
			continue // undecodable
		}
		l := Load{Seq: inv.Seq, ID: s.ID, Kind: KindInvocation, Skill: inv.Name}
		text, ok := rep[inv.Name]
		switch {
		case !ok:
			l.Verdict = Fails
		case text != inv.Text:
			l.Verdict = OtherText
		default:
			continue
		}
		se.out.Loads = append(se.out.Loads, l)
	}
}

// pair ranks the skill a call loaded in the open search, before and
// after.
func (se *sessionEval) pair(ctx context.Context, call replay.Step) {
	o := se.open
	se.open = nil
	v := o.step.Search
	p := Pair{Search: o.step.Seq, Load: call.Seq, Query: v.Query, Skill: call.Skill, Before: rank(v.Offset, v.Results, call.Skill)}
	c := se.e.opts.Candidate
	if c.Catalog.SkillSearch {
		ss := o.trigger
		q := catalog.Query{Cwd: ss.Cwd, Project: ss.Project, ResourceDir: ss.ResourceDir}
		q.Cwd, _ = replay.MapCwd(c.CwdMap, q.Cwd)
		args := catalog.SearchArgs{Query: ss.Args.Query, Limit: ss.Args.Limit, Offset: ss.Args.Offset}
		res := catalog.Search(ctx, se.e.ix.Searcher(q), args, c.Catalog)
		if res.Value != nil {
			es := make([]events.Entry, len(res.Value.Results))
			for i, e := range res.Value.Results {
				es[i] = events.Entry{Name: e.Name}
			}
			p.After = rank(res.Value.Offset, es, call.Skill)
		}
	}
	se.out.Pairs = append(se.out.Pairs, p)
}

// rank is the place of name among results shown from offset (from 1), 0
// when not shown.
func rank(offset int, results []events.Entry, name string) int {
	for i, e := range results {
		if e.Name == name {
			return offset + i + 1
		}
	}
	return 0
}

// sum adds the sessions up.
func sum(ss []Session, window int) Summary {
	t := Summary{Sessions: len(ss), Window: window}
	var before, after []int
	for _, s := range ss {
		t.Steps += s.Steps
		t.Before.Bytes += s.Before.Bytes
		t.After.Bytes += s.After.Bytes
		t.Before.Tokens += s.Before.Tokens
		t.After.Tokens += s.After.Tokens
		t.Added += len(s.Added)
		t.Removed += len(s.Removed)
		t.Changed += len(s.Changed)
		t.Bare += len(s.Bare)
		t.Incomplete += s.Incomplete
		for _, l := range s.Loads {
			switch l.Verdict {
			case Fails:
				t.Failures++
			case OtherText:
				t.OtherText++
			case Fixed:
				t.Fixed++
			}
		}
		for _, p := range s.Pairs {
			before = append(before, p.Before)
			after = append(after, p.After)
		}
	}
	t.Pairs = len(before)
	t.RanksBefore, t.RanksAfter = ranks(before), ranks(after)
	return t
}

// ranks are hit@1, hit@5 and MRR over ranks (0: a miss).
func ranks(rs []int) Ranks {
	if len(rs) == 0 {
		return Ranks{}
	}
	var r Ranks
	for _, k := range rs {
		if k == 1 {
			r.Hit1++
		}
		if k >= 1 && k <= 5 {
			r.Hit5++
		}
		if k >= 1 {
			r.MRR += 1 / float64(k)
		}
	}
	n := float64(len(rs))
	r.Hit1, r.Hit5, r.MRR = r.Hit1/n, r.Hit5/n, r.MRR/n
	return r
}
