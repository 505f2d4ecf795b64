// Package store is the skill store: skills shared by every member of a
// fleet, kept in the same NATS system as the sessions. It is the only
// adapter of the store's JetStream buckets that publishes and serves
// catalogs; the layout it reads and writes — buckets, keys, digests,
// objects, unpacking and materialising — is package skillstore's, which
// worker clients share.
//
// The index is a key-value bucket (default SKILLS) with one key per scope
// and skill (skillstore.Scope.Key) whose value (a JSON Record) holds the
// skill's summary, invocation flags, digest and object name. The files are
// an object store (default SKILLS) holding one archive per skill, named by
// the skill's digest, so an object never changes and earlier revisions
// stay readable as long as the index keeps them (its history depth). Index
// keys whose name the catalog refuses are not listed.
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
// The buckets' identity is checked every second: their names and
// creation times make an epoch, reported with the revision
// (providers.Epoched); buckets deleted and created again (or taken back
// to lower revisions by a restore) are loaded again from scratch, and
// revisions of two epochs are never compared. An index value that is not
// a valid record keeps the key's last good revision listed, and so does a
// record whose description or whenToUse is longer than a push publishes
// (1,024 characters each); a record whose object is missing, damaged or
// another skill's is not listed. Each object is read once per digest (the
// skill it defines is remembered and compared with every record naming
// it), at a bounded rate of bytes per store (Config.VerifyBytes): records
// wait for their turn. Objects that are links are refused before they are
// read. Warnings are rate limited per key and per store (20 lines a
// minute, then one line counting what was left out) and all counted
// (Config.OnWarning).
//
// A store is bounded as a whole (Config.MaxSkills, Config.MaxSummaryBytes:
// 10,000 skills, 16 MiB of names, descriptions and whenToUse texts by
// default). Over either, its view is dropped: List offers nothing and
// Load finds nothing, while the registry's other providers are listed as
// before; the provider keeps no text and reads no object of it, logs at
// error level once, counts "over_bounds", and reports it (Bounds, and a
// diagnostic for operators). Back within its bounds, it loads the index
// again and lists it. Every member decides from the same index, so they
// agree.
//
// Publisher is the publishing side (`skillstream skills`): Push writes only
// skills whose digest changed, each write conditional on the revision it
// read, so racing publishers never overwrite each other silently. It
// publishes only what belongs to a skill (ReadSkillWith): never version
// control folders, hidden files only when asked, each file read only
// while it is the one listed. Its digest covers exactly what it publishes:
// by default the files the filesystem provider digests (hidden ones left
// out), so a folder pushed and served from disk has one digest; with
// hidden files asked for, they are in the digest too. It refuses what
// validate refuses, with the same reasons (agentskills.Document.Check).
// Collect (`skills gc`) removes the objects no revision the index still
// holds names, which nothing else ever deletes.
//
// A skill's revisions are numbered from 1 in its own history (At,
// Record.Rev): each publication records the number after its key's newest
// kept entry, so numbers do not shift when the bounded history drops the
// oldest; removals and records written without a number are numbered from
// their neighbours. The store revision, the index's sequence
// over every key, stays beside it (Change.Revision, Published.Revision,
// Revision.Revision): it is what read-your-writes compares.
// Publisher.Materialize writes a skill's files to a directory atomically
// and read-only (skillstore.Materialize), for `skills get`.
//
// Releases and pins are keys of the index beside each skill's, which
// are not skills: readers that know only skill keys skip them as keys
// outside the layout (and serve the skill's newest revision to every
// session), and the provider never reports them as bad skill keys.
// "release.<skill key>" (a ReleaseState, JSON) holds a release in
// progress: channel draft or canary, the canary's share of sessions, the
// stable revision and the candidate (by number, store revision and
// digest). "pin.global.<name>" and "pin.project.<id>.<name>" (a
// PinState) hold the sessions of the whole tenant, or of one project, at
// one revision, of the global skill or the project's own. The provider
// reads the revision each names from the skill's kept history once, by
// store revision, when the key changes (never per session), and answers
// from memory: a pin beats everything (a project's pin beats the
// tenant's, channel pin); with a release, the newest revision goes to the
// sessions whose Query.Canary names the skill when the release is a
// canary and names it as candidate (channel canary), the stable revision
// to the others (channel stable; a skill new in the release to nobody
// else), and a newest revision the release does not name as candidate to
// nobody; without, the newest revision is stable for all. List and Load
// answer alike for one Query, and every listed skill carries its
// Summary.Origin (number, digest, channel). Releases lists the canaries
// for a registry's cohorts; a change of a release or pin key closes the
// change channels it affects, so every member's views refresh. A value
// that is not one skillstream writes (DecodeRelease, DecodePin) is
// ignored with a warning, what was known of the key kept; so is a new
// release or pin once the store holds Config.MaxSkills of them, so that an
// index writer cannot grow what every member keeps. Publisher
// writes them: PushWith with Draft (the release entry first, then the
// revision, so an interrupted push exposes nothing), Release, Promote,
// Rollback (which ends a release in progress), Pin, Unpin and Status;
// each write is conditional on the key's revision read, and a lost race
// is an error wrapping ErrChanged with the store unchanged.
//
// A tenant's pin of a shared library's skill is a key of the tenant's own
// index, "pin.library.<name>" (a PinState of the library skill's
// revision; LibraryPinKey): the tenant's store ignores it, and the
// tenant's library provider, opened with Config.TenantPins (that index),
// follows those keys, reads each pinned revision from the library's kept
// history (checked as any record) and serves it to every session of the
// tenant ahead of the library's releases and newest revision (channel
// pin); a pin it cannot read is logged and the skill served unpinned.
// Publisher.PinLibrary and UnpinLibrary write them, the revision checked
// against the library's history.
// The index key "trust.policy" (a TrustPolicy, JSON; not a skill's key,
// skipped by readers of skills and never reported as a bad skill key)
// holds the store's trust policy: the publishers' public keys trusted,
// what is required of a revision (RequireOff, RequireWarn,
// RequireSigned) and, in a tenant's store, whether the keys the library's
// own policy names are trusted for the library's skills. A revision may
// carry a signature (Record.Signature, written by PushWith with
// PushOptions.Sign) over a statement rebuilt from the key it is read
// under (scope and name), its digest and its summary (SummaryDigest):
// see skillstore's signatures. Under RequireSigned a revision that is not
// signed by a trusted key, or whose signature does not verify, is not
// offered: the newest trusted revision the key's history keeps is (or
// none), as lastGood does for malformed values; under RequireWarn it is
// offered; under both it is reported (a rate-limited warning of kind
// "untrusted", Untrusted, Diagnostics, Status.Trust). Signatures are
// checked when a record is decoded, before it is listed (also with
// LazyVerify, which defers only the objects). A change of the policy
// ends the watch and loads the index again under it, so every member
// judges every revision alike within seconds; a library's provider
// (Config.Tenant) follows its tenant's policy the same way. A policy
// value that is not one skillstream writes (DecodePolicy) is ignored, the
// last valid one kept. Publisher.ChangePolicy writes it conditional on
// the revision read.
//
// The policy also revokes (TrustPolicy.Revoked: at most MaxRevoked
// publishers' keys and as many digests). Whatever the requirement, even
// RequireOff, a revision whose digest is revoked or that is signed by a
// revoked key is never offered, through the index, a release or a pin:
// the skill's newest revision the history keeps that is not revoked (and
// trusted, under RequireSigned) is offered in its place, or none. It is
// reported as a warning of kind "revoked" (Untrusted with Revoked set,
// Diagnostics, Status.Trust.Revoked), and the skills withheld for it
// alone are named to the registry (Revoked, providers.Revoker), whose
// views carry them so that the catalog record that drops them says why.
// A library's provider applies its own store's revocations and its
// tenant's.
//
// Config.Pins opens a view of the store in which named skills stay at a
// given revision (read from the kept history, their objects checked as a
// load checks them), ranked where the scope's skills rank, or absent for
// a revision that is a removal: what `eval --skill-revision` judges.
package store
