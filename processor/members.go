package processor

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/skillstream/skillstream/events"
)

// Members returns the instance ids of the processors that answer on nc as
// the skillstream micro service within wait, in byte order: each names its
// view endpoint (see AskView) in its service info. Answers that do not
// decode, and endpoints that name no valid instance, are skipped.
func Members(ctx context.Context, nc *nats.Conn, wait time.Duration) ([]string, error) {
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, fmt.Errorf("ask the serving members: %w", err)
	}
	defer sub.Unsubscribe()
	subject, err := micro.ControlSubject(micro.InfoVerb, ServiceName, "")
	if err != nil {
		return nil, err
	}
	if err := nc.PublishRequest(subject, inbox, nil); err != nil {
		return nil, fmt.Errorf("ask the serving members: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	var ids []string
	for {
		m, err := sub.NextMsgWithContext(wctx)
		if err != nil {
			break // the wait is over
		}
		var info micro.Info
		if json.Unmarshal(m.Data, &info) != nil {
			continue
		}
		for _, ep := range info.Endpoints {
			if id, ok := strings.CutPrefix(ep.Subject, events.ViewSubjectPrefix+"."); ok && events.ValidInstance(id) {
				ids = append(ids, id)
			}
		}
	}
	slices.Sort(ids)
	return slices.Compact(ids), nil
}
