package events

import (
	"errors"
	"fmt"
)

// Sentinel errors. Every error returned by a Decode function matches
// ErrBadPayload; the more specific ones below match their own sentinel too.
var (
	// ErrBadPayload: the bytes are not a well-formed payload of the expected
	// type (undecodable, truncated, a field missing or of the wrong type, an
	// unsupported content type, a version other than 1, too large).
	ErrBadPayload = errors.New("bad payload")
	// ErrTooLarge: the payload exceeds MaxPayloadSize. Checked before any
	// parsing. Also matches ErrBadPayload.
	ErrTooLarge = errors.New("payload too large")
	// ErrUnsupportedVersion: the payload's "v" is not 1. Also matches
	// ErrBadPayload.
	ErrUnsupportedVersion = errors.New("unsupported payload version")
	// ErrUnsupportedContentType: a Content-Type other than msgpack or JSON.
	// Also matches ErrBadPayload.
	ErrUnsupportedContentType = errors.New("unsupported content type")
	// ErrBadSubject: a subject that is not <prefix>.<sid>.<kind>, or a bad
	// prefix or kind.
	ErrBadSubject = errors.New("bad subject")
	// ErrBadSession: a session token that does not match
	// ^[A-Za-z0-9_-]{1,128}$.
	ErrBadSession = errors.New("bad session token")
)

// FieldError reports one field of a payload that is missing or wrong. Field
// is the path of the field using the wire keys ("session", "args.name",
// "tools[2].name", "catalog.source.entries[0].name"); Problem says what is
// wrong with it ("missing", "wrong type: got map, want string", ...).
// A FieldError matches ErrBadPayload.
type FieldError struct {
	Field   string
	Problem string
}

func (e *FieldError) Error() string {
	return fmt.Sprintf("%s: field %q: %s", ErrBadPayload.Error(), e.Field, e.Problem)
}

// Unwrap makes errors.Is(err, ErrBadPayload) true.
func (e *FieldError) Unwrap() error { return ErrBadPayload }

// Problems a FieldError reports.
const (
	problemMissing    = "missing"
	problemBadSession = "invalid session token (want 1 to 128 of A-Z a-z 0-9 _ -)"
	// problemBadOwnerSession is problemBadSession in the owner layout.
	problemBadOwnerSession = "invalid session id (want <owner>.<session>: two tokens of 1 to 128 of A-Z a-z 0-9 _ - joined by a dot)"
)

// badPayload wraps a structural problem that belongs to no single field.
func badPayload(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrBadPayload, fmt.Sprintf(format, args...))
}

func versionError(v int64) error {
	return fmt.Errorf("%w: %w: got %d, want %d", ErrBadPayload, ErrUnsupportedVersion, v, Version)
}

// prefixField puts a parent path in front of the field of a FieldError; other
// errors are returned unchanged.
func prefixField(parent string, err error) error {
	var fe *FieldError
	if errors.As(err, &fe) {
		return &FieldError{Field: joinPath(parent, fe.Field), Problem: fe.Problem}
	}
	return err
}

func joinPath(parent, field string) string {
	switch {
	case parent == "":
		return field
	case field == "":
		return parent
	case field[0] == '[':
		return parent + field
	}
	return parent + "." + field
}
