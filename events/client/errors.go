package client

import (
	"errors"
	"fmt"

	"github.com/skillstream/skillstream/events"
)

// Errors of a Client. Match them with errors.Is.
var (
	// ErrClosed: the client was closed before the answer came.
	ErrClosed = errors.New("client closed")
	// ErrTimeout: no answer came, in any attempt, before the context ended
	// or the last attempt (WithMaxAttempts) timed out. When the context
	// ended, the error matches its error too (context.DeadlineExceeded or
	// context.Canceled).
	ErrTimeout = errors.New("no answer")
	// ErrRejected: the processor refused the trigger as malformed (a
	// "rejected" decision, or a tool result with code "bad_request" other
	// than a search's invalid arguments, see IsSearchArgsError). The
	// answer is returned with the error; *RejectedError carries it too.
	ErrRejected = errors.New("trigger rejected")
	// ErrExpired: the processor received the trigger after its deadline and
	// appended nothing (outcome or code "expired").
	ErrExpired = errors.New("trigger expired")
	// ErrUnavailable: the processor gave up on the trigger (it failed
	// repeatedly) and appended nothing; the error code is "unavailable".
	// Trying again later is safe.
	ErrUnavailable = errors.New("skillstream unavailable")
	// ErrTooLarge: a catalog was appended but did not fit in the answer
	// (error code "too_large"); the Decision has no catalog, read the
	// session's newest catalog.append event instead.
	ErrTooLarge = errors.New("answer too large")
	// ErrMaterialize: a store skill's files could not be put in its resource
	// directory, or no Materializer is configured. The tool result is
	// returned with the error.
	ErrMaterialize = errors.New("materialize skill files")
	// ErrUntrusted: a client with trusted keys (WithTrustedKeys) got a
	// store skill unsigned, signed by another key, or whose signature does
	// not verify; its files were not written. It comes with ErrMaterialize.
	ErrUntrusted = errors.New("skill not signed by a trusted key")
)

// CodeUnavailable is the error code of an answer a processor gives when it
// gave up on a trigger: nothing was appended.
const CodeUnavailable = "unavailable"

// RejectedError is the error of a rejected trigger. It matches ErrRejected.
type RejectedError struct {
	// Decision is the answer to a rejected pre-step (zero for a skill call).
	Decision events.Decision
	// Result is the answer to a rejected skill call or search (zero for a
	// pre-step).
	Result events.ToolResult
	// Code and Message are the processor's error, code "bad_request".
	Code, Message string
}

func (e *RejectedError) Error() string {
	return fmt.Sprintf("%s: %s: %s", ErrRejected.Error(), e.Code, e.Message)
}

// Unwrap makes errors.Is(err, ErrRejected) true.
func (e *RejectedError) Unwrap() error { return ErrRejected }

// decisionError is the error a Decision amounts to, nil for a normal one.
func decisionError(d events.Decision) error {
	code, msg := "", ""
	if d.Error != nil {
		code, msg = d.Error.Code, d.Error.Message
	}
	switch {
	case d.Outcome == events.OutcomeRejected:
		return &RejectedError{Decision: d, Code: code, Message: msg}
	case d.Outcome == events.OutcomeExpired:
		return fmt.Errorf("client: pre-step %s/%s: %w", d.Session, d.Step, ErrExpired)
	case code == CodeUnavailable:
		return fmt.Errorf("client: pre-step %s/%s: %w: %s", d.Session, d.Step, ErrUnavailable, msg)
	case code == events.CodeTooLarge:
		return fmt.Errorf("client: pre-step %s/%s: %w: %s", d.Session, d.Step, ErrTooLarge, msg)
	}
	return nil
}

// resultError is the error a ToolResult amounts to, nil for a result the
// model should see.
func resultError(r events.ToolResult) error { return toolResultError("skill call", r) }

// toolResultError is resultError for a result of the tool what names.
func toolResultError(what string, r events.ToolResult) error {
	if !r.IsError || r.Error == nil {
		return nil
	}
	switch r.Error.Code {
	case events.CodeBadRequest:
		return &RejectedError{Result: r, Code: r.Error.Code, Message: r.Error.Message}
	case events.CodeExpired:
		return fmt.Errorf("client: %s %s/%s: %w", what, r.Session, r.Call, ErrExpired)
	case CodeUnavailable:
		return fmt.Errorf("client: %s %s/%s: %w: %s", what, r.Session, r.Call, ErrUnavailable, r.Error.Message)
	}
	return nil
}
