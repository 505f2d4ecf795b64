package catalog

import (
	"errors"
	"fmt"
)

// Source values a provider may report for where a skill came from.
const (
	SourceProject = "project" // a project root on disk, found from the cwd
	SourceUser    = "user"    // the user root
	SourceCustom  = "custom"  // a custom root (--skills-dir)
	SourceBundled = "bundled" // the bundled starter skills
	// The skill store's scopes: project/<id> and global.
	SourceStoreProject = "store-project"
	SourceStoreGlobal  = "store-global"
	// The shared library: an operator-curated store that every tenant of
	// a multi-tenant deployment sees below its own store's skills.
	SourceLibrary = "library"
)

// Precedence orders sources as the registry ranks them, for the catalog
// size limit: a higher value is a higher precedence, kept longer when the
// catalog must be shortened. From highest to lowest: project roots on disk,
// store project scope, custom roots, store global scope, the shared
// library, the user root, bundled skills. A source this package does not
// know ranks below all of them (-1): it is the first to give way.
func Precedence(source string) int {
	switch source {
	case SourceProject:
		return 6
	case SourceStoreProject:
		return 5
	case SourceCustom:
		return 4
	case SourceStoreGlobal:
		return 3
	case SourceLibrary:
		return 2
	case SourceUser:
		return 1
	case SourceBundled:
		return 0
	}
	return -1
}

// MaxNameLength is the longest skill name the grammar admits.
const MaxNameLength = 64

// ErrInvalidName reports a skill name outside the grammar
// ^[a-z0-9]+(-[a-z0-9]+)*$ of 1 to 64 characters.
var ErrInvalidName = errors.New("invalid skill name")

// ErrNotFound reports that no provider offers a skill of that name for the
// working directory asked about.
var ErrNotFound = errors.New("skill not found")

// Invocation says who may invoke a skill.
type Invocation struct {
	ModelInvocable bool `json:"modelInvocable"`
	UserInvocable  bool `json:"userInvocable"`
}

// ResourceKind tells how a skill's referenced resources are reached.
type ResourceKind string

// The kinds of resource base.
const (
	ResourceDirectory ResourceKind = "directory"
	ResourceURL       ResourceKind = "url"
	ResourceOpaque    ResourceKind = "opaque"
)

// ResourceBase is where a skill's relative references resolve. Exactly one of
// Path, URL and Description is meaningful, chosen by Kind.
type ResourceBase struct {
	Kind        ResourceKind `json:"kind"`
	Path        string       `json:"path,omitempty"`
	URL         string       `json:"url,omitempty"`
	Description string       `json:"description,omitempty"`
}

// Where names the resource base for people: the folder's path, the URL,
// or the description in parentheses ("" for an unknown kind).
func (rb ResourceBase) Where() string {
	switch rb.Kind {
	case ResourceDirectory:
		return rb.Path
	case ResourceURL:
		return rb.URL
	case ResourceOpaque:
		return "(" + rb.Description + ")"
	}
	return ""
}

// Summary is what a provider tells about a skill without loading its body.
type Summary struct {
	Name         string        `json:"name"`
	Description  string        `json:"description"`
	WhenToUse    string        `json:"whenToUse,omitempty"`
	Invocation   Invocation    `json:"invocation"`
	Source       string        `json:"source"`
	Provider     string        `json:"provider"`
	ResourceBase *ResourceBase `json:"resourceBase,omitempty"`
	// Origin says which revision of a store skill this is and why the
	// session gets it (zero outside the store). It never reaches the
	// model's text.
	Origin Origin `json:"origin,omitzero"`
}

// Origin is the evidence of where a store skill's revision came from:
// its number in the skill's history, its digest, and the channel that
// chose it for the session (ChannelStable, ChannelCanary, ChannelPin).
type Origin struct {
	Rev     uint64 `json:"rev,omitempty"`
	Digest  string `json:"digest,omitempty"`
	Channel string `json:"channel,omitempty"`
}

// The channels of Origin: the revision every session gets, a release's
// candidate that the session's cohort takes, a revision pinned for the
// session's scope.
const (
	ChannelStable = "stable"
	ChannelCanary = "canary"
	ChannelPin    = "pin"
)

// Skill is a loaded skill: its summary and its instruction body.
type Skill struct {
	Summary
	Content string `json:"content"`
	// Digest is the lowercase hex SHA-256 identifying the skill's files
	// (empty when the provider cannot tell); Revision is the skill store
	// revision the skill was loaded at (0 outside the store).
	Digest   string `json:"digest,omitempty"`
	Revision uint64 `json:"revision,omitempty"`
	// Signature is the loaded revision's publisher signature, when the
	// skill store holds one (see Signature); nil otherwise.
	Signature *Signature `json:"signature,omitempty"`
}

// Signature is what a worker needs to verify a store skill's signature
// itself: the publisher's key, the algorithm and the signature, and the
// two fields of the signed statement a result does not otherwise carry,
// the skill's scope ("global" or "project/<id>") and the digest of its
// summary. Structured value only, never in the text.
type Signature struct {
	Key     string `json:"key"`
	Alg     string `json:"alg"`
	Sig     string `json:"sig"`
	Scope   string `json:"scope"`
	Summary string `json:"summary"`
}

// Snapshot is the set of skills available for one working directory, sorted
// by name in byte order. Complete is false when some provider failed; an
// incomplete snapshot must not change what the model was last shown.
type Snapshot struct {
	Skills   []Summary
	Complete bool
	// Revision is the skill store revision the snapshot reflects at least
	// (0 without a store): views of different processes can be ordered by
	// it.
	Revision uint64
	// Epoch names the store's log that Revision counts in ("" without a
	// store): revisions are compared only within one epoch.
	Epoch string
	// Diagnostics say what was found but not offered (a SKILL.md that
	// does not parse, a dangling link), for people, never for the model.
	Diagnostics []Diagnostic
	// Revoked names, sorted, the skills not offered because the skill
	// store's trust policy revokes the revision it would offer (and it
	// has no other to offer): the evidence a catalog record keeps of why
	// they left it. Never for the model.
	Revoked []string
}

// Diagnostic tells a person why something was not offered as a skill.
type Diagnostic struct {
	Provider string `json:"provider,omitempty"`
	// Source is where it was found (SourceProject, SourceUser, ...).
	Source string `json:"source,omitempty"`
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// String renders the diagnostic as "<path>: <reason>".
func (d Diagnostic) String() string {
	return d.Path + ": " + d.Reason
}

// Query says whose skills are asked for. Cwd is the session's working
// directory on the processor's host (empty: no project folders); Project is
// the skill store's project scope id (empty: the global scope only);
// ResourceDir is the absolute path on the worker's host under which the
// worker materialises store skills' files (empty: store skills have no
// resource base); Canary names the skills whose release candidate the
// session takes (Cohort: empty for a session in no canary). A Query is
// comparable and keys caches.
type Query struct {
	Cwd         string `json:"cwd,omitempty"`
	Project     string `json:"project,omitempty"`
	ResourceDir string `json:"resourceDir,omitempty"`
	Canary      string `json:"canary,omitempty"`
}

// At is the Query of a working directory alone.
func At(cwd string) Query { return Query{Cwd: cwd} }

// CheckName returns an error wrapping ErrInvalidName when name is outside the
// grammar.
func CheckName(name string) error {
	if !ValidName(name) {
		return fmt.Errorf("%w %q", ErrInvalidName, name)
	}
	return nil
}

// ValidName reports whether name matches ^[a-z0-9]+(-[a-z0-9]+)*$ and is 1 to
// 64 bytes long.
func ValidName(name string) bool {
	if len(name) == 0 || len(name) > MaxNameLength {
		return false
	}
	prevDash := true // a leading dash is as bad as a double one
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
			prevDash = false
		case c == '-':
			if prevDash {
				return false
			}
			prevDash = true
		default:
			return false
		}
	}
	return !prevDash
}
