package events

import (
	"fmt"
	"strings"
)

// DefaultPrefix is the subject prefix of the session stream when none is
// configured.
const DefaultPrefix = "ev"

// ToolDefinitionSubject is the core NATS subject on which a processor answers
// requests for the skill tool definition.
const ToolDefinitionSubject = "skillstream.tool.definition"

// ToolDefinitionsSubject is the core NATS subject on which a processor
// answers requests for every tool it serves: a list of ToolDefinition (the
// skill tool, and skill_search when search is on).
const ToolDefinitionsSubject = "skillstream.tool.definitions"

// MaxSessionLength is the longest session token allowed.
const MaxSessionLength = 128

// ValidSession reports whether sid is a session token: 1 to 128 characters
// from A-Z, a-z, 0-9, '_' and '-'. Such a token is always exactly one NATS
// subject token.
func ValidSession(sid string) bool {
	if len(sid) == 0 || len(sid) > MaxSessionLength {
		return false
	}
	for i := 0; i < len(sid); i++ {
		c := sid[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_', c == '-':
		default:
			return false
		}
	}
	return true
}

// CheckSession returns nil for a valid session token and otherwise an error
// matching ErrBadSession that quotes the token (cut to 140 bytes).
func CheckSession(sid string) error {
	if ValidSession(sid) {
		return nil
	}
	return fmt.Errorf("%w %s: want 1 to %d of A-Z a-z 0-9 _ -", ErrBadSession, quoteShort(sid), MaxSessionLength)
}

// ValidatePrefix checks a subject prefix: one or more dot-separated NATS
// tokens, each non-empty, without whitespace, and neither "*" nor ">". It
// returns an error matching ErrBadSubject.
func ValidatePrefix(prefix string) error {
	if prefix == "" {
		return fmt.Errorf("%w: empty prefix", ErrBadSubject)
	}
	if err := checkTokens(prefix); err != nil {
		return fmt.Errorf("%w: prefix %s: %s", ErrBadSubject, quoteShort(prefix), err.Error())
	}
	return nil
}

// Valid reports whether k can be the kind part of a subject: dot-separated,
// non-empty tokens without whitespace or wildcards. Kinds this package does
// not name are valid; processors ignore them.
func (k Kind) Valid() bool { return k != "" && checkTokens(string(k)) == nil }

// Known reports whether k is one of the kinds the protocol names in its
// table of kinds: the five of version 1 and skill searches.
func (k Kind) Known() bool {
	switch k {
	case KindPreStep, KindSkillCall, KindSkillSearch, KindCompaction, KindCatalog, KindToolResult:
		return true
	}
	return false
}

// Subject returns "<prefix>.<sid>.<kind>". In the owner layout sid is
// "<owner>.<sid>", which gives "<prefix>.<owner>.<sid>.<kind>". It does not
// validate; use ValidatePrefix and ValidSessionIn on untrusted parts first.
func Subject(prefix, sid string, k Kind) string {
	return prefix + "." + sid + "." + string(k)
}

// SessionWildcard returns "<prefix>.<sid>.>", the filter matching every event
// of one session (in either layout: sid holds the owner in the owner
// layout).
func SessionWildcard(prefix, sid string) string {
	return prefix + "." + sid + ".>"
}

// StreamSubjects returns "<prefix>.>", the subjects of the session stream.
func StreamSubjects(prefix string) string { return prefix + ".>" }

// TriggerFilters returns the consumer filter subjects of the processor
// group in the flat layout: every session's pre-steps, skill calls and
// skill searches. TriggerFiltersIn gives them for any layout.
func TriggerFilters(prefix string) []string {
	return []string{
		prefix + ".*." + string(KindPreStep),
		prefix + ".*." + string(KindSkillCall),
		prefix + ".*." + string(KindSkillSearch),
	}
}

// ParseSubject splits "<prefix>.<sid>.<kind>", a subject of the flat
// layout, into the session token and the kind (ParseSubjectIn parses any
// layout). The kind is everything after the session token and may hold dots;
// kinds this package does not name are returned as they are, without error.
// Errors match ErrBadSubject; an invalid session token also matches
// ErrBadSession.
func ParseSubject(prefix, subject string) (sid string, k Kind, err error) {
	rest, ok := strings.CutPrefix(subject, prefix+".")
	if prefix == "" || !ok {
		return "", "", fmt.Errorf("%w: %s does not start with %q", ErrBadSubject, quoteShort(subject), prefix+".")
	}
	sid, kind, ok := strings.Cut(rest, ".")
	if !ok || kind == "" {
		return "", "", fmt.Errorf("%w: %s has no kind after the session token", ErrBadSubject, quoteShort(subject))
	}
	if !ValidSession(sid) {
		return "", "", fmt.Errorf("%w: %s: %w", ErrBadSubject, quoteShort(subject), CheckSession(sid))
	}
	if err := checkTokens(kind); err != nil {
		return "", "", fmt.Errorf("%w: %s: kind: %s", ErrBadSubject, quoteShort(subject), err.Error())
	}
	return sid, Kind(kind), nil
}

// LiteralSubject reports whether s is a subject a message can be published
// to and a subscription can name exactly: dot-separated tokens, none
// empty, without wildcard characters, white space or control characters.
// Callers bound its length as their use requires.
func LiteralSubject(s string) bool {
	prevDot := true
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '.':
			if prevDot {
				return false
			}
			prevDot = true
		case c <= ' ' || c == '*' || c == '>' || c == 0x7f:
			return false
		default:
			prevDot = false
		}
	}
	return !prevDot
}

// checkTokens checks a dot-separated list of subject tokens.
func checkTokens(s string) error {
	for tok := range strings.SplitSeq(s, ".") {
		if tok == "" {
			return fmt.Errorf("empty token")
		}
		if tok == "*" || tok == ">" {
			return fmt.Errorf("wildcard token %q", tok)
		}
		for i := 0; i < len(tok); i++ {
			if c := tok[i]; c <= ' ' || c == 0x7f {
				return fmt.Errorf("control or space character in token %q", tok)
			}
		}
	}
	return nil
}

// quoteShort quotes s for an error message, cutting it to a bounded length.
func quoteShort(s string) string {
	const max = 140
	if len(s) > max {
		return fmt.Sprintf("%q...", s[:max])
	}
	return fmt.Sprintf("%q", s)
}
