package events

import "github.com/vmihailenco/msgpack/v5"

// Version is the only payload version this package reads and writes.
const Version = 1

// Kind is the last part of a session subject: <prefix>.<sid>.<kind>.
type Kind string

// The kinds the protocol names.
const (
	KindPreStep    Kind = "agent.pre-step"
	KindSkillCall  Kind = "tool.call.skill"
	KindCompaction Kind = "context.compact"
	KindCatalog    Kind = "catalog.append"
	KindToolResult Kind = "tool.result"
	// KindSkillSearch is a call of the skill_search tool, written by a
	// worker (SkillSearch) and answered with a ToolResult like a skill
	// call.
	KindSkillSearch Kind = "tool.call.skill_search"
)

// KindCatalogHead is the kind of a catalog head: a small record a
// processor appends just before a large catalog (see CatalogHead). It is
// an addition to the five kinds; workers ignore it like any kind they do
// not know.
const KindCatalogHead Kind = "catalog.head"

// KindInvocation is the kind of a skill a user invoked by writing /<name>
// (SkillInvocation), appended by a processor after the pre-step's catalog.
// Processors never consume it.
const KindInvocation Kind = "skill.invocation"

// Header names used on the wire.
const (
	HeaderContentType                = "Content-Type"
	HeaderReplyInbox                 = "Reply-Inbox"
	HeaderCausationSeq               = "Causation-Seq"
	HeaderMsgID                      = "Nats-Msg-Id"
	HeaderExpectedLastSubjSeq        = "Nats-Expected-Last-Subject-Sequence"
	HeaderExpectedLastSubjSeqSubject = "Nats-Expected-Last-Subject-Sequence-Subject"
	// HeaderCatalogHead, on a catalog.append, is the stream sequence of
	// the catalog's head (KindCatalogHead).
	HeaderCatalogHead = "Catalog-Head-Seq"
	// HeaderUsageSummary, on a catalog.append or a tool.result a processor
	// appends, says in a few bytes what a usage report counts of it
	// (UsageSummary), so that a reader of headers only can count it.
	HeaderUsageSummary = "Usage-Summary"
)

// Content types a payload may be encoded in. An absent Content-Type means
// msgpack.
const (
	ContentTypeMsgpack = "application/msgpack"
	ContentTypeJSON    = "application/json"
)

// Decision outcomes.
const (
	OutcomeAppended   = "appended"
	OutcomeUnchanged  = "unchanged"
	OutcomeEmpty      = "empty"
	OutcomeIncomplete = "incomplete"
	OutcomeExpired    = "expired"
	OutcomeRejected   = "rejected"
	// OutcomeBehind: the session's visible catalog reflects a newer skill
	// store revision than this member has applied, and it could not catch
	// up within the trigger's deadline (or a bounded wait). Nothing was
	// appended; the next pre-step decides again.
	OutcomeBehind = "behind"
	// OutcomeDiverged: the member that produced the session's visible
	// catalog still sees other skills than this one for the same query,
	// at the same store revision (their local folders differ). Nothing was
	// appended, so that the members do not replace each other's catalog
	// at every step; the divergence is reported to operators.
	OutcomeDiverged = "diverged"
)

// Reasons a Decision may give (Decision.Reason) for an empty view: the
// outcome "empty", a tombstone, or an "unchanged" tombstone.
const (
	// ReasonNoSkillTool: the tool view has no tool named "skill", so the
	// session has no catalog.
	ReasonNoSkillTool = "no_skill_tool"
	// ReasonSkillToolOfOtherOwner: the first tool named "skill" in the view
	// belongs to another owner than this processor's tool owner id (the
	// model can reach only that one), so the session has no catalog.
	ReasonSkillToolOfOtherOwner = "skill_tool_of_other_owner"
	// ReasonNoSkills: the skill tool is visible but no skill the model may
	// invoke is available for the session's cwd and project.
	ReasonNoSkills = "no_skills"
	// ReasonStoreRevisionAhead (outcome behind): the visible catalog
	// reflects a skill store revision this member has not applied yet.
	ReasonStoreRevisionAhead = "store_revision_ahead"
	// ReasonMemberSeesOtherSkills (outcome diverged): the member that
	// produced the visible catalog sees other skills for this query.
	ReasonMemberSeesOtherSkills = "member_sees_other_skills"
	// ReasonMemberServesOtherStore (outcome diverged): the member that
	// produced the visible catalog serves another skill store
	// configuration (another bucket, or a store where this member has
	// none, or the reverse).
	ReasonMemberServesOtherStore = "member_serves_other_store"
	// ReasonOverBudget (outcome incomplete): the pre-step would have sent
	// the session a catalog (its list again, after a compaction masked it,
	// or a change of its list), but the session has had as many catalogs
	// this minute as the processor allows. Nothing was appended; the
	// model keeps what it sees, and a later step sends it.
	ReasonOverBudget = "over_budget"
)

// Tool result error codes.
const (
	CodeInvalidName       = "invalid_name"
	CodeUnknown           = "unknown"
	CodeNotModelInvocable = "not_model_invocable"
	CodeProvider          = "provider"
	CodeBadRequest        = "bad_request"
	CodeExpired           = "expired"
	// CodeTooLarge: the answer could not be encoded within the largest
	// message the stream takes; it is never retried.
	CodeTooLarge = "too_large"
)

// Tool is one entry of an agent's visible tool view.
type Tool struct {
	Name  string `msgpack:"name" json:"name"`
	Owner string `msgpack:"owner" json:"owner"`
}

// PreStep is published by a worker before each model step.
type PreStep struct {
	V          int    `msgpack:"v" json:"v"`
	Session    string `msgpack:"session" json:"session"`
	Step       string `msgpack:"step" json:"step"`
	Cwd        string `msgpack:"cwd,omitempty" json:"cwd,omitempty"`
	Tools      []Tool `msgpack:"tools" json:"tools"`
	DeadlineMs int64  `msgpack:"deadlineMs,omitempty" json:"deadlineMs,omitempty"`
	// Project names the skill store scope project/<id> of the session; empty
	// means the session sees only the store's global scope.
	Project string `msgpack:"project,omitempty" json:"project,omitempty"`
	// ResourceDir is an absolute path on the worker's host under which the
	// worker materialises store skills' files; empty means store skills have
	// no resource base.
	ResourceDir string `msgpack:"resourceDir,omitempty" json:"resourceDir,omitempty"`
	// MinStoreRevision is the skill store index revision the worker knows
	// to exist (skills push prints it): the processor decides on a view of
	// the store at that revision or later, or not at all. 0 asks nothing.
	MinStoreRevision uint64 `msgpack:"minStoreRevision,omitempty" json:"minStoreRevision,omitempty"`
	// MinStoreEpoch is the epoch of the store's buckets MinStoreRevision
	// counts in (skills push prints it beside the revision): a processor
	// whose store has another epoch (its buckets were recreated since)
	// answers at once that it cannot serve the token, instead of
	// comparing revisions of two different buckets. Empty: any epoch. At
	// most MaxEpochLength bytes of A-Z a-z 0-9 _ -.
	MinStoreEpoch string `msgpack:"minStoreEpoch,omitempty" json:"minStoreEpoch,omitempty"`
	// UserText holds the text blocks of the user's messages that arrived
	// since the previous step, in order: the only text a processor scans
	// for /<name> (user invocation). At most MaxUserTexts strings of at
	// most MaxUserTextBytes each, valid UTF-8 without control characters
	// other than tab, line feed and carriage return.
	UserText []string `msgpack:"userText,omitempty" json:"userText,omitempty"`
}

// ErrorInfo is a machine-readable error.
type ErrorInfo struct {
	Code    string `msgpack:"code" json:"code"`
	Message string `msgpack:"message" json:"message"`
	// Rev and Channel, on the error of a skill call whose name resolved
	// to a store skill, are the revision the session was served and why
	// (as SkillValue's): a release's errors are counted per revision.
	// Absent otherwise, and in older records.
	Rev     uint64 `msgpack:"rev,omitempty" json:"rev,omitempty"`
	Channel string `msgpack:"channel,omitempty" json:"channel,omitempty"`
}

// Decision answers a PreStep.
type Decision struct {
	V          int        `msgpack:"v" json:"v"`
	Session    string     `msgpack:"session" json:"session"`
	Step       string     `msgpack:"step" json:"step"`
	TriggerSeq uint64     `msgpack:"triggerSeq" json:"triggerSeq"`
	Outcome    string     `msgpack:"outcome" json:"outcome"`
	Catalog    *Catalog   `msgpack:"catalog,omitempty" json:"catalog,omitempty"`
	Error      *ErrorInfo `msgpack:"error,omitempty" json:"error,omitempty"`
	// Reason says why the catalog is empty when it is (outcome "empty", a
	// tombstone, or an unchanged tombstone): one of ReasonNoSkillTool,
	// ReasonSkillToolOfOtherOwner, ReasonNoSkills; or why nothing was
	// appended although the skills differ from the visible catalog
	// (outcomes "behind" and "diverged"): ReasonStoreRevisionAhead,
	// ReasonMemberSeesOtherSkills, ReasonMemberServesOtherStore; or why an
	// "incomplete" pre-step appended nothing: ReasonOverBudget. Optional;
	// absent otherwise.
	Reason string `msgpack:"reason,omitempty" json:"reason,omitempty"`
	// CatalogSeq is the stream sequence of the catalog.append the model
	// sees after this step: the one just appended (or found already
	// appended, on a retry), or the visible one when nothing was appended.
	// A worker that compacts names it in Compaction.Keep to keep that
	// catalog visible rather than have the next pre-step append it again.
	// Absent (0) when no catalog of the session is visible, and on
	// expired and rejected decisions.
	CatalogSeq uint64 `msgpack:"catalogSeq,omitempty" json:"catalogSeq,omitempty"`
	// CatalogSeqs, when the list the model sees after this step is made
	// of several catalog records (a full catalog and the change lists
	// after it), are all of them, the full catalog first, ascending; the
	// last is CatalogSeq. A worker that compacts keeps every one. Absent
	// otherwise.
	CatalogSeqs []uint64 `msgpack:"catalogSeqs,omitempty" json:"catalogSeqs,omitempty"`
	// CurrentList is then that whole list, so that a worker need not
	// read the records back itself. Absent otherwise.
	//
	// Decoded from msgpack, the entries of CurrentList and of Catalog's
	// source may be shared with other Decisions carrying the same bytes
	// (a worker is sent one list for many sessions; the package keeps the
	// lists it decoded last, 8 MiB of them at most): read them, never
	// modify them.
	CurrentList *CurrentList `msgpack:"currentList,omitempty" json:"currentList,omitempty"`
	// Invocations are the skills the user invoked in this step's userText,
	// as appended (skill.invocation), in order; a retry of the step gets
	// those already appended. A processor fills in each value's content,
	// which the records leave out (SkillInvocation.WithContent); a reply
	// too large for one message leaves it out again. Absent when none.
	Invocations []SkillInvocation `msgpack:"invocations,omitempty" json:"invocations,omitempty"`
	// Ignored lists the gestured names that invoked nothing, with the
	// reason (Ignored*); one entry with reason IgnoredDisabled and no name
	// when user invocation is off and the step carried userText. Absent
	// when none.
	Ignored []Ignored `msgpack:"ignored,omitempty" json:"ignored,omitempty"`
	// Diagnostics say which files of the session's project were found
	// but not offered as skills, and why (a SKILL.md that does not parse,
	// a dangling link): the text skillstream validate prints, for the
	// worker to show its user. Never part of what the model sees. At most
	// 16; absent when none.
	Diagnostics []Diagnostic `msgpack:"diagnostics,omitempty" json:"diagnostics,omitempty"`
}

// Diagnostic is a file that was not offered as a skill, and why.
type Diagnostic struct {
	Path   string `msgpack:"path" json:"path"`
	Reason string `msgpack:"reason" json:"reason"`
}

// Ignored is a name a user gestured that invoked nothing, and why.
type Ignored struct {
	Name   string `msgpack:"name" json:"name"`
	Reason string `msgpack:"reason" json:"reason"`
}

// Reasons a gestured name invokes nothing (Ignored.Reason).
const (
	// IgnoredUnknown: no skill of that name is available to the session.
	IgnoredUnknown = "unknown"
	// IgnoredNotUserInvocable: the skill says user-invocable: false.
	IgnoredNotUserInvocable = "not_user_invocable"
	// IgnoredLoadFailed: the skill could not be loaded (it vanished, or
	// its provider failed).
	IgnoredLoadFailed = "load_failed"
	// IgnoredDisabled: the processor has user invocation off; the
	// step's userText was not read.
	IgnoredDisabled = "disabled"
	// IgnoredOverBudget: the session's invocations this minute took the
	// bytes the processor allows a session; nothing was appended for this
	// name (nor for the names after it in the step).
	IgnoredOverBudget = "over_budget"
)

// SourceKindInvocation is InvocationSource.Kind.
const SourceKindInvocation = "skill-invocation"

// InvocationFormInstructions is InvocationSource.Form: the message holds
// the skill's instructions, as the skill tool shows them.
const InvocationFormInstructions = "instructions"

// InvocationSource says where a SkillInvocation came from.
type InvocationSource struct {
	Kind string `msgpack:"kind" json:"kind"` // always "skill-invocation"
	Name string `msgpack:"name" json:"name"`
	Form string `msgpack:"form" json:"form"` // always "instructions"
}

// SkillInvocation is the durable user-role message a processor appends
// (kind skill.invocation) for a skill the user invoked with /<name>: Text
// is exactly the skill tool's success text for that skill, Value the
// skill tool's success value without its content (the instructions are in
// Text already; records written before carry them in both). Read either
// form with WithContent.
type SkillInvocation struct {
	V       int              `msgpack:"v" json:"v"`
	Session string           `msgpack:"session" json:"session"`
	Step    string           `msgpack:"step" json:"step"`
	ID      string           `msgpack:"id" json:"id"`
	Role    string           `msgpack:"role" json:"role"` // always "user"
	Name    string           `msgpack:"name" json:"name"`
	Text    string           `msgpack:"text" json:"text"`
	Source  InvocationSource `msgpack:"source" json:"source"`
	Value   SkillValue       `msgpack:"value" json:"value"`
}

// Entry is one skill of a catalog: its name and its normalised, capped,
// unescaped description.
type Entry struct {
	Name        string `msgpack:"name" json:"name"`
	Description string `msgpack:"description" json:"description"`
}

// EntryOrigin is where one catalog entry's skill came from: its store
// revision number, digest and channel ("stable", "canary", "pin").
type EntryOrigin struct {
	Name    string `msgpack:"name" json:"name"`
	Rev     uint64 `msgpack:"rev,omitempty" json:"rev,omitempty"`
	Digest  string `msgpack:"digest,omitempty" json:"digest,omitempty"`
	Channel string `msgpack:"channel,omitempty" json:"channel,omitempty"`
}

// CatalogSource describes where a catalog message came from.
type CatalogSource struct {
	Kind     string  `msgpack:"kind" json:"kind"` // always "skill-catalog"
	Producer string  `msgpack:"producer" json:"producer"`
	Update   string  `msgpack:"update" json:"update"` // "initial", "replacement" or "changes" (UpdateChanges)
	Entries  []Entry `msgpack:"entries" json:"entries"`
	Digest   string  `msgpack:"digest" json:"digest"`
	// Omitted counts the skills the catalog size limit left out.
	Omitted int `msgpack:"omitted,omitempty" json:"omitted,omitempty"`
	// Origins name, for each entry of a store skill the catalog carries
	// (or, for a change list, each entry it adds or changes), the
	// revision and channel it came from, in entry order; absent in older
	// records and for skills outside the store.
	Origins []EntryOrigin `msgpack:"origins,omitempty" json:"origins,omitempty"`
	// Revoked names the skills the catalog leaves out because the skill
	// store's trust policy revokes the revision it would offer (a change
	// list: those of its removals), sorted: why they left the session's
	// list. Absent when none, and in older records; never in the text.
	Revoked []string `msgpack:"revoked,omitempty" json:"revoked,omitempty"`
	// View is what the catalog was decided on.
	View *View `msgpack:"view,omitempty" json:"view,omitempty"`
	// Base, Changes and Count are a change list's (Update
	// UpdateChanges), which has no Entries: the stream sequence of the
	// full catalog it builds on, its changes in the order its text names
	// them, and the number of entries the list it leads to shows. Its
	// Digest and Omitted are that list's, so the newest catalog record
	// alone says which list the model has.
	Base    uint64   `msgpack:"base,omitempty" json:"base,omitempty"`
	Changes []Change `msgpack:"changes,omitempty" json:"changes,omitempty"`
	Count   int      `msgpack:"count,omitempty" json:"count,omitempty"`
	// Options are the processor's options that shaped the catalog's text
	// (and the other model text of its session): metadata for a replay,
	// which the model never sees. Absent in records of older processors.
	Options *CatalogOptions `msgpack:"options,omitempty" json:"options,omitempty"`
}

// CatalogOptions are the options of a processor that shape model text,
// recorded with each catalog it appends so that a recording of the
// session says what it was made under: the description cap, the catalog
// size limit (0: none), the instruction size limit (0: none), the cap on
// entries listed where search is offered (0: none), skill search, how
// changes reach the model ("full" or "changes") and user invocation; and
// the session's output budget for catalogs, which decides whether a
// catalog is appended at all: full catalogs re-sent and bytes of catalogs
// after the first, per minute (0: no bound).
type CatalogOptions struct {
	DescriptionMax        int    `msgpack:"descriptionMax" json:"descriptionMax"`
	MaxLength             int    `msgpack:"maxLength" json:"maxLength"`
	MaxSkillBytes         int    `msgpack:"maxSkillBytes" json:"maxSkillBytes"`
	ListedMax             int    `msgpack:"listedMax,omitempty" json:"listedMax,omitempty"`
	Search                bool   `msgpack:"search,omitempty" json:"search,omitempty"`
	SearchBodies          bool   `msgpack:"searchBodies,omitempty" json:"searchBodies,omitempty"`
	Updates               string `msgpack:"updates,omitempty" json:"updates,omitempty"`
	UserInvocation        bool   `msgpack:"userInvocation,omitempty" json:"userInvocation,omitempty"`
	ResendsPerMinute      int    `msgpack:"resendsPerMinute,omitempty" json:"resendsPerMinute,omitempty"`
	CatalogBytesPerMinute int64  `msgpack:"catalogBytesPerMinute,omitempty" json:"catalogBytesPerMinute,omitempty"`
	// Rank is "use" when the catalog lists the most used skills first
	// (absent: by name), and Ranking the use it was decided with: the
	// positive load counts of the skills it could list, "name=count"
	// joined by ",", by name (absent: none counted).
	Rank    string `msgpack:"catalogRank,omitempty" json:"catalogRank,omitempty"`
	Ranking string `msgpack:"catalogRanking,omitempty" json:"catalogRanking,omitempty"`
}

// UpdateChanges is CatalogSource.Update of a change list: a catalog
// message naming only the skills added, changed or removed since the
// session's current list.
const UpdateChanges = "changes"

// Change is one skill a change list names: what happened to it (one of
// ChangeAdded, ChangeChanged, ChangeRemoved) and, for an entry added or
// changed that is shown with a description, that description as shown
// (normalised, capped, unescaped); absent for a removed skill and for an
// entry shown without a description.
type Change struct {
	Name        string `msgpack:"name" json:"name"`
	Change      string `msgpack:"change" json:"change"`
	Description string `msgpack:"description,omitempty" json:"description,omitempty"`
}

// What a change list says happened to a skill (Change.Change).
const (
	ChangeAdded   = "added"
	ChangeChanged = "changed"
	ChangeRemoved = "removed"
)

// CurrentList is a session's whole current list when it is made of
// several records (a full catalog and the change lists after it): its
// entries as shown, in name order, and its digest.
type CurrentList struct {
	Entries []Entry `msgpack:"entries" json:"entries"`
	Digest  string  `msgpack:"digest" json:"digest"`
}

// View records what a catalog was decided on: the skill store revision it
// reflects (the index bucket's last sequence when the snapshot was taken, 0
// without a store), the epoch of the store's buckets that revision counts
// in (absent without a store; it changes when the buckets are created
// again, and revisions of two epochs are not comparable) and the processor
// instance that produced it.
type View struct {
	Revision uint64 `msgpack:"revision" json:"revision"`
	Instance string `msgpack:"instance" json:"instance"`
	Epoch    string `msgpack:"epoch,omitempty" json:"epoch,omitempty"`
}

// SourceKindCatalog is CatalogSource.Kind.
const SourceKindCatalog = "skill-catalog"

// Catalog is the durable user-role message a processor appends.
type Catalog struct {
	V       int           `msgpack:"v" json:"v"`
	Session string        `msgpack:"session" json:"session"`
	Step    string        `msgpack:"step" json:"step"`
	ID      string        `msgpack:"id" json:"id"`
	Role    string        `msgpack:"role" json:"role"` // always "user"
	Text    string        `msgpack:"text" json:"text"`
	Source  CatalogSource `msgpack:"source" json:"source"`
}

// CatalogHead names the catalog that follows it in its session: appended
// on <prefix>.<sid>.catalog.head just before a large catalog, with the
// catalog expecting the head as the session's last event, so that nothing
// of the session lies between the two. The catalog carries the head's
// sequence (HeaderCatalogHead). A processor that remembers the catalog
// learns from one small read at the head whether the catalog is still in
// the stream and still the newest, without reading its bytes again.
type CatalogHead struct {
	V       int    `msgpack:"v" json:"v"`
	Session string `msgpack:"session" json:"session"`
	// Step is the catalog's, Digest and View its source's.
	Step   string `msgpack:"step" json:"step"`
	Digest string `msgpack:"digest" json:"digest"`
	View   View   `msgpack:"view" json:"view"`
}

// Compaction tells which earlier session events stay visible to the model:
// every event with stream sequence >= RetainFrom, the sequences in Keep, and
// this event and later ones.
type Compaction struct {
	V          int      `msgpack:"v" json:"v"`
	Session    string   `msgpack:"session" json:"session"`
	RetainFrom uint64   `msgpack:"retainFrom" json:"retainFrom"`
	Keep       []uint64 `msgpack:"keep,omitempty" json:"keep,omitempty"`
}

// SkillArgs are the arguments of a skill tool call.
type SkillArgs struct {
	Name string `msgpack:"name" json:"name"`
}

// SkillCall is published by a worker when the model calls the skill tool.
type SkillCall struct {
	V          int       `msgpack:"v" json:"v"`
	Session    string    `msgpack:"session" json:"session"`
	Call       string    `msgpack:"call" json:"call"`
	Cwd        string    `msgpack:"cwd,omitempty" json:"cwd,omitempty"`
	Args       SkillArgs `msgpack:"args" json:"args"`
	DeadlineMs int64     `msgpack:"deadlineMs,omitempty" json:"deadlineMs,omitempty"`
	// Project, ResourceDir, MinStoreRevision and MinStoreEpoch mean what
	// they mean on a PreStep.
	Project          string `msgpack:"project,omitempty" json:"project,omitempty"`
	ResourceDir      string `msgpack:"resourceDir,omitempty" json:"resourceDir,omitempty"`
	MinStoreRevision uint64 `msgpack:"minStoreRevision,omitempty" json:"minStoreRevision,omitempty"`
	MinStoreEpoch    string `msgpack:"minStoreEpoch,omitempty" json:"minStoreEpoch,omitempty"`
}

// SearchArgs are the arguments of a skill_search call, passed on as the
// model gave them: each is nil when absent (or null), else the value as
// decoded — a string, an integer (int64, or uint64 above the int64 range;
// a number with no fractional part is an integer), any other number a
// float64, a bool, or for anything else an empty []any or map[string]any
// standing for its type. The processor judges them (a wrong type or a value
// out of bounds is answered with the tool's own error, not refused as a
// malformed trigger). A worker sets Query to the model's string and Limit
// and Offset to its integers, or leaves them nil.
type SearchArgs struct {
	Query  any `msgpack:"query,omitempty" json:"query,omitempty"`
	Limit  any `msgpack:"limit,omitempty" json:"limit,omitempty"`
	Offset any `msgpack:"offset,omitempty" json:"offset,omitempty"`
}

// EncodeMsgpack writes the arguments that are set, and only those. The
// library's omitempty looks into an interface and would leave out an
// explicit 0, which must reach the tool: a limit of 0 is an argument
// error, not the default.
func (a SearchArgs) EncodeMsgpack(e *msgpack.Encoder) error {
	fields := [...]struct {
		key string
		v   any
	}{{"query", a.Query}, {"limit", a.Limit}, {"offset", a.Offset}}
	n := 0
	for _, f := range fields {
		if f.v != nil {
			n++
		}
	}
	if err := e.EncodeMapLen(n); err != nil {
		return err
	}
	for _, f := range fields {
		if f.v == nil {
			continue
		}
		if err := e.EncodeString(f.key); err != nil {
			return err
		}
		if err := e.Encode(f.v); err != nil {
			return err
		}
	}
	return nil
}

// QueryText is the query when it is a string, else "".
func (a SearchArgs) QueryText() string {
	s, _ := a.Query.(string)
	return s
}

// SkillSearch is published by a worker when the model calls the
// skill_search tool. It is answered, and recorded, with a ToolResult keyed
// by its call id, exactly as a SkillCall is.
type SkillSearch struct {
	V          int        `msgpack:"v" json:"v"`
	Session    string     `msgpack:"session" json:"session"`
	Call       string     `msgpack:"call" json:"call"`
	Cwd        string     `msgpack:"cwd,omitempty" json:"cwd,omitempty"`
	Args       SearchArgs `msgpack:"args" json:"args"`
	DeadlineMs int64      `msgpack:"deadlineMs,omitempty" json:"deadlineMs,omitempty"`
	// Project, ResourceDir, MinStoreRevision and MinStoreEpoch mean what
	// they mean on a PreStep.
	Project          string `msgpack:"project,omitempty" json:"project,omitempty"`
	ResourceDir      string `msgpack:"resourceDir,omitempty" json:"resourceDir,omitempty"`
	MinStoreRevision uint64 `msgpack:"minStoreRevision,omitempty" json:"minStoreRevision,omitempty"`
	MinStoreEpoch    string `msgpack:"minStoreEpoch,omitempty" json:"minStoreEpoch,omitempty"`
}

// SearchValue is the structured success value of a skill_search call: the
// query as searched (trimmed), the offset asked for, the number of skills
// that match in all, and the matches shown, in rank order, each a name and
// its description normalised and capped as in a catalog (not escaped).
type SearchValue struct {
	Query   string  `msgpack:"query" json:"query"`
	Offset  int     `msgpack:"offset" json:"offset"`
	Total   int     `msgpack:"total" json:"total"`
	Results []Entry `msgpack:"results" json:"results"`
	// Learned, when set, names the version of the terms the search index
	// had learned from the log that ranked the matches (absent: the
	// skills' text alone). It is metadata for replay, not model text.
	Learned string `msgpack:"learned,omitempty" json:"learned,omitempty"`
	// LearnedTerms, when set, is what of the learned terms ranked the
	// matches: for each term of the query some candidate had learned, those
	// candidates and their weights. With the candidates' text it rebuilds
	// the ranking (replay --as-recorded). At most 64 terms of at most 32
	// skills each; metadata for replay, not model text.
	LearnedTerms []LearnedTerm `msgpack:"learnedTerms,omitempty" json:"learnedTerms,omitempty"`
}

// LearnedTerm is one term of a search's query and the skills whose
// learned terms held it, each with its weight there.
type LearnedTerm struct {
	Term   string          `msgpack:"term" json:"term"`
	Skills []LearnedWeight `msgpack:"skills" json:"skills"`
}

// LearnedWeight is one skill's weight for a learned term.
type LearnedWeight struct {
	Name   string  `msgpack:"name" json:"name"`
	Weight float64 `msgpack:"weight" json:"weight"`
}

// ResourceBase mirrors catalog.ResourceBase on the wire.
type ResourceBase struct {
	Kind        string `msgpack:"kind" json:"kind"`
	Path        string `msgpack:"path,omitempty" json:"path,omitempty"`
	URL         string `msgpack:"url,omitempty" json:"url,omitempty"`
	Description string `msgpack:"description,omitempty" json:"description,omitempty"`
}

// SkillValue is the structured success value of a skill tool call.
type SkillValue struct {
	Name         string        `msgpack:"name" json:"name"`
	Provider     string        `msgpack:"provider" json:"provider"`
	ResourceBase *ResourceBase `msgpack:"resourceBase,omitempty" json:"resourceBase,omitempty"`
	// Content is the instructions exactly as the model reads them inside
	// <skill_instructions> in Text. It is left out (empty) when carrying
	// it twice would make the result too large for one message; the
	// content is then the part of Text between the first
	// "<skill_instructions>\n" and the final
	// "\n</skill_instructions>\n</skill_content>".
	Content string `msgpack:"content,omitempty" json:"content,omitempty"`
	// Digest is the skill's content digest (lowercase hex SHA-256 over its
	// files), Revision the skill store revision it was loaded at (store
	// skills only).
	Digest   string `msgpack:"digest,omitempty" json:"digest,omitempty"`
	Revision uint64 `msgpack:"revision,omitempty" json:"revision,omitempty"`
	// Rev is the skill's revision number in its own history and Channel
	// why the session got that revision ("stable", "canary" or "pin"):
	// store skills only, absent in older records.
	Rev     uint64 `msgpack:"rev,omitempty" json:"rev,omitempty"`
	Channel string `msgpack:"channel,omitempty" json:"channel,omitempty"`
	// Truncated is set when the instruction size limit shortened Content.
	Truncated *Truncated `msgpack:"truncated,omitempty" json:"truncated,omitempty"`
	// Signature is the publisher's signature of a store skill's
	// revision, when the store holds one: what a worker needs to verify
	// it before writing the skill's files (store skills only).
	Signature *SkillSignature `msgpack:"signature,omitempty" json:"signature,omitempty"`
}

// SkillSignature is a store skill's signature as a result carries it: the
// publisher's public key (an nkey, "N..."), the algorithm, the signature
// (standard base64), and the scope ("global" or "project/<id>") and
// summary digest (64 lowercase hex digits) the signed statement names
// beside the skill's name and digest (see package skillstore).
type SkillSignature struct {
	Key     string `msgpack:"key" json:"key"`
	Alg     string `msgpack:"alg" json:"alg"`
	Sig     string `msgpack:"sig" json:"sig"`
	Scope   string `msgpack:"scope" json:"scope"`
	Summary string `msgpack:"summary" json:"summary"`
}

// Truncated says how much of a skill's instructions were kept, in bytes.
type Truncated struct {
	Kept  int64 `msgpack:"kept" json:"kept"`
	Total int64 `msgpack:"total" json:"total"`
}

// ToolResult is both the durable tool.result event and the reply to a
// SkillCall or a SkillSearch. Text is exactly what the model sees.
//
// On the wire a successful result has one "value": a skill call's
// (Value) or a search's (Search, written under the same key). Decoding
// tells them apart by their keys: a value with "query" is a search's.
type ToolResult struct {
	V          int         `msgpack:"v" json:"v"`
	Session    string      `msgpack:"session" json:"session"`
	Call       string      `msgpack:"call" json:"call"`
	TriggerSeq uint64      `msgpack:"triggerSeq" json:"triggerSeq"`
	IsError    bool        `msgpack:"isError" json:"isError"`
	Text       string      `msgpack:"text" json:"text"`
	Value      *SkillValue `msgpack:"value,omitempty" json:"value,omitempty"`
	Error      *ErrorInfo  `msgpack:"error,omitempty" json:"error,omitempty"`
	// Search is the value of a successful skill_search call (then Value
	// is nil), written as "value".
	Search *SearchValue `msgpack:"-" json:"-"`
}

// ToolDefinition is a tool as workers register it with the model: the
// skill tool (the answer on ToolDefinitionSubject), or any of the tools a
// processor serves (the answer on ToolDefinitionsSubject).
type ToolDefinition struct {
	Name        string `msgpack:"name" json:"name"`
	Description string `msgpack:"description" json:"description"`
	// Parameters is a JSON Schema document, kept as raw JSON text.
	Parameters RawJSON `msgpack:"parameters" json:"parameters"`
}
