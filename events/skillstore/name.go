package skillstore

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// Default names of the store's buckets: the index (a key-value bucket) and
// the objects (an object store). Deployments may choose others; both
// sides of the store must then be told the same names.
const (
	DefaultBucket  = "SKILLS"
	DefaultObjects = "SKILLS"
)

// MaxNameLength bounds a skill name in the store, in bytes.
const MaxNameLength = 64

// ValidName reports whether name can name a skill in the store: 1 to
// MaxNameLength bytes of lowercase ASCII letters, digits and '-'. Such a
// name is one token of an index key (it holds no '.', '*' or '>') and one
// element of a path on any file system (it is never "", "." or "..", and
// holds no separator).
//
// This is the store's alphabet, not the rule for a skill's name: a
// catalog also refuses a '-' at either end or two in a row. Every name a
// catalog accepts is one the store accepts; the store provider, which
// serves catalogs, checks both.
func ValidName(name string) bool {
	if len(name) == 0 || len(name) > MaxNameLength {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// Scope is where a published skill applies: Global (every session) or a
// project (sessions whose trigger names that project id). It is the first
// part of the skill's index key.
type Scope struct {
	project string // "" for the global scope
}

// Global is the scope of every session.
var Global = Scope{}

// ErrBadScope reports a scope outside "global" and "project/<id>".
var ErrBadScope = errors.New("invalid scope")

// ErrBadKey reports an index key outside the layout.
var ErrBadKey = errors.New("invalid skill index key")

var projectID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// Project returns the scope of one project id. The id must match
// ^[A-Za-z0-9_-]{1,128}$.
func Project(id string) (Scope, error) {
	if !projectID.MatchString(id) {
		return Scope{}, fmt.Errorf("%w: project id %q must be 1 to 128 letters, digits, '_' or '-'", ErrBadScope, id)
	}
	return Scope{project: id}, nil
}

// ParseScope parses "global" or "project/<id>".
func ParseScope(s string) (Scope, error) {
	if s == "global" {
		return Global, nil
	}
	id, ok := strings.CutPrefix(s, "project/")
	if !ok {
		return Scope{}, fmt.Errorf("%w %q: want global or project/<id>", ErrBadScope, s)
	}
	return Project(id)
}

// String is "global" or "project/<id>".
func (s Scope) String() string {
	if s.project == "" {
		return "global"
	}
	return "project/" + s.project
}

// ProjectID is the scope's project id, "" for the global scope.
func (s Scope) ProjectID() string { return s.project }

// Key is the index key of skill name in the scope: "global.<name>" or
// "project.<id>.<name>".
func (s Scope) Key(name string) string {
	if s.project == "" {
		return "global." + name
	}
	return "project." + s.project + "." + name
}

// Filter is the key filter matching every skill of the scope:
// "global.*" or "project.<id>.*".
func (s Scope) Filter() string { return s.Key("*") }

// ParseKey splits an index key into scope and skill name. A key outside
// the layout, or whose name ValidName refuses, is an error wrapping
// ErrBadKey (or ErrBadScope for a bad project id).
func ParseKey(key string) (Scope, string, error) {
	parts := strings.Split(key, ".")
	var sc Scope
	var name string
	switch {
	case len(parts) == 2 && parts[0] == "global":
		name = parts[1]
	case len(parts) == 3 && parts[0] == "project":
		var err error
		if sc, err = Project(parts[1]); err != nil {
			return Scope{}, "", err
		}
		name = parts[2]
	default:
		return Scope{}, "", fmt.Errorf("%w: %q is neither global.<name> nor project.<id>.<name>", ErrBadKey, clip(key))
	}
	if !ValidName(name) {
		return Scope{}, "", fmt.Errorf("%w: %q: skill name %q", ErrBadKey, clip(key), clip(name))
	}
	return sc, name, nil
}

// clip bounds a hostile string quoted in an error.
func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}
