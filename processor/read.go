package processor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/nats-io/nats.go"

	"github.com/skillstream/skillstream/processor/history"
)

// record is one message read back from the stream: what the history rule
// reads (history.Log). Its store time is left zero.
type record = history.Record

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
// any replica, without consumers. Multi-message answers arrive on one
// shared wildcard subscription, demultiplexed by the last subject token.
type reader struct {
	nc  *nats.Conn
	api string // "$JS.API.DIRECT.GET.<stream>"

	mu      sync.Mutex
	prefix  string // "<inbox>." of the shared subscription
	sub     *nats.Subscription
	next    uint64
	waiting map[string]*answers

	// reads counts the requests sent (tests compare reads per trigger).
	reads atomic.Uint64
}

// answers collects the messages of one multi-message answer.
type answers struct {
	mu     sync.Mutex
	msgs   []*nats.Msg
	signal chan struct{} // capacity 1: "msgs grew"
}

func newReader(nc *nats.Conn, stream string) *reader {
	return &reader{nc: nc, api: "$JS.API.DIRECT.GET." + stream, waiting: make(map[string]*answers)}
}

// open registers a new answer and returns its reply subject.
func (r *reader) open() (string, *answers, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sub == nil {
		prefix := r.nc.NewInbox() + "."
		sub, err := r.nc.Subscribe(prefix+"*", r.dispatch)
		if err != nil {
			return "", nil, fmt.Errorf("subscribe for direct get answers: %w", err)
		}
		if err := sub.SetPendingLimits(-1, -1); err != nil {
			sub.Unsubscribe()
			return "", nil, err
		}
		r.prefix, r.sub = prefix, sub
	}
	r.next++
	token := strconv.FormatUint(r.next, 36)
	a := &answers{signal: make(chan struct{}, 1)}
	r.waiting[token] = a
	return r.prefix + token, a, nil
}

func (r *reader) closeAnswer(reply string) {
	r.mu.Lock()
	delete(r.waiting, reply[len(r.prefix):])
	r.mu.Unlock()
}

func (r *reader) dispatch(m *nats.Msg) {
	r.mu.Lock()
	a := r.waiting[m.Subject[len(r.prefix):]]
	r.mu.Unlock()
	if a == nil {
		return // an answer nobody waits for any more
	}
	a.mu.Lock()
	a.msgs = append(a.msgs, m)
	a.mu.Unlock()
	select {
	case a.signal <- struct{}{}:
	default:
	}
}

// close drops the shared subscription.
func (r *reader) close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.sub != nil {
		r.sub.Unsubscribe()
		r.sub = nil
	}
}

// directRequest mirrors the server's direct get request fields we use.
type directRequest struct {
	Seq       uint64   `json:"seq,omitempty"`
	NextFor   string   `json:"next_by_subj,omitempty"`
	Batch     int      `json:"batch,omitempty"`
	MultiLast []string `json:"multi_last,omitempty"`
	UpToSeq   uint64   `json:"up_to_seq,omitempty"`
}

// multiLastRequest is the JSON of directRequest{Seq: from, MultiLast:
// filters, UpToSeq: upTo}. Every read sends one, so it is written by hand
// when the subjects need no escaping (they are NATS tokens and wildcards),
// and marshalled otherwise.
func multiLastRequest(filters []string, from, upTo uint64) ([]byte, error) {
	if len(filters) == 0 {
		return json.Marshal(directRequest{Seq: from, UpToSeq: upTo})
	}
	n := 64
	for _, f := range filters {
		if !plainJSONString(f) {
			return json.Marshal(directRequest{Seq: from, MultiLast: filters, UpToSeq: upTo})
		}
		n += len(f) + 3
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	if from != 0 {
		b = append(b, `"seq":`...)
		b = strconv.AppendUint(b, from, 10)
		b = append(b, ',')
	}
	b = append(b, `"multi_last":[`...)
	for i, f := range filters {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, f...)
		b = append(b, '"')
	}
	b = append(b, ']')
	if upTo != 0 {
		b = append(b, `,"up_to_seq":`...)
		b = strconv.AppendUint(b, upTo, 10)
	}
	return append(b, '}'), nil
}

// plainJSONString reports whether s can stand between JSON quotes as it
// is: printable ASCII without a quote, a backslash or the characters
// encoding/json escapes for HTML.
func plainJSONString(s string) bool {
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c < 0x20 || c >= 0x7f, c == '"', c == '\\', c == '<', c == '>', c == '&':
			return false
		}
	}
	return true
}

// send publishes a direct get request and returns its answer's reply
// subject (closeAnswer it once done) and the answer.
func (r *reader) send(body []byte) (string, *answers, error) {
	r.reads.Add(1)
	reply, a, err := r.open()
	if err != nil {
		return "", nil, err
	}
	if err := r.nc.PublishRequest(r.api, reply, body); err != nil {
		r.closeAnswer(reply)
		return "", nil, err
	}
	return reply, a, nil
}

// lastOf returns the newest message of every subject matching filters whose
// sequence is <= upTo (0: no bound), in ascending sequence order, leaving
// out those below from (0: none; the server does not load them). The
// server answers from one consistent state of one replica.
func (r *reader) lastOf(ctx context.Context, filters []string, from, upTo uint64) ([]record, error) {
	body, err := multiLastRequest(filters, from, upTo)
	if err != nil {
		return nil, err
	}
	reply, a, err := r.send(body)
	if err != nil {
		return nil, err
	}
	defer r.closeAnswer(reply)
	return a.all(ctx)
}

// all collects a multi-message answer up to its end.
func (a *answers) all(ctx context.Context) ([]record, error) {
	out := make([]record, 0, 4) // a trigger's read returns a few records
	for {
		msgs, err := a.next(ctx)
		if err != nil {
			return nil, err
		}
		for _, m := range msgs {
			// A stored message may carry any header, a Status too: only
			// replies without a sequence are status replies.
			switch code := m.Header.Get(hdrStatus); {
			case m.Header.Get(hdrSequence) != "" || code == "":
				s, err := recordOf(m)
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
}

// first returns the first message of an answer, or errNoMessage.
func (a *answers) first(ctx context.Context) (record, error) {
	msgs, err := a.next(ctx)
	if err != nil {
		return record{}, err
	}
	return oneRecord(msgs[0])
}

// next waits for messages of the answer and takes them.
func (a *answers) next(ctx context.Context) ([]*nats.Msg, error) {
	for {
		a.mu.Lock()
		msgs := a.msgs
		a.msgs = nil
		a.mu.Unlock()
		if len(msgs) > 0 {
			return msgs, nil
		}
		select {
		case <-a.signal:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// last returns the newest message on subject with a sequence <= upTo (0: no
// bound), or errNoMessage.
func (r *reader) last(ctx context.Context, subject string, upTo uint64) (record, error) {
	ms, err := r.lastOf(ctx, []string{subject}, 0, upTo)
	if err != nil {
		return record{}, err
	}
	if len(ms) == 0 {
		return record{}, errNoMessage
	}
	return ms[len(ms)-1], nil
}

// bySeq returns the message at seq, or errNoMessage.
func (r *reader) bySeq(ctx context.Context, seq uint64) (record, error) {
	body, err := json.Marshal(directRequest{Seq: seq})
	if err != nil {
		return record{}, err
	}
	r.reads.Add(1)
	m, err := r.nc.RequestWithContext(ctx, r.api, body)
	if err != nil {
		return record{}, err
	}
	return oneRecord(m)
}

// oneRecord reads the answer m to a request for one message: the message,
// errNoMessage (404) or the status's error.
func oneRecord(m *nats.Msg) (record, error) {
	switch code := m.Header.Get(hdrStatus); {
	case m.Header.Get(hdrSequence) != "" || code == "":
		return recordOf(m)
	case code == "404":
		return record{}, errNoMessage
	default:
		return record{}, statusError(m)
	}
}

func recordOf(m *nats.Msg) (record, error) {
	seq, err := strconv.ParseUint(m.Header.Get(hdrSequence), 10, 64)
	if err != nil || seq == 0 {
		return record{}, fmt.Errorf("direct get reply without a sequence header")
	}
	return record{Subject: m.Header.Get(hdrSubject), Seq: seq, Header: history.Header(m.Header), Data: m.Data}, nil
}

func statusError(m *nats.Msg) error {
	return fmt.Errorf("direct get: status %s %s", m.Header.Get(hdrStatus), m.Header.Get(hdrDescription))
}
