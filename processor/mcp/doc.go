// Package mcp serves the skills of the registry to MCP hosts, as the MCP
// Skills extension (io.modelcontextprotocol/skills) describes, over
// Streamable HTTP (Handler, Serve) and stdio (ServeStdio). It is the only
// importer of the MCP Go SDK.
//
// # What is served
//
// The skills the skill tool would resolve for Config.Query, read through
// the same Registry (a *providers.Registry): the same sources, ranking and
// shadowing, enabled skills only, whether or not the model may invoke them
// (the frontmatter carries the flags; the host applies its policy).
// Nothing is written anywhere.
//
// Releases: the skill and skill_search tools answer a host's session with
// the revisions its cohort takes (catalog.Cohort of Config.Tenant and the
// MCP session id over the registry's releases), as the processor answers a
// session of its log; requests without a session (stdio, the stateless
// revision) share the cohort of the empty id. The listings (skills/list,
// resources, the tool description) are shared by every host and show each
// skill's stable revision.
//
// A skill is served at skill://<name>/<path>: skill://<name>/SKILL.md for
// its instructions, skill://<name> and skill://<name>/<dir> (no trailing
// slash) for its directories. Its entry (skills/list, skills/get) carries
// the URI of its SKILL.md, its frontmatter rendered verbatim as a JSON
// object (every key the author wrote, in order; scalars keep their YAML
// 1.2 meaning, timestamps stay strings), and a manifest of every file with
// its sha256 digest and size. A skill of more than MaxFiles files or
// MaxBytes bytes is not served, and the reason is logged once.
//
// # Methods
//
//   - skills/list: entries by name, a page at a time; the opaque cursor
//     names the last skill of a page and is signed with a key of this
//     process, so a cursor it did not issue is -32602.
//   - skills/get {uri}: the entry of the skill whose SKILL.md is at uri;
//     -32602 for anything else.
//   - resources/read: the current bytes of a served file, text when they
//     are UTF-8 (an empty file is text ""), base64 blob otherwise. The URI
//     must name a served file exactly; anything else (an unknown file,
//     "..", percent-encoded or backslashed paths, NUL, absolute paths) is
//     -32602 and nothing is read for it. The bytes come from the winner's
//     provider (a store skill from its object, verified by digest); the
//     files of recently read skills are kept by digest (64 MiB), so a host
//     reading a skill file by file makes the server read it once.
//   - resources/list: the SKILL.md of every skill, named and described by
//     its frontmatter.
//   - resources/directory/read {uri} (capability directoryRead: true): the
//     direct children of a skill directory, subdirectories as
//     inode/directory; -32602 for anything that is not one.
//   - tools/list, tools/call: the skill tool, for hosts without the
//     extension; its description carries the catalog, its result is the
//     text a session's tool call gets.
//
// The skill tool's description is catalog.DescribeTool's: the tool's own
// description and the initial catalog, shortened by the catalog size
// limit's rules until the whole description holds at most
// Config.ToolDescriptionMax UTF-16 code units (2,048 by default, what
// Claude Code keeps of a tool's description before it cuts the rest):
// whole entries only, the notice and every closing line intact. Under the
// budget it is the catalog unchanged.
//
// Its result is the session's, with one difference: a skill whose result
// names no resource base (a store skill: its files have no folder on the
// host) and whose files are served here gets the base of kind directory
// skill://<name>, the directory resource of the skill, so the result
// reads "Base directory for this skill: skill://<name>" and "Resolve
// relative paths mentioned by this skill against the base directory
// before using them." A path the skill mentions, resolved so, is the URI
// of its file (skill://<name>/refs/guide.md). The directory form, not the
// URL one, because the extension serves skill://<name> as the skill's
// directory and skills mention paths; a skill with a base of its own (a
// folder's path, the bundled skills' description) keeps it, and the
// session's skill tool is not changed.
//
// # Skill search
//
// With Config.Options.SkillSearch on, tools/list holds the skill_search
// tool beside the skill tool, with the catalog's definition
// (catalog.SearchToolDefinition), and tools/call of it answers with the
// text a session's search gets (catalog.Search; isError for its errors):
// the same index the processor searches (Config.Search, a
// providers/search index of the same registry) bound to Config.Query, so
// it follows the registry's changes as the catalog does. The arguments
// are read as JSON gives them and judged by the tool. A host is shown
// both tools, so search is offered to it: the catalog in the skill tool's
// description leaves whole entries out (never their descriptions), to
// Options.ListedMax entries and the size limit and the description
// budget, and ends with the notice that points to skill_search. With the
// option off the server and its texts are as they were.
//
// Results of the extension's methods carry resultType "complete" and the
// caching hints ttlMs and cacheScope.
//
// # Ready before the first answer
//
// A host may keep the first tool description it gets for the whole
// session. A listing (tools/list, resources/list, skills/list) that
// arrives before the registry's first complete snapshot is served waits
// for it, at most Config.ReadyTimeout (10 s by default). Past that it is
// answered with what has resolved, the server logs so once at warn, and
// no listing waits again. Until a complete snapshot is seen, the tool's
// description shows the skills resolved so far; after, an incomplete
// snapshot keeps the last complete description.
//
// # Changes
//
// Run follows the registry: each change a provider announces (or, for
// providers that cannot announce changes, a look every Config.Resync)
// rebuilds the entries of the skills that changed, and only those: a
// re-sync costs the registry's snapshot and, per skill, a look at what
// its provider keeps in memory (providers.Versioner, read with the
// snapshot), plus one read of the files of each skill that changed. A
// store skill is known by the digest of its record. A folder skill is
// known by the identity of its SKILL.md as the provider's listing last
// found it and, while the provider keeps the digest of the folder under
// a watch of its every file (it does for the folders it read, Load's
// and these reads alike, within its watch bound), by that digest: an
// edit of any file shows, even one that raises no change announcement,
// at the next sync. Past the bound (the oldest kept digests given up
// first) only edits of SKILL.md, or skills added, removed or renamed,
// are seen. A skill whose provider cannot tell (a folder read with
// watching off, holding a symbolic link or on another file system) is
// loaded, and read again when its digest changed, as every skill was
// before. A skill refused for what it is is looked at again at each
// sync. One skill of 1,000 folder skills edited costs about 16 ms to
// re-sync, of 10,000 about 0.16 s (mostly the snapshot: the provider
// lists the changed folder again), with one skill's files read, where a
// load of every skill made it 0.22 s and 3.5 s before
// (BenchmarkResync*). Sessions that receive
// notifications (2025-11-25 sessions, subscribed 2026-07-28 streams, stdio)
// get notifications/resources/list_changed, and tools/list_changed when
// the catalog in the tool's description changed, only when what they
// would now be answered differs from what they were last shown: the
// server remembers, per session, the tool description and the set of
// skills (each name and digest) of its last listing, or of the moment it
// was followed from. A session is followed from its
// notifications/initialized (none is sent before), a 2026-07-28 stream
// while it is subscribed; a stateless request is told nothing. So an
// event of the file watcher that changes nothing, a skill edited and
// edited back before a host looked, or the first snapshot landing before
// a host listed anything, sends nothing.
//
// # HTTP
//
// Handler serves both base revisions at Path: requests of the stateless
// revision (2026-07-28) go to the SDK's stateless handler; an initialize
// and the requests of its session to the stateful one. Before either, and
// before any routing (whatever the path: an unknown one is 404 only with
// the token), a request whose Origin is not a loopback or configured
// origin gets 403, and with a token one without "Authorization: Bearer
// <token>" gets 401 (compared in constant time); a body declared larger
// than MaxBodyBytes gets 413 at once. A request refused by these checks is answered with
// "Connection: close" and its connection closed without waiting for its
// body (net/http would otherwise read on, up to 256 KiB, for as long as
// the read timeout allows, before it could reuse the connection). An
// accepted request's body must arrive within BodyTimeout (10 s by
// default; 400 otherwise). The SDK refuses a non-loopback Host on a
// loopback listener (DNS rebinding). Serve refuses to listen on a
// non-loopback address without a token, bounds headers (16 KiB, read
// within 5 s: a client without the token holds a connection no longer
// than that) and bodies, and admits connections in two stages
// (listen.go): a connection no request has authenticated yet counts
// against its remote address (at most MaxUnauthenticatedPerAddr, 32 by
// default, an IPv6 /64 counting as one address) and against
// MaxUnauthenticated in all, one beyond either being closed as soon as
// it is accepted; only once a request on it is authenticated does it take
// one of the MaxConns slots (2,000 by default: an event stream and a
// request connection for each of MaxSessions' 1,000 sessions), a request
// finding them all taken waiting for one (at most 30 s, then 503). So
// clients without the token cannot take the slots of those with it. Every write of a response, event streams included (a
// session's GET stream, a POST answered as a stream), must complete
// within HTTPConfig.WriteTimeout (30 s by default), given anew for each
// 64 KiB: a client that stops reading has its stream ended and its
// connection closed then, instead of holding them, and the notifications
// queued behind the blocked write, for ever.
//
// # What the SDK does and what is written here
//
// The SDK speaks JSON-RPC, both revisions and both transports, sessions,
// the initialize handshake and server/discover, capability declaration,
// resources/list and its pagination, tools/list and tools/call, and the
// list-changed notifications (a sending middleware here lets them through
// only to the sessions they concern). Written here: the extension's
// methods
// (registered as custom methods, with resultType and caching hints set by
// hand, nil params handled), resources/read (the SDK's own answers to
// unknown URIs cannot always be encoded, and it drops the text of an
// empty file), the routing between the stateful and stateless handlers,
// the Origin and token checks, metrics and refusal logs.
//
// # Observability
//
// Every request is counted and timed by method
// (skillstream_mcp_requests_total, skillstream_mcp_request_duration_seconds);
// JSON-RPC errors are counted by method and code
// (skillstream_mcp_errors_total); HTTP refusals by reason
// (skillstream_mcp_http_refused_total); connections closed unserved by
// reason (skillstream_mcp_connections_refused_total: address,
// unauthenticated, slots) and those open by state
// (skillstream_mcp_connections: unauthenticated, authenticated). Each
// refused request is logged at debug.
package mcp
