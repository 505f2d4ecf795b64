package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
)

// parseKey splits an index key into scope and skill name: the store's
// key layout (skillstore.ParseKey) with a name the catalog accepts, as
// only such skills can be served.
func parseKey(key string) (skillstore.Scope, string, error) {
	sc, name, err := skillstore.ParseKey(key)
	if err != nil {
		return sc, name, err
	}
	if !catalog.ValidName(name) {
		return skillstore.Scope{}, "", fmt.Errorf("%w %q in key", catalog.ErrInvalidName, name)
	}
	return sc, name, nil
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
	case !skillstore.ValidDigest(r.Digest):
		return Record{}, fmt.Errorf("%w: digest %q is not 64 lowercase hex digits", ErrBadRecord, clip(r.Digest))
	case r.Object != skillstore.ObjectName(r.Digest):
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
