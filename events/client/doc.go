// Package client is the agent worker's side of skillstream: it appends a
// session's triggers to the session stream and waits for the processor's
// answers. A worker does not need the processor package (or its
// dependencies) to use it.
//
//	c, err := client.Connect(nats.DefaultURL)
//	...
//	tools := []events.Tool{{Name: "bash", Owner: "my-agent"}, client.SkillTool("skillstream")}
//	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
//	d, err := c.PreStep(ctx, events.PreStep{Session: "s1", Step: "1", Cwd: dir, Tools: tools})
//	if d.Catalog != nil { /* append d.Catalog.Text to the model's context as a user message */ }
//	r, err := c.CallSkill(ctx, events.SkillCall{Session: "s1", Call: "c1", Args: events.SkillArgs{Name: "pdf"}})
//	// hand r.Text to the model as the tool result
//
// When the processor runs with user invocation, pass the user's new
// message in PreStep's UserText: the skills it invokes by /<name> come back
// in the Decision (Invocations gives their text and value, and the names
// that invoked nothing). Add the user's message, the catalog, then each
// invocation's text to the model's context, in that order.
//
// # Skill search
//
// A processor started with --skill-search serves a second tool,
// skill_search, for fleets with more skills than a catalog can usefully
// list. ToolDefinitions returns every tool the processor serves (the
// skill tool, then skill_search when it serves search): register them all
// with the model, and put both in the tool view, SkillSearchTool beside
// SkillTool. Only then is search offered to the session, and its catalog
// may list fewer skills, ending with a line that says how many more
// skill_search can find.
//
//	tools := []events.Tool{client.SkillTool("skillstream"), client.SkillSearchTool("skillstream")}
//	...
//	// the model calls skill_search with {"query": "rotate the logs", "limit": 4}
//	r, err := c.SearchSkills(ctx, events.SkillSearch{Session: "s1", Call: "c2",
//		Args: events.SearchArgs{Query: "rotate the logs", Limit: int64(4)}})
//	// hand r.Text to the model; r.Search holds the matches, typed
//
// SearchSkills is a request like CallSkill, answered and recorded with a
// tool result keyed by its call id. Pass the arguments as the model gave
// them, leaving out those it left out: the tool judges them, and invalid
// ones come back as a result for the model ("Error: invalid search
// arguments: ...", IsSearchArgsError), not as an error. A page of matches
// ends with a line telling the model the offset of the next page when
// there are more; no match is a result too (r.Search with no Results). A
// processor that does not serve search answers ErrRejected.
//
// # How a request travels
//
// Each request (PreStep, CallSkill, SearchSkills) publishes its trigger with
// JetStream on <prefix>.<session>.<kind> with two headers: Content-Type
// (msgpack by default, JSON with WithEncoding) and Reply-Inbox, a subject
// under the client's one inbox subscription. The processor appends its
// output, then answers on that inbox over core NATS. The request's context
// deadline becomes the trigger's deadlineMs: a processor that gets the
// trigger later appends nothing and answers "expired".
//
// Answers over core NATS can be lost (a reconnect, a processor restarting).
// When no answer came within the retry interval (WithRetryInterval), the
// client publishes the trigger again as a new message: same payload, same
// Reply-Inbox, a new Nats-Msg-Id, since a repeated Msg-Id would be dropped
// by the stream's duplicate window. A trigger's Msg-Ids are
// <trigger id>-<attempt>, the trigger id being 128 random bits drawn once
// per request: nothing of the session or step is in them (JetStream tells
// any publisher the stream's last Msg-Id), and no other worker can predict
// one and take it first. The processor treats the repetition as the same
// trigger (same session and step or call id in the payload) and answers
// with the output it already appended, so retries never append twice. An
// answer to any attempt completes the request. It goes on until the
// context ends or WithMaxAttempts is reached (ErrTimeout).
//
// An answer is accepted only when its session and step or call are the
// request's and its triggerSeq is the stream sequence of one of the
// request's publications, learned from their JetStream acknowledgements
// (an answer arriving before its acknowledgement is held until it
// comes). Anything else on the inbox is dropped and counted
// (DroppedAnswers): a forged or misdirected answer is never returned.
//
// # Permissions
//
// Where workers are untrusted, each connects as a NATS user of an account
// of the workers' own that may subscribe only under an inbox prefix of its
// own and publish only its triggers (cmd/skillstream/deploy/nats-server.conf
// is such a set). The default materializer reads store skills with two
// read-only direct gets of the object store's stream and nothing else
// (skillstore.Direct). WithInboxPrefix makes the
// client create every inbox under that prefix: Connect sets it on the
// connection it opens (nats.CustomInboxPrefix); New wants a connection
// opened with it. WithUserInfo gives Connect the user and password (the
// shipped files' workers take "_INBOX.<user>" as their prefix, as the
// example worker does with SKILLSTREAM_USER).
//
// With the owner session layout (serve --session-layout owner,
// WithLayout(events.LayoutOwner)) a session id names its owner too:
// "<owner>.<sid>", say "worker-a.7f3a...", as the Session of every payload
// and the sid of Append, and the client publishes on
// <prefix>.<owner>.<sid>.<kind>. The server can then allow each worker its
// own sessions only (publish permissions on <prefix>.<owner>.*.<trigger
// kind>; cmd/skillstream/deploy/owner-layout.conf). The processors then
// answer a session's triggers only on its owner's inboxes, under
// _INBOX.<owner>.: give the client WithInboxPrefix("_INBOX.<owner>") (serve
// --any-owner-inbox lifts this where one client serves several owners). A
// client without WithLayout refuses such ids, and one with it refuses
// one-token ids, before anything is sent.
//
// Compact appends a context.compact event; it has no answer, the JetStream
// acknowledgement confirms it. A Decision's CatalogSeq names the catalog
// the model sees: keep it in the compaction (Keep) and the next pre-step
// re-sends nothing. With change lists (serve --catalog-updates changes)
// the list the model sees may be made of several records, a full catalog
// and the change lists after it: the Decision then names them all
// (CatalogSeqs) and carries the whole list (CurrentList), and
// CatalogKeep(d) is what to keep, every record of it.
//
// # Errors
//
// Match errors with errors.Is: ErrTimeout (no answer), ErrClosed,
// ErrRejected (malformed trigger; *RejectedError holds the answer),
// ErrExpired (past its deadline), ErrUnavailable (the processor gave up),
// ErrTooLarge (a catalog too large for the answer: read it from the log),
// ErrMaterialize (store skill files). Invalid input (a bad session token,
// a missing step) fails before anything is sent, with an error matching
// events.ErrBadPayload. Answers the model should see — an unknown skill, an
// invalid name — are not errors: the ToolResult has IsError set and its
// Text is what to show.
//
// # Store skills
//
// A call that names a ResourceDir gets, for a skill of the skill store, a
// resource base directory <resourceDir>/<name>/<first 16 hex of digest>.
// The client computes that path itself from the call's ResourceDir, the
// result's skill name (which must be one the store accepts: a single path
// element, see skillstore.ValidName) and its digest; a result
// naming another path is refused with ErrMaterialize, never written to.
// Before returning such a result the client writes the skill's files there,
// so that the instructions and every file the model reads later come from
// one version: by default it fetches them by digest from the skill store's
// object store (WithSkillObjects) and writes them atomically and read-only
// (skillstore.Materialize; a second call for the same digest does nothing).
// WithMaterializer replaces that step. With WithTrustedKeys the client
// first verifies the signature the result carries (SkillValue.Signature)
// against those publishers' keys, over the skill's scope, name, digest
// and summary digest (skillstore.Trusted), and refuses an unsigned
// result, another key or a signature that does not verify with
// ErrUntrusted (and ErrMaterialize), writing nothing. The client does not
// know the store's revocations (a worker cannot read the trust policy): it
// relies on the processor, which never answers with a revoked revision;
// drop a revoked key from WithTrustedKeys too.
//
// # Fresh store skills
//
// A push returns before every processor has applied it. A worker that pushes
// skills and steps at once passes the token skills push printed
// ("<epoch>:<revision>", its --json output's "token"): WithStoreToken, or
// RequireStore after the push, makes every pre-step, skill call and search
// carry minStoreEpoch and minStoreRevision, so that it is decided on that
// push or a later one, or fails with ErrUnavailable (a processor that could
// not catch up within the deadline). A processor whose store's buckets were
// recreated since the push answers ErrUnavailable at once, saying so: push
// again and RequireStore the new token. Skills on a processor's own disk
// need no token.
package client
