package main

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/processor"
	"github.com/skillstream/skillstream/processor/history"
)

// membersWait is how long export listens for the serving members'
// answers.
const membersWait = 500 * time.Millisecond

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
	members, err := processor.Members(ctx, nc, membersWait)
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
		cwd := catalog.RevealLine(q.Cwd) // a worker's text
		if !snap.Complete {
			fmt.Fprintf(w, "--capture-skills: the skills captured for %s are incomplete (a source failed)\n", cwd)
			continue
		}
		ours := catalog.Prepare(snap, opts).Digest
		for _, id := range members {
			rctx, cancel := context.WithTimeout(ctx, membersWait)
			r, err := processor.AskView(rctx, nc, id, q)
			cancel()
			switch {
			case err != nil:
				fmt.Fprintf(w, "--capture-skills: member %s did not tell what it sees for %s: %s\n", id, cwd, catalog.RevealLine(err.Error()))
			case r.Error != "" || !r.Complete:
				fmt.Fprintf(w, "--capture-skills: member %s cannot tell what it sees for %s: %s\n", id, cwd, catalog.RevealLine(r.Error))
			case r.Digest != ours:
				differ++
				fmt.Fprintf(w, "--capture-skills: DIFFERS: for %s member %s decides catalog %s, the captured skills give %s; replay with --recorded-skills checks against these captured skills, not the member's\n",
					cwd, id, catalog.RevealLine(short12(r.Digest)), short12(ours))
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
