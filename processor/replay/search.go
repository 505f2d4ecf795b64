package replay

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/history"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/search"
)

// searchArgsPrefix begins the message of a search whose arguments do not
// hold: the tool's own answer, which the model reads.
const searchArgsPrefix = "invalid search arguments: "

// replaySearch re-runs a recorded skill search: catalog.Search, as the
// processor runs it, over the search index of the replay's skills (the
// same ranking code, built over the skills a replay uses: today's, the
// captured ones), or with AsRecorded over the matches the search got.
func (r *Replayer) replaySearch(ctx context.Context, p *pending, s *Step) error {
	enc, err := events.EncodingOf(p.event.Header(events.HeaderContentType))
	var ss events.SkillSearch
	if err == nil {
		ss, err = events.DecodeSkillSearchIn(r.layout, enc, p.event.Data)
	}
	if err == nil && ss.Session != r.sid {
		err = fmt.Errorf("payload session %q differs from the subject's %q", ss.Session, r.sid)
	}
	if err != nil {
		s.Replayed = Outcome{Outcome: OutcomeRejected, Code: events.CodeBadRequest}
		s.Note = err.Error()
		r.verdict(s)
		return nil
	}
	s.Cwd, s.Query = ss.Cwd, ss.Args.QueryText()
	if s.Recorded.Code == events.CodeExpired || (ss.DeadlineMs != 0 && p.event.Time.UnixMilli() > ss.DeadlineMs) {
		// The processor's clock is not in the recording: a recorded expiry
		// stands.
		s.Replayed = Outcome{Outcome: OutcomeExpired, Code: events.CodeExpired}
		r.verdict(s)
		return nil
	}
	if !r.opts.Catalog.SkillSearch {
		// A processor without search refuses the trigger.
		s.Replayed = Outcome{Outcome: OutcomeRejected, Code: events.CodeBadRequest}
		s.Note = "skill search is off in this replay (--skill-search)"
		r.verdict(s)
		return nil
	}
	q := catalog.Query{Cwd: ss.Cwd, Project: ss.Project, ResourceDir: ss.ResourceDir}
	var searcher catalog.Searcher
	if rv, ev := r.learnedRanking(p, q); rv != nil {
		// The recorded search ranked with learned terms, and recorded
		// them: the ranking is rebuilt over the captured skills with them.
		if err := search.CheckLearnedTerms(ss.Args.QueryText(), ev); err != nil {
			s.Replayed = Outcome{Outcome: OutcomeRejected, Code: events.CodeBadRequest}
			s.Note = "the recorded search result's value: " + err.Error()
			r.verdict(s)
			return nil
		}
		searcher = r.index(&r.recordedIndex, recordedSkills(r.recorded)).SearcherWith(q, rv.Learned, ev)
		s.Note = "ranked with the recorded learned search terms (version " + rv.Learned + ")"
	} else if searcher, err = r.searcherFor(p, q); err != nil {
		return fmt.Errorf("replay search %s: %w", ss.Call, err)
	}
	args := catalog.SearchArgs{Query: ss.Args.Query, Limit: ss.Args.Limit, Offset: ss.Args.Offset}
	res := catalog.Search(ctx, searcher, args, r.opts.Catalog)
	if ctx.Err() != nil {
		return fmt.Errorf("replay search %s: %w", ss.Call, ctx.Err())
	}
	s.Replayed = Outcome{Outcome: OutcomeOK, Text: res.Text()}
	if res.Err != nil {
		s.Replayed.Outcome, s.Replayed.Code = OutcomeError, string(res.Err.Code)
	}
	if !r.opts.AsRecorded {
		// The terms the processor's index had learned from the log are
		// not in the recording: the ranking is rebuilt from the skills'
		// text alone.
		if out, ok := decodeResult(r.layout, p.output); ok && out.Search != nil && out.Search.Learned != "" {
			s.Note = "recorded with learned search terms (version " + out.Search.Learned + "); replayed by the skills' text alone (--as-recorded replays the recorded ranking)"
		}
	}
	r.verdict(s)
	return nil
}

// learnedRanking returns, for a replay as recorded, the recorded value of
// search p and the learned terms it recorded when its ranking can be
// rebuilt with them: it ranked with learned terms, recorded them, and the
// recording captured the skills of q's working directory. Else nil.
func (r *Replayer) learnedRanking(p *pending, q catalog.Query) (*events.SearchValue, []catalog.LearnedTerm) {
	if !r.opts.AsRecorded || r.recorded[q.Cwd] == nil {
		return nil, nil
	}
	out, ok := decodeResult(r.layout, p.output)
	if !ok || out.Search == nil || len(out.Search.LearnedTerms) == 0 {
		return nil, nil
	}
	return out.Search, history.LearnedTermsOf(out.Search.LearnedTerms)
}

// searcherFor returns what a search of trigger p for q runs against: the
// index of the replay's skills; with AsRecorded the page the search got,
// else (no telling result recorded) the index of the captured skills, else
// nothing.
func (r *Replayer) searcherFor(p *pending, q catalog.Query) (catalog.Searcher, error) {
	switch {
	case r.opts.AsRecorded:
		if out, ok := decodeResult(r.layout, p.output); ok && (out.Search != nil || isProviderError(out)) {
			return recordedPage{out}, nil
		}
		if r.recorded[q.Cwd] == nil {
			return recordedPage{}, nil
		}
		return r.index(&r.recordedIndex, recordedSkills(r.recorded)).Searcher(q), nil
	case r.opts.Recorded:
		return r.index(&r.recordedIndex, recordedSkills(r.recorded)).Searcher(q), nil
	}
	var m *CwdMapping
	q.Cwd, m = r.mapCwd(q.Cwd)
	_ = m // a search's text names no paths
	if r.opts.Index != nil {
		return r.opts.Index.Searcher(q), nil
	}
	return r.index(&r.skillsIndex, r.opts.Skills).Searcher(q), nil
}

func isProviderError(res events.ToolResult) bool {
	return res.IsError && res.Error != nil && res.Error.Code == events.CodeProvider
}

// searchIndex is the search index of one set of skills a replay uses,
// over a registry of them alone.
type searchIndex struct {
	reg *providers.Registry
	ix  *search.Index
}

// index returns *at, built over skills on first use.
func (r *Replayer) index(at **searchIndex, skills history.Skills) *search.Index {
	if *at == nil {
		reg := providers.NewRegistry([]providers.Provider{skillsProvider{skills}})
		*at = &searchIndex{reg: reg, ix: search.New(reg, search.Options{Bodies: r.opts.Bodies})}
	}
	return (*at).ix
}

// Index is the search index of one set of skills, built as a replay
// builds its own (over a registry of those skills alone, with the
// processor's ranking) but once, for many replays against the same skills
// (Options.Index), each of which would otherwise build it again. It asks
// the skills once per query and skill name, and is safe for concurrent use.
type Index struct{ si *searchIndex }

// NewIndex returns the search index of skills, holding their bodies too
// when bodies is set (search.Options.Bodies). Close it once the replays
// using it are done.
func NewIndex(skills history.Skills, bodies bool) *Index {
	reg := providers.NewRegistry([]providers.Provider{skillsProvider{newMemo(skills)}})
	return &Index{&searchIndex{reg: reg, ix: search.New(reg, search.Options{Bodies: bodies})}}
}

// Searcher is the index bound to the working directory and project of q.
func (x *Index) Searcher(q catalog.Query) catalog.Searcher { return x.si.ix.Searcher(q) }

// Close drops the index.
func (x *Index) Close() { x.si.close() }

// close drops the index.
func (si *searchIndex) close() {
	if si != nil {
		si.ix.Close()
		si.reg.Close()
	}
}

// release closes the search indexes a replay built.
func (r *Replayer) release() {
	r.skillsIndex.close()
	r.recordedIndex.close()
	r.skillsIndex, r.recordedIndex = nil, nil
}

// errIncomplete makes the replay's registry take an incomplete snapshot
// of the skills as one.
var errIncomplete = errors.New("the skills replayed against are incomplete for this query")

// skillsProvider serves the skills a replay uses as the one provider of a
// registry, so that the search index is built over them exactly as the
// processor's is over its registry: their snapshot's skills are the
// winners, and they never change during a replay (the skills a replay
// asks are asked once per query, the captured ones are fixed).
type skillsProvider struct{ skills history.Skills }

func (skillsProvider) Name() string { return "replay" }

func (p skillsProvider) List(ctx context.Context, q catalog.Query) ([]providers.Candidate, error) {
	snap, err := p.skills.Snapshot(ctx, q)
	if err != nil {
		return nil, err
	}
	out := make([]providers.Candidate, len(snap.Skills))
	for i, s := range snap.Skills {
		out[i] = providers.Candidate{Summary: s}
	}
	if !snap.Complete {
		return out, errIncomplete
	}
	return out, nil
}

func (p skillsProvider) Load(ctx context.Context, name string, q catalog.Query) (catalog.Skill, error) {
	return p.skills.Load(ctx, name, q)
}

// Changes: the skills do not change during a replay.
func (skillsProvider) Changes(catalog.Query) <-chan struct{} { return nil }

// recordedPage answers a search with the matches a recorded search got
// (AsRecorded): the skills it showed and its total, or its provider error.
// The recording does not hold every candidate of the session, so the
// ranking is not rebuilt; what catalog.Search makes of the page is.
type recordedPage struct{ res events.ToolResult }

func (p recordedPage) Search(context.Context, string, int, int) (catalog.Matches, error) {
	if isProviderError(p.res) {
		return catalog.Matches{}, errors.New(p.res.Error.Message)
	}
	v := p.res.Search
	if v == nil {
		return catalog.Matches{}, nil
	}
	m := catalog.Matches{Total: v.Total, Skills: make([]catalog.Summary, len(v.Results))}
	for i, e := range v.Results {
		m.Skills[i] = catalog.Summary{Name: e.Name, Description: e.Description,
			Invocation: catalog.Invocation{ModelInvocable: true, UserInvocable: true}}
	}
	return m, nil
}

// recordedSearch is the recorded side of a skill search: as a skill call's
// (recordedResult), except that an error of the tool's argument checks is
// the tool's answer to the model, compared by its text, and not a
// malformed trigger.
func recordedSearch(l events.Layout, out *Event) Outcome {
	o := recordedResult(l, out)
	if o.Outcome == OutcomeRejected {
		if res, ok := decodeResult(l, out); ok && res.Error != nil && strings.HasPrefix(res.Error.Message, searchArgsPrefix) {
			o.Outcome = OutcomeError
		}
	}
	return o
}

// searchValue is the value of a recorded search's result, nil when it
// has none.
func searchValue(l events.Layout, out *Event) *events.SearchValue {
	if res, ok := decodeResult(l, out); ok {
		return res.Search
	}
	return nil
}

// longestDescription is a description as long as a catalog line can make
// one under the description cap descMax: descMax code points that each
// escape to five.
func longestDescription(descMax int) string {
	return strings.Repeat("&", max(descMax, catalog.MinDescriptionMaxLength))
}

// placeholderPrefix begins the names of the skills that stand in for the
// skills a shortened catalog left out (shown): letters that sort after
// the name of any skill a catalog lists, and an eight-digit number.
var placeholderPrefix = strings.Repeat("z", catalog.MaxNameLength-9) + "-"

// placeholders are omitted skills no shorter than any skill can be, whose
// names sort after every name of listed (by placeholderPrefix) and whose
// source ranks lowest: they are the first the size limit or search's
// shortening gives up, and the catalog lists listed and leaves omitted
// out as the processor did. Each is at least as
// long as any skill it stands in for (a description of descMax code
// points that each escape to five), so that where the skills left out did
// not fit, the placeholders do not either. None when a listed name sorts
// at or after the prefix.
func placeholders(listed []catalog.Entry, omitted, descMax int) []catalog.Summary {
	if omitted <= 0 || omitted > 99999999 {
		return nil
	}
	for _, e := range listed {
		if e.Name >= placeholderPrefix {
			return nil
		}
	}
	desc := longestDescription(descMax)
	out := make([]catalog.Summary, omitted)
	for i := range out {
		out[i] = catalog.Summary{Name: fmt.Sprintf("%s%08d", placeholderPrefix, i), Description: desc, Source: sourceLeft,
			Invocation: catalog.Invocation{ModelInvocable: true, UserInvocable: true}}
	}
	return out
}
