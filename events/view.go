package events

import (
	"regexp"
	"strings"
)

// ViewSubjectPrefix is the first part of the subject on which a processor
// instance tells the other members of its consumer group which skills it
// sees: <ViewSubjectPrefix>.<instance>. It lies under the service's own
// subjects, where no trigger's Reply-Inbox may point.
const ViewSubjectPrefix = "skillstream.view"

// MaxInstanceLength is the longest processor instance id.
const MaxInstanceLength = 128

// ValidInstance reports whether id is a processor instance id: 1 to 128
// characters from A-Z, a-z, 0-9, '_' and '-' (one NATS subject token).
func ValidInstance(id string) bool { return ValidSession(id) }

// ViewSubject is the subject on which instance answers view requests.
func ViewSubject(instance string) string { return ViewSubjectPrefix + "." + instance }

// ViewRequest asks a processor instance which catalog it would decide for
// a query now (the skills part of a PreStep). Search says that the
// catalog is one of a session to which search is offered (its tool view
// holds the skill_search tool beside the skill tool): a member with search
// on then shortens it as it would for such a session.
type ViewRequest struct {
	V           int    `msgpack:"v" json:"v"`
	Cwd         string `msgpack:"cwd,omitempty" json:"cwd,omitempty"`
	Project     string `msgpack:"project,omitempty" json:"project,omitempty"`
	ResourceDir string `msgpack:"resourceDir,omitempty" json:"resourceDir,omitempty"`
	Search      bool   `msgpack:"search,omitempty" json:"search,omitempty"`
	// Session, when set, is the session the view is asked for: a member
	// whose skills release new revisions to a share of sessions answers
	// with the revisions that session takes, as for its triggers. Members
	// that do not know it answer for no session.
	Session string `msgpack:"session,omitempty" json:"session,omitempty"`
}

// Validate checks v, the bounds of cwd, project and resourceDir as a
// PreStep's (where the cwd may lead is the processor's to check, as for a
// trigger).
func (r ViewRequest) Validate() error {
	return first(checkVersion(r.V), checkCwd(r.Cwd), checkProject(r.Project), checkResourceDir(r.ResourceDir), checkViewSession(r.Session))
}

// checkViewSession checks a view request's session: absent, or a session
// id of either layout.
func checkViewSession(sid string) error {
	if sid == "" || ValidSessionIn(LayoutFlat, sid) || ValidSessionIn(LayoutOwner, sid) {
		return nil
	}
	return &FieldError{Field: "session", Problem: problemBadSession}
}

// ViewReply is a processor instance's answer to a ViewRequest: the digest
// of the catalog it would decide for the query (when its snapshot is
// complete), the skill store revision and epoch that snapshot reflects,
// and its store configuration (Store: the store's bucket; NoStore: it
// serves no store; both absent from members that do not say); or the
// error that kept it from answering.
type ViewReply struct {
	V        int    `msgpack:"v" json:"v"`
	Instance string `msgpack:"instance" json:"instance"`
	Complete bool   `msgpack:"complete" json:"complete"`
	Digest   string `msgpack:"digest,omitempty" json:"digest,omitempty"`
	Revision uint64 `msgpack:"revision" json:"revision"`
	Epoch    string `msgpack:"epoch,omitempty" json:"epoch,omitempty"`
	Store    string `msgpack:"store,omitempty" json:"store,omitempty"`
	NoStore  bool   `msgpack:"noStore,omitempty" json:"noStore,omitempty"`
	Error    string `msgpack:"error,omitempty" json:"error,omitempty"`
}

// Validate checks v and that the instance is an instance id.
func (r ViewReply) Validate() error {
	if err := checkVersion(r.V); err != nil {
		return err
	}
	if !ValidInstance(r.Instance) {
		return &FieldError{Field: "instance", Problem: "not an instance id (^[A-Za-z0-9_-]{1,128}$)"}
	}
	if !storeName.MatchString(r.Store) {
		return &FieldError{Field: "store", Problem: "not a store name (bucket names, ^[A-Za-z0-9_-]{1,255}(/[A-Za-z0-9_-]{1,255})?$)"}
	}
	if len(r.Epoch) > 64 {
		return &FieldError{Field: "epoch", Problem: "longer than 64 bytes"}
	}
	return nil
}

// storeName matches a ViewReply's Store: empty, a bucket name, or two
// (the index's and the object store's) separated by a slash.
var storeName = regexp.MustCompile(`^([A-Za-z0-9_-]{1,255}(/[A-Za-z0-9_-]{1,255})?)?$`)

// DecodeViewRequest decodes and validates a ViewRequest.
func DecodeViewRequest(enc Encoding, b []byte) (ViewRequest, error) {
	var r ViewRequest
	err := decode(enc, b, &r)
	if err == nil {
		err = r.Validate()
	}
	return r, err
}

// DecodeViewReply decodes and validates a ViewReply.
func DecodeViewReply(enc Encoding, b []byte) (ViewReply, error) {
	var r ViewReply
	err := decode(enc, b, &r)
	if err == nil {
		err = r.Validate()
	}
	return r, err
}

// InstanceToken turns s (a host name, say) into a string fit for an
// instance id: every character outside A-Z, a-z, 0-9, '_' and '-' becomes
// '-', and it is cut to max bytes (at least 1; "x" when nothing is left).
func InstanceToken(s string, max int) string {
	var b strings.Builder
	for i := 0; i < len(s) && b.Len() < max; i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '_', c == '-':
			b.WriteByte(c)
		default:
			b.WriteByte('-')
		}
	}
	if b.Len() == 0 {
		return "x"
	}
	return b.String()
}
