package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/history"
)

// Trigger kinds a Step reports.
const (
	TriggerPreStep     = "pre-step"
	TriggerSkillCall   = "skill-call"
	TriggerSkillSearch = "skill-search"
)

// Outcomes a Step reports besides catalog.Outcome values (appended,
// unchanged, empty, incomplete) for pre-steps.
const (
	// OutcomeNone: the recording holds no output for the trigger. For a
	// pre-step that is any outcome that appends nothing.
	OutcomeNone = "none"
	// OutcomeOK and OutcomeError: a skill call's result.
	OutcomeOK    = "ok"
	OutcomeError = "error"
	// OutcomeExpired: the trigger's deadline had passed.
	OutcomeExpired = "expired"
	// OutcomeRejected: the trigger does not decode (pre-step), or is a
	// bad request (skill call).
	OutcomeRejected = "rejected"
	// OutcomeRetry: a worker's retry of a step or call that was answered
	// with the output already appended for it.
	OutcomeRetry = "retry"
)

// Outcome is what one side (the recording, or the replay) did for a
// trigger.
type Outcome struct {
	Outcome string `json:"outcome"`
	// Update is initial, replacement or tombstone for an appended catalog.
	Update string `json:"update,omitempty"`
	// Code is a skill call's or a search's error code.
	Code string `json:"code,omitempty"`
	// Seq is the stream sequence of the recorded output.
	Seq uint64 `json:"seq,omitempty"`
	// Text is the exact model text: the catalog appended, or the tool
	// result.
	Text string `json:"text,omitempty"`
	// Invocations are the skills a pre-step's userText invoked, appended
	// after its catalog, in order.
	Invocations []Invoked `json:"invocations,omitempty"`
	// Origins are, for an appended catalog, the revision and channel of
	// each store skill's entry it carries (a change list: of those it adds
	// or changes); Rev and Channel, for a skill call, those of the skill
	// loaded (or whose load failed). They never reach the model's text.
	Origins []events.EntryOrigin `json:"origins,omitempty"`
	// Revoked are, for an appended catalog, the skills it records as left
	// out because their revision is revoked (see events.CatalogSource).
	Revoked []string `json:"revoked,omitempty"`
	Rev     uint64   `json:"rev,omitempty"`
	Channel string   `json:"channel,omitempty"`
}

// Invoked is a skill a user invoked at a pre-step: its name, the exact
// model text appended, and (recorded side) the event's sequence.
type Invoked struct {
	Name string `json:"name"`
	Seq  uint64 `json:"seq,omitempty"`
	Text string `json:"text"`
}

// appends reports whether the outcome put model text into the session.
func (o Outcome) appends() bool {
	return o.Outcome == string(catalog.OutcomeAppended) || o.Outcome == OutcomeOK || o.Outcome == OutcomeError
}

func (o Outcome) String() string {
	s := o.Outcome
	if o.Update != "" {
		s += " " + o.Update
	}
	if o.Code != "" {
		s += " " + o.Code
	}
	if o.Seq != 0 {
		s += fmt.Sprintf(" (seq %d)", o.Seq)
	}
	for _, inv := range o.Invocations {
		s += " + /" + inv.Name
	}
	return s
}

// Step is the replay of one recorded trigger.
type Step struct {
	// Seq is the trigger's stream sequence.
	Seq  uint64 `json:"seq"`
	Kind string `json:"kind"`
	// ID is the pre-step's step id or the skill call's or search's call
	// id.
	ID  string `json:"id"`
	Cwd string `json:"cwd,omitempty"`
	// Skill is a skill call's name argument.
	Skill string `json:"skill,omitempty"`
	// Query is a search's query argument as given (when a string), Search
	// the value its recorded result holds: the query searched, offset,
	// total and the skills shown.
	Query    string              `json:"query,omitempty"`
	Search   *events.SearchValue `json:"search,omitempty"`
	Recorded Outcome             `json:"recorded"`
	Replayed Outcome             `json:"replayed,omitzero"`
	// Differs is true when the model text the replay would have put into
	// the session is not what the recording holds.
	Differs bool `json:"differs"`
	// Diff is a unified diff from the recorded to the replayed model text.
	Diff string `json:"diff,omitempty"`
	// Seen is, for a pre-step, the catalog the model saw at this step in
	// the recording (its newest visible catalog after the step's output);
	// nil when none was visible.
	Seen *CatalogView `json:"seen,omitempty"`
	// Published is true when, at this step, any catalog had ever been
	// recorded (so a nil Seen means every one was masked by compaction).
	Published bool `json:"published,omitempty"`
	// MaskedBy is the sequence of the compaction in force at this step.
	MaskedBy uint64 `json:"compaction,omitempty"`
	Note     string `json:"note,omitempty"`
	// surface is that compaction (what it hides), for Deltas.
	surface *history.Surface
}

// CwdMapping rewrites recorded working directories: Old, or a path under
// it, becomes the same path under New.
type CwdMapping struct{ Old, New string }

// ParseCwdMapping parses "OLD=NEW".
func ParseCwdMapping(s string) (CwdMapping, error) {
	old, new, ok := strings.Cut(s, "=")
	if !ok || old == "" || new == "" {
		return CwdMapping{}, fmt.Errorf("cwd mapping %q: want OLD=NEW", s)
	}
	return CwdMapping{Old: strings.TrimRight(old, "/"), New: strings.TrimRight(new, "/")}, nil
}

// Options configure a replay. ToolOwner and Catalog must be what the
// processor ran with (the same flags as serve).
type Options struct {
	ToolOwner string
	Catalog   catalog.Options
	// Skills are the skills to replay against: the registry as it is now,
	// asked once per working directory and skill name, so that every
	// trigger of one replay sees the same skills. Ignored when Recorded is
	// set.
	Skills history.Skills
	// Index, when set, is the search index of Skills (NewIndex), built
	// once and shared by replays of many recordings against the same
	// skills: a replay then builds no index of its own. Only searches
	// against Skills use it.
	Index *Index
	// Bodies: the search index the replay builds holds the skills' bodies
	// (search.Options.Bodies), as the processor's does with serve's
	// --search-bodies.
	Bodies bool
	// Recorded replays against the skills captured in the recording.
	Recorded bool
	// AsRecorded replays every trigger against the skills the session saw
	// at that point, as the recording shows them (see shown): an unchanged
	// processor reproduces every recorded output, even when the skills
	// changed during the session. Skills are not asked; captured skills
	// serve calls the recording shows nothing about.
	AsRecorded bool
	// Tenant is the tenant the session was served for ("" without
	// tenants): with the session id it places the session in the same
	// canaries as the processor did (history.InCohort), so that a replay
	// against Skills whose release state is unchanged is served the same
	// revisions.
	Tenant string
	// Ranking, when set, is the tenant's use of its skills today, for a
	// catalog listed by use (catalog.RankUse): a replay that is not
	// AsRecorded notes the steps whose recorded ranking differs from it.
	// Every replay rebuilds a decision with the ranking it recorded.
	Ranking catalog.Ranking
	// CwdMap rewrites trigger working directories before asking Skills;
	// paths under New in replayed tool results are written back under Old
	// before comparing. The first matching mapping applies.
	CwdMap []CwdMapping
	// HistoryOnly reads the recording without replaying: Steps carry only
	// the recorded side and Seen.
	HistoryOnly bool
	// Layout is the session layout of a live replay (Live). A recording
	// says its own, which NewReplayer takes from its header.
	Layout events.Layout
	// Recording is what the recording says of the options it was made
	// under (RecordedOptions), nil when it says nothing: its output budget
	// tells a step the processor refused over budget from a difference.
	Recording *events.CatalogOptions
	// Emit receives every Step, in trigger order.
	Emit func(Step) error
}

// Summary counts a replay's steps.
type Summary struct {
	Triggers int `json:"triggers"`
	Same     int `json:"same"`
	Differ   int `json:"differ"`
}

// ErrNoRecordedSkills reports a replay against recorded skills of a
// recording that captured none.
var ErrNoRecordedSkills = errors.New("the recording holds no captured skills (export it with --capture-skills)")

// maxQueue bounds the triggers held back waiting for their output; beyond
// it the oldest is settled as having none.
const maxQueue = 4096

// pending is a trigger waiting for its output or for the point where it
// is known to have none.
type pending struct {
	event   Event
	kind    events.Kind
	id      string
	at      mark // state when the trigger was appended
	output  *Event
	outAt   mark // state just before the output
	seen    mark // state just after the output
	retryOf uint64
	done    bool
	step    Step
	// userText: a pre-step with userText, whose skill invocations follow
	// its catalog; it settles when the worker acts on its answer (its next
	// trigger) or at the end, once its invocations are in.
	userText    bool
	invocations []Event
	// nextAt is when the session's next pre-step (of another step id)
	// was stored: the worker asks for it only once this one was
	// answered, so the processor answered by then. Zero when none came.
	nextAt time.Time
}

// Replayer replays a recording fed to it one item at a time; see Run and
// Live for the usual drivers. It holds the session's catalogs, the newest
// compaction and the triggers still waiting for their output, never the
// whole log.
type Replayer struct {
	opts     Options
	prefix   string
	layout   events.Layout
	sid      string
	st       *state
	queue    []*pending // triggers in stream order, unsettled or not yet emitted
	bySeq    map[uint64]*pending
	answered map[string]uint64 // "<kind>/<id>" → seq of the trigger that got an output
	recorded map[string]*SkillSet
	results  map[string]events.ToolResult // by skill name: the newest telling result (AsRecorded)
	sum      Summary
	lastSeq  uint64
	// The search indexes of the skills replayed against and of the
	// captured ones, built at the first search that needs them.
	skillsIndex, recordedIndex *searchIndex
	budget                     *budget
}

// NewReplayer starts a replay of the session named by h.
func NewReplayer(h Header, opts Options) (*Replayer, error) {
	if opts.ToolOwner == "" {
		return nil, errors.New("replay: tool owner missing")
	}
	if !opts.HistoryOnly {
		if err := opts.Catalog.Validate(); err != nil {
			return nil, fmt.Errorf("replay: %w", err)
		}
		if opts.Recorded && opts.AsRecorded {
			return nil, errors.New("replay: recorded skills and skills as recorded exclude each other")
		}
		if !opts.Recorded && !opts.AsRecorded && opts.Skills == nil {
			return nil, errors.New("replay: no skills to replay against")
		}
	}
	if opts.Emit == nil {
		opts.Emit = func(Step) error { return nil }
	}
	if opts.Skills != nil {
		opts.Skills = newMemo(opts.Skills)
	}
	return &Replayer{
		opts:     opts,
		prefix:   h.Prefix,
		layout:   h.Layout,
		sid:      h.Session,
		st:       newState(h.Layout, h.Prefix, h.Session, opts.ToolOwner),
		bySeq:    map[uint64]*pending{},
		answered: map[string]uint64{},
		recorded: map[string]*SkillSet{},
		results:  map[string]events.ToolResult{},
		budget:   newBudget(opts.Recording),
	}, nil
}

// Add feeds the next item of the recording.
func (r *Replayer) Add(ctx context.Context, it Item) error {
	if it.Skills != nil {
		set := *it.Skills
		r.recorded[set.Cwd] = &set
		r.recordedIndex.close() // the captured skills changed
		r.recordedIndex = nil
		return nil
	}
	if it.Event == nil {
		return nil
	}
	e := *it.Event
	if e.Seq <= r.lastSeq {
		return fmt.Errorf("replay: event %d out of order (after %d)", e.Seq, r.lastSeq)
	}
	r.lastSeq = e.Seq
	sid, kind, err := events.ParseSubjectIn(r.layout, r.prefix, e.Subject)
	if err != nil || sid != r.sid {
		return nil // not this session's event: nothing to replay
	}
	switch kind {
	case events.KindCatalog, events.KindToolResult:
		before := r.st.mark()
		r.st.observe(e, kind)
		if kind == events.KindCatalog && r.budget != nil {
			if c, ok := r.st.recognise(record(e)); ok {
				if d, err := c.DecodeIn(r.layout); err == nil {
					r.budget.spent(e, d)
				}
			}
		}
		if p := r.outputOf(e, kind); p != nil {
			p.output, p.outAt, p.seen = &e, before, r.st.mark()
			if !p.userText {
				if err := r.settle(ctx, p); err != nil {
					return err
				}
			}
		}
	case events.KindInvocation:
		if p := r.outputOf(e, kind); p != nil {
			p.invocations = append(p.invocations, e)
		}
	case events.KindCompaction:
		r.st.observe(e, kind)
	case events.KindPreStep, events.KindSkillCall, events.KindSkillSearch:
		if r.opts.Recorded && !r.opts.HistoryOnly && len(r.recorded) == 0 {
			return ErrNoRecordedSkills
		}
		p := &pending{event: e, kind: kind, at: r.st.mark()}
		p.seen = p.at
		p.id = idOf(r.layout, e, kind)
		p.userText = kind == events.KindPreStep && hasUserText(r.layout, e)
		// The worker acts once it has its answer: the invocations of
		// earlier pre-steps are all in.
		for _, q := range r.queue {
			if !q.done && q.userText && q.output != nil && q.id != p.id {
				if err := r.settle(ctx, q); err != nil {
					return err
				}
			}
		}
		if kind == events.KindPreStep {
			// A worker asks for the next step only once the previous one
			// was answered: earlier pre-steps of other step ids that got
			// no output never will.
			for _, q := range r.queue {
				if !q.done && q.kind == events.KindPreStep && q.id != p.id {
					if q.nextAt.IsZero() {
						q.nextAt = e.Time
					}
					if err := r.settle(ctx, q); err != nil {
						return err
					}
				}
			}
		}
		r.queue = append(r.queue, p)
		r.bySeq[e.Seq] = p
	}
	if len(r.queue) > maxQueue && !r.queue[0].done {
		if err := r.settle(ctx, r.queue[0]); err != nil {
			return err
		}
	}
	return r.flush(false)
}

// Finish settles the triggers still waiting (they got no output) and emits
// the rest.
func (r *Replayer) Finish(ctx context.Context) (Summary, error) {
	defer r.release()
	for _, p := range r.queue {
		if !p.done {
			if err := r.settle(ctx, p); err != nil {
				return r.sum, err
			}
		}
	}
	return r.sum, r.flush(true)
}

// outputOf finds the waiting trigger a processor output answers: by its
// Causation-Seq header, else by step or call id.
func (r *Replayer) outputOf(e Event, kind events.Kind) *pending {
	want := events.KindPreStep
	if kind == events.KindInvocation {
		// Invocations follow the step's catalog (if any), whichever
		// attempt at the step appended them: they belong to the waiting
		// pre-step of that id that got the catalog, else to the trigger
		// they name, else to the newest waiting one of the id.
		id := idOf(r.layout, e, kind)
		if id == "" {
			return nil
		}
		for _, p := range r.queue {
			if !p.done && p.kind == want && p.id == id && p.output != nil {
				return p
			}
		}
		if seq, ok := causation(e); ok {
			if p := r.bySeq[seq]; p != nil && p.kind == want && !p.done {
				return p
			}
		}
		for i := len(r.queue) - 1; i >= 0; i-- {
			if p := r.queue[i]; !p.done && p.kind == want && p.id == id {
				return p
			}
		}
		return nil
	}
	answers := func(p *pending) bool { return p.kind == want }
	if kind == events.KindToolResult {
		// A tool result answers a skill call or a search.
		answers = func(p *pending) bool { return p.kind == events.KindSkillCall || p.kind == events.KindSkillSearch }
	}
	if seq, ok := causation(e); ok {
		if p := r.bySeq[seq]; p != nil && answers(p) && !p.done {
			return p
		}
		return nil
	}
	id := idOf(r.layout, e, kind)
	if id == "" {
		return nil
	}
	for _, p := range r.queue {
		if !p.done && answers(p) && p.id == id {
			return p
		}
	}
	return nil
}

// flush emits settled steps from the head of the queue.
func (r *Replayer) flush(all bool) error {
	n := 0
	for _, p := range r.queue {
		if !p.done {
			break
		}
		delete(r.bySeq, p.event.Seq)
		r.sum.Triggers++
		if p.step.Differs {
			r.sum.Differ++
		} else {
			r.sum.Same++
		}
		if err := r.opts.Emit(p.step); err != nil {
			return err
		}
		n++
	}
	r.queue = r.queue[n:]
	if all && len(r.queue) > 0 {
		return fmt.Errorf("replay: %d triggers left unsettled", len(r.queue))
	}
	return nil
}

// settle computes the step for p: recorded side, replayed side, verdict.
func (r *Replayer) settle(ctx context.Context, p *pending) error {
	p.done = true
	s := Step{Seq: p.event.Seq, ID: p.id}
	if p.id != "" {
		// Earlier triggers settle first (queue order, or when their output
		// arrives), so an earlier answer of the same id is known here.
		key := string(p.kind) + "/" + p.id
		if p.output != nil {
			r.answered[key] = p.event.Seq
		} else if seq, ok := r.answered[key]; ok {
			p.retryOf = seq
		}
	}
	hist := p.at
	if p.output != nil {
		hist = p.outAt
	}
	var err error
	if p.kind == events.KindPreStep {
		s.Kind = TriggerPreStep
		s.Recorded = recordedCatalog(r.layout, p.output)
		s.Recorded.Invocations = recordedInvocations(r.layout, p.invocations)
		if s.Recorded.Outcome == OutcomeNone && len(s.Recorded.Invocations) > 0 {
			s.Recorded.Outcome = string(catalog.OutcomeUnchanged) // invocations without a catalog
		}
		h, seen, comp, herr := r.st.at(ctx, p.seen)
		if herr != nil {
			return herr
		}
		s.Seen, s.Published = seen, h.Published
		if comp != nil {
			s.MaskedBy, s.surface = comp.Seq, comp
		}
		if !r.opts.HistoryOnly {
			err = r.replayPreStep(ctx, p, hist, &s)
		}
	} else if p.kind == events.KindSkillSearch {
		s.Kind = TriggerSkillSearch
		s.Recorded = recordedSearch(r.layout, p.output)
		s.Search = searchValue(r.layout, p.output)
		if enc, err := events.EncodingOf(p.event.Header(events.HeaderContentType)); err == nil {
			if ss, err := events.DecodeSkillSearchIn(r.layout, enc, p.event.Data); err == nil {
				s.Cwd, s.Query = ss.Cwd, ss.Args.QueryText()
			}
		}
		if !r.opts.HistoryOnly {
			err = r.replaySearch(ctx, p, &s)
		}
	} else {
		s.Kind = TriggerSkillCall
		s.Recorded = recordedResult(r.layout, p.output)
		s.Cwd, s.Skill = callArgs(r.layout, p.event)
		if !r.opts.HistoryOnly {
			err = r.replaySkillCall(ctx, p, &s)
		}
	}
	if err != nil {
		return err
	}
	if p.retryOf != 0 && p.output == nil {
		s.Replayed = Outcome{Outcome: OutcomeRetry}
		s.Recorded = Outcome{Outcome: OutcomeRetry}
		s.Differs, s.Diff = false, ""
		s.Note = fmt.Sprintf("retry of the trigger at seq %d, answered with its output", p.retryOf)
	}
	p.step = s
	return nil
}

func (r *Replayer) mapCwd(cwd string) (string, *CwdMapping) {
	return MapCwd(r.opts.CwdMap, cwd)
}

// MapCwd rewrites cwd by the first mapping of ms that matches it (cwd is
// its Old, or a path under it) and returns that mapping; cwd as it is and
// nil when none matches.
func MapCwd(ms []CwdMapping, cwd string) (string, *CwdMapping) {
	for i := range ms {
		m := &ms[i]
		if cwd == m.Old {
			return m.New, m
		}
		if rest, ok := strings.CutPrefix(cwd, m.Old+"/"); ok {
			return m.New + "/" + rest, m
		}
	}
	return cwd, nil
}

// skillsFor returns the skills to ask about q for trigger p, decided on
// the history h, and the query to ask with (its working directory mapped
// by CwdMap).
func (r *Replayer) skillsFor(p *pending, h history.State, q catalog.Query) (history.Skills, catalog.Query, *CwdMapping) {
	if r.opts.Recorded {
		return recordedSkills(r.recorded), q, nil
	}
	if r.opts.AsRecorded {
		return r.shownAt(p, h), q, nil // the revisions recorded, whatever the cohort
	}
	var m *CwdMapping
	q.Cwd, m = r.mapCwd(q.Cwd)
	// The session's cohort, as the processor computed it.
	return r.opts.Skills, history.InCohort(r.opts.Skills, r.opts.Tenant, r.sid, q), m
}

func (r *Replayer) replayPreStep(ctx context.Context, p *pending, hist mark, s *Step) error {
	enc, err := events.EncodingOf(p.event.Header(events.HeaderContentType))
	var ps events.PreStep
	if err == nil {
		ps, err = events.DecodePreStepIn(r.layout, enc, p.event.Data)
	}
	if err == nil && ps.Session != r.sid {
		err = fmt.Errorf("payload session %q differs from the subject's %q", ps.Session, r.sid)
	}
	if err != nil {
		s.Replayed = Outcome{Outcome: OutcomeRejected}
		s.Note = err.Error()
		r.verdict(s)
		return nil
	}
	s.Cwd = ps.Cwd
	if ps.DeadlineMs != 0 && p.event.Time.UnixMilli() > ps.DeadlineMs {
		s.Replayed = Outcome{Outcome: OutcomeExpired}
		r.verdict(s)
		return nil
	}
	h, _, _, err := r.st.at(ctx, hist)
	if err != nil {
		return err
	}
	// Search offered or not by the step's tools, as the processor decides.
	opts := history.Offer(r.opts.Catalog, ps.Tools, r.opts.ToolOwner)
	var prepared *catalog.View // nil when the tool is not visible
	rankNote := ""             // today's ranking differs (rank.go)
	if history.Visible(ps.Tools, r.opts.ToolOwner) {
		skills, q, _ := r.skillsFor(p, h, history.PreStepQuery(ps))
		cv, err := history.Prepare(ctx, skills, q, opts)
		if err != nil {
			return fmt.Errorf("replay step %s: skills of %q: %w", ps.Step, q.Cwd, err)
		}
		if opts.Rank == catalog.RankUse && cv.Complete {
			if cv, rankNote, err = r.ranked(ctx, p, h, skills, q, opts, cv); err != nil {
				return fmt.Errorf("replay step %s: skills of %q: %w", ps.Step, q.Cwd, err)
			}
		}
		prepared = &cv
	}
	// A change list needs the session's current list, as the processor
	// reads it back.
	if err := r.st.rule.Current(ctx, recordingLog{s: r.st, upTo: uint64(hist)}, &h, prepared); err != nil {
		return err
	}
	d := history.Decide(prepared, h, opts)
	if part := r.budget.refuses(d, h, p.event.Time); part != "" && s.Recorded.Outcome == OutcomeNone {
		// Recorded without a catalog, and over the session's output
		// budget: the processor refused to append it.
		s.Replayed = Outcome{Outcome: string(catalog.OutcomeIncomplete)}
		s.Note = "over the session's output budget (" + part + " per minute) as the recording shows it: nothing appended"
		r.verdict(s)
		return nil
	}
	s.Replayed = Outcome{Outcome: string(d.Outcome)}
	if d.Outcome == catalog.OutcomeAppended {
		s.Replayed.Update = updateKind(string(d.Update), len(d.Entries)+d.Omitted)
		s.Replayed.Text = d.Text
		if prepared != nil {
			s.Replayed.Origins = history.CatalogOrigins(d, prepared.Origins)
			s.Replayed.Revoked = history.CatalogRevoked(d, prepared.Revoked)
		}
	}
	invs, err := r.replayInvocations(ctx, p, h, ps)
	if err != nil {
		return err
	}
	s.Replayed.Invocations = invs
	r.verdict(s)
	if rankNote != "" && s.Note == "" {
		s.Note = rankNote
	}
	if s.Differs && ps.DeadlineMs != 0 && !s.Recorded.appends() {
		// Only a deadline that may have passed before the processor
		// answered: the worker's next step shows when it had its answer.
		switch {
		case p.nextAt.IsZero():
			s.Note = "the trigger had a deadline and no later step shows when it was answered: the processor may have found it expired"
		case p.nextAt.UnixMilli() > ps.DeadlineMs:
			s.Note = "the trigger's deadline passed before the worker's next step: the processor may have found it expired"
		}
	}
	return nil
}

func (r *Replayer) replaySkillCall(ctx context.Context, p *pending, s *Step) error {
	enc, err := events.EncodingOf(p.event.Header(events.HeaderContentType))
	var call events.SkillCall
	if err == nil {
		call, err = events.DecodeSkillCallIn(r.layout, enc, p.event.Data)
	}
	if err == nil && call.Session != r.sid {
		err = fmt.Errorf("payload session %q differs from the subject's %q", call.Session, r.sid)
	}
	if err != nil {
		s.Replayed = Outcome{Outcome: OutcomeRejected, Code: events.CodeBadRequest}
		s.Note = err.Error()
		r.verdict(s)
		return nil
	}
	s.Cwd, s.Skill = call.Cwd, call.Args.Name
	if s.Recorded.Code == events.CodeExpired || (call.DeadlineMs != 0 && p.event.Time.UnixMilli() > call.DeadlineMs) {
		// The processor's clock is not in the recording: a recorded expiry
		// stands.
		s.Replayed = Outcome{Outcome: OutcomeExpired, Code: events.CodeExpired}
		r.verdict(s)
		return nil
	}
	if out, ok := decodeResult(r.layout, p.output); ok && telling(out) {
		// The newest result for this name is now the call's own.
		r.results[call.Args.Name] = out
	}
	skills, q, m := r.skillsFor(p, history.State{}, history.CallQuery(call))
	res := catalog.Execute(ctx, history.Lookup(skills, q), call.Args.Name, r.opts.Catalog)
	if ctx.Err() != nil {
		return fmt.Errorf("replay call %s: %w", call.Call, ctx.Err())
	}
	text := res.Text()
	if m != nil {
		text = strings.ReplaceAll(text, m.New, m.Old)
	}
	s.Replayed = Outcome{Outcome: OutcomeOK, Text: text}
	if res.Err != nil {
		s.Replayed.Outcome, s.Replayed.Code = OutcomeError, string(res.Err.Code)
	}
	if v := res.Value; v != nil {
		s.Replayed.Rev, s.Replayed.Channel = v.Origin.Rev, v.Origin.Channel
	}
	r.verdict(s)
	return nil
}

// verdict compares the model text both sides put into the session.
func (r *Replayer) verdict(s *Step) {
	rec, rep := s.Recorded, s.Replayed
	switch {
	case rec.Outcome == OutcomeRejected || rep.Outcome == OutcomeRejected,
		rec.Outcome == OutcomeExpired || rep.Outcome == OutcomeExpired:
		// The processor's own texts for these are not the model's business
		// here: compare the fate only.
		s.Differs = rec.Outcome != rep.Outcome && !(s.Kind == TriggerPreStep && !rec.appends() && !rep.appends())
	case !rec.appends() && !rep.appends():
		s.Differs = false
	default:
		s.Differs = rec.appends() != rep.appends() || rec.Text != rep.Text
	}
	catalogDiffers := s.Differs
	invDiff := ""
	if !s.Differs || (rec.appends() && rep.appends()) {
		invDiff = invocationsDiff(rec.Invocations, rep.Invocations)
	}
	s.Differs = s.Differs || invDiff != ""
	if catalogDiffers {
		s.Diff = UnifiedDiff("recorded", "replayed", rec.Text, rep.Text)
	}
	s.Diff += invDiff
	if !catalogDiffers {
		if d := originsDiff(rec, rep); d != "" {
			s.Differs = true
			s.Diff += d
		}
		if d := revokedDiff(rec, rep, r.opts.AsRecorded); d != "" {
			s.Differs = true
			s.Diff += d
		}
	}
}

// revokedDiff says how the skills recorded as left out for a revocation
// differ, "" when they do not. Both sides must name some unless the
// replay is of the revisions recorded (strict), which reproduces them: a
// capture or today's store knows of no revocation then.
func revokedDiff(rec, rep Outcome, strict bool) string {
	if !rec.appends() || !rep.appends() || slices.Equal(rec.Revoked, rep.Revoked) {
		return ""
	}
	if !strict && (len(rec.Revoked) == 0 || len(rep.Revoked) == 0) {
		return ""
	}
	return "--- recorded revoked\n+++ replayed revoked\n-" + strings.Join(rec.Revoked, ", ") + "\n+" + strings.Join(rep.Revoked, ", ") + "\n"
}

// originsDiff says how the revisions behind the same model text differ
// (the evidence of a release: which revision each store skill's entry or
// load came from), "" when they do not or one side names none (a record
// older than releases, skills outside the store).
func originsDiff(rec, rep Outcome) string {
	if !rec.appends() || !rep.appends() {
		return ""
	}
	if len(rec.Origins) > 0 && len(rep.Origins) > 0 && !slices.Equal(rec.Origins, rep.Origins) {
		return "--- recorded revisions\n+++ replayed revisions\n-" + OriginsText(rec.Origins) + "\n+" + OriginsText(rep.Origins) + "\n"
	}
	named := func(o Outcome) bool { return o.Rev != 0 || o.Channel != "" }
	if named(rec) && named(rep) && (rec.Rev != rep.Rev || rec.Channel != rep.Channel) {
		return fmt.Sprintf("--- recorded revision\n+++ replayed revision\n-rev %d (%s)\n+rev %d (%s)\n", rec.Rev, rec.Channel, rep.Rev, rep.Channel)
	}
	return ""
}

// OriginsText is origins as one line: "name rev N (channel)", comma
// separated.
func OriginsText(origins []events.EntryOrigin) string {
	parts := make([]string, len(origins))
	for i, o := range origins {
		parts[i] = fmt.Sprintf("%s rev %d (%s)", o.Name, o.Rev, o.Channel)
	}
	return strings.Join(parts, ", ")
}

// recordedCatalog is the recorded side of a pre-step.
func recordedCatalog(l events.Layout, out *Event) Outcome {
	if out == nil {
		return Outcome{Outcome: OutcomeNone}
	}
	o := Outcome{Outcome: string(catalog.OutcomeAppended), Seq: out.Seq}
	c, ok := decodeCatalog(l, out)
	if !ok {
		return o
	}
	o.Update = updateKind(c.Source.Update, len(c.Source.Entries)+c.Source.Omitted)
	o.Text = c.Text
	o.Origins = c.Source.Origins
	o.Revoked = c.Source.Revoked
	return o
}

// recordedResult is the recorded side of a skill call.
func recordedResult(l events.Layout, out *Event) Outcome {
	if out == nil {
		return Outcome{Outcome: OutcomeNone}
	}
	o := Outcome{Outcome: OutcomeOK, Seq: out.Seq}
	res, ok := decodeResult(l, out)
	if !ok {
		return o
	}
	o.Text = res.Text
	if v := res.Value; v != nil {
		o.Rev, o.Channel = v.Rev, v.Channel
	}
	if res.IsError {
		if res.Error != nil {
			o.Rev, o.Channel = res.Error.Rev, res.Error.Channel
		}
		o.Outcome = OutcomeError
		if res.Error != nil {
			o.Code = res.Error.Code
		}
		switch o.Code {
		case events.CodeBadRequest:
			o.Outcome = OutcomeRejected
		case events.CodeExpired:
			o.Outcome = OutcomeExpired
		}
	}
	return o
}

// idOf is the step or call id a trigger carries or an output names, ""
// when the event does not decode.
func idOf(l events.Layout, e Event, kind events.Kind) string {
	enc, err := events.EncodingOf(e.Header(events.HeaderContentType))
	if err != nil {
		return ""
	}
	switch kind {
	case events.KindPreStep:
		if p, err := events.DecodePreStepIn(l, enc, e.Data); err == nil {
			return p.Step
		}
	case events.KindSkillCall:
		if c, err := events.DecodeSkillCallIn(l, enc, e.Data); err == nil {
			return c.Call
		}
	case events.KindSkillSearch:
		if c, err := events.DecodeSkillSearchIn(l, enc, e.Data); err == nil {
			return c.Call
		}
	case events.KindCatalog:
		if c, err := events.DecodeCatalogIn(l, enc, e.Data); err == nil {
			return c.Step
		}
	case events.KindToolResult:
		if t, err := events.DecodeToolResultIn(l, enc, e.Data); err == nil {
			return t.Call
		}
	case events.KindInvocation:
		if inv, err := events.DecodeSkillInvocationIn(l, enc, e.Data); err == nil {
			return inv.Step
		}
	}
	return ""
}

// shownAt is what the recording shows of the skills at trigger p, whose
// history (before its output) is h: for a pre-step, the entries of the
// catalog it appended or else of the newest one before it, as the model
// read them (an entry the size limit listed without its description is
// bare), and stand-ins for what the size limit took (see shown).
func (r *Replayer) shownAt(p *pending, h history.State) shown {
	sh := shown{results: r.results, captured: recordedSkills(r.recorded), maxBytes: r.opts.Catalog.MaxSkillBytes,
		descMax: r.opts.Catalog.DescriptionMaxLength}
	if p.kind != events.KindPreStep {
		return sh // a call's own result is already the newest of its name
	}
	c, ok := decodeCatalog(r.layout, p.output)
	if !ok && h.Newest != nil {
		var err error
		c, err = h.Newest.DecodeIn(r.layout)
		ok = err == nil
	}
	if !ok {
		return sh
	}
	if c.Source.Update == events.UpdateChanges {
		// A change list has no entries: the list it leads to does.
		sh.entries, ok = r.changedList(p, h, c)
	} else if l, parsed := catalog.ParseList(c.Text); parsed && len(l.Entries) == len(c.Source.Entries) {
		sh.entries = l.Entries
	} else {
		sh.entries = catalogEntries(c.Source.Entries)
	}
	if !ok {
		return sh
	}
	sh.origins = c.Source.Origins
	sh.revoked = c.Source.Revoked
	if o := c.Source.Omitted; o > 0 {
		// The skills left out are stood in for: the list the step's
		// options make of the stand-ins and the entries shown is the one
		// recorded, for search (where it was offered at this step) or the
		// size limit alike.
		sh.omitted = placeholders(sh.entries, o, r.opts.Catalog.DescriptionMaxLength)
	}
	return sh
}

// catalogEntries are wire entries as catalog entries (none bare).
func catalogEntries(es []events.Entry) []catalog.Entry {
	out := make([]catalog.Entry, len(es))
	for i, e := range es {
		out[i] = catalog.Entry{Name: e.Name, Description: e.Description}
	}
	return out
}

// recordedSkills serves the skills captured in a recording.
type recordedSkills map[string]*SkillSet

// errNoCapture reports a working directory the recording has no skills for.
var errNoCapture = errors.New("the recording holds no skills for this working directory")

func (m recordedSkills) Snapshot(_ context.Context, q catalog.Query) (catalog.Snapshot, error) {
	set := m[q.Cwd]
	if set == nil {
		return catalog.Snapshot{}, nil // incomplete: nothing is known
	}
	snap := catalog.Snapshot{Complete: set.Complete, Skills: make([]catalog.Summary, len(set.Skills))}
	for i, s := range set.Skills {
		snap.Skills[i] = s.Summary
	}
	return snap, nil
}

func (m recordedSkills) find(name, cwd string) (*RecordedSkill, error) {
	set := m[cwd]
	if set == nil {
		return nil, fmt.Errorf("%w: %q", errNoCapture, cwd)
	}
	for i := range set.Skills {
		if set.Skills[i].Name == name {
			return &set.Skills[i], nil
		}
	}
	return nil, fmt.Errorf("skill %q: %w", name, catalog.ErrNotFound)
}

func (m recordedSkills) Resolve(_ context.Context, name string, q catalog.Query) (catalog.Summary, error) {
	s, err := m.find(name, q.Cwd)
	if err != nil {
		return catalog.Summary{}, err
	}
	return s.Summary, nil
}

func (m recordedSkills) Load(_ context.Context, name string, q catalog.Query) (catalog.Skill, error) {
	s, err := m.find(name, q.Cwd)
	if err != nil {
		return catalog.Skill{}, err
	}
	if s.LoadError != "" {
		return catalog.Skill{}, errors.New(s.LoadError)
	}
	return s.Skill, nil
}

// Run replays the recording r with opts and returns the counts.
func Run(ctx context.Context, r *Reader, opts Options) (Summary, error) {
	rp, err := NewReplayer(r.Header(), opts)
	if err != nil {
		return Summary{}, err
	}
	defer rp.release()
	for {
		it, err := r.Next()
		if err == io.EOF {
			return rp.Finish(ctx)
		}
		if err != nil {
			return rp.sum, err
		}
		if err := rp.Add(ctx, it); err != nil {
			return rp.sum, err
		}
	}
}

// memo asks the skills once per working directory (and name) during one
// replay: every trigger sees the same skills, however long the replay takes
// and whatever changes on disk meanwhile, and a long session costs one
// snapshot per directory instead of one per trigger.
//
// The replay's search index asks it from the registry's goroutines, so it
// answers one question at a time.
type memo struct {
	mu        sync.Mutex
	skills    history.Skills
	snapshots map[catalog.Query]catalog.Snapshot
	resolved  map[named]answer[catalog.Summary]
	loaded    map[named]answer[catalog.Skill]
	views     map[prepared]catalog.View
	releases  map[catalog.Query][]catalog.Release
}

// prepared is a query's snapshot prepared under options.
type prepared struct {
	q    catalog.Query
	opts catalog.Options
}

// named is a skill name asked about for a query.
type named struct {
	name string
	q    catalog.Query
}

// answer is a registry answer memo keeps, error included.
type answer[T any] struct {
	v   T
	err error
}

func newMemo(s history.Skills) *memo {
	return &memo{skills: s, snapshots: map[catalog.Query]catalog.Snapshot{},
		resolved: map[named]answer[catalog.Summary]{}, loaded: map[named]answer[catalog.Skill]{},
		views: map[prepared]catalog.View{}, releases: map[catalog.Query][]catalog.Release{}}
}

// Releases are the skills' releases in progress for q (history.Releaser),
// asked once per query like the rest: every trigger of a replay is placed
// in the same canaries.
func (m *memo) Releases(q catalog.Query) []catalog.Release {
	rl, ok := m.skills.(history.Releaser)
	if !ok {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if rs, ok := m.releases[q]; ok {
		return rs
	}
	rs := rl.Releases(q)
	m.releases[q] = rs
	return rs
}

// Memo returns skills that ask s once per working directory and skill
// name, as one replay does, for many replays that must all see the same
// skills (eval): each replay asks it once more per question, from memory.
// It is safe for concurrent use.
func Memo(s history.Skills) history.Skills { return newMemo(s) }

// Prepared is catalog.Prepare of q's snapshot under opts, made once per
// query and options (history.Preparer): the pre-steps of a replay in one
// working directory share one View, as the processor's do while its
// registry's snapshot stays current.
func (m *memo) Prepared(ctx context.Context, q catalog.Query, opts catalog.Options) (catalog.View, error) {
	snap, err := m.Snapshot(ctx, q)
	if err != nil {
		return catalog.View{}, err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := prepared{q, opts}
	if v, ok := m.views[k]; ok {
		return v, nil
	}
	v := catalog.Prepare(snap, opts)
	m.views[k] = v
	return v, nil
}

func (m *memo) Snapshot(ctx context.Context, q catalog.Query) (catalog.Snapshot, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if s, ok := m.snapshots[q]; ok {
		return s, nil
	}
	s, err := m.skills.Snapshot(ctx, q)
	if err != nil {
		return s, err
	}
	m.snapshots[q] = s
	return s, nil
}

func (m *memo) Resolve(ctx context.Context, name string, q catalog.Query) (catalog.Summary, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return ask(ctx, m.resolved, name, q, m.skills.Resolve)
}

func (m *memo) Load(ctx context.Context, name string, q catalog.Query) (catalog.Skill, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return ask(ctx, m.loaded, name, q, m.skills.Load)
}

// ask returns the answer kept for name in q, else asks fetch and keeps its
// answer unless ctx ended meanwhile.
func ask[T any](ctx context.Context, kept map[named]answer[T], name string, q catalog.Query, fetch func(context.Context, string, catalog.Query) (T, error)) (T, error) {
	k := named{name, q}
	if a, ok := kept[k]; ok {
		return a.v, a.err
	}
	v, err := fetch(ctx, name, q)
	if ctx.Err() == nil {
		kept[k] = answer[T]{v, err}
	}
	return v, err
}

// changedList is the list the change list c leads to, as the recording
// holds it at trigger p (whose history before its output is h): read back
// through its chain, as the processor does.
func (r *Replayer) changedList(p *pending, h history.State, c events.Catalog) ([]catalog.Entry, bool) {
	if h.Chain != nil && h.Chain.List != nil && h.Newest != nil && h.Newest.Changes && h.Newest.Digest == c.Source.Digest {
		return h.Chain.List.Entries, true // the newest before: its chain is read
	}
	upTo := r.st.last
	if p.output != nil {
		upTo = p.output.Seq
	}
	log := recordingLog{s: r.st, upTo: upTo}
	newest, err := log.Newest(context.Background(), events.KindCatalog)
	if err != nil || newest == nil {
		return nil, false
	}
	cat, ok := r.st.recognise(*newest)
	if !ok || !cat.Changes {
		return nil, false
	}
	ch, err := r.st.rule.WalkChain(context.Background(), log, cat)
	if err != nil || ch == nil {
		return nil, false
	}
	return ch.List.Entries, true
}
