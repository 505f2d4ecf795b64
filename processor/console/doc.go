// Package console is the operator console: web pages where a platform
// team sees one tenant's skills, usage, sessions and fleet, and steers
// its skills (roll back, release, promote, pin).
//
// The skills pages list every skill of the tenant (its store's, every
// scope; the library's; the folders' the registry offers) with its
// release, pin and signature state, size and estimated tokens (bytes /
// 4) and, with the usage projection, its last use and loads of the
// last 7 days. A skill's page lists its revisions with who pushed them
// (the audit trail), diffs any two side by side, and plots its loads
// and errors by the hour. An operator's roll back, release, promote, pin
// and unpin is a GET confirmation first, showing the blast radius (the
// sessions with a pre-step in the last 15 minutes, read from the
// sessions stream within a bound; a release's share of them), then a
// POST that calls the same store methods as the skills commands and is
// claimed in the audit trail as the console's connection's.
//
// It is a front door like the MCP server: it reads the registry, the
// skill store, the usage projection and the session log through the
// same packages the processor and the commands use, and never holds a
// second copy of their rules. Pages are server-rendered html/template
// with plain links and forms; the one script is the vendored chart
// library and a small file of our own that draws its plots from JSON the
// page carries. Nothing is fetched from another origin.
//
// The usage page plots the projection's series by the hour or the day
// (projection.ReadSeries: the points skillstream usage --by prints), in
// total and for a picked skill, split by store revision and channel
// where releases served it, with the skills listed and never used as a
// table sorted by query. The sessions pages read a session's log as
// skillstream history, export and replay --live do (processor/replay):
// its timeline, the exact text shown at a step, the recording as a
// download, and a replay against today's skills. A session id from a URL
// is checked against the stream's layout, and every read is bounded.
// With partitioned sessions (Sources.Place and Sources.Partitions) a
// session is read from the partition its id places it in, and what
// reads every session (the recent sessions, the live count, the usage
// projections, the fleet's streams) reads every partition.
//
// Safety: every string a skill controls (names, descriptions, bodies)
// reaches the page through html/template's contextual escaping; the
// Content-Security-Policy allows scripts from the console's own origin
// only (no inline script); every state-changing request needs the signed
// session's CSRF token and an Origin (or Referer) of the console's own
// host; a request naming a Host the console was not started with is
// refused; bodies and queries are bounded. People sign in with a
// console token (viewer or operator) and get a signed, HttpOnly,
// SameSite=Strict cookie; a console serves one tenant and holds only
// that tenant's sources, so it cannot show another's data.
//
// Serving: New makes one tenant's console (an http.Handler under its
// Base); NewMux serves several on one listener, each under /<tenant>/
// and made once its sources are there (serve's processors started), the
// root naming none; Tokens decides a console's tokens (a random operator
// token only on a loopback address) and Serve runs the HTTP server with
// bounded timeouts. The fleet page asks the members of the tenant's
// group, over the tenant's connection, for their service info and each
// for its view, and reads the usage projection's lag and the sessions
// stream's and account's use; what members say of themselves is bounded
// and escaped like a skill's text.
package console
