package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/providers/store"
	"github.com/skillstream/skillstream/providers/store/audit"
)

// The audit trail of a store's writes (providers/store/audit): with a
// tenants file whose deployment runs the audit service, every skills
// command that writes the store asks it to record the write as this
// connection's, as the NATS server knows it; skills history shows who
// wrote each revision.

// auditStore is the store a command with c writes: the library's, or the
// tenant's own.
func (c *Config) auditStore() string {
	if c.Tenant == libraryTenant {
		return audit.StoreLibrary
	}
	return audit.StoreTenant
}

// audited reports whether c's writes are claimed: with a tenants file
// (the accounts that import the audit service).
func (c *Config) audited() bool { return c.Tenants != "" }

// changeClaims are the claims of what a push (or prune) wrote.
func changeClaims(sc skillstore.Scope, changes []store.Change) []audit.Claim {
	var out []audit.Claim
	for _, ch := range changes {
		if ch.Revision == 0 {
			continue
		}
		switch ch.Action {
		case store.Added, store.Updated:
			out = append(out, audit.Claim{Op: audit.OpPush, Key: sc.Key(ch.Name), Name: ch.Name, Revision: ch.Revision, Digest: ch.Digest})
		case store.Removed:
			out = append(out, audit.Claim{Op: audit.OpRemove, Key: sc.Key(ch.Name), Name: ch.Name, Revision: ch.Revision})
		}
	}
	return out
}

// claimWrites asks the audit service to record claims (each without a
// revision names its key's newest entry) with detail, the command as
// given. A deployment without the service is said once; a refusal is
// said per claim. The writes stand either way: the audit follows them.
func (a *app) claimWrites(ctx context.Context, c *Config, nc *nats.Conn, claims []audit.Claim, detail string) {
	if !c.audited() || nc == nil || len(claims) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	detail = auditDetail(detail)
	var who string
	n := 0
	for _, cl := range claims {
		cl.Store, cl.Detail = c.auditStore(), detail
		r, err := audit.Submit(ctx, nc, cl)
		if errors.Is(err, audit.ErrNoService) {
			fmt.Fprintf(a.stderr, "skillstream skills: not audited: %v (the deployment's audit account: see the manual's security section)\n", err)
			return
		}
		if err != nil {
			fmt.Fprintf(a.stderr, "skillstream skills: %s not audited: %v\n", cl.Key, err)
			continue
		}
		who = r.Who()
		n++
	}
	if n > 0 {
		fmt.Fprintf(a.stderr, "skillstream skills: audit: %d %s recorded as %s\n", n, plural(n, "write", "writes"), who)
	}
}

// auditDetail is the command line as a record's detail: one line, within
// the record's bound.
func auditDetail(s string) string {
	s = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, s)
	if len(s) > audit.MaxDetail {
		cut := audit.MaxDetail - 3
		for cut > 0 && !utf8Start(s[cut]) {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// historyAudit is what history prints of the audit: the records of name,
// by store revision; nil when there is no trail to read.
type historyAudit struct {
	byRev map[uint64][]audit.Record
	other []audit.Record // release and pin entries
	more  bool
}

// readAudit reads name's records for history; it says on stderr why
// there are none to show.
func (a *app) readAudit(ctx context.Context, c *Config, nc *nats.Conn, name string) *historyAudit {
	if !c.audited() || nc == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rs, more, err := audit.Lookup(ctx, nc, audit.Query{Store: c.auditStore(), Name: name})
	if err != nil {
		fmt.Fprintf(a.stderr, "skillstream skills history: who wrote each revision is not shown: %v\n", err)
		return nil
	}
	h := &historyAudit{byRev: map[uint64][]audit.Record{}, more: more}
	for _, r := range rs {
		switch r.Op {
		case audit.OpPush, audit.OpRemove, audit.OpRollback:
			h.byRev[r.Revision] = append(h.byRev[r.Revision], r)
		default:
			h.other = append(h.other, r)
		}
	}
	return h
}

// suffix is what a history line of store revision rev adds: who wrote
// it ("by U@A", every claimer when more than one claimed it), or "not
// audited".
func (h *historyAudit) suffix(rev uint64) string {
	if h == nil {
		return ""
	}
	rs := h.byRev[rev]
	if len(rs) == 0 {
		return " not audited"
	}
	var who []string
	for _, r := range rs {
		if w := r.Who(); !slices.Contains(who, w) {
			who = append(who, w)
		}
	}
	s := " by " + who[0] + " at " + stamp(rs[0].At)
	if len(who) > 1 {
		s += " (also claimed by " + strings.Join(who[1:], ", ") + ")"
	}
	return s
}

// printOther writes the release and pin records, one line each.
func (h *historyAudit) printOther(w io.Writer) {
	if h == nil {
		return
	}
	for _, r := range h.other {
		fmt.Fprintf(w, "%s %s by %s at %s store revision %d: %s\n", r.Op, r.Key, r.Who(), stamp(r.At), r.Revision, r.Detail)
	}
	if h.more {
		fmt.Fprintf(w, "(older audit records left out: at most %d are shown)\n", audit.MaxAnswer)
	}
}
