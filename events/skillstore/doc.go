// Package skillstore is the format of the skill store: how skills shared by
// a fleet are laid out in NATS JetStream, so that everything reading or
// writing the store — the store provider serving catalogs, the `skills`
// commands publishing and fetching, worker clients writing a skill's files
// to disk — follows one rule. It knows nothing of what a skill means (no
// SKILL.md parsing, no catalog) and watches nothing; its only dependency
// beyond the standard library is the JetStream object store it reads, and
// nkeys for signatures.
//
// # Buckets and keys
//
// The store is two buckets, by default both named SKILLS (DefaultBucket,
// DefaultObjects): a key-value bucket, the index, and an object store
// holding the files. The index has one key per scope and skill:
//
//	global.<name>            every session
//	project.<id>.<name>      sessions whose trigger names project <id>
//
// Beside them, a skill may have a release key, "release.global.<name>" or
// "release.project.<id>.<name>" (a release in progress: draft or canary),
// and pin keys, "pin.global.<name>" (every session) or
// "pin.project.<id>.<name>" (one project's sessions); their values belong
// to the store provider too. ParseKey refuses them, as any key outside
// the two skill layouts: a reader of skills skips them.
//
// A project id is 1 to 128 letters, digits, '_' or '-'; a name is 1 to 64
// lowercase letters, digits or '-' (ValidName), so it is one key token and
// one path element. Scope, ParseScope, Scope.Key and ParseKey build and
// split keys. The value under a key (the record: summary, digest, object
// name) belongs to the store provider, which also checks names against the
// catalog's stricter skill-name rule.
//
// # Digest
//
// A skill's digest identifies its exact files: the lowercase hex SHA-256
// over its regular files in byte order of their "/"-separated relative
// paths, each contributing "<path>\x00<size in decimal bytes>\x00<bytes>"
// (Hasher, Digest). A skill kept as one flat file is digested as one file
// named SKILL.md. Which files a skill has is the publisher's choice, and
// the digest covers exactly those: skillstream leaves hidden files (names
// starting with a dot) out of a skill, on disk and in the store alike,
// unless a push asks for them. Tool results carry the digest, so a worker
// can tell which version of a skill it was given.
//
// # Objects
//
// A skill's files travel as one object named by the digest (ObjectName):
// a tar archive of regular files only, in byte order of path, mode 0644,
// time zero (Archive), so the same files always make the same bytes and an
// object never changes. Unpack trusts nothing in an object: an entry that
// is not a regular file, a path that is absolute, unclean, leaves the
// folder, holds a control character or lies in a version control folder
// (CheckPath, VCS), more files or bytes than the Limits (by default 1000
// files, 8 MiB), files out of order, or files that do not hash to the
// expected digest are refused with ErrBadArchive. Fetch reads an object
// under those bounds and refuses objects that are links (the object
// store would follow a link to itself forever).
//
// # Materialise
//
// A worker that names a resource directory gets a store skill's files at
// ResourcePath: <resourceDir>/<name>/<first 16 hex of the digest>, one
// folder per version. Materialize writes them there so that the folder
// either does not exist or holds exactly the files of the digest: fetched
// and verified, written to a temporary folder beside the target, digested
// again as written (DigestDir), made read-only and renamed into place. A
// folder already holding exactly those files is left as it is (a second
// call, another process); one holding anything else is an error wrapping
// ErrExists and is never changed. File names that are not valid UTF-8 or
// hold control characters are refused. Temporary folders of
// materialisations killed before their rename are removed by the next one
// beside them, once their process is gone or they are an hour old.
//
// # Signatures
//
// A revision may be signed by its publisher (Sign, Verify, Trusted): an
// ed25519 signature by an nkey of the server role (KeyPrefix, "N..."
// public keys, "SN..." seeds; ParseSeed refuses seeds of other roles,
// which are NATS credentials) over the statement (Statement):
//
//	skillstream-skill/v1
//	key <index key: global.<name> or project.<id>.<name>>
//	digest <the files' digest>
//	summary <the summary's digest>
//
// one field per line. The key is rebuilt from where the record is read,
// never taken from it, so a signature moved to another skill or scope
// does not verify; the summary digest (computed by the store provider
// from the record's description, whenToUse and invocation flags) binds
// what a catalog lists without reading the files. A worker verifies a
// skill result's signature with the scope and summary digest the result
// carries.
//
// Left to the caller: choosing the resource directory, checking a name and
// digest that came from elsewhere (ValidName, ValidDigest) before building
// a path from them, and deciding what a skill's files mean.
package skillstore
