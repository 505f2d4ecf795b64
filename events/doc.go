// Package events is the wire format of skillstream: the payload of every
// session event, the subjects the events live on, and the msgpack and JSON
// codec. It is the only package that imports msgpack. It knows subjects and
// payloads; acks, consumers, streams and the meaning of a decision belong to
// the processor.
//
// # Subjects
//
// A session's events live under <prefix>.<sid>.<kind> (default prefix "ev",
// DefaultPrefix). The session token <sid> matches ^[A-Za-z0-9_-]{1,128}$
// (ValidSession, CheckSession) and so is always one subject token. The kind
// is everything after it and may hold dots:
//
//	kind (Kind constant)               written by  payload      decode with
//	agent.pre-step   (KindPreStep)     worker      PreStep      DecodePreStep
//	tool.call.skill  (KindSkillCall)   worker      SkillCall    DecodeSkillCall
//	tool.call.skill_search (KindSkillSearch) worker SkillSearch DecodeSkillSearch
//	context.compact  (KindCompaction)  worker      Compaction   DecodeCompaction
//	catalog.append   (KindCatalog)     processor   Catalog      DecodeCatalog
//	tool.result      (KindToolResult)  processor   ToolResult   DecodeToolResult
//	catalog.head     (KindCatalogHead) processor   CatalogHead  DecodeCatalogHead
//
// A catalog head is an addition: a small record just before a large
// catalog, which lets a processor check that catalog without reading it
// (protocol.md). Workers ignore it.
//
// Workers may publish other kinds (messages, other tools' calls); ParseSubject
// returns them as a Kind without error (Kind.Known is false) so the caller can
// ignore them. Subject builds a subject, SessionWildcard gives
// "<prefix>.<sid>.>" (one session), StreamSubjects gives "<prefix>.>" (the
// stream), TriggerFilters gives the processor group's filter subjects (pre-steps,
// skill calls, skill searches).
// ValidatePrefix checks a configured prefix (dot-separated tokens, no
// wildcards or whitespace). Subject errors match ErrBadSubject; a bad session
// token also matches ErrBadSession.
//
// # Session layouts
//
// The above is the flat layout (LayoutFlat, the default). The owner layout
// (LayoutOwner) puts an owner token before the session token:
// <prefix>.<owner>.<sid>.<kind>, so that a NATS server can bind sessions to
// their owners with per-user permissions on <prefix>.<owner>.*.<kind>
// ("ev.*.agent.pre-step" matches every session of the flat layout). A
// session's id is then the two tokens joined by their dot, "<owner>.<sid>",
// everywhere: in payloads' session fields, answers and message ids, and as
// the sid of Subject and SessionWildcard, which need no layout. What
// depends on it takes a Layout: ValidSessionIn and CheckSessionIn (the id's
// grammar), ParseSubjectIn (the session is the two tokens after the prefix),
// TriggerFiltersIn (<prefix>.*.*.<kind>), the Decode...In functions and the
// ValidateIn methods (a payload's session field). The functions without In
// are the flat layout's. Every worker, processor and command of one stream
// uses the same layout.
//
// Two payloads travel outside the session log: Decision, the reply to a
// PreStep (and ToolResult doubles as the reply to a SkillCall or a
// SkillSearch), and ToolDefinition, the answer to a core NATS request on
// ToolDefinitionSubject; a request on ToolDefinitionsSubject is answered
// with a list of them, every tool the processor serves
// (DecodeToolDefinitions).
//
// # Payloads
//
// Every payload is a map with the short keys described in protocol.md (in
// this package's folder) and given in the struct tags of payloads.go; keys
// may come in any order and unknown keys are ignored. Every payload but ToolDefinition carries "v": 1.
//
//	PreStep     v session step cwd? tools:[{name owner}] deadlineMs? project? resourceDir? minStoreRevision? minStoreEpoch?
//	SkillCall   v session call cwd? args:{name} deadlineMs? project? resourceDir? minStoreRevision? minStoreEpoch?
//	SkillSearch v session call cwd? args:{query? limit? offset?} deadlineMs? project? resourceDir? minStoreRevision? minStoreEpoch?
//	Compaction  v session retainFrom keep?:[seq]
//	Catalog     v session step id role text source:{kind producer update entries:[{name description}] digest omitted? view?}
//	Decision    v session step triggerSeq outcome catalog? error?:{code message} reason? catalogSeq?
//	ToolResult  v session call triggerSeq isError text value?:{name provider resourceBase? content? digest? revision? truncated?:{kept total}} error?
//	            (a search's value?:{query offset total results:[{name description}]}, as ToolResult.Search)
//	CatalogHead v session step digest view:{revision instance}
//	ToolDefinition  name description parameters
//
// protocol.md says what each field means, which outcomes, reasons and error
// codes exist, and what a processor guarantees. The schema folder holds a
// JSON Schema (draft 2020-12) per payload, embedded as Schemas.
//
// Step and call ids are strings. A worker that sends an integer instead
// (msgpack integer or JSON number without fraction or exponent) is accepted:
// the id becomes its decimal text, so 12 and "12" are the same id. Integers
// are unix milliseconds (deadlineMs) or stream sequences.
//
// ToolDefinition.Parameters is a RawJSON: JSON text written verbatim in JSON
// payloads, and as the equivalent msgpack value (a real map, keys in the
// text's order) in msgpack payloads, read back as compact JSON text. The
// skill tool's schema therefore comes back byte for byte in either encoding.
//
// # Encodings
//
// The Content-Type header chooses the encoding (EncodingOf): absent or
// application/msgpack is Msgpack, application/json is JSON; parameters such
// as "; charset=utf-8" and letter case are ignored; anything else is an error
// matching ErrUnsupportedContentType. Encoding.ContentType gives the header
// value to answer with.
//
// Encode writes any payload in either encoding. It does not validate (a
// "rejected" Decision may answer a trigger whose step could not be read),
// writes integers in their smallest msgpack form, writes a nil tools or
// entries list as an empty list (never null), does not HTML-escape JSON, and
// refuses to produce more than MaxPayloadSize bytes (ErrTooLarge).
//
// # Decoding and its limits
//
// The Decode functions take untrusted bytes. In order they:
//
//  1. refuse more than MaxPayloadSize (1 MiB) bytes: ErrTooLarge, before
//     looking at the content;
//  2. check the structure without decoding it. For msgpack a small walker
//     checks that every declared str, bin and ext length fits in the bytes
//     that remain, that every declared array or map count does too (each
//     element takes at least one byte), that maps and arrays nest at most
//     MaxDepth (32) deep, and that the value ends exactly at the end of the
//     input. A 5-byte header declaring 2^32-1 elements is refused at once.
//     For JSON the nesting depth is checked the same way; encoding/json
//     itself never allocates beyond what its input holds. Memory used by a
//     decode is therefore proportional to the bytes received;
//  3. let the libraries decode: msgpack (github.com/vmihailenco/msgpack/v5)
//     or encoding/json fills the tagged payload struct. Payloads with "v"
//     are read through a small wire form (wire.go) that embeds the payload
//     and declares beside it what the tags alone cannot say: "v" as a
//     pointer (missing is told from 0), step and call ids as ID (a string
//     or an integer), a skill call's args as pointers (missing is told from
//     an empty name). A skill search's args are read as whatever the model
//     gave (SearchArgs): their types and bounds are the tool's to judge, so
//     that the model is told in the tool's words. Decoders registered with the msgpack library refuse
//     what it would otherwise let through: a negative integer for a
//     sequence, an integer beyond int64, nil where a list holds maps.
//     Two shortcuts give the same results faster: a pre-step, skill call or
//     skill search of the usual shape (each protocol key once, strings and integers
//     only, no other key) is read straight from its bytes (fast.go), any
//     other shape going to the library; catalog entries are read key by
//     key. FuzzFastTriggers and FuzzDecodeEntry compare each with the
//     library;
//  4. name the field of any problem. encoding/json goes on past a value of
//     the wrong type and gives its path (keys only, no list index:
//     "tools.name"). The msgpack library stops at the first problem; the
//     payload is then decoded again one map entry or array element at a
//     time, so that a bad value spoils only its own field, keys that are
//     not strings are skipped, and the problem gets its full path
//     ("tools[1].name", "catalog.source.entries[0].name"). A value of "v"
//     other than 1 is ErrUnsupportedVersion naming the version seen; it wins
//     over any problem with a field, since a later version may have another
//     shape; a missing v is a FieldError;
//  5. validate what a processor relies on (the Validate methods): session is
//     a valid token (of the layout the Decode...In functions are given);
//     step or call is present, at most MaxIDLength (256)
//     bytes, valid UTF-8 without control characters (ids end up in message
//     ids and headers); a pre-step lists at most MaxTools (1024) tools,
//     each with a name, names and owners of at most MaxToolFieldLength
//     (256) bytes; a SkillSearch has args (a map); a SkillCall has args.name present
//     as a string (an empty name is valid here: the skill tool answers it
//     with its invalid-name error); a Decision has an outcome and, unless it
//     is "rejected", a step; deadlineMs and sequences are not negative.
//
// # Errors
//
// Every Decode error matches ErrBadPayload. More precise ones also match
// ErrTooLarge, ErrUnsupportedVersion or ErrUnsupportedContentType, or are a
// *FieldError (Field is the key path, Problem says "missing", "wrong type:
// got map, want string", "invalid session token ...", "too long: 300 bytes,
// limit 256", ...). Its text reads like
//
//	bad payload: field "session": missing
//
// On error the returned value still holds the fields that could be read
// (best effort), so a caller can address a rejection to the session and call
// id it found, after checking them itself.
//
// # Left to the caller
//
// Comparing the payload's session with the subject's, deciding what a
// malformed trigger's fate is (terminate, answer "rejected" or
// "bad_request"), deadlines against a clock, headers other than
// Content-Type, and whether a Catalog record is recognisable (producer and
// text) are the processor's business.
package events
