// Package catalog is the pure core of skillstream. It turns a snapshot of
// skills into the exact text the model reads, decides at each pre-step
// whether that text must be appended to the session, and executes the
// model-facing skill tool.
//
// The package imports only the standard library and does no I/O: no NATS,
// no encoding of wire payloads, no clock, no goroutines. Every function is
// deterministic (same inputs, same bytes) and safe for concurrent use. The
// caller (package processor) reads the session log, asks the registry, and
// appends what this package produces.
//
// # The catalog at a pre-step
//
// A pre-step is decided in four moves, the first and last of which belong to
// the caller:
//
//  1. Visibility. Visible(tools, owner) looks at the agent's tool view. The
//     first tool named "skill" decides: the catalog exists only when that
//     tool is served by this processor's owner id. A hidden tool, or a
//     "skill" tool of another owner listed before ours (a shadow), makes the
//     view complete and empty, and the registry need not be consulted.
//  2. History. The caller scans the session log backward for catalog records
//     of its own producer and passes each record's text to Recognize, which
//     finds the <available_skills> block and recomputes the digest from the
//     text between its tags. Records that are foreign or not recognisable
//     are skipped, never fatal. From what it finds the caller fills a
//     History: Published (any recognisable catalog exists), Visible (one is
//     still on the model-visible surface, that is not masked by compaction)
//     and Digest (of the newest visible one).
//  3. Decide(visible, snapshot, history, options) makes the decision.
//     When visible is false the snapshot is ignored. An incomplete snapshot
//     yields OutcomeIncomplete and changes nothing. Otherwise the current
//     entries (Entries: model-invocable skills in name byte order, each
//     description normalised and capped) are digested and compared with the
//     history: OutcomeUnchanged when the visible catalog has the same
//     digest, OutcomeEmpty when nothing was ever published and there is
//     nothing to show, and otherwise OutcomeAppended with the exact text —
//     the initial template when nothing was ever published, else the
//     replacement template, which for an empty view is the tombstone.
//     Decide is Prepare followed by DecideView: Prepare(snapshot, options)
//     builds the View (entries and digest), which depends only on the
//     snapshot, and DecideView compares it with the history. A caller that
//     sees the same snapshot at many pre-steps prepares it once and keeps
//     the View while the snapshot stays current; only an appending
//     decision renders text.
//  4. The caller appends Decision.Text as a user-role message, with
//     Decision.Entries and Decision.Digest in its source metadata, exactly
//     once per trigger.
//
// Consequences worth knowing: hiding or shadowing the tool after
// publication appends a tombstone; a catalog masked by compaction is
// re-established with the replacement template even when nothing changed;
// changes that leave names and capped descriptions alone (a skill's body,
// whenToUse, provider, location) never append anything.
//
// # Change lists
//
// A replacement re-sends the whole list, so one edited description costs
// as much as the catalog. With Options.Updates UpdatesChanges a small
// change is a change list instead: RenderChanges names only the entries
// added, whose shown text changed, or removed (a <skill_catalog_changes>
// block), and the notice when it changed. DecideView makes one when the
// caller's History carries the session's current list (History.Current:
// the list the model has from its newest full catalog and every change
// list after it, all visible and ours) with fewer than MaxChangeLists
// change lists after its full catalog, and the change names at most
// MaxChanges skills and at most half of the entries now shown, rounded up;
// a list that would lose its notice is a replacement. Everything else is
// as before: initial catalogs and tombstones never change, and the digest
// is still the digest of the whole list the model now has, so a session
// whose list did not change appends nothing. The caller rebuilds the
// current list from the records: ParseList reads a full catalog's list
// back from its text, ParseChanges a change list's lines, and List.Apply
// applies them; List.Digest checks the result against what a record says.
//
// # Model text
//
// Render produces the three catalog templates (initial, replacement,
// tombstone) byte for byte: lines joined by "\n", no trailing newline. An entry line is
// "- `name`: description" (Line), where the description has every run of
// white space (unicode.IsSpace) collapsed to one space and is trimmed
// (Normalize), is capped at Options.DescriptionMaxLength code points by
// keeping max-3 of them and appending "...", and is escaped & → &amp;,
// < → &lt;, > → &gt; (Escape). Digest is the lowercase hex SHA-256 of the
// entry lines joined by "\n", which is exactly the text between the tags,
// so Recognize(Render(u, e)) returns Digest(e). Entries stored in event
// metadata are normalised and capped but not escaped.
//
// # Size limits
//
// Two limits keep the model's context honest about what it was not shown.
//
// The catalog size limit (Options.MaxLength, default 24000 code points, 0
// for none) bounds the text between the <available_skills> tags. Within it
// nothing changes. Over it, Prepare shortens the list (Shorten): in the
// order of sacrifice — lowest precedence first (Precedence: bundled, user
// root, store global scope, custom roots, store project scope, project
// roots on disk), and within one source the last name in byte order first
// — entries lose their description one at a time ("- `name`", a bare
// entry) until the text fits; if it still does not fit once every
// description is gone, entries are left out in the same order. The list
// then ends with a notice line (Notice) that counts both and tells the
// model that any skill can still be loaded by its exact name. The notice
// counts toward the limit and is part of the digest, so a change in what
// was shortened is a change of catalog. View.Omitted and Decision.Omitted
// count the entries left out; bare entries have an empty Description.
//
// A host that reads the catalog in the skill tool's description (an MCP
// host without the skills extension) keeps only so much of it: Claude
// Code keeps 2,048 UTF-16 code units and cuts the rest. DescribeTool
// gives that description — ToolDescription, a blank line, the initial
// catalog — shortened by the same rules until the whole of it fits a
// budget in UTF-16 code units as well (DefaultToolDescriptionMax; 0 for
// none, else at least MinToolDescriptionMax, CheckToolDescriptionMax):
// whole entries, the notice and every closing line, never a cut line.
//
// The instruction size limit (Options.MaxSkillBytes, default 262144 bytes,
// 0 for none) bounds the instructions a skill tool result shows: Truncate
// keeps the longest prefix of at most that many bytes that ends on a code
// point boundary and appends a blank line and the notice "[Skill
// instructions truncated: the first <kept> of <total> bytes are shown.]".
// Value.Content is the content as shown and Value.Truncated says how much
// was kept.
//
// # The skill tool
//
// ToolDefinition gives the name, description and JSON parameter schema the
// worker registers with the model. Execute(ctx, lookup, name) runs one call
// against a Lookup bound to the calling session's working directory:
//
//  1. a name outside the grammar is rejected without consulting the lookup;
//  2. Resolve finds the winning summary; none (ErrNotFound) is "unknown";
//  3. a summary the model may not invoke is refused before loading, so its
//     body is never read;
//  4. Load fetches the current skill; if it vanished meanwhile the call is
//     "unknown", and if its loaded definition now forbids model invocation
//     the call is refused and the body discarded;
//  5. otherwise the Value carries the name, provider, resource base and
//     content (cut to the instruction size limit) — nothing else.
//
// Any other lookup error becomes a CodeProvider error whose message is the
// error's text. Whether a skill is user-invocable plays no part. Result.Text
// renders what the model reads: "Error: <message>", or the skill_content
// document with the resource guidance for the skill's resource base.
//
// # Skill search
//
// A catalog of every skill stops helping the model at a large fleet's
// size: under the size limit most entries lose their descriptions. With
// Options.SkillSearch on, a second tool, skill_search (SearchToolDefinition),
// is served beside the skill tool, and where a session's tool view offers
// both tools of our owner (SearchVisible; Options.Offer sets
// Options.SearchOffered per pre-step) the catalog lists fewer skills
// instead of shorter entries: ShortenForSearch leaves whole entries out,
// in the size limit's order of sacrifice, until at most Options.ListedMax
// are listed (0: no count limit) and the list holds Options.MaxLength, and
// ends the list with SearchNotice, which tells the model how many more
// skills skill_search finds. The notice is part of the digest, and a view
// that gains or loses the tool is another view, so the catalog changes at
// the next pre-step. With the option off, or the tool not in the view,
// every text stays as it was, byte for byte.
//
// Options.Rank RankUse lists by use: given a Ranking (each skill's loads;
// PrepareRanked, DescribeToolRanked), within one precedence the least used
// give way first, equals and the never used by the name rule. Where
// search is offered, ListedMax then counts the entries with a description,
// and further ones follow as names alone while the list holds MaxLength
// (ShortenForSearchRanked); the notice counts only those left out.
// Entries stay in name order. A Ranking without use gives every text as
// by name. A record keeps the part of a Ranking a decision used
// (Ranking.For, EncodeRanked), and DecodeRanked reads it back.
//
// Search(ctx, searcher, args, opts) runs one call against a Searcher (the
// index) bound to the calling session's query:
//
//  1. ParseSearchArgs checks the model's arguments (query 1 to 512 code
//     points once trimmed, no control characters but white space; limit 1
//     to 16, default 8; offset 0 to 100000, default 0); anything else is a
//     CodeBadRequest error "invalid search arguments: <what is wrong>",
//     and the index is not consulted;
//  2. the index returns the page of matches after offset, best first, and
//     their total; an index error is a CodeProvider error;
//  3. each match is formed as a catalog entry (normalised, capped, escaped
//     in the text, unescaped in SearchValue.Results).
//
// SearchResult.Text is what the model reads: the skill_search_results
// block with a line telling how to page on when more match, or a sentence
// saying that nothing matches. Searching never changes what the catalog
// lists.
//
// # Text for people
//
// Skill text is written by whoever wrote the skill, and the model's text
// carries it as it is: a description's control characters are not escaped
// in the catalog (they cannot leave its markup, since &, < and > are), so
// the catalog stays byte for byte what it was. Where skill text is shown
// to a person instead, Reveal (multi-line text) and RevealLine (one line)
// escape what a terminal would act on or hide — control characters,
// bidirectional-text controls, line separators, invisible characters —
// so that a skill cannot retitle, clear or rewrite the terminal that
// shows it. FindControl is the rule that warns operators about such
// characters in a skill's fields (validate, skills push, serve's log).
//
// # What is left to the caller
//
// The caller validates Options once at startup (Options.Validate); catalog
// functions clamp a cap below 3 rather than fail. It supplies the tool view,
// the snapshot for the request's working directory and the History derived
// from the durable log; it decides what is masked by compaction, enforces
// deadlines, appends the text idempotently, and encodes the wire payloads.
// The Lookup it passes to Execute must already be bound to the session's
// working directory and must wrap ErrNotFound for absent skills.
package catalog
