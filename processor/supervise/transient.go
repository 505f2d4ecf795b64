package supervise

import (
	"context"
	"errors"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Server error codes of a JetStream that cannot answer now but will: no
// meta leader yet (an election, members starting), no peers for
// placement yet, a stream or consumer without a leader.
var transientCodes = map[jetstream.ErrorCode]bool{
	10005: true, // no suitable peers for placement
	10008: true, // JetStream system temporarily unavailable
	10009: true, // the cluster cannot handle the request (no leader)
	10023: true, // insufficient resources (a member not back yet)
	10118: true, // stream offline
}

// Transient reports whether err is one that waiting may fix: the server
// or JetStream did not answer in time or not at all (a cluster electing
// its meta leader, a server starting, a connection being re-established),
// or said it cannot answer now. A configuration the server refuses (a
// stream whose settings conflict, a consumer that is not the processors',
// a limit that does not fit) is not transient.
func Transient(err error) bool {
	if err == nil || IsPermanent(err) {
		return false
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded),
		errors.Is(err, nats.ErrTimeout),
		errors.Is(err, nats.ErrNoResponders),
		errors.Is(err, nats.ErrDisconnected),
		errors.Is(err, nats.ErrConnectionReconnecting),
		errors.Is(err, jetstream.ErrNoStreamResponse),
		errors.Is(err, jetstream.ErrJetStreamNotEnabled):
		return true
	}
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return transientCodes[apiErr.ErrorCode] || apiErr.Code == 503 && apiErr.ErrorCode == 0
	}
	return false
}
