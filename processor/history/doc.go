// Package history is the rule for what a session's log says about its
// catalogs, and the decision a trigger gets, written once: the processor
// runs it over the stream, replay over a recording. It is pure apart from
// reading the log through the Log interface (no NATS, no clock): it
// imports catalog and events only.
//
// # Reading a session
//
// A Log answers three questions about one session: its newest record of a
// kind (the kind is the last part of the subject, so this is one indexed
// read), the previous record of a subject before a sequence, and the
// record at a sequence. The processor answers the first from the one
// Direct Get multi-last read it makes per pre-step and the others with one
// Direct Get each; replay answers them from the recording as it was at
// some point. Session.Read asks only a few of them, whatever the session's
// length.
//
// # The rule
//
//   - Recognition: a catalog.append record is ours when it decodes, names
//     the session and our tool owner as producer, and its text holds the
//     <available_skills> block (Recognise, which also recomputes the
//     digest from the text). Anything else (another producer's catalog,
//     bytes that do not decode) is skipped by reading the previous record
//     of the catalog subject, never fatal. Session.Recognise lets a caller
//     remember judgements (the processor keeps them by sequence).
//   - Compaction: the newest compaction that decodes counts (older or
//     unreadable ones are skipped the same way). After it, the model sees
//     every event from RetainFrom on, the sequences in Keep, and the
//     compaction and everything after it; a catalog off that surface is
//     masked (Surface.Masks).
//   - Kept catalogs: when the newest recognisable catalog is masked, only
//     a catalog the compaction keeps can still be visible (every other
//     older one lies below RetainFrom too); the newest recognisable one
//     among the kept sequences below it is read by sequence.
//   - History (Of): published when any recognisable catalog exists;
//     visible, with its digest, when the newest one, or else the kept one,
//     is not masked. State carries this, the newest catalog (to spot a
//     trigger already answered: State.Answers), the catalog the model sees
//     (Seen) and the compaction.
//
// # The decision
//
// A pre-step's catalog exists only while its tool view shows our skill
// tool (Visible). The skills are prepared once per trigger (Prepare, from
// the registry's kept view when it is a Preparer), then Decide applies
// catalog.DecideView to them and the history: unchanged, empty, incomplete
// or a catalog to append. A skill call runs catalog.Execute with the
// skills bound to the call's query (Lookup, CallQuery).
//
// # Left to the caller
//
// Reading the log, appending, answering, deadlines, retries and the
// skills themselves: the processor's registry, or for replay today's
// folders, captured skills, or the skills the recording shows.
package history
