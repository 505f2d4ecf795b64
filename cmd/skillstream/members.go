package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor"
	"github.com/skillstream/skillstream/processor/history"
)

// membersWait is how long servingMembers listens for the members' answers.
const membersWait = 500 * time.Millisecond

// servingMembers returns the instance ids of the processors that answer as
// the skillstream micro service, in byte order: each names its view
// endpoint in its service info.
func servingMembers(ctx context.Context, nc *nats.Conn) ([]string, error) {
	inbox := nc.NewRespInbox()
	sub, err := nc.SubscribeSync(inbox)
	if err != nil {
		return nil, fmt.Errorf("ask the serving members: %w", err)
	}
	defer sub.Unsubscribe()
	subject, err := micro.ControlSubject(micro.InfoVerb, processor.ServiceName, "")
	if err != nil {
		return nil, err
	}
	if err := nc.PublishRequest(subject, inbox, nil); err != nil {
		return nil, fmt.Errorf("ask the serving members: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, membersWait)
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

// capturing records the snapshots an export captures, to compare them with
// what the serving members see.
type capturing struct {
	history.Skills
	mu    sync.Mutex
	snaps map[catalog.Query]catalog.Snapshot
}

func (c *capturing) Snapshot(ctx context.Context, q catalog.Query) (catalog.Snapshot, error) {
	snap, err := c.Skills.Snapshot(ctx, q)
	if err == nil {
		c.mu.Lock()
		if c.snaps == nil {
			c.snaps = map[catalog.Query]catalog.Snapshot{}
		}
		c.snaps[q] = snap
		c.mu.Unlock()
	}
	return snap, err
}

// compareCaptured says on w, for every working directory whose skills an
// export captured, whether each serving member would decide the same
// catalog for it now, naming both digests where they differ. It returns
// the number of differences found.
func compareCaptured(ctx context.Context, nc *nats.Conn, w io.Writer, c *capturing, opts catalog.Options) int {
	members, err := servingMembers(ctx, nc)
	if err != nil || len(members) == 0 {
		fmt.Fprintf(w, "--capture-skills: no serving member answered, so the captured skills could not be compared with theirs\n")
		return 0
	}
	queries := make([]catalog.Query, 0, len(c.snaps))
	for q := range c.snaps {
		queries = append(queries, q)
	}
	slices.SortFunc(queries, func(a, b catalog.Query) int { return strings.Compare(a.Cwd+"\x00"+a.Project, b.Cwd+"\x00"+b.Project) })
	differ := 0
	for _, q := range queries {
		snap := c.snaps[q]
		if !snap.Complete {
			fmt.Fprintf(w, "--capture-skills: the skills captured for %s are incomplete (a source failed)\n", q.Cwd)
			continue
		}
		ours := catalog.Prepare(snap, opts).Digest
		for _, id := range members {
			rctx, cancel := context.WithTimeout(ctx, membersWait)
			r, err := processor.AskView(rctx, nc, id, q)
			cancel()
			switch {
			case err != nil:
				fmt.Fprintf(w, "--capture-skills: member %s did not tell what it sees for %s: %v\n", id, q.Cwd, err)
			case r.Error != "" || !r.Complete:
				fmt.Fprintf(w, "--capture-skills: member %s cannot tell what it sees for %s: %s\n", id, q.Cwd, r.Error)
			case r.Digest != ours:
				differ++
				fmt.Fprintf(w, "--capture-skills: DIFFERS: for %s member %s decides catalog %s, the captured skills give %s; replay with --recorded-skills checks against these captured skills, not the member's\n",
					q.Cwd, id, short12(r.Digest), short12(ours))
			}
		}
	}
	if differ == 0 {
		fmt.Fprintf(w, "--capture-skills: the captured skills give the catalog each of the %d serving members decides (%s)\n", len(members), strings.Join(members, ", "))
	}
	return differ
}

// short12 is a digest's first 12 hex digits.
func short12(d string) string {
	if len(d) > 12 {
		return d[:12]
	}
	return d
}
