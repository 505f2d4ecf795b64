package store

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/providers/agentskills"
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
// by its digest), and its number in the skill's history. Encoded as JSON;
// readers ignore fields they do not know.
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
	// Rev is the revision's number in the skill's own history, from 1
	// (see At): absent (0) in records written before skills numbered
	// their revisions, which are numbered from their neighbours.
	Rev uint64 `json:"rev,omitempty"`
	// Signature is the publisher's signature of the revision (push
	// --sign): over the key it is written under, its digest and its
	// summary (SummaryDigest); nil when unsigned.
	Signature *skillstore.Signature `json:"signature,omitempty"`
}

// maxRecordBytes bounds an index value: a record carries a description and
// a whenToUse of at most 1024 characters each and a few short fields.
const maxRecordBytes = 64 << 10

// The bounds of a record's free text, in characters: what a push
// publishes (the description's is the Agent Skills specification's, which
// push enforces; the whenToUse's push enforces as well), and what a read
// accepts.
const (
	MaxDescriptionLength = agentskills.MaxDescriptionLength
	MaxWhenToUseLength   = 1024
)

// ErrBadRecord reports an index value that is not a valid record.
var ErrBadRecord = errors.New("malformed skill index entry")

// ErrRecordBounds reports a record whose description or whenToUse is
// longer than a push publishes. It wraps ErrBadRecord: such a record is
// treated as any malformed value (its key's last good revision stays).
var ErrRecordBounds = fmt.Errorf("%w: over the bounds of a record", ErrBadRecord)

// checkText refuses a description or whenToUse longer than a push
// publishes.
func checkText(description, whenToUse string) error {
	if n := utf8.RuneCountInString(description); n > MaxDescriptionLength {
		return fmt.Errorf("%w: description of %d characters, over %d", ErrRecordBounds, n, MaxDescriptionLength)
	}
	if n := utf8.RuneCountInString(whenToUse); n > MaxWhenToUseLength {
		return fmt.Errorf("%w: whenToUse of %d characters, over %d", ErrRecordBounds, n, MaxWhenToUseLength)
	}
	return nil
}

// summaryBytes is what a record's summary costs the store's view: the
// bytes of its name, description and whenToUse.
func (r Record) summaryBytes() int64 {
	return int64(len(r.Name) + len(r.Description) + len(r.WhenToUse))
}

// decodeRecord decodes and checks the value of key name: its shape
// (decodeShape) and the bounds of its text (checkText).
func decodeRecord(name string, data []byte) (Record, error) {
	r, err := decodeShape(name, data)
	if err != nil {
		return r, err
	}
	if err := checkText(r.Description, r.WhenToUse); err != nil {
		return r, err
	}
	return r, nil
}

// decodeShape decodes the value of key name and checks what tells where
// its files are, not the bounds of its text: gc keeps the object of a
// record over those bounds, which a read refuses.
func decodeShape(name string, data []byte) (Record, error) {
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
