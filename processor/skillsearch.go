package processor

import (
	"context"
	"errors"
	"fmt"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/history"
)

// Searcher is what the processor needs of the search index that follows
// its registry (a *search.Index satisfies it): the index bound to a
// trigger's query, as catalog.Search takes it. It is handed in with
// WithSearcher, and needed when Config.Catalog.SkillSearch is on.
type Searcher interface {
	Searcher(q catalog.Query) catalog.Searcher
}

// errSearchOff is the rejection of a skill search by a processor that does
// not serve search.
var errSearchOff = errors.New("skill search is off: this processor does not serve the skill_search tool")

// Outcomes of a search, beside the error codes: matches shown, or none.
const (
	searchFound   = "found"
	searchNoMatch = "no_match"
)

// skillSearchKind handles tool.call.skill_search triggers as skillCallKind
// handles skill calls: run the search, append the tool.result, answer
// with it.
type skillSearchKind struct{ p *Processor }

func (skillSearchKind) label() string { return "skill-search" }

// searchReads are the kinds a search needs: its own, and the results that
// may already answer it.
var searchReads = []events.Kind{events.KindSkillSearch, events.KindToolResult}

func (k skillSearchKind) answer(ctx context.Context, t *trigger) (any, string, error) {
	p := k.p
	ss, err := events.DecodeSkillSearchIn(p.cfg.Layout, t.enc, t.msg.Data())
	t.ref = usableID(ss.Call)
	if err != nil {
		return nil, "", p.reject(ctx, t, decodeReason(err), fmt.Errorf("decode skill search: %w", err))
	}
	if ss.Session != t.sid {
		return nil, "", p.reject(ctx, t, reasonSessionMismatch, fmt.Errorf("%w: payload session %q, subject session %q", errSessionMismatch, ss.Session, t.sid))
	}
	if !p.cfg.Catalog.SkillSearch {
		return nil, "", p.reject(ctx, t, reasonSearchOff, errSearchOff)
	}
	if ss.Cwd, err = p.cwds.check(ss.Cwd); err != nil {
		return nil, "", p.reject(ctx, t, reasonCwd, err)
	}
	q := p.cohort(t.sid, catalog.Query{Cwd: ss.Cwd, Project: ss.Project, ResourceDir: ss.ResourceDir})
	args := catalog.SearchArgs{Query: ss.Args.Query, Limit: ss.Args.Limit, Offset: ss.Args.Offset}
	plan := &toolCallPlan{p: p, t: t, kinds: searchReads, deadlineMs: ss.DeadlineMs, tool: "skill search", late: searchExpiredText,
		exec: func(ctx context.Context) events.ToolResult {
			r := catalog.Search(ctx, p.search.Searcher(q), args, p.cfg.Catalog)
			if r.Err != nil && r.Err.Code == catalog.CodeProvider {
				p.m.providerErrs.Inc()
			}
			return searchResult(t, r)
		},
		done: func(r events.ToolResult) { p.m.searches.WithLabelValues(searchOutcome(r)).Inc() },
	}
	res, data, err := p.runToolCall(ctx, t, plan, ss.MinStoreEpoch, ss.MinStoreRevision)
	if err != nil {
		return nil, "", err
	}
	if data != nil {
		return preEncoded{v: res, msgpack: data}, searchOutcome(res), nil
	}
	return res, searchOutcome(res), nil
}

// searchOutcome is the outcome counted for a search's result: found,
// no_match, or the error code.
func searchOutcome(r events.ToolResult) string {
	switch {
	case r.Error != nil:
		return r.Error.Code
	case r.Search == nil:
		return "error"
	case len(r.Search.Results) == 0:
		return searchNoMatch
	}
	return searchFound
}

// rejected: a bad_request error result, appended to the session too when
// the call id is readable, so that the model's tool call has a result.
func (k skillSearchKind) rejected(ctx context.Context, t *trigger, rej *rejection) (any, error) {
	p := k.p
	msg := "malformed skill search: " + rej.err.Error()
	switch rej.reason {
	case reasonCwd:
		msg = "skill search refused: " + rej.err.Error()
	case reasonSearchOff:
		msg = rej.err.Error()
	}
	return p.badRequest(ctx, t, msg, searchReads, func(r events.ToolResult) { p.m.searches.WithLabelValues(searchOutcome(r)).Inc() })
}

func (skillSearchKind) rejectOutcome() string { return events.CodeBadRequest }

// failed: an "unavailable" error result, not appended.
func (k skillSearchKind) failed(t *trigger, cause error) any {
	return k.p.toolError(t, codeUnavailable, "skill search unavailable: "+cause.Error())
}

// tooLarge: a "too_large" error result, not appended.
func (k skillSearchKind) tooLarge(t *trigger, cause error) any {
	return k.p.toolError(t, events.CodeTooLarge, "the skill search result is too large for one message ("+cause.Error()+")")
}

// searchResult turns a catalog.SearchResult into the wire ToolResult
// answering t.
func searchResult(t *trigger, r catalog.SearchResult) events.ToolResult {
	out := events.ToolResult{
		V: events.Version, Session: t.sid, Call: t.ref, TriggerSeq: t.seq,
		IsError: r.Err != nil || r.Value == nil, Text: r.Text(),
	}
	switch {
	case r.Err != nil:
		out.Error = &events.ErrorInfo{Code: string(r.Err.Code), Message: r.Err.Message}
	case r.Value != nil:
		v := &events.SearchValue{Query: r.Value.Query, Offset: r.Value.Offset, Total: r.Value.Total,
			Results: make([]events.Entry, len(r.Value.Results)), Learned: r.Value.Learned}
		for i, e := range r.Value.Results {
			v.Results[i] = events.Entry{Name: e.Name, Description: e.Description}
		}
		v.LearnedTerms = history.WireLearnedTerms(r.Value.LearnedTerms)
		out.Search = v
	default:
		out.Error = &events.ErrorInfo{Code: events.CodeProvider, Message: "skill search failed"}
	}
	return out
}

// offered is the catalog options of a pre-step whose tool view is tools:
// the processor's, with search offered or not (catalog.Options.Offer).
func (p *Processor) offered(tools []events.Tool) catalog.Options {
	return history.Offer(p.cfg.Catalog, tools, p.cfg.ToolOwner)
}
