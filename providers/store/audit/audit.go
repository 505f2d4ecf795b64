// Package audit records who changed a skill store, as the NATS server
// knows them.
//
// A skill store's index is written by whoever holds an administrator's
// credentials, and nothing in what they write can be taken as their
// name: a record's fields are the writer's to choose. The server, though,
// knows every connection's account and user. When a request crosses from
// one account into a service another account exports, and the importing
// account imports it with share: true, the server stamps the request with
// a Nats-Request-Info header naming the requester's account and user,
// replacing any header of that name the requester wrote. This package is
// such a service.
//
// The service (Serve) runs in an account of its own, which the tenants'
// and the library's accounts import with share: true. After a push, a
// removal, a rollback or a release operation, the command asks it to
// record a claim: "I wrote revision R of key K in my account's store".
// The service checks the claim against the store itself (the entry
// exists, under that key and, for a push, with that digest) and appends a
// Record with the server-given account and user and its own clock to the
// account's audit stream (AUDIT_<account>), which only the service can
// write. Query returns the records of one skill, for the caller's own
// account (or the library's): a tenant never reads another's.
//
// What it proves and what it does not: a record names the connection
// that claimed a revision, never one that did not, so a name is never
// framed. A writer who does not claim leaves the revision unaudited, and
// history says so; a writer who claims another's revision first names
// themself beside it. Each account's records live in their own stream
// with their own bound, so one account's claims never push out another's.
package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/skillstream/skillstream/events/skillstore"
)

// The subjects the service answers, in the account that runs it; each
// importing account imports them (with share: true) under the same names.
const (
	RecordSubject = "audit.skillstream.record"
	QuerySubject  = "audit.skillstream.query"
	// Subjects is what an account exports and imports.
	Subjects = "audit.skillstream.>"
	// queueGroup spreads requests over every member running the service.
	queueGroup = "skillstream-audit"
)

// Stores: which store of the caller's account a claim is about.
const (
	StoreTenant  = "tenant"  // the account's own skill store
	StoreLibrary = "library" // the shared library (its curator's account)
)

// Operations a claim may name.
const (
	OpPush     = "push"     // a revision written by skills push
	OpRemove   = "remove"   // a removal (delete marker)
	OpRollback = "rollback" // a revision written by skills rollback
	OpRelease  = "release"  // a release, promotion or pin entry written
	OpPolicy   = "policy"   // the trust policy or a revocation written
)

var ops = map[string]bool{OpPush: true, OpRemove: true, OpRollback: true, OpRelease: true, OpPolicy: true}

// Claim is what a command asks the service to record: that it wrote
// Revision of Key (0: the key's newest entry, read when the claim is
// checked). Name is the skill (empty for a policy entry); Detail a short
// free text of the writer's (a release's share, say), shown as theirs.
type Claim struct {
	Op       string `json:"op"`
	Store    string `json:"store"`
	Key      string `json:"key"`
	Name     string `json:"name,omitempty"`
	Revision uint64 `json:"revision,omitempty"`
	Digest   string `json:"digest,omitempty"`
	Signer   string `json:"signer,omitempty"`
	Detail   string `json:"detail,omitempty"`
}

// Record is one claim as the service recorded it: the claim, its store
// revision resolved, and who made it as the server knows them.
type Record struct {
	Claim
	// Account and User are the server's (Nats-Request-Info): the account's
	// name (a public key under JWT accounts) and the user's (a user name,
	// or a public key); UserName is the user JWT's name, when there is one.
	Account  string    `json:"account"`
	User     string    `json:"user"`
	UserName string    `json:"userName,omitempty"`
	Conn     string    `json:"conn,omitempty"` // the connection's name, as its client set it
	At       time.Time `json:"at"`             // the service's clock when it recorded
}

// Who is how a record names its writer: user (or the JWT's name) and
// account.
func (r Record) Who() string {
	u := r.User
	if r.UserName != "" {
		u = r.UserName
	}
	return u + "@" + r.Account
}

// Query asks for the records of one skill (or, with Name empty, of the
// policy entries) in the caller's store or the library.
type Query struct {
	Store string `json:"store"`
	Name  string `json:"name,omitempty"`
}

// Answer is the service's reply: the record written, or the records
// found, or why not.
type Answer struct {
	Record  *Record  `json:"record,omitempty"`
	Records []Record `json:"records,omitempty"`
	// Truncated says older records were left out (MaxAnswer).
	Truncated bool   `json:"truncated,omitempty"`
	Error     string `json:"error,omitempty"`
}

// Bounds of what the service takes and gives.
const (
	MaxClaimBytes = 4 << 10
	MaxDetail     = 200
	MaxKey        = 256
	// MaxAnswer bounds the records of one query: the newest are kept.
	MaxAnswer = 500
)

var (
	keyRE    = regexp.MustCompile(`^[A-Za-z0-9_=/.-]+$`)
	signerRE = regexp.MustCompile(`^[A-Z2-7]{56}$`)
	nameRE   = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
)

// ErrBadClaim wraps every reason a claim is refused before it is checked
// against the store.
var ErrBadClaim = errors.New("audit: bad claim")

// DecodeClaim reads a claim, bounded and checked field by field: every
// error names what was wrong.
func DecodeClaim(b []byte) (Claim, error) {
	var c Claim
	if len(b) > MaxClaimBytes {
		return c, fmt.Errorf("%w: %d bytes, at most %d", ErrBadClaim, len(b), MaxClaimBytes)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("%w: not JSON: %v", ErrBadClaim, err)
	}
	return c, c.check()
}

func (c Claim) check() error {
	switch {
	case !ops[c.Op]:
		return fmt.Errorf("%w: op %q: want push, remove, rollback, release or policy", ErrBadClaim, c.Op)
	case c.Store != StoreTenant && c.Store != StoreLibrary:
		return fmt.Errorf("%w: store %q: want tenant or library", ErrBadClaim, c.Store)
	case c.Key == "" || len(c.Key) > MaxKey || !keyRE.MatchString(c.Key) || strings.Contains(c.Key, ".."):
		return fmt.Errorf("%w: key %q is not an index key", ErrBadClaim, clip(c.Key))
	case c.Name != "" && (len(c.Name) > 64 || !nameRE.MatchString(c.Name)):
		return fmt.Errorf("%w: name %q is not a skill name", ErrBadClaim, clip(c.Name))
	case c.Name == "" && c.Op != OpPolicy:
		return fmt.Errorf("%w: a %s claim names its skill", ErrBadClaim, c.Op)
	case c.Digest != "" && !skillstore.ValidDigest(c.Digest):
		return fmt.Errorf("%w: digest %q", ErrBadClaim, clip(c.Digest))
	case c.Op == OpPush && c.Digest == "":
		return fmt.Errorf("%w: a push claim names its digest", ErrBadClaim)
	case c.Signer != "" && !signerRE.MatchString(c.Signer):
		return fmt.Errorf("%w: signer %q is not a public key", ErrBadClaim, clip(c.Signer))
	case len(c.Detail) > MaxDetail:
		return fmt.Errorf("%w: detail of %d bytes, at most %d", ErrBadClaim, len(c.Detail), MaxDetail)
	case strings.ContainsFunc(c.Detail, func(r rune) bool { return r < 0x20 || r == 0x7f }):
		return fmt.Errorf("%w: detail holds control characters", ErrBadClaim)
	}
	return nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// DecodeQuery reads a query, bounded and checked.
func DecodeQuery(b []byte) (Query, error) {
	var q Query
	if len(b) > MaxClaimBytes {
		return q, fmt.Errorf("audit: query of %d bytes, at most %d", len(b), MaxClaimBytes)
	}
	if err := json.Unmarshal(b, &q); err != nil {
		return q, fmt.Errorf("audit: query is not JSON: %v", err)
	}
	if q.Store != StoreTenant && q.Store != StoreLibrary {
		return q, fmt.Errorf("audit: query store %q: want tenant or library", q.Store)
	}
	if q.Name != "" && (len(q.Name) > 64 || !nameRE.MatchString(q.Name)) {
		return q, fmt.Errorf("audit: query name %q is not a skill name", clip(q.Name))
	}
	return q, nil
}

// policyToken stands for "no skill" in subjects: a skill name never
// starts with an underscore.
const policyToken = "_policy"

// token is a subject token for s: s itself when it is a plain token,
// else a hash of it.
func token(s string) string {
	ok := s != "" && len(s) <= 64
	for i := 0; ok && i < len(s); i++ {
		c := s[i]
		ok = c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
	}
	if ok {
		return s
	}
	h := sha256.Sum256([]byte(s))
	return "h" + hex.EncodeToString(h[:12])
}

// StreamName is the audit stream of an account.
func StreamName(account string) string { return "AUDIT_" + token(account) }

// subject is where a record of account is kept: by skill, key and store
// revision, so that a query filters one skill.
func subject(account string, r Record) string {
	name := r.Name
	if name == "" {
		name = policyToken
	}
	return fmt.Sprintf("auditlog.%s.%s.%s.%s.%d", token(account), r.Store, name, token(r.Key), r.Revision)
}

// filter is the subjects of one skill's records.
func filter(account, store, name string) string {
	if name == "" {
		name = policyToken
	}
	return fmt.Sprintf("auditlog.%s.%s.%s.>", token(account), store, name)
}
