package events

import (
	"errors"
	"testing"
)

// Answers to triggers that could not be read must still decode, so that a
// worker can read why its trigger was refused; other answers must not lose
// their required fields.
func TestAnswersToUnreadableTriggersDecode(t *testing.T) {
	for _, enc := range []Encoding{Msgpack, JSON} {
		rejected := Decision{V: 1, Session: "bad.token", Outcome: OutcomeRejected,
			Error: &ErrorInfo{Code: CodeBadRequest, Message: "bad subject"}}
		b, err := Encode(enc, rejected)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeDecision(enc, b); err != nil {
			t.Errorf("enc %d: rejected decision without a valid session: %v", enc, err)
		}

		badRequest := ToolResult{V: 1, IsError: true, Text: "Error: bad request",
			Error: &ErrorInfo{Code: CodeBadRequest, Message: "bad request"}}
		if b, err = Encode(enc, badRequest); err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeToolResult(enc, b); err != nil {
			t.Errorf("enc %d: bad_request result without call or session: %v", enc, err)
		}

		// Any other answer still needs its session and id.
		unchanged := Decision{V: 1, Outcome: OutcomeUnchanged, Step: "1"}
		if b, err = Encode(enc, unchanged); err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeDecision(enc, b); !errors.Is(err, ErrBadPayload) {
			t.Errorf("enc %d: unchanged decision without session: err = %v, want ErrBadPayload", enc, err)
		}
		unknown := ToolResult{V: 1, Session: "s", IsError: true,
			Error: &ErrorInfo{Code: CodeUnknown, Message: "x"}}
		if b, err = Encode(enc, unknown); err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeToolResult(enc, b); !errors.Is(err, ErrBadPayload) {
			t.Errorf("enc %d: unknown-skill result without call: err = %v, want ErrBadPayload", enc, err)
		}
	}
}
