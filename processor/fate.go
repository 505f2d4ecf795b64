package processor

import (
	"errors"
	"fmt"

	"github.com/skillstream/skillstream/events"
)

// ErrRejected is wrapped by the error of every trigger refused as malformed.
var ErrRejected = errors.New("trigger rejected")

// errPanic marks a recovered panic.
var errPanic = errors.New("panic")

// errCrash is returned by a test hook to simulate a crash: the delivery is
// left unacknowledged and unanswered.
var errCrash = errors.New("simulated crash")

// errSessionMismatch reports a payload whose session differs from its
// subject's.
var errSessionMismatch = errors.New("session mismatch")

// errConflict reports an append refused because the session moved on.
var errConflict = errors.New("session changed since it was read")

// Reject reasons, the label of the rejects counter.
const (
	reasonEnvelope        = "envelope"         // delivery metadata unreadable
	reasonSubject         = "subject"          // subject not <prefix>.<sid>.<kind> with a valid sid
	reasonEncoding        = "encoding"         // unknown Content-Type
	reasonInbox           = "inbox"            // Reply-Inbox not a subject answers may go to
	reasonTooLarge        = "too_large"        // payload over Config.MaxTriggerBytes (or events.MaxPayloadSize)
	reasonVersion         = "version"          // v is not 1
	reasonField           = "field"            // a field is missing or has the wrong type
	reasonUndecodable     = "undecodable"      // not a payload at all
	reasonSessionMismatch = "session_mismatch" // payload session differs from the subject's
	reasonID              = "id"               // step or call id unusable in a header
	reasonCwd             = "cwd"              // cwd relative, or outside Config.CwdRoots
	reasonSearchOff       = "search_off"       // a skill search sent to a processor without search
)

// rejection is the error of a malformed trigger.
type rejection struct {
	reason string
	err    error
}

func (r *rejection) Error() string   { return r.err.Error() }
func (r *rejection) Unwrap() []error { return []error{ErrRejected, r.err} }

// decodeReason classifies an events decode error.
func decodeReason(err error) string {
	var fe *events.FieldError
	switch {
	case errors.Is(err, events.ErrTooLarge):
		return reasonTooLarge
	case errors.Is(err, events.ErrUnsupportedVersion):
		return reasonVersion
	case errors.As(err, &fe):
		return reasonField
	case errors.Is(err, events.ErrBadSession):
		return reasonSessionMismatch
	}
	return reasonUndecodable
}

// fate is what happens to a delivery once handled.
type fate int

const (
	// fateAck: done; the answer (if any) is durable and was sent.
	fateAck fate = iota
	// fateTerm: never deliver again (malformed, panicked, or out of
	// deliveries).
	fateTerm
	// fateRetry: negatively acknowledged with a delay; delivered again.
	fateRetry
)

func (f fate) String() string {
	switch f {
	case fateAck:
		return "ack"
	case fateTerm:
		return "term"
	case fateRetry:
		return "retry"
	}
	return fmt.Sprintf("fate(%d)", int(f))
}

// fateOf maps an error class to the fate of its delivery. This table is the
// processor's whole acknowledgement policy:
//
//	nil (answered; any append is durable) → ack
//	ErrRejected (malformed input)         → term, after a rejected/bad_request answer
//	errTooLarge (output over the message limit) → term, after a too_large answer: permanent
//	errEvicted (output removed by the stream's limits) → term, after the kind's failed answer
//	panic                                 → term
//	anything else (transient)             → retry with a delay, or term at the last delivery (dead letter)
func fateOf(err error, lastDelivery bool) fate {
	switch {
	case err == nil:
		return fateAck
	case errors.Is(err, ErrRejected), errors.Is(err, errPanic), errors.Is(err, errTooLarge), errors.Is(err, errEvicted):
		return fateTerm
	case lastDelivery:
		return fateTerm
	default:
		return fateRetry
	}
}

// termReason is the reason given to the server when terminating.
func termReason(err error) string {
	var r *rejection
	switch {
	case errors.As(err, &r):
		return "rejected: " + r.reason
	case errors.Is(err, errPanic):
		return "panic"
	case errors.Is(err, errTooLarge):
		return "output too large"
	case errors.Is(err, errEvicted):
		return "output evicted"
	}
	return "dead letter"
}
