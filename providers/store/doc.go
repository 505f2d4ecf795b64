// Package store is the skill store: skills shared by every member of a
// fleet, kept in the same NATS system as the sessions. It is the only
// adapter of the store's JetStream buckets.
//
// The index is a key-value bucket (default SKILLS) with one key per scope
// and skill — "global.<name>" for every session, "project.<id>.<name>" for
// sessions whose trigger names project <id> — whose value (a JSON Record)
// holds the skill's summary, invocation flags, digest and object name. The
// files are an object store (default SKILLS) holding one tar archive per
// skill, named by the skill's digest (see agentskills.Digest), so an
// object never changes and earlier revisions stay readable as long as the
// index keeps them (its history depth).
//
// Provider serves the store to a registry: it follows the index with a
// watch and answers snapshots from memory, without reading an object; a
// publish closes the affected change channels the moment it lands, on
// every member. Project-scope skills rank after project folders on disk
// and before custom folders; global skills after custom folders and before
// the user folder. While the watch is broken (NATS unreachable) List
// returns what it knew with an error, so snapshots are incomplete rather
// than empty, and a new watch reloads the index once NATS is back. Bodies
// are loaded by digest, verified, and cached by digest.
//
// Publisher is the publishing side (`skillstream skills`): Push writes only
// skills whose digest changed, each write conditional on the revision it
// read, so racing publishers never overwrite each other silently.
// Collect (`skills gc`) removes the objects no revision the index still
// holds names, which nothing else ever deletes.
// Materialize writes a skill's files to a directory atomically and
// read-only, for workers and `skills get`.
package store
