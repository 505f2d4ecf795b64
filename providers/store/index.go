package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/skillstream/skillstream/catalog"
)

// Scope is where a published skill applies: Global (every session) or a
// project (sessions whose trigger names that project id).
type Scope struct {
	project string // "" for the global scope
}

// Global is the scope of every session.
var Global = Scope{}

// ErrBadScope reports a scope outside "global" and "project/<id>".
var ErrBadScope = errors.New("invalid scope")

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

// prefix is the key prefix of the scope's skills, with the final dot.
func (s Scope) prefix() string {
	return s.Key("")
}

// parseKey splits an index key into scope and skill name.
func parseKey(key string) (Scope, string, error) {
	parts := strings.Split(key, ".")
	switch {
	case len(parts) == 2 && parts[0] == "global":
		return Global, parts[1], checkKeyName(parts[1])
	case len(parts) == 3 && parts[0] == "project":
		sc, err := Project(parts[1])
		if err != nil {
			return Scope{}, "", err
		}
		return sc, parts[2], checkKeyName(parts[2])
	}
	return Scope{}, "", fmt.Errorf("key %q is neither global.<name> nor project.<id>.<name>", key)
}

func checkKeyName(name string) error {
	if !catalog.ValidName(name) {
		return fmt.Errorf("%w %q in key", catalog.ErrInvalidName, name)
	}
	return nil
}

// Record is the index value of one published skill: what a catalog needs
// (summary and invocation flags) and where its files are (the object named
// by its digest). Encoded as JSON.
type Record struct {
	Name        string             `json:"name"`
	Description string             `json:"description"`
	WhenToUse   string             `json:"whenToUse,omitempty"`
	Invocation  catalog.Invocation `json:"invocation"`
	Digest      string             `json:"digest"`
	Object      string             `json:"object"`
	Size        int64              `json:"size"`      // bytes of the skill's files
	Files       int                `json:"files"`     // number of files
	Published   int64              `json:"published"` // unix milliseconds
}

// maxRecordBytes bounds an index value: a record carries a description of
// at most 1024 code points and a few short fields.
const maxRecordBytes = 64 << 10

var hexDigest = regexp.MustCompile(`^[0-9a-f]{64}$`)

// ErrBadRecord reports an index value that is not a valid record.
var ErrBadRecord = errors.New("malformed skill index entry")

// decodeRecord decodes and checks the value of key name.
func decodeRecord(name string, data []byte) (Record, error) {
	if len(data) > maxRecordBytes {
		return Record{}, fmt.Errorf("%w: %d bytes, over %d", ErrBadRecord, len(data), maxRecordBytes)
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return Record{}, fmt.Errorf("%w: %v", ErrBadRecord, err)
	}
	switch {
	case r.Name != name:
		return Record{}, fmt.Errorf("%w: name %q under the key of %q", ErrBadRecord, r.Name, name)
	case strings.TrimSpace(r.Description) == "":
		return Record{}, fmt.Errorf("%w: empty description", ErrBadRecord)
	case !hexDigest.MatchString(r.Digest):
		return Record{}, fmt.Errorf("%w: digest %q is not 64 lowercase hex digits", ErrBadRecord, clip(r.Digest))
	case r.Object != r.Digest:
		return Record{}, fmt.Errorf("%w: object %q is not named by the digest", ErrBadRecord, clip(r.Object))
	case r.Size < 0 || r.Files < 1:
		return Record{}, fmt.Errorf("%w: size %d, files %d", ErrBadRecord, r.Size, r.Files)
	}
	return r, nil
}

func clip(s string) string {
	if len(s) > 80 {
		return s[:80] + "..."
	}
	return s
}

func (r Record) encode() []byte {
	b, _ := json.Marshal(r)
	return b
}
