package providers

import (
	"context"
	"errors"
	"time"

	"github.com/skillstream/skillstream/catalog"
)

// Ranks of the standard skill sources. A lower rank wins a name; sources of
// one kind add their position (0, 1, …) to the base so that, for instance,
// the second configured custom folder ranks RankCustom+1.
const (
	RankProject      = 100
	RankStoreProject = 150 // the skill store's project scope
	RankCustom       = 200
	RankStoreGlobal  = 250 // the skill store's global scope
	RankLibrary      = 275 // the shared library (a store opened with Library)
	RankUser         = 300
	RankBundled      = 400
)

// Candidate is one skill a provider offers for a working directory. Among
// candidates of the same name the lowest Rank wins, then the provider that
// comes first in the registry, then the candidate the provider listed first.
type Candidate struct {
	catalog.Summary
	Rank int `json:"rank"`
}

// Provider supplies skills. Implementations must be safe for concurrent use
// and should return promptly (with ctx.Err()) once ctx is done.
type Provider interface {
	// Name identifies the provider in summaries, reports and errors.
	Name() string
	// List returns the provider's candidates for q, in the provider's own
	// order. An empty q.Cwd means "no working directory". A confirmed absence
	// of skills is an empty list and a nil error; an error means the answer
	// is unknown and makes the registry's snapshot incomplete; candidates
	// returned together with an error are still offered for loading.
	List(ctx context.Context, q catalog.Query) ([]Candidate, error)
	// Load returns the current definition and body of the provider's own
	// winning candidate called name for q. It returns an error wrapping
	// catalog.ErrNotFound when the provider no longer offers that name. A
	// name is only ever looked up, never turned into a path.
	Load(ctx context.Context, name string, q catalog.Query) (catalog.Skill, error)
}

// Notifier is implemented by providers that can tell when their answers for
// a query may have changed. The registry caches a complete
// snapshot only while every provider is a Notifier whose channel is still
// open.
//
// Changes returns a channel that is closed once an answer List gave for cwd
// after the call may no longer be current. (So a provider may start
// watching during List, as long as it reads after the watch is in place.)
// After it is closed, a later call returns a fresh channel. A nil channel means "never changes" (a static provider);
// a channel that is already closed means "cannot tell, do not cache".
//
// A provider that bounds what it watches may stop watching cwd without
// anything having changed: it then leaves the channel open and returns a
// fresh one at the next call. So a holder compares its channel with a new
// Changes(cwd) before trusting an answer (the registry does): a closed
// channel is a change, a replaced open one only means the answers given
// under it are no longer watched.
type Notifier interface {
	Changes(q catalog.Query) <-chan struct{}
}

// ChangesSincer is a Notifier that can be told when the request it serves
// arrived: ChangesSince(q, since) answers as Changes(q) does, but need only
// reflect the changes completed before since, not those completed before
// the call. A provider that checks its watches on every Changes can then
// skip the check when one began after since (the filesystem provider's read
// of its change queue). The registry calls it when the request's context
// carries its arrival (catalog.WithArrival).
type ChangesSincer interface {
	ChangesSince(q catalog.Query, since time.Time) <-chan struct{}
}

// changesOf asks n for its change channel of q, as of since when n can
// take it (ChangesSincer) and since is set.
func changesOf(n Notifier, q catalog.Query, since time.Time) <-chan struct{} {
	if s, ok := n.(ChangesSincer); ok && !since.IsZero() {
		return s.ChangesSince(q, since)
	}
	return n.Changes(q)
}

// Closed reports whether a change channel is closed: a change announced,
// or a provider that cannot tell.
func Closed(ch <-chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// QuickLoader is implemented by providers that can sometimes answer Load
// from what they keep in memory, with nothing that could block (no file
// read, no network request, no wait on a lock held across I/O). The
// registry calls LoadQuick in the caller's goroutine, without the
// supervision (timeout, stuck-call accounting) a provider call otherwise
// gets; ok false sends it the usual way. An answer given must be the one
// Load would give at that moment.
type QuickLoader interface {
	LoadQuick(name string, q catalog.Query) (s catalog.Skill, ok bool)
}

// QuickLoaderAfterChanges is implemented by a QuickLoader that is also a
// Notifier whose Changes brings it up to date: every change completed
// before a call to Changes began is in what it answers afterwards (the
// filesystem provider reads its change queue there). The registry asks
// every provider's Changes(q) before it trusts a view of q; it then calls
// LoadQuickAfterChanges, in the same operation, which answers as LoadQuick
// does but may skip bringing the provider up to date again. Its answer
// reflects at least every change completed before that Changes call began.
type QuickLoaderAfterChanges interface {
	LoadQuickAfterChanges(name string, q catalog.Query) (s catalog.Skill, ok bool)
}

// Diagnoser is implemented by providers that can explain what they skipped
// (invalid files, dangling links) for operators. Diagnostics never reach the
// model.
type Diagnoser interface {
	Diagnostics(ctx context.Context, q catalog.Query) ([]Diagnostic, error)
}

// Diagnostic tells an operator why something was not offered as a skill.
type Diagnostic = catalog.Diagnostic

// Revoker is implemented by providers that withhold skills whose revision
// is revoked (the skill store's trust policy): Revoked names, for q, the
// skills not offered for that reason alone. It answers from memory. A
// view records them (catalog.Snapshot.Revoked) so that the catalog that
// drops them says why; they never reach the model.
type Revoker interface {
	Revoked(q catalog.Query) []string
}

// MaxRevoked bounds the revoked names a view carries.
const MaxRevoked = 64

// Revisioned is implemented by providers whose answers follow an ordered
// log (the skill store): Revision is the position of the log they have
// applied, CatchUp waits until they have applied at least rev or ctx ends.
// The registry stamps each snapshot with the revision it reflects, so that
// processes sharing the log can tell whose view is newer.
type Revisioned interface {
	Revision() uint64
	CatchUp(ctx context.Context, rev uint64) error
}

// Epoched is implemented by Revisioned providers whose log can be replaced
// by another one (the skill store's buckets deleted and created again, or
// restored from a backup): revisions of two logs cannot be compared, so
// each log has an epoch, and a revision means something only beside its
// epoch. Position returns both, read together. Refresh checks the log's
// identity now rather than at the next periodic check, and when it
// changed waits (within ctx) until the new log is loaded; it returns the
// epoch then current. Store names the log ("" when there is none), so that
// processes can tell a newer log of their own from another one.
//
// CatchUp of an Epoched provider fails with an error wrapping
// ErrUnknownRevision when its log never reached rev: that revision was of
// another log.
type Epoched interface {
	Revisioned
	Position() Position
	Refresh(ctx context.Context) (string, error)
	Store() string
}

// Position is where an Epoched provider stands: the epoch of its log and
// the revision of that log it has applied. A position reaches another
// only within one epoch (see Reaches).
type Position struct {
	Epoch    string
	Revision uint64
}

// Reaches reports whether p reflects at least q: the same epoch and a
// revision at least q's.
func (p Position) Reaches(q Position) bool {
	return p.Epoch == q.Epoch && p.Revision >= q.Revision
}

// ErrUnknownRevision reports a revision the provider's log never reached:
// a revision of another log (one since replaced).
var ErrUnknownRevision = errors.New("revision unknown to this log")

// Version is what a provider can tell, from memory, of the version of one
// of its skills: enough to recognise a skill unchanged without reading
// its files. The zero Version means the provider cannot tell.
type Version struct {
	// Token changes whenever the provider sees the skill change in what
	// it follows (the store's record, the identity of a skill file on
	// disk); "" when the provider cannot tell.
	Token string
	// Digest, when not empty, is the digest of the skill's files
	// (catalog.Skill.Digest), known to be current.
	Digest string
	// Stale reports a change to the skill's files seen since Digest was
	// last kept, which Token may not show: the skill is to be read again.
	Stale bool
}

// Versioner is implemented by providers that can tell what version of a
// skill they would serve from memory, with nothing that could block (no
// file read, no network request, no wait on a lock held across I/O). The
// registry calls Version in the caller's goroutine, after it has asked
// every provider's Changes(q) in the same operation, for the provider's
// own winner called name. Two Versions of one skill with the same Token,
// neither Stale, whose Digests (where both are set) agree, mean the
// provider has seen no change to the skill's files between them.
type Versioner interface {
	Version(name string, q catalog.Query) Version
}

// Releaser is implemented by providers whose skills can be released to a
// share of sessions first (the skill store's canaries). Releases returns,
// from memory and without blocking, the releases in progress that q's
// skills have, whatever q.Canary says; a session's Query.Canary
// (catalog.Cohort over them) then names those whose candidate List and Load
// answer with for it. A skill pinned for q's scope has no release there.
type Releaser interface {
	Releases(q catalog.Query) []catalog.Release
}
