// Package projection keeps the usage projection: the sums `skillstream
// usage` reports, per hour, kept current as the processor appends its
// outputs, so that a report over any window reads one small value per
// hour instead of the stream.
//
// # What it keeps
//
// A JetStream key-value bucket (DefaultBucket, USAGE) holds one key per
// hour (UTC), h.<YYYYMMDDHH>, whose JSON value (Hour) sums the output
// records (catalog.append, tool.result, skill.invocation) whose stream
// time falls in that hour, counted exactly as usage.Read counts them
// (usage.ReadOutput reads both): per skill its loads, invocations, errors
// by code, distinct sessions, first and last use, digests and revisions,
// and its loads and errors per store revision and channel (releases);
// catalogs appended and their text bytes by kind (initial, replacement,
// tombstone, changes) and the skills they listed; searches, those that
// found something and those that found nothing (with their queries),
// failed searches by code, the skills searches returned, and the sessions
// that searched, and the skills a search returned that the same session
// then loaded within the hour (Search.ThenLoaded, SkillHour.AfterSearch:
// the hour keeps up to HourFoundPairs hashed session and skill pairs to
// count them). Beside the hours, the key pos holds the Position (the
// stream it projects, its generation, the sequence up to which every
// output record is applied) and the key lease the lease.
//
// Distinct sessions are a Sketch: exact (64-bit hashes of the session
// ids) up to SparseMax sessions per skill and hour, and up to 8,192 over a
// window; past that a HyperLogLog of 2^Precision six-bit registers (24
// KiB), counted with Ertl's improved estimator, a standard error of
// 0.57% (within 2% but for about one estimate in 2,000), which the report
// marks (SessionsEstimated). Sketches of different precisions merge at
// the lower: an hour too large for its bucket lowers its sketches'
// precision (down to MinPrecision) before it drops anything else, and
// hours written before the precision rose hold 512 one-byte registers.
// What follows one session's searches and loads through time beyond the
// hour - the skills found then loaded, the searches per session - is not
// kept in a report (NotKept); usage --scan reports it. Each hour is bounded
// (HourSkills rows, HourListed names, digests, revisions and queries),
// so that it always fits in one message; what is cut is said in the
// report (ProjectionInfo.Partial).
//
// # Exactly once
//
// Every hour bucket records the highest stream sequence applied to it
// (Hour.Seq), and a projector applies a record to its hour only if its
// sequence is above it: a record delivered again, or applied already by
// an earlier holder, is skipped. Records are applied in stream order, so
// the bucket always holds exactly the hour's records up to its Seq.
// A projector that is live (near the stream's end) fetches what has come
// since its last fetch without waiting, and waits FlushWait after a fetch
// that left nothing behind, so that records arrive in bursts rather than
// one delivery per record appended; catching up, it fetches batch after
// batch. It writes what it took at most once per WriteEvery while
// records keep coming (an hour of a thousand skills takes milliseconds to
// encode), at once when a fetch found nothing, and before its deliveries
// not acknowledged reach half the consumer's bound. Each bucket is written with the
// revision it was read at (compare-and-set); a write refused because
// someone else wrote the bucket meanwhile reads it again and applies only
// what is still above its Seq. So two projectors reading the same records
// in order never count one twice. The position is written after the
// hours, and the deliveries acknowledged after the position: a projector
// that stops anywhere in between leaves records that the next one reads
// again and skips.
//
// The consumer delivers headers only: catalogs are most of the stream's
// bytes, and the projection needs none of them. A processor writes on
// each catalog and each skill load it appends a Usage-Summary header
// (events.UsageSummary): a load's skill, digest and revision; a catalog's
// update kind, text bytes and the key of its body (its text and source,
// the same bytes in every session given that catalog). The names a
// catalog lists are read once per body: the first record of a body is
// read by sequence (one Direct Get), decoded, and its names remembered
// under the key once the key is shown to be its body's. Every other
// output (errors, searches, invocations, records of other writers, and
// every record without a summary) is read by sequence and counted from
// its payload with a usage.OutputReader, as a scan counts it. The summary
// is trusted as the record is: only processors may write outputs (see the
// shipped permissions).
//
// The durable consumer (DefaultConsumer) reads one of two ways. Live
// (the projection at most 10,000 records behind the stream when a term
// starts), it is filtered on the three output subjects
// (<prefix>.*.catalog.append, ...; in the owner layout
// <prefix>.*.*.catalog.append, ...): the triggers, about half of the
// records, are never delivered, and near the stream's end the server
// finds the next output by looking at the few records after the last.
// Far behind (a rebuild, a projector back after a long stop), it reads
// <prefix>.> and the projector passes over the triggers itself: there,
// for a consumer of several wildcard filters the server intersects them
// with the subjects of a whole message block at every delivery, which
// cost 220-290 µs per record in BenchmarkProjection, against 11-17 µs for
// the one filter that is the stream's own subject, read in order. A term
// reading every record ends once it has caught up, and the next reads
// the outputs (skillstream_usage_projection_records_total{result="passed"}
// counts the triggers passed over).
//
// In-order delivery is what makes the highest sequence enough, and it is
// checked, not assumed. The projector that holds the lease creates the
// durable consumer (DefaultConsumer) afresh, starting after the
// position, whenever it takes over, and applies a delivery only if its
// consumer sequence is the one after the previous delivery it received:
// every delivery, a redelivery too, takes the next consumer sequence, so
// a gap means that a delivery went to another reader or was lost, and the
// projector ends its term and starts a new one from the position.
//
// # One active member
//
// Every serve runs a projector, and the members of a group share the
// bucket; one holds the lease and applies, the others wait to take over.
// Several members pulling from one durable consumer would not do: the
// server hands each a share of the records, so a member could apply a
// newer record of an hour while an older one waits with another member,
// which would then be skipped as applied. The lease is a key of the
// bucket that its holder rewrites every LeaseTTL/3 with the revision it
// last wrote; a member that sees its revision unchanged for LeaseTTL (on
// its own clock: clocks are never compared) takes it over with that
// revision, so of two members trying one wins. A holder that cannot
// renew for two thirds of LeaseTTL stops applying. A holder that stops
// cleanly deletes the lease so that another member takes over at once.
// Even two holders at once (a holder paused past its lease) would not
// count a record twice: the consumer sequence check and the
// compare-and-set writes above hold whoever writes.
//
// # Rebuilding
//
// Rebuild (usage --rebuild) takes the lease from its holder, writes a new
// position of a new generation (a member still writing the old one finds
// its next write refused; an hour bucket of another generation is never
// counted), removes every hour bucket and replays the stream's output
// records from its start, or from a time, into the new generation until
// it has applied all of them. A serve member then takes the lease back
// and goes on from the position.
//
// # Reading
//
// Read sums the hours overlapping a window: the window starts at the hour
// of its start (the projection counts by the hour), and is read with one
// get per hour up to 512 hours, by one pass over the bucket beyond.
// It also says how far the projection lags the stream: the output
// records after its position, and the time from the position's record to
// the newest.
//
// ReadSeries reads the hours of a window (at most MaxSeriesHours) into
// series by the hour or by the day (UTC), every point present: loads,
// searches, search-then-load, searches that found nothing and errors, in
// total and per skill, with each skill's loads and errors per store
// revision and channel. The records after the position are counted in
// as Read counts them. usage --by prints these series and the operator
// console plots them.
//
// # Partitions
//
// With partitioned sessions each partition's stream has a projection of
// its own, in bucket PartitionBucket(Bucket, k). ReadPartitions sums
// their hours into one report with the same merger, so distinct sessions
// (each kept in one partition) add up exactly; ReadSeriesPartitions sums
// their series point by point over one window; RebuildPartitions
// rebuilds each in turn.
package projection
