package events

import (
	"fmt"
	"strings"
)

// Layout is how a session's subjects are laid out under the prefix. Every
// worker, processor and command of one stream must use the same layout.
//
// In LayoutFlat (the default, the zero value) a session id is one token
// and a session's events live on <prefix>.<sid>.<kind>.
//
// In LayoutOwner a session id is two tokens joined by a dot,
// "<owner>.<sid>", each of the flat layout's grammar, and a session's
// events live on <prefix>.<owner>.<sid>.<kind>. The owner token (a worker
// or a tenant) lets a NATS server bind sessions to their owners with
// per-user permissions such as "ev.worker-a.*.agent.pre-step": the flat
// layout's "ev.*.agent.pre-step" matches every session.
//
// A session id is the same string everywhere: in payloads' session fields,
// in answers, in message ids, and in the functions of this package that
// take one (Subject, SessionWildcard). Only the grammar of valid ids, the
// parsing of subjects and the processors' filters depend on the layout.
type Layout uint8

// The session layouts.
const (
	LayoutFlat Layout = iota
	LayoutOwner
)

// String returns "flat" or "owner" (or "layout(N)" for an unknown value).
func (l Layout) String() string {
	switch l {
	case LayoutFlat:
		return "flat"
	case LayoutOwner:
		return "owner"
	}
	return fmt.Sprintf("layout(%d)", uint8(l))
}

// Valid reports whether l is LayoutFlat or LayoutOwner.
func (l Layout) Valid() bool { return l == LayoutFlat || l == LayoutOwner }

// ParseLayout reads a layout's name: "flat" or "owner". An empty name is
// the default, flat.
func ParseLayout(s string) (Layout, error) {
	switch s {
	case "", "flat":
		return LayoutFlat, nil
	case "owner":
		return LayoutOwner, nil
	}
	return LayoutFlat, fmt.Errorf("unknown session layout %s: want flat or owner", quoteShort(s))
}

// MarshalText writes the layout's name (for JSON and flags).
func (l Layout) MarshalText() ([]byte, error) {
	if !l.Valid() {
		return nil, fmt.Errorf("unknown session layout %v", l)
	}
	return []byte(l.String()), nil
}

// UnmarshalText reads a layout's name as ParseLayout does.
func (l *Layout) UnmarshalText(b []byte) error {
	v, err := ParseLayout(string(b))
	if err != nil {
		return err
	}
	*l = v
	return nil
}

// SessionTokens is how many subject tokens a session id takes in l: 1 in
// the flat layout, 2 in the owner layout.
func (l Layout) SessionTokens() int {
	if l == LayoutOwner {
		return 2
	}
	return 1
}

// ValidSessionIn reports whether sid is a session id in layout l: in the
// flat layout a session token (ValidSession); in the owner layout two
// session tokens joined by one dot, "<owner>.<sid>".
func ValidSessionIn(l Layout, sid string) bool {
	switch l {
	case LayoutFlat:
		return ValidSession(sid)
	case LayoutOwner:
		owner, rest, ok := strings.Cut(sid, ".")
		return ok && ValidSession(owner) && ValidSession(rest)
	}
	return false
}

// CheckSessionIn returns nil for a session id valid in layout l and
// otherwise an error matching ErrBadSession that quotes the id (cut to 140
// bytes) and says what the layout wants. An id of the other layout is
// named as such, so that a worker or command configured with the wrong
// layout is told so.
func CheckSessionIn(l Layout, sid string) error {
	if ValidSessionIn(l, sid) {
		return nil
	}
	switch l {
	case LayoutFlat:
		if ValidSessionIn(LayoutOwner, sid) {
			return fmt.Errorf("%w %s: want 1 to %d of A-Z a-z 0-9 _ - (an <owner>.<session> id belongs to the owner session layout, which is not set)",
				ErrBadSession, quoteShort(sid), MaxSessionLength)
		}
		return CheckSession(sid)
	case LayoutOwner:
		if ValidSession(sid) {
			return fmt.Errorf("%w %s: the owner session layout wants <owner>.<session>, two tokens joined by a dot; this is one token (a flat layout id)",
				ErrBadSession, quoteShort(sid))
		}
		return fmt.Errorf("%w %s: the owner session layout wants <owner>.<session>: two tokens of 1 to %d of A-Z a-z 0-9 _ - joined by one dot",
			ErrBadSession, quoteShort(sid), MaxSessionLength)
	}
	return fmt.Errorf("%w %s: unknown session layout %v", ErrBadSession, quoteShort(sid), l)
}

// SessionLayout returns the layout in which sid is a valid session id:
// flat for one token, owner for two. ok is false when it is valid in
// neither. A reader of one session's records, whose id it has checked
// in its layout, decodes them in that same layout.
func SessionLayout(sid string) (l Layout, ok bool) {
	switch {
	case ValidSession(sid):
		return LayoutFlat, true
	case ValidSessionIn(LayoutOwner, sid):
		return LayoutOwner, true
	}
	return LayoutFlat, false
}

// TriggerFiltersIn returns the processor group's consumer filter subjects
// in layout l: every session's pre-steps, skill calls and skill searches.
// In the owner layout they are <prefix>.*.*.<kind>.
func TriggerFiltersIn(l Layout, prefix string) []string {
	if l != LayoutOwner {
		return TriggerFilters(prefix)
	}
	return []string{
		prefix + ".*.*." + string(KindPreStep),
		prefix + ".*.*." + string(KindSkillCall),
		prefix + ".*.*." + string(KindSkillSearch),
	}
}

// TriggerFilterIn returns the filter subject of kind k in layout l:
// <prefix>.*.<kind> (flat) or <prefix>.*.*.<kind> (owner).
func TriggerFilterIn(l Layout, prefix string, k Kind) string {
	return prefix + strings.Repeat(".*", l.SessionTokens()) + "." + string(k)
}

// ParseSubjectIn splits a subject of layout l into the session id and the
// kind. In the flat layout it is ParseSubject. In the owner layout the
// subject is <prefix>.<owner>.<sid>.<kind>: the session id is the two
// tokens after the prefix, joined by their dot ("<owner>.<sid>"), and the
// kind is everything after them. Errors match ErrBadSubject; an invalid
// session id also matches ErrBadSession.
func ParseSubjectIn(l Layout, prefix, subject string) (sid string, k Kind, err error) {
	switch l {
	case LayoutFlat:
		return ParseSubject(prefix, subject)
	case LayoutOwner:
	default:
		return "", "", fmt.Errorf("%w: %s: unknown session layout %v", ErrBadSubject, quoteShort(subject), l)
	}
	rest, ok := strings.CutPrefix(subject, prefix+".")
	if prefix == "" || !ok {
		return "", "", fmt.Errorf("%w: %s does not start with %q", ErrBadSubject, quoteShort(subject), prefix+".")
	}
	owner, rest, ok1 := strings.Cut(rest, ".")
	id, kind, ok2 := strings.Cut(rest, ".")
	if !ok1 || !ok2 || kind == "" {
		return "", "", fmt.Errorf("%w: %s has no kind after the owner and session tokens", ErrBadSubject, quoteShort(subject))
	}
	sid = owner + "." + id
	if !ValidSessionIn(LayoutOwner, sid) {
		return "", "", fmt.Errorf("%w: %s: %w", ErrBadSubject, quoteShort(subject), CheckSessionIn(LayoutOwner, sid))
	}
	if err := checkTokens(kind); err != nil {
		return "", "", fmt.Errorf("%w: %s: kind: %s", ErrBadSubject, quoteShort(subject), err.Error())
	}
	return sid, Kind(kind), nil
}
