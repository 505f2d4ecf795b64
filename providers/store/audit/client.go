package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
)

// ErrNoService says no audit service answered: the account does not
// import one (a deployment without the audit account), or none runs.
var ErrNoService = errors.New("no audit service answers " + Subjects + " for this account")

// Submit asks the audit service to record c as the caller's, and returns
// the record as written.
func Submit(ctx context.Context, nc *nats.Conn, c Claim) (Record, error) {
	if err := c.check(); err != nil {
		return Record{}, err
	}
	var a Answer
	if err := ask(ctx, nc, RecordSubject, c, &a); err != nil {
		return Record{}, err
	}
	if a.Record == nil {
		return Record{}, errors.New("audit: the service recorded nothing")
	}
	return *a.Record, nil
}

// Lookup returns the records of one skill (Name "" for the policy's), the
// caller's own or the library's, oldest first; more says older ones were
// left out.
func Lookup(ctx context.Context, nc *nats.Conn, q Query) (rs []Record, more bool, err error) {
	var a Answer
	if err := ask(ctx, nc, QuerySubject, q, &a); err != nil {
		return nil, false, err
	}
	return a.Records, a.Truncated, nil
}

func ask(ctx context.Context, nc *nats.Conn, subj string, v any, a *Answer) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	m, err := nc.RequestWithContext(ctx, subj, b)
	if errors.Is(err, nats.ErrNoResponders) {
		return ErrNoService
	}
	if err != nil {
		return fmt.Errorf("audit: %w", err)
	}
	if len(m.Data) > 4<<20 {
		return fmt.Errorf("audit: answer of %d bytes", len(m.Data))
	}
	if err := json.Unmarshal(m.Data, a); err != nil {
		return fmt.Errorf("audit: answer is not JSON: %v", err)
	}
	if a.Error != "" {
		return errors.New(a.Error)
	}
	return nil
}
