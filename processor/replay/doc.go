// Package replay records a session's log to a portable file and replays the
// processor's decisions against it: the library behind `skillstream export`,
// `replay` and `history`, and the recording helper for tests.
//
// # Recordings
//
// A recording is UTF-8 JSON lines. The first line is the header:
//
//	{"format":"skillstream-recording","version":1,"session":"s1","prefix":"ev","stream":"SESSIONS","created":"..."}
//
// The header says, in "options", the options that shaped the session's
// model text, as its newest catalog record carries them (Options of
// events.CatalogSource: description cap, catalog and instruction size
// limits, listed max, search, catalog updates, user invocation); a
// session recorded by an older processor, or that never got a catalog,
// has none. RecordedOptions reads them from a recording (its header, else
// its newest catalog that carries them), SessionOptions from a session of
// the stream, and MergeOptions puts them under the caller's flags: a
// replay uses what the recording says unless a flag was given, and each
// Setting says the value used and the recorded one.
//
// A session of the owner layout (events.LayoutOwner) says so:
// "session":"a1.s7","prefix":"ev","layout":"owner"; its events are on
// ev.a1.s7.<kind>, and the recording is read and replayed in that layout
// whatever the reader's configuration. A skillstream older than the
// layouts refuses such a recording (its session id is not one it knows)
// rather than misread it.
//
// Every later line is an object with a "type":
//
//	{"type":"event","seq":7,"subject":"ev.s1.agent.pre-step","time":"2025-01-02T03:04:05.123456789Z","headers":{"Content-Type":["application/json"]},"data":"<base64>"}
//	{"type":"skills","cwd":"/src/app","complete":true,"skills":[{"name":...,"description":...,"content":...}]}
//	{"type":"end","events":42,"sha256":"<hex>"}
//
// Events are the session's messages exactly as the stream holds them (stream
// sequence, subject, stored time, headers, payload bytes) in stream order,
// every kind included, foreign ones too. A skills line, optional, is the
// registry's snapshot for one working directory with each skill's body (or
// the error loading it); it comes before the first trigger that uses that
// directory. The end line counts the events and holds the SHA-256 of every
// byte before it: a file without it is truncated, a file whose bytes do not
// match it is corrupt. Readers ignore fields they do not know; a change
// older readers could not ignore gets a new version, and a reader refuses a
// version newer than its own (ErrUnsupportedVersion). Every reading error is
// a *FormatError naming the record (line) number and its byte offset.
//
// Writer and Reader hold one line at a time, so recordings of any length are
// written and read in bounded memory (a line is at most MaxLine bytes).
//
// # Export
//
// ReadSession reads one session through an ephemeral, unacknowledged,
// in-memory pull consumer filtered to <prefix>.<sid>.>, in bounded batches,
// until it has caught up with the session's newest event; it publishes
// nothing and leaves nothing behind. Export writes what it reads as a
// recording, optionally capturing the skills of every working directory the
// triggers name (CaptureSkills). Record is the short form for tests: play a
// session through the processor, Record it into testdata, replay it in a
// regression test (see TestRoundTripThroughProcessor and
// TestGoldenRecording). This package does not import processor: the
// processor's own tests may use it.
//
// # Replay
//
// A Replayer is fed a recording item by item and emits one Step per trigger
// (pre-step, skill call or skill search), in stream order. For each trigger it finds the
// recorded output (by Causation-Seq, else by step or call id) and re-runs
// the decision the processor made:
//
//   - a pre-step is decided by the processor's own code (package history:
//     Visible, Prepare, Session.Read, Decide) on the tool view of the
//     trigger, the skills, and the log the processor saw: the recording up
//     to the output (with optimistic concurrency, everything before the
//     output is exactly what the processor read); for a pre-step without
//     output, up to the trigger. The recording is the history.Log: it
//     keeps the session's catalog and compaction records, the only ones
//     the rule reads;
//   - a skill call is run with catalog.Execute for the call's query
//     (history.Lookup);
//   - a skill search is run with catalog.Search over the search index of
//     the skills replayed against (package providers/search, the
//     processor's own ranking: a registry of those skills alone, built at
//     the first search and kept for the replay), for the search's query.
//     Its argument errors are the tool's answer to the model and compared
//     by text; a replay without Catalog.SkillSearch refuses searches as
//     such a processor does.
//
// The history always comes from the recording, never from the replay's own
// earlier answers, so a change shows at the steps it really affects. A
// trigger differs when the model text it would have put into the session is
// not the recorded text (a catalog appended on one side only, other text, a
// different tool result); Step.Diff is then a unified diff from recorded to
// replayed. Rejected and expired triggers are compared by fate only: the
// processor's clock is not in the recording, so a recorded expiry stands,
// and a deadline already past when the trigger was stored replays as
// expired. A pre-step recorded without a catalog that the replay would
// append one for differs; its note says the processor may have found it
// expired only when its deadline passed before the worker's next step was
// stored (the worker asks for that step once it has its answer), or when
// no later step tells. A pre-step the session's output budget refused
// (answered incomplete, nothing appended) is told from a difference by
// following the budget the recording says (Options.Recording) from the
// recorded catalogs at their stored times; the step is then the same,
// with a note. A worker's retry answered with an existing output is
// reported as a retry, not compared.
//
// Skills are one of three:
//
//   - Options.Skills, the default: the registry as it is now, asked once
//     per working directory and name per replay, so the output is
//     deterministic even while files change. Does today's processor, with
//     today's skills, still say what was said? Options.CwdMap replays
//     recordings made under other paths.
//   - Options.Recorded: the skills captured in the recording (one snapshot
//     per working directory, taken at export).
//   - Options.AsRecorded: every trigger against the skills the session saw
//     at that point, as the recording shows them. A pre-step gets the
//     entries (names and descriptions) of the catalog it appended, or,
//     when it appended none, of the newest catalog of ours before it (the
//     processor found that view unchanged), or none when nothing was ever
//     listed. A skill call gets the tool result it got (the loaded body,
//     provider and resource base, or the unknown, not-invocable or
//     provider error), else the newest earlier result for that skill, else
//     the captured skills, else unknown. A skill search gets the matches
//     it got (the skills its result shows, their total, or its provider
//     error), else the captured skills, else none: the recording does not
//     hold every candidate a ranking needs, so the ranking stands as
//     recorded and the rest of the search (argument checks, the entries,
//     the text) is the processor's. A search ranked with learned terms
//     that recorded them (learnedTerms) is ranked again, over the
//     captured skills of its working directory when the recording has
//     them, with exactly those terms (search.Index.SearchWith): its page
//     is rebuilt, not copied; recorded terms no search could have made
//     are that step's difference, with a note naming what is wrong. A shortened catalog (by the size
//     limit, or for search) names how many skills it left out, not which,
//     and the size limit lists some entries without their description
//     (their line, "- `name`", tells them from a skill without one,
//     "- `name`: "; a change list's are read back from its chain): as
//     many placeholders, at least as long as any skill can be, stand in
//     for the skills left out, and an entry listed bare gets the longest
//     description there can be; the placeholders rank lowest and the bare
//     entries next, so the step's options (search offered or not, told by
//     its tool view) shorten the stand-ins exactly where they shortened
//     the real skills, and every catalog and change list is rebuilt
//     exactly. No length, count or source of the real skills is needed:
//     a stand-in no shorter than what it stands for does not fit where
//     that did not, and once it is given up the rest is exact. An
//     unchanged processor then
//     reproduces every recorded output even when skills were added,
//     edited or removed during the session: the regression check for a
//     processor upgrade, where any difference is the processor's. Store
//     revisions a recording names (a catalog's source.view, a result's
//     value.revision) are not consulted: what the recording shows stands
//     for them, and the revisions of a release it records (a catalog's
//     source.origins, a result's value.rev and channel) are given to the
//     skills shown, so that they replay as recorded. A body the instruction size limit cut is stood in
//     for by its kept prefix and filler up to its recorded total, so the
//     limit cuts it again the same way.
//
// The same recording and skills always give the same steps.
//
// # Releases
//
// A catalog record names the store revision and channel of each entry it
// carries (source.origins), a skill result those of the skill it loaded.
// A replay compares them as it compares text: when both sides name
// revisions and the text is the same, other revisions make the step
// differ, and its Diff shows the recorded and replayed ones (Outcome's
// Origins, Rev and Channel; OriginsText). Against Options.Skills every
// query is the session's, as the processor's was: history.InCohort with
// Options.Tenant and the session id places it in the same canaries of the
// skills' releases (Memo asks for them once per query), so a replay
// against an unchanged release state is served the recorded revisions.
//
// Many replays against the same skills (package eval) share them through
// Memo, asked once per working directory and name for them all, and one
// search index of them (NewIndex, Options.Index) instead of one each.
//
// # History
//
// With Options.HistoryOnly nothing is replayed: each pre-step's Step carries
// Seen, the catalog the model saw at that step (the newest visible one after
// the step's output, compaction masking and keep lists applied), Published,
// and the compaction in force; a search's Step carries its query and the
// value its result recorded (Search: the skills shown, the total), a skill
// call's Step its skill name and recorded outcome.
//
// Deltas turns those Steps, fed in order, into one Delta per pre-step:
// what changed in the list the model saw against what it saw at the
// previous step (entries added, removed, with a changed description, newly
// without one, a new order, a new count of skills not listed), and the
// searches, skill calls and /name invocations made in the step, with the
// revisions not served from stable (Delta.Revisions, Load.Rev and
// Channel). When a
// compaction since the previous step hid the catalog the model saw, the
// model has no list of ours but the one visible now: the Delta says which
// catalog was hidden, counts the visible list's entries as added (against
// nothing) and compares it with the hidden one apart (SinceHidden). A
// description the size limit dropped is recorded as an empty one, as is
// that of a skill without one: both count as without a description.
//
// # Left to the caller
//
// Choosing the registry (the same configuration as serve: the same skill
// flags give the same skills and the same model text),
// printing, exit statuses, and where sessions are read from.
package replay
