package catalog

import "fmt"

// DefaultToolDescriptionMax is the budget of a skill tool description that
// carries the catalog, in UTF-16 code units, when none is configured: what
// Claude Code keeps of an MCP tool's description (it cuts the rest and
// appends "… [truncated]").
const DefaultToolDescriptionMax = 2048

// MinToolDescriptionMax is the smallest such budget other than 0 (none):
// room for ToolDescription, the catalog's fixed lines, the shortening
// notice and a few names.
const MinToolDescriptionMax = 1024

// CheckToolDescriptionMax reports whether n is a usable tool description
// budget: 0 or at least MinToolDescriptionMax.
func CheckToolDescriptionMax(n int) error {
	if n != 0 && n < MinToolDescriptionMax {
		return fmt.Errorf("tool description max is %d, it must be 0 or at least %d", n, MinToolDescriptionMax)
	}
	return nil
}

// DescribeTool returns the skill tool's description for a host that reads
// the catalog in it rather than in the session (an MCP host without the
// skills extension): ToolDescription, a blank line, and the initial
// catalog of snap's skills — or ToolDescription alone when snap has no
// skill the model may invoke. snap is taken as it is, complete or not:
// whether an incomplete snapshot may be shown is the caller's decision.
//
// The list is shortened as Shorten shortens it (the same order of
// sacrifice, whole entries only, the same notice), until it holds at most
// opts.MaxLength code points (0: no limit) and the whole description at
// most maxUnits UTF-16 code units, the unit hosts count a description in
// (0: no budget). The fixed lines are never cut: only a budget below
// MinToolDescriptionMax, or counts of billions of skills, can leave the
// description over it. Under both limits the text is exactly
// ToolDescription + "\n\n" + RenderList(UpdateInitial, entries, 0).
//
// Where search is offered (opts.SkillSearch and opts.SearchOffered: the
// host is shown the skill_search tool too), the list is shortened as
// ShortenForSearch shortens it instead — whole entries left out, their
// descriptions never dropped, to opts.ListedMax entries at most — and a
// list that left some out ends with SearchNotice.
//
// opts.UserInvocation plays no part: a host's user does not invoke skills
// through a session's pre-steps, so the catalog does not say they may.
func DescribeTool(snap Snapshot, opts Options, maxUnits int) string {
	return DescribeToolRanked(snap, opts, maxUnits, nil)
}

// DescribeToolRanked is DescribeTool with the list shortened by use when
// opts.Rank is RankUse (see ShortenRanked and ShortenForSearchRanked):
// within the budget, the most used skills keep their descriptions, then,
// where search is offered, further names without one, then the notice and
// the closing lines. rank is ignored under any other Rank; without use in
// it the text is DescribeTool's.
func DescribeToolRanked(snap Snapshot, opts Options, maxUnits int, rank Ranking) string {
	if opts.Rank != RankUse {
		rank = nil
	}
	entries := Entries(snap.Skills, opts.DescriptionMaxLength)
	if len(entries) == 0 {
		return ToolDescription
	}
	const head = ToolDescription + "\n\n"
	// The description is head, the template's fixed text, the list and
	// the "\n" that ends a list that is not empty (a shortened list never
	// is: it holds the notice).
	fixed := textLen(head).units + textLen(RenderList(UpdateInitial, nil, 0)).units + 1
	fits := func(l listLen) bool {
		return (opts.MaxLength <= 0 || l.points <= opts.MaxLength) && (maxUnits <= 0 || fixed+l.units <= maxUnits)
	}
	search := opts.searchShortening()
	var omitted int
	if search {
		entries, omitted = shortenSearch(entries, SourcePrecedence(snap.Skills), rank, fits, opts.ListedMax)
	} else {
		entries, omitted = shorten(entries, SourcePrecedence(snap.Skills), rank, fits)
	}
	return head + render(UpdateInitial, entries, omitted, false, search)
}
