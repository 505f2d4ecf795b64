package processor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
)

// Stored is one message read back from the stream.
type Stored struct {
	Subject string
	Seq     uint64
	Header  nats.Header
	Data    []byte
}

// errNoMessage reports that a direct read found nothing.
var errNoMessage = errors.New("no message")

// errTooManySubjects reports a session with more distinct subjects than one
// multi-last read may return.
var errTooManySubjects = errors.New("session has too many distinct subjects for one read")

// Headers the server sets on direct get responses and status replies.
const (
	hdrStream      = "Nats-Stream"
	hdrSubject     = "Nats-Subject"
	hdrSequence    = "Nats-Sequence"
	hdrStatus      = "Status"
	hdrDescription = "Description"
)

// reader reads a stream with Direct Get requests: indexed reads answered by
// any replica, without consumers.
type reader struct {
	nc     *nats.Conn
	stream string
	api    string // "$JS.API.DIRECT.GET.<stream>"
}

func newReader(nc *nats.Conn, stream string) *reader {
	return &reader{nc: nc, stream: stream, api: "$JS.API.DIRECT.GET." + stream}
}

// directRequest mirrors the server's direct get request fields we use.
type directRequest struct {
	Seq       uint64   `json:"seq,omitempty"`
	MultiLast []string `json:"multi_last,omitempty"`
	UpToSeq   uint64   `json:"up_to_seq,omitempty"`
	Batch     int      `json:"batch,omitempty"`
}

// lastOf returns the newest message of every subject matching filters whose
// sequence is <= upTo (0: no bound), in ascending sequence order. The server
// answers from one consistent state of one replica.
func (r *reader) lastOf(ctx context.Context, filters []string, upTo uint64) ([]Stored, error) {
	body, err := json.Marshal(directRequest{MultiLast: filters, UpToSeq: upTo})
	if err != nil {
		return nil, err
	}
	inbox := r.nc.NewInbox()
	sub, err := r.nc.SubscribeSync(inbox)
	if err != nil {
		return nil, err
	}
	defer sub.Unsubscribe()
	if err := r.nc.PublishRequest(r.api, inbox, body); err != nil {
		return nil, err
	}
	var out []Stored
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return nil, err
		}
		// A stored message may carry any header, a Status too: only replies
		// without a sequence are status replies.
		switch code := m.Header.Get(hdrStatus); {
		case m.Header.Get(hdrSequence) != "" || code == "":
			s, err := stored(m)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		case code == "204": // end of batch
			return out, nil
		case code == "404":
			return out, nil
		case code == "413":
			return nil, errTooManySubjects
		default:
			return nil, statusError(m)
		}
	}
}

// last returns the newest message on subject with a sequence <= upTo (0: no
// bound), or errNoMessage.
func (r *reader) last(ctx context.Context, subject string, upTo uint64) (Stored, error) {
	ms, err := r.lastOf(ctx, []string{subject}, upTo)
	if err != nil {
		return Stored{}, err
	}
	if len(ms) == 0 {
		return Stored{}, errNoMessage
	}
	return ms[len(ms)-1], nil
}

// bySeq returns the message at seq, or errNoMessage.
func (r *reader) bySeq(ctx context.Context, seq uint64) (Stored, error) {
	body, err := json.Marshal(directRequest{Seq: seq})
	if err != nil {
		return Stored{}, err
	}
	m, err := r.nc.RequestWithContext(ctx, r.api, body)
	if err != nil {
		return Stored{}, err
	}
	switch code := m.Header.Get(hdrStatus); {
	case m.Header.Get(hdrSequence) != "" || code == "":
		return stored(m)
	case code == "404":
		return Stored{}, errNoMessage
	default:
		return Stored{}, statusError(m)
	}
}

func stored(m *nats.Msg) (Stored, error) {
	seq, err := strconv.ParseUint(m.Header.Get(hdrSequence), 10, 64)
	if err != nil || seq == 0 {
		return Stored{}, fmt.Errorf("direct get reply without a sequence header")
	}
	return Stored{Subject: m.Header.Get(hdrSubject), Seq: seq, Header: m.Header, Data: m.Data}, nil
}

func statusError(m *nats.Msg) error {
	return fmt.Errorf("direct get: status %s %s", m.Header.Get(hdrStatus), m.Header.Get(hdrDescription))
}
