// Package processor is skillstream's stream processor: the only part of the
// system that talks JetStream. It consumes the triggers agent workers append
// to their sessions, appends its answers to the same session logs, and
// answers the waiting worker directly.
//
// # Setup
//
// Build a Processor with New over a NATS connection, a skill registry
// (anything with the Skills methods; *providers.Registry is the real one) and
// a Config, then call Run. Run provisions, serves, consumes until its context
// ends, then drains and returns nil:
//
//	p, err := processor.New(nc, registry, processor.Config{}, processor.WithLogger(log))
//	if err != nil { ... }
//	err = p.Run(ctx)
//
// Run begins with Prepare (provisioning and the size limit check below),
// which a caller may also call first, to have a bad configuration refused
// before it announces that it serves; Run then does not do it again.
//
// Ready is closed, and the function given WithOnReady called, only once
// the processor serves: its consumer's first pull request has reached the
// server, and the micro service (below), registered only after that, has
// answered a request of the processor's own on each of its endpoints, sent
// through the server. A worker told then that the processor serves (serve
// logs "skillstream serving" and its /readyz says ready at that moment,
// not before) never gets "no responders" for the tool definition. Before
// that, the processor also lists the skills and prepares the catalog of a
// session without a working directory (for two seconds at most), so
// that the first sessions after a start do not wait for a scan of every
// skill folder: at a thousand skills that scan and preparation take tens
// of milliseconds, which every session arriving meanwhile would wait for.
//
// Run as many instances as you like, on as many machines: they share one
// durable pull consumer, so every trigger is delivered to one of them at a
// time.
//
// # Provisioning
//
// At start Run makes sure of two things, unless Config.NoProvision is set:
//
//   - the stream (default SESSIONS): subjects <prefix>.> (default ev.>),
//     limits retention discarding the oldest messages, file storage,
//     AllowDirect, a duplicate window of at least two minutes,
//     Config.Replicas and three limits: Config.MaxAge, MaxBytes and
//     MaxMsgSize (by default 30 days, 10 GiB and 1 MiB). A missing stream
//     is created with them; an existing one keeps its other settings
//     (extra subjects, limits) and only gains what is missing: replicas
//     are raised to Config.Replicas but never lowered, and a limit is
//     applied only when it is configured (NoLimit lifts it), never by
//     default, so a processor upgraded onto an older stream does not
//     shrink it. StreamLimits says which limits the stream has and how
//     (created, applied, kept, infra-managed); a stream without a byte or
//     an age limit is warned about at start. The server reserves a
//     stream's max bytes in its JetStream storage: a server that cannot
//     (a small disk) refuses the stream, and the error says to configure
//     less.
//   - the durable pull consumer (default skillstream), filtered to
//     <prefix>.*.agent.pre-step, <prefix>.*.tool.call.skill and
//     <prefix>.*.tool.call.skill_search (<prefix>.*.*.<kind> in the owner
//     session layout, Config.Layout, whose session ids are
//     "<owner>.<sid>": every member of the group must use the same
//     layout, and one that finds the consumer filtered for the other
//     re-filters it and warns), with explicit
//     acks, Config.AckWait, Config.MaxDeliver and a back-off schedule
//     (AckWait doubling) for deliveries whose processor vanished.
//
// With NoProvision, stream and consumer belong to the infrastructure; Run
// checks them and fails with an error wrapping ErrNotProvisioned that names
// what is missing (the stream, the consumer, a subject, direct gets, a
// filter, explicit acks; the skill_search filter only when search is on).
// Their limits are the infrastructure's too: limits
// configured anyway are not applied, and a warning says so.
//
// A stream at its byte or age limit discards its oldest messages, of any
// session: old sessions lose their logs (export, replay and usage see
// what is left), and a trigger discarded before it was handled is never
// answered (its worker's retry is a new trigger). A session whose catalog
// was discarded has no catalog any more as far as the processor can read:
// its next pre-step gets a full catalog appended, as a new session's
// first does (a remembered head is found stale and the session read
// again; a discarded sequence a compaction keeps holds nothing), and a
// skill call runs the tool as usual.
//
// Partitioned sessions (events.PartitionOf) are N such streams: the
// processor of partition k is an ordinary Processor whose configuration is
// Config.Partition(k, N) (stream <stream>-<k>, prefix <prefix>p.<k>), and a
// member runs one per partition, sharing its registry and instance name.
// The NATS server's subject mapping (events.PartitionMapping) moves what
// workers publish on <prefix>.> to the partitions' subjects;
// CheckPartitionMapping probes that it does, and CheckPartitionStreams that
// the streams were made for N partitions.
//
// Once its consumer pulls, Run registers the NATS micro service
// "skillstream" (nats micro ls lists it) answering on
// skillstream.tool.definition with the skill tool's
// definition, and on skillstream.tool.definitions with every tool it
// serves (Definitions: the skill tool, and skill_search when search is
// on): JSON, or msgpack when the request says
// Content-Type: application/msgpack; and, for the other members of the
// group, on skillstream.view.<Config.Instance> with the catalog digest
// this instance sees for a query (see One view per session).
//
// # Flow of a trigger
//
// Each delivery goes to a worker pool of Config.Workers goroutines; while
// every worker is busy the instance stops pulling, so at most Workers
// triggers are buffered and Workers handled. A pre-step also takes its
// share of Config.InflightBytes, estimated from the size of the catalog
// the skills give now (it holds its session's catalog read back and, when
// it appends, the new one encoded): with catalogs of many skills that, not
// Workers, bounds the memory in flight. Slow work sends a progress
// heartbeat every AckWait/3, so a slow provider does not cause a
// redelivery.
//
// A pre-step (agent.pre-step):
//
//  1. Decode and validate: a payload larger than Config.MaxTriggerBytes
//     (64 KiB by default) is rejected on its length, before anything reads
//     it; the payload decodes (events), v is 1, required fields are there
//     and within their bounds, the payload's session is the subject's.
//  2. If deadlineMs has passed: answer "expired", append nothing. If our
//     skill tool is visible in the pre-step's tools, ask the registry for
//     the skills (once per trigger); a registry that implements Preparer
//     (providers.Registry does) hands back the snapshot already prepared
//     (entries and digest, catalog.Prepare) and keeps that until a skill
//     changes, so an unchanged pre-step builds neither entries nor digest.
//     Then wait for the pre-step's share of InflightBytes.
//  3. Read the session: one Direct Get multi-last request returns the
//     newest event of each kind a pre-step decides on (agent.pre-step,
//     catalog.append, context.compact), from one consistent state of one
//     replica. Its cost depends on those few kinds, not on the session's
//     length, the stream's size or what else the session holds (a skill
//     call reads tool.call.skill and tool.result the same way). The newest
//     sequence among them is the expectation of the append below: the
//     trigger is normally the session's newest event, and when the session
//     holds a newer event of another kind the append is refused and the
//     next attempt reads every kind (<prefix>.<sid>.>).
//     When this member knows the session's newest catalog and that catalog
//     has a head (a catalog of 16 KiB or more, see step 8), the read skips
//     the catalog's bytes: two small Direct Gets sent together return the
//     newest pre-step and compaction after the catalog, any catalog.>
//     record after it, and the head with the server's count of catalog.>
//     records following it. Only if they show the catalog still there and
//     still the newest is the remembered catalog used; otherwise (a catalog
//     deleted by hand, a purged session, a newer catalog of another member,
//     a stray record on catalog.>) the session is read as above. A member
//     learns a catalog's head when it appends the catalog or reads it in
//     full (head.go).
//  4. Find the newest catalog this processor published and can recognise
//     (producer = ToolOwner, text holding an <available_skills> block). A
//     foreign or malformed record is skipped by reading the previous message
//     of the catalog subject only (multi-last with up_to_seq), never by
//     scanning the session. Likewise for the newest readable compaction.
//     What each catalog record is judged to be is remembered by sequence,
//     so the newest catalog every pre-step reads again is decoded once.
//  5. Visibility: a catalog at sequence s is visible unless the newest
//     compaction (at c) masks it: visible iff s >= retainFrom, s is in keep,
//     or s >= c. When the newest recognisable catalog is masked, only a
//     catalog listed in keep can still be visible; those are read by
//     sequence. Steps 4 and 5 are package history's rule
//     (history.Session.Read), which replay runs too, over a recording: the
//     processor gives it the session's log as a history.Log whose newest
//     records come from the read of step 3 and whose other records are one
//     Direct Get each.
//  6. If the newest recognisable catalog answers this trigger already
//     (Causation-Seq is this trigger's sequence, or it was appended for the
//     same step), answer with it and append nothing: this covers redelivery
//     after a crash and a worker publishing the same step again.
//  7. Decide (history.Decide: catalog.DecideView) on the skills of step 2
//     (the tool not visible: complete and empty). When the decision is to
//     replace a catalog whose digest differs from ours, first apply the
//     view rule (see One view per session): it may catch up and decide
//     again, or answer "behind" or "diverged" without appending.
//  8. If the decision appends: publish catalog.append, its source.view
//     naming the store revision the skills of step 2 reflect (0 without a
//     store, or when the tool is not visible) and Config.Instance, with the
//     headers
//     Causation-Seq, Nats-Msg-Id (the keyed hash of
//     "<sid>:<step>:catalog.append", outputkey.go),
//     Nats-Expected-Last-Subject-Sequence (the last sequence read) and
//     Nats-Expected-Last-Subject-Sequence-Subject <prefix>.<sid>.>. If the
//     session moved on meanwhile (JetStream error 10071 or 10164), go back
//     to 3, at most Config.AppendRetries times. If the stream reports the
//     Msg-Id as a duplicate, the answer is the original record it names.
//     Every session given the same catalog gets the same text and source:
//     that part is rendered and encoded once (events.CatalogBody, kept by
//     digest, update kind and revision) and each record adds only its own
//     session, step and id. A catalog of 16 KiB or more is preceded by its
//     head (catalog.head: session, step, digest and view), appended with
//     the same expectation; the catalog then expects the head as the
//     session's last event and names it in its Catalog-Head-Seq header,
//     so nothing of the session lies between the two.
//  9. Answer: the Decision (events.Decision), to the Reply-Inbox header's
//     subject, over core NATS, in the request's encoding, and only then ack.
//
// With Config.Catalog.UserInvocation, a pre-step's userText is scanned for
// /<name> gestures (catalog.Gestures; more than MaxGestures is rejected
// before anything else) and, between steps 8 and 9, every gestured name is
// resolved by catalog.Invoke — the skill tool's own resolution, with the
// user's rule of who may invoke — and each invoked skill is appended as a
// skill.invocation after the step's catalog, in gesture order (invoke.go).
// Each has a Msg-Id hashed from session, step and name, and the step's
// invocations already at the end of the invocation subject are read back
// first, so a retry or a redelivery (also one interrupted between the
// catalog and the invocations) appends only what is missing and answers
// with all of them. Invocations are neither catalogs nor heads: the catalog
// history, the head reads and the view rule never look at them. A record
// carries the instructions once, in its text (its value leaves content
// out; events.SkillInvocation.WithContent reads either form alike).
//
// What a session's triggers make a member append is budgeted per session
// and per minute (outbudget.go): full catalogs sent again because a
// compaction masked the session's list (Config.CatalogResends), the bytes
// of the catalogs after its first (Config.CatalogBytes) and the bytes of
// invocation records (Config.InvocationBytes). Over it nothing is
// appended: the pre-step is answered "incomplete", reason over_budget, an
// invocation listed as ignored, reason over_budget.
//
// A skill call (tool.call.skill) follows the same steps: decode, validate,
// deadline, read the session, answer from the newest tool.result if it is
// for this trigger or this call id, otherwise run the skill tool
// (catalog.Execute, with the registry bound to the call's query by
// history.Lookup) once and append the tool.result with the Msg-Id hashed
// from "<sid>:<call>:tool.result" under the same optimistic concurrency, then
// answer with the events.ToolResult. Outputs are stored as msgpack,
// whatever the request's encoding.
//
// A skill search (tool.call.skill_search) is a tool call like a skill
// call, keyed by its call id the same way (one tool.result per call id,
// retries answered from the log, deadlines and minStoreRevision honoured);
// its work is catalog.Search against the search index handed in with
// WithSearcher, bound to the call's query. Its arguments reach the tool as
// the model gave them, so that a bad one is answered with the tool's own
// bad_request result, appended like any result. A processor without
// search (Config.Catalog.SkillSearch off) answers every search with a
// bad_request result saying so, appended for a readable call id, as it
// answers a malformed call. With search on, a pre-step whose tool view
// holds our skill_search tool beside our skill tool is offered search
// (history.Offer): its catalog is prepared with catalog.Options.SearchOffered
// and so lists at most Config.Catalog.ListedMax skills, whole, with a
// notice pointing to the search; members asked for their view of such a
// session (One view per session) are asked for the offered one.
//
// With Config.Catalog.Rank catalog.RankUse and a Ranker (WithRanker: the
// tenant's loads, read in the background), a session's catalog keeps its
// most used skills (see catalog.PrepareRanked; rank.go): the ranking is
// taken at the session's first catalog, recorded in each catalog's
// options (the use of the skills it lists, when that prepares the same
// list), and kept until the session's skills change. With a
// VersionedRanker and a registry, a ranked view is kept with the
// snapshot, by options, session list and use version, so an unchanged
// pre-step ranks nothing. Members compare their views by name, as
// without it.
//
// Releases. Every query a trigger asks the registry (a pre-step's
// skills, a skill call, a user invocation, a skill search) is the
// session's: history.InCohort sets its Canary from the registry's
// releases in progress, Config.Tenant and the session id (cohort.go), so
// that a session in a release's canary is listed, loads and finds the
// candidate, and every other session the stable revision. Without a
// release the query is unchanged: one Releases call, the same cached view.
// The evidence travels in the records, never in the model's text: a
// catalog's source.origins names each store skill entry's revision and
// channel (history.CatalogOrigins; catalog bodies are kept apart by them,
// so two sessions shown the same text from different revisions each
// record their own), a skill result's value (or, when its name resolved,
// its error) the revision loaded, and a load's Usage-Summary header the
// same, for the usage projection.
//
// # Stages and files
//
// Every trigger goes through the same stages, whatever its kind; each stage
// has its file.
//
//   - consume.go: the pull loop, which hands each delivery to a free worker
//     and hands back what arrives while stopping, and its watchdog: pull
//     requests carry idle heartbeats, and requests that fail or go
//     unanswered for Config.PullStallAfter (or a deleted consumer) are
//     warned about, counted (pull_restarts_total) and answered by looking
//     the consumer up again, creating it anew when it is gone and
//     provisioning is on (a wait for a free worker past that bound is
//     logged: load, not a stall); acknowledgements (settle); the progress
//     heartbeats of slow triggers.
//   - trigger.go: one delivery from start to fate. It reads the envelope
//     (metadata, subject, Content-Type, Reply-Inbox), looks up the handler
//     of the subject's kind once, runs it, counts and sends the reply it
//     returns, and acks, terms or naks by the table in fate.go.
//   - prestep.go and skillcall.go: the two kind handlers. A handler decodes
//     and checks its payload, does the kind's work, and says how its kind
//     is answered when rejected, given up or too large, and under which
//     metrics label it is counted. Nothing else looks at a trigger's kind;
//     a kind the processor does not consume has a handler that answers
//     nothing, and the delivery is acked.
//   - session.go and read.go: reading a session, that is the
//     multi-last Direct Get of step 3 and the indexed reads package history
//     asks for (steps 4 and 5), over one shared reply subscription.
//   - append.go: the one append loop both kinds go through (steps 3 to 8):
//     read the session; answer from the log when the answer is already
//     there; build the output; check the deadline; append under optimistic
//     concurrency, going round again on a conflict; on a duplicate Msg-Id,
//     answer with the original read back. The kind supplies the parts that
//     differ: what counts as its answer already in the log, how its output
//     is built (a pre-step decides again on every view it reads, the view
//     rule included; a skill call runs the tool once, however many
//     attempts it takes), what to do once it is appended (a pre-step
//     remembers its catalog as recognised), and its expired answer.
//   - answer.go: replies to the worker's inbox, rejections, and the answers
//     to triggers given up or too large.
//
// Around them: processor.go (New, Run), view.go (one view per session),
// memo.go (catalogs recognised), head.go (catalog heads), budget.go (bytes
// in flight), limits.go (output size), provision.go, tooldef.go, config.go
// and metrics.go.
//
// # Guarantees
//
// One output per trigger. A redelivered trigger, a trigger whose processor
// crashed between append and ack, and a worker's retry of the same step or
// call (a new message) all find the output already appended and are
// answered with it. Two copies handled at the same time by two instances
// race on the append: the expected-last-sequence check refuses the loser,
// which re-reads and finds the winner's output; and both carry the same
// Msg-Id, so the stream's duplicate window refuses a second output even for
// parallel calls of one session whose results interleave.
//
// An output's Msg-Id is an HMAC of its id (session, step or call, kind)
// under a key kept in the stream's metadata, and nothing else: JetStream
// tells any publisher the stream's last Msg-Id (in the refusal of a
// mismatched Nats-Expected-Last-Msg-Id), so no Msg-Id may show a session
// id. Nothing reads a session, step or call out of a Msg-Id; for one
// duplicate window after an upgrade from the older form
// ("<id>/<HMAC>"), outputs are also looked for under their older ids
// (outputkey.go).
//
// Decisions are linearisable per session: an append only succeeds if
// nothing was added to the session since the read it was decided on, so a
// lagging replica answering the read can cost a retry, never a wrong
// catalog.
//
// Nothing is appended past a trigger's deadline; the deadline is checked
// before every append (an append that started just before it completes and
// is reported truthfully).
//
// # Failures and acknowledgement
//
// One table, fateOf, decides what happens to a delivery:
//
//	answered (any append is durable)  → Ack
//	malformed input                   → Term, after a "rejected" Decision or a
//	                                    "bad_request" ToolResult
//	panic while handling               → Term, answered "unavailable"
//	output too large for one message   → Term, answered "too_large" (permanent:
//	                                    the same trigger gives the same output)
//	output evicted by the stream's     → Term, answered "unavailable" (its Msg-Id
//	limits before it was read back        still names it: a second output would
//	                                    break exactly-once)
//	anything else (NATS timeouts, ...) → NakWithDelay (NakDelay doubling,
//	                                    at most AckWait); at the last delivery
//	                                    (MaxDeliver): dead letter
//
// Malformed input is undecodable bytes, a payload over Config.MaxTriggerBytes
// (reason too_large; its step or call id is not read, so nothing is
// appended for it), wrong field types, missing fields, a field past its
// bound (events: ids, paths, tools, userText), v other than 1, a payload
// session that differs from the subject's, a subject whose session token
// is invalid, an unknown Content-Type, or a Reply-Inbox one cannot publish
// to. Each is terminated (never redelivered), counted by reason
// (skillstream_rejects_total), logged once, and answered where an inbox is
// known. A skill call whose call id is readable also gets a bad_request
// tool.result appended to its session, so the model's tool call has a
// result; nothing else is ever appended for bad input. A panic is
// recovered per message and counted.
//
// A dead letter is a trigger that still fails at its last delivery. It is
// terminated, counted (skillstream_dead_letters_total), logged with its
// last error, and answered if it has an inbox: a pre-step with outcome
// "incomplete" (the model keeps what it was shown; the next pre-step tries
// again) and error code "unavailable", a skill call with an error result of
// code "unavailable" that is not appended.
//
// # Output size
//
// Every output must fit in one message of the stream. The largest message
// is the smallest of events.MaxPayloadSize (1 MiB), the server's maximum
// payload and the stream's maximum message size (headers included). At
// start, once the stream is known, Prepare refuses (ErrInvalidConfig, with the
// numbers and the largest value that fits) a catalog size limit or an
// instruction size limit (catalog.Options) whose largest output could
// exceed it; a limit of 0 (none) is accepted with a warning.
//
// An output that still does not fit is a permanent condition, never
// retried: a pre-step is answered at once with outcome "incomplete" and
// error code "too_large", nothing appended, and terminated; a skill call
// gets a "too_large" error result, appended and answered. Both are counted
// (skillstream_outputs_too_large_total{kind}) and logged at error.
//
// A tool result's value.content holds the instructions as the model reads
// them. It is left out when the result would not fit in one message with
// the instructions carried twice; the content is then the part of text
// between the first "<skill_instructions>\n" and the final
// "\n</skill_instructions>\n</skill_content>" (text is the contract). A
// reply that does not fit in its encoding (JSON escaping can make it
// several times the size of the msgpack output appended) is sent without
// value.content, or without the decision's catalog, or as a too_large
// error pointing at the session log.
//
// # One view per session
//
// The members of a consumer group do not always see the same skills: a
// skill store publish reaches each member's watch at its own moment, a
// restarted member starts from a cold cache, and a member may be
// misconfigured with local folders the others lack. Left alone, two such
// members would replace each other's catalog at every step of a session
// they share. So every catalog records the view it was decided on
// (source.view: the store revision its snapshot reflects, read before the
// skills were listed, and the instance that produced it), and before a
// member replaces a catalog with one of another digest it compares views.
// The unchanged path compares nothing and costs nothing more.
//
//   - The catalog reflects a newer store revision than our snapshot: we are
//     behind. Wait until our store has applied that revision (the trigger's
//     deadline and Config.CatchUpWait bound the wait), take a fresh snapshot
//     and decide again: usually the catalog is then unchanged. If we cannot
//     catch up in time, append nothing and answer "behind" (reason
//     store_revision_ahead); the next pre-step decides again. A view that
//     is older in store order never replaces a newer one.
//   - The catalog reflects an older revision, or it is our own: a real
//     change, replace it.
//   - Same revision, produced by another instance: the store cannot say
//     which view is newer (local folders, a cwd that exists on one host
//     only). Ask that instance, on its subject skillstream.view.<instance>
//     of the micro service and within Config.ViewTimeout, which catalog it
//     would decide now for the same cwd, project and resourceDir. It
//     answers with our digest (the change reached it too): replace. It does
//     not answer (gone, or too slow): replace. It is at a newer revision:
//     catch up as above. It still sees another digest at the same revision:
//     the views diverge. Append nothing, answer "diverged" (reason
//     member_sees_other_skills), and report it: one error log per cause
//     (both instances and digests, cwd and project), the gauge
//     skillstream_view_divergence at 1 while any divergence is unresolved,
//     and Divergences (serve lists them in its /readyz body). The session
//     keeps the catalog it has, so the model sees no alternation; the
//     operator makes the members' folders equal, or moves the skills to the
//     store.
//
// Revisions count within one epoch of the store's buckets (source.view's
// epoch: buckets deleted and created again, to change their history or
// replicas, have another). The comparisons above apply only when the
// catalog's epoch is ours. A catalog of another epoch: first check our
// buckets now (Refresh) and, when they were recreated and our snapshot is
// of the old ones, load them and decide again. Then, when the catalog is
// ours, or its producer does not answer, or answers that it serves the
// same store (ViewReply.Store): it is of an old epoch, replace it, once.
// When its producer serves another store configuration (another bucket,
// a store where we have none, or the reverse): append nothing, answer
// "diverged" (reason member_serves_other_store) and report a store
// divergence (Divergence.StoreDiffers; one error log per other member,
// the same gauge and /readyz listing), asked again until that member is
// gone or serves our store. Store divergences are also found without a
// shared session: at start and at every recheck each member asks the
// group's members (the micro service's INFO; its metadata names the
// consumer and the store) which store they serve. A revision our bucket never reached (a restore
// from a backup keeps the epoch but goes back in revisions) is replaced
// rather than waited for. A first step has no catalog to compare with and
// always gets ours.
//
// A divergence is resolved when a later replacement for the same instance
// and query finds agreement or no answer, and every 10 seconds each
// unresolved one is asked again, so the gauge returns to 0 without
// traffic. During a rolling update of local folders, the members that
// already changed see a divergence until the last one changed; each
// session then gets exactly one replacement.
//
// The view endpoint holds a request to a trigger's rules (cwd checked
// against Config.CwdRoots and required absolute, project and resourceDir
// validated), so it makes the processor read nothing a trigger could not;
// at most 16 requests are answered at once, more are answered "busy".
//
// # Change lists
//
// With Config.Catalog.Updates "changes" (serve --catalog-updates
// changes) a small change of a session's catalog appends a change list
// (catalog.DecideView decides, catalog.RenderChanges writes it) on the
// session's current list: its newest full catalog (the base) and the
// change lists after it. The history rule (processor/history) recognises
// a change list by its <skill_catalog_changes> block and its source
// (update "changes", a base before it, a digest), and counts it only with
// its chain: every catalog record between it and its base a change list of
// ours on that base, the base a full catalog of ours, each digest the one
// its changes give, and none masked by the newest compaction. A chain that
// does not hold leaves the list unknown, and the pre-step appends a full
// replacement, once.
//
// Reads stay what they were: a change list carries the digest of the list
// it leads to, so the newest catalog record still says "unchanged" with
// one comparison. A member reads a chain back once (chain.go: at most 15
// change lists and the base), remembers it per session, and at each later
// pre-step shows with one Direct Get that none of it was deleted (the first
// catalog.> record from the base's head, or the base, is the one it saw,
// and the server counts as many records after it). Lists are remembered by
// digest (a prepared view's entries, mostly), so the next diff does not
// read the base. The head read (head.go) covers change lists like any
// catalog. A change list is appended, retried, redelivered and checked
// against the view rule exactly as a replacement; a Decision whose list is
// made of several records names them (catalogSeqs) and carries the list
// (currentList).
//
// # Fresh skills
//
// A trigger may carry minStoreRevision, the store index revision its
// worker knows to exist (skills push prints it). Before deciding, a member
// whose store has applied less waits for its index watch (fresh.go), at
// most Config.CatchUpWait and stopping early enough to answer before the
// trigger's deadline. If it cannot, or follows no store, the pre-step is
// answered incomplete and the call unavailable (error code unavailable),
// nothing appended; an output already in the log for the same step or
// call is still the answer.
//
// Revisions count within one epoch of the store's buckets, so a trigger
// may also carry minStoreEpoch, the epoch push printed beside the
// revision. A member whose buckets are of another epoch checks them now
// (Refresh: recreated a moment ago, they may be the token's); if the
// epoch still differs, no revision of its buckets can meet the token,
// and the trigger is answered as above at once, the message naming both
// epochs, rather than after a wait or, worse, on a revision of other
// buckets that happens to be as high. Without minStoreEpoch the revision
// is taken to be of the current buckets. Skill folders on disk need no token: the
// filesystem provider applies every change its watcher has been told of
// before it answers (see package agentskills, "Fresh listings").
//
// # Metrics
//
// Registered on the Registerer given WithRegisterer (several instances in
// one process share them): skillstream_triggers_total{kind,outcome},
// skillstream_append_conflicts_total, skillstream_redeliveries_total{kind},
// skillstream_duplicate_triggers_total{kind},
// skillstream_provider_errors_total, skillstream_rejects_total{reason},
// skillstream_panics_total, skillstream_dead_letters_total{kind},
// skillstream_transient_failures_total{kind},
// skillstream_outputs_too_large_total{kind},
// skillstream_tool_definition_requests_total,
// skillstream_skill_searches_total{outcome} (found, no_match or the error
// code, per result appended),
// skillstream_view_checks_total{result}, the gauge
// skillstream_view_divergence and the histograms
// skillstream_stage_seconds{stage=read|decide|append|total} and
// skillstream_store_freshness_wait_seconds{kind,result}.
//
// # Left to the worker
//
// Workers publish triggers (with Reply-Inbox when they want an answer) and
// compactions, and read answers. Answers travel over core NATS and can be
// lost; a worker that gets none in time publishes the same step or call
// again as a new message (not under its first Msg-Id, which the duplicate
// window would swallow) and gets the same answer. A worker that appends
// to a session concurrently may use the same expected-last-sequence
// headers. Catalogs are user-role messages the worker places in the model's
// context in log order; tool results are ordinary tool results.
//
// Who may publish and read which subjects is the NATS permissions' to
// decide. The processor does its share: it answers only on a Reply-Inbox
// under Config.ReplyPrefixes, never on the stream's, the server's or its
// own subjects, nor under its connection's inbox prefix
// (Config.InboxPrefix, which no reply prefix may overlap), so a worker can
// neither make it publish where the worker may not nor name the
// processor's own inboxes; in the owner layout it answers a session's
// triggers only under <reply prefix>.<owner>. (unless
// Config.AnyOwnerInbox), the inboxes of the worker the server lets publish
// that owner's triggers (it cannot learn who published a stored trigger
// otherwise); a worker's cwd and resourceDir are bounded
// (events.MaxPathLength, events.MaxPathComponents) before they touch the
// file system; and what a trigger costs is bounded by its size
// (Config.MaxTriggerBytes, checked before decoding, so that a larger
// trigger costs the processor no more than its delivery) and by its
// fields' bounds (events: at most 1,024 tools; a skill name longer than
// 256 bytes is answered invalid_name quoting 64 bytes of it). What
// triggers make the server store is bounded by the stream's limits, not
// by the processor: a trigger it refuses is in the stream already. Each
// answer names its trigger's stream sequence
// (triggerSeq), which a worker checks against its publications'
// acknowledgements before it accepts the answer.
//
// # Limits
//
// After a conflict the session read returns the newest event of every
// subject of the session; a session with more than 1024 distinct subjects
// cannot be read that way
// (the triggers are retried, then dead-lettered). The worker-retry check
// after the duplicate window (two minutes by default) relies on the newest
// catalog or tool.result of the session: a retry that arrives later than
// that, and after a newer output of the same kind, is handled as new.
package processor
