package catalog

import "sync"

// Tool is one entry of the agent's tool view as a pre-step reports it: the
// tool's name and the id of whoever serves it.
type Tool struct {
	Name  string
	Owner string
}

// Visible reports whether the catalog should exist for this tool view: the
// first tool named "skill" must be owned by owner. The model can reach only
// one tool per name, and the first one listed is the one we treat as
// reachable, so:
//
//   - no tool named "skill" (the tool is hidden) → not visible;
//   - the first "skill" tool belongs to another owner (our tool is shadowed,
//     even if ours appears later) → not visible;
//   - the first "skill" tool is ours → visible.
//
// A view that is not visible counts as complete and empty: the registry is
// not consulted and a published catalog is answered with a tombstone.
func Visible(tools []Tool, owner string) bool {
	for _, t := range tools {
		if t.Name == ToolName {
			return t.Owner == owner
		}
	}
	return false
}

// History is what the caller found reading the session log backward for
// catalogs this processor published (records recognised with Recognize;
// foreign and malformed records are skipped).
type History struct {
	// Published is true when any recognisable catalog of ours exists in the
	// session, visible to the model or not.
	Published bool
	// Visible is true when a recognisable catalog of ours is still on the
	// model-visible surface (not masked by compaction). Visible implies
	// Published.
	Visible bool
	// Digest is the digest of the newest visible recognisable catalog, as
	// Recognize computed it from that catalog's text. Meaningful only when
	// Visible.
	Digest string
	// Current is the session's current list when a change list may build
	// on it: the list the model has from the newest recognisable catalog
	// and every change list after it, all visible, ours and consistent.
	// Its Digest is Digest. nil when it is not known (or not needed: the
	// caller may leave it out unless Options.Updates is UpdatesChanges).
	Current *List
	// Changes counts the change lists in Current after its full catalog.
	Changes int
}

// Outcome is what a pre-step decision amounts to.
type Outcome string

// The outcomes of Decide.
const (
	// OutcomeAppended: the caller must append Decision.Text as a catalog
	// message.
	OutcomeAppended Outcome = "appended"
	// OutcomeUnchanged: the visible catalog already matches the view.
	OutcomeUnchanged Outcome = "unchanged"
	// OutcomeEmpty: nothing was ever published and there is nothing to show.
	OutcomeEmpty Outcome = "empty"
	// OutcomeIncomplete: the snapshot was incomplete; the model keeps what
	// it was last shown and the caller retries at the next pre-step.
	OutcomeIncomplete Outcome = "incomplete"
)

// Decision is the result of Decide.
type Decision struct {
	Outcome Outcome
	// Update, Text and Entries are set when Outcome is OutcomeAppended:
	// the template used, the exact message text, and the entries it lists
	// (never nil; empty for a tombstone).
	Update  Update
	Text    string
	Entries []Entry
	// Omitted counts the entries the catalog size limit left out of Text
	// (Entries lists only those shown).
	Omitted int
	// Changes, for a change list (Update UpdateChanges), are its lines in
	// order, and Notice the notice line it ends with ("" for none);
	// Entries then are the whole updated list, as shown.
	Changes []Change
	Notice  string
	// Digest is the digest of the current view; set for every outcome but
	// OutcomeIncomplete.
	Digest string
}

// View is a snapshot prepared for deciding: the catalog entries of its
// skills and their digest. It depends only on the snapshot and the options,
// so a caller that sees the same snapshot again (a registry's cached one)
// may keep the View and decide many pre-steps with it. A View is read-only
// once prepared: Entries is shared by every Decision made from it.
type View struct {
	// Entries are the snapshot's catalog entries (see Entries) as shown
	// once the catalog size limit is applied (see Shorten); nil when the
	// snapshot is incomplete.
	Entries []Entry
	// Omitted counts the entries the size limit left out.
	Omitted int
	// Digest is DigestList(Entries, Omitted); empty when the snapshot is
	// incomplete.
	Digest string
	// Complete is the snapshot's Complete.
	Complete bool
	// Revision and Epoch are the snapshot's.
	Revision uint64
	Epoch    string
	// Diagnostics are the snapshot's: they never reach the model.
	Diagnostics []Diagnostic
	// UserInvocation is the option of the same name the View was prepared
	// under: its catalog texts end with the user invocation line. (A View
	// standing for a hidden tool carries it too: the tombstone has it.)
	UserInvocation bool
	// Search is set when the View was prepared for a session to which
	// search is offered (Options.SkillSearch and Options.SearchOffered):
	// its entries were shortened by ShortenForSearch, and a list that
	// left some out ends with SearchNotice.
	Search bool
	// ChangeLists is set when the View was prepared with Options.Updates
	// UpdatesChanges: a change to it may be decided as a change list.
	ChangeLists bool
	// Origins are the origins of the snapshot's skills (OriginsOf): the
	// evidence of which revision each store skill's entry came from. They
	// never reach the model's text or the Digest.
	Origins Origins
	// Revoked is the snapshot's: the skills not offered because their
	// revision is revoked. Never for the model.
	Revoked []string

	// texts remembers the list rendered from Entries for each kind of
	// update, so that every session given this view shares one rendering.
	// Prepare sets it; copies of the View share it; a View built by hand
	// has none and renders at every decision.
	texts *renderedTexts
}

// renderedTexts holds a View's rendered lists, each made once when first
// needed.
type renderedTexts struct {
	initial, replacement renderedText
}

// renderedText is one kind of update's text, rendered once: the sessions
// arriving together at a new view wait for the first one's rendering
// instead of each rendering it (milliseconds at a thousand skills).
type renderedText struct {
	once sync.Once
	text string
}

// Text returns the exact text of the catalog message listing the View
// with update u: RenderWith(u, v.Entries, v.Omitted, v.UserInvocation),
// or for a View shortened for search (Search) the same with SearchNotice
// as its notice. A View from Prepare renders each kind of update once.
func (v View) Text(u Update) string { return v.render(u) }

// render is Text, made once per kind of update when the View was
// prepared.
func (v View) render(u Update) string {
	if v.texts == nil {
		return render(u, v.Entries, v.Omitted, v.UserInvocation, v.Search)
	}
	slot := &v.texts.replacement
	if u == UpdateInitial {
		slot = &v.texts.initial
	}
	slot.once.Do(func() { slot.text = render(u, v.Entries, v.Omitted, v.UserInvocation, v.Search) })
	return slot.text
}

// Prepare builds the View of snap under opts: the work of Decide that does
// not depend on the session. The entries are shortened to
// opts.MaxLength by the precedence of each skill's source (see Shorten and
// Precedence); where search is offered (opts.SkillSearch and
// opts.SearchOffered) they are shortened by ShortenForSearch instead, to
// opts.MaxLength and opts.ListedMax. An incomplete snapshot gives a View
// with Complete false and nothing else.
func Prepare(snap Snapshot, opts Options) View {
	return PrepareRanked(snap, opts, nil)
}

// PrepareRanked is Prepare with the entries shortened by use when
// opts.Rank is RankUse: ShortenRanked, or where search is offered
// ShortenForSearchRanked, with rank. rank is ignored under any other
// Rank; without use in it the View is Prepare's.
func PrepareRanked(snap Snapshot, opts Options, rank Ranking) View {
	if opts.Rank != RankUse {
		rank = nil
	}
	search := opts.searchShortening()
	if !snap.Complete {
		return View{Revision: snap.Revision, Epoch: snap.Epoch, UserInvocation: opts.UserInvocation, Search: search, Diagnostics: snap.Diagnostics, Revoked: snap.Revoked}
	}
	entries := Entries(snap.Skills, opts.DescriptionMaxLength)
	var omitted int
	if search {
		entries, omitted = ShortenForSearchRanked(entries, SourcePrecedence(snap.Skills), rank, opts.MaxLength, opts.ListedMax)
	} else {
		entries, omitted = ShortenRanked(entries, SourcePrecedence(snap.Skills), rank, opts.MaxLength)
	}
	return View{Entries: entries, Omitted: omitted, Digest: digestList(entries, omitted, search), Complete: true, Revision: snap.Revision, Epoch: snap.Epoch,
		UserInvocation: opts.UserInvocation, Search: search, Diagnostics: snap.Diagnostics, texts: new(renderedTexts),
		ChangeLists: opts.Updates == UpdatesChanges, Origins: OriginsOf(snap.Skills), Revoked: snap.Revoked}
}

// SourcePrecedence returns, for Shorten, the precedence (Precedence) of
// the source of each entry's skill in skills; as in Entries, the first
// skill of a name counts.
func SourcePrecedence(skills []Summary) func(Entry) int {
	var src map[string]string // built on first use: most catalogs fit
	return func(e Entry) int {
		if src == nil {
			src = make(map[string]string, len(skills))
			for _, s := range skills {
				if _, ok := src[s.Name]; !ok {
					src[s.Name] = s.Source
				}
			}
		}
		return Precedence(src[e.Name])
	}
}

// emptyDigest is the digest of no entries: the view of a hidden tool.
var emptyDigest = Digest(nil)

// Decide decides what one pre-step does to the session's catalog:
//
//  1. A view where our skill tool is not visible is complete and empty;
//     snap is ignored.
//  2. Otherwise an incomplete snapshot decides nothing: OutcomeIncomplete.
//  3. The entries are the model-invocable skills of snap, capped with
//     opts.DescriptionMaxLength; their digest identifies the view.
//  4. A visible catalog with the same digest: OutcomeUnchanged.
//  5. Nothing ever published and an empty view: OutcomeEmpty.
//  6. Otherwise OutcomeAppended, with the initial template when nothing was
//     ever published and the replacement template (the tombstone when the
//     view is empty) when something was.
//  7. With opts.Updates UpdatesChanges, a replacement that is not a
//     tombstone is a change list instead (UpdateChanges, RenderChanges)
//     when the history knows the session's current list (h.Current) and
//     fewer than MaxChangeLists change lists follow its full catalog, the
//     change names at most MaxChanges skills and at most half of the
//     entries now shown (rounded up), and the list keeps a notice if it
//     had one. The change list names every entry added, whose shown text
//     changed, or removed, in byte order of name, and the notice when it
//     changed.
//
// Hence: hiding or shadowing the tool after publication appends a
// tombstone; a catalog masked by compaction is re-established with the
// replacement template even when the view is unchanged; changes that leave
// names and descriptions alone (a skill body, whenToUse, a provider) append
// nothing. Decide is pure: same inputs, same bytes. It is
// DecideView(visible, Prepare(snap, opts), h), except that snap is not
// prepared when the tool is not visible.
func Decide(visible bool, snap Snapshot, h History, opts Options) Decision {
	if !visible {
		return DecideView(false, View{UserInvocation: opts.UserInvocation}, h)
	}
	return DecideView(true, Prepare(snap, opts), h)
}

// DecideView is Decide on a prepared view: steps 1, 2 and 4 to 6 of
// Decide, with v standing for the snapshot (when visible is false, only
// its UserInvocation counts).
// Only an appending decision renders text. The Entries of the Decision are
// v's, shared: the caller must not modify them.
func DecideView(visible bool, v View, h History) Decision {
	var entries []Entry
	omitted := 0
	digest := emptyDigest
	switch {
	case !visible:
		entries = []Entry{}
	case !v.Complete:
		return Decision{Outcome: OutcomeIncomplete}
	default:
		entries, omitted, digest = v.Entries, v.Omitted, v.Digest
		if entries == nil { // a View built by hand rather than by Prepare
			entries = []Entry{}
		}
		if digest == "" {
			digest = digestList(entries, omitted, v.Search)
		}
	}
	published := h.Published || h.Visible
	switch {
	case h.Visible && h.Digest == digest:
		return Decision{Outcome: OutcomeUnchanged, Digest: digest}
	case !published && len(entries) == 0 && omitted == 0:
		return Decision{Outcome: OutcomeEmpty, Digest: digest}
	}
	update := UpdateReplacement
	if !published {
		update = UpdateInitial
	}
	if update == UpdateReplacement && visible && v.ChangeLists && h.Current != nil && h.Visible && (len(entries) > 0 || omitted > 0) {
		if changes, notice, ok := changeList(v, *h.Current, h.Changes); ok {
			return Decision{
				Outcome: OutcomeAppended,
				Update:  UpdateChanges,
				Text:    RenderChanges(changes, notice, v.UserInvocation),
				Entries: entries,
				Omitted: omitted,
				Digest:  digest,
				Changes: changes,
				Notice:  notice,
			}
		}
	}
	var text string
	if !visible { // the tool hidden: the empty list
		text = RenderWith(update, entries, omitted, v.UserInvocation)
	} else {
		text = v.render(update) // v's own entries, rendered once per View
	}
	return Decision{
		Outcome: OutcomeAppended,
		Update:  update,
		Text:    text,
		Entries: entries,
		Omitted: omitted,
		Digest:  digest,
	}
}
