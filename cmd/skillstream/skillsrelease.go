package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/providers/store"
)

// releaseNote is what a push or rollback line adds about a release: a
// draft offered to no session, or a release ended.
func releaseNote(ch store.Change) string {
	switch {
	case ch.Draft:
		return fmt.Sprintf(" (draft: offered to no session; skills release %s %d --canary P%% offers it)", ch.Name, ch.Rev)
	case ch.Ended:
		return " (release ended: stable for every session)"
	}
	return ""
}

// publisherName names who releases, in the release's record: the NATS
// user connected as, else the login name.
func (c *Config) publisherName(a *app) string {
	if u := c.natsUserName(); u != "" {
		return u
	}
	if u, ok := a.lookupEnv("USER"); ok {
		return u
	}
	return ""
}

// releaseAction checks the arguments of status, release, promote, pin
// and unpin, and returns what runs it.
func (a *app) releaseAction(action string, args []string, sc skillstore.Scope, scoped bool, canary string, asJSON bool, by string) (func(context.Context, *store.Publisher) error, error) {
	switch action {
	case "status":
		if len(args) != 1 {
			return nil, usagef("skills status needs one skill name")
		}
		if err := catalog.CheckName(args[0]); err != nil {
			return nil, usagef("%v", err)
		}
		return func(ctx context.Context, pb *store.Publisher) error {
			st, err := pb.Status(ctx, sc, args[0])
			if err != nil {
				return explainMissing(ctx, pb, sc, err)
			}
			if asJSON {
				enc := json.NewEncoder(a.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(st)
			}
			printStatus(a.stdout, st)
			return nil
		}, nil
	case "release":
		if len(args) != 2 {
			return nil, usagef("skills release needs NAME REV --canary P%%")
		}
		if err := catalog.CheckName(args[0]); err != nil {
			return nil, usagef("%v", err)
		}
		rev, err := strconv.ParseUint(args[1], 10, 64)
		if err != nil || rev == 0 {
			return nil, usagef("revision %q: want the draft's revision, a positive integer (skills status lists it)", args[1])
		}
		if canary == "" {
			return nil, usagef("skills release needs --canary P%%: the percentage of sessions offered the revision")
		}
		share, err := store.ParseShare(canary)
		if err != nil {
			return nil, usagef("--canary: %v", err)
		}
		return func(ctx context.Context, pb *store.Publisher) error {
			r, err := pb.Release(ctx, sc, args[0], rev, share, by)
			if err != nil {
				return explainMissing(ctx, pb, sc, err)
			}
			stable := "nobody else has the skill (new in this release)"
			if r.Stable != nil {
				stable = fmt.Sprintf("the others keep rev %d %s", r.Stable.Rev, skillstore.Short(r.Stable.Digest))
			}
			fmt.Fprintf(a.stdout, "released %s rev %d %s to %s of sessions (canary); %s\n", args[0], rev, skillstore.Short(r.Candidate.Digest), store.FormatShare(share), stable)
			return nil
		}, nil
	case "promote":
		if len(args) != 1 {
			return nil, usagef("skills promote needs one skill name")
		}
		return func(ctx context.Context, pb *store.Publisher) error {
			r, err := pb.Promote(ctx, sc, args[0])
			if err != nil {
				return explainMissing(ctx, pb, sc, err)
			}
			fmt.Fprintf(a.stdout, "promoted %s rev %d %s: stable for every session (was %s of sessions)\n", args[0], r.Candidate.Rev, skillstore.Short(r.Candidate.Digest), store.FormatShare(r.Share))
			return nil
		}, nil
	case "pin", "unpin":
		if !scoped {
			return nil, usagef("skills %s needs --scope: global (every session) or project/<id> (that project's sessions)", action)
		}
		name, at, err := pinArgs(action, args, "skills "+action, "the revision to hold (skills history lists them)")
		if err != nil {
			return nil, err
		}
		if action == "unpin" {
			return func(ctx context.Context, pb *store.Publisher) error {
				if _, err := pb.Unpin(ctx, sc, name); err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "unpinned %s for %s\n", name, sc)
				return nil
			}, nil
		}
		return func(ctx context.Context, pb *store.Publisher) error {
			p, err := pb.Pin(ctx, sc, name, at)
			if err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "pinned %s for %s to rev %d %s (the %s skill)\n", name, sc, p.Pin.Rev, skillstore.Short(p.Pin.Digest), p.Pin.Of)
			return nil
		}, nil
	}
	return nil, usagef("unknown skills action %q", action)
}

// pinArgs checks the one argument of pin (NAME@REV) or unpin (NAME):
// cmd names the command in errors, hold says what a pin's revision is.
func pinArgs(action string, args []string, cmd, hold string) (string, store.At, error) {
	if len(args) != 1 {
		return "", store.At{}, usagef("%s needs one skill, %s", cmd, map[string]string{"pin": "NAME@REV", "unpin": "NAME"}[action])
	}
	name, at, err := parseNameRev(args[0])
	switch {
	case err != nil:
		return "", store.At{}, err
	case action == "unpin" && at != (store.At{}):
		return "", store.At{}, usagef("skills unpin takes NAME, without a revision")
	case action == "pin" && at == (store.At{}):
		return "", store.At{}, usagef("skills pin needs NAME@REV: %s", hold)
	}
	return name, at, nil
}

// printStatus writes a skill's release state: its channel, the stable
// revision and the candidate, then its pins.
func printStatus(w io.Writer, st store.Status) {
	ref := func(r *store.RevRef) string {
		if r == nil {
			return "none"
		}
		if r.Revision == 0 {
			return fmt.Sprintf("rev %d %s", r.Rev, skillstore.Short(r.Digest))
		}
		return fmt.Sprintf("rev %d %s (store revision %d)", r.Rev, skillstore.Short(r.Digest), r.Revision)
	}
	switch st.Channel {
	case store.ChannelCanary:
		fmt.Fprintf(w, "%s in %s: canary, %s of sessions get the candidate\n", st.Name, st.Scope, store.FormatShare(st.Share))
	case store.ChannelDraft:
		fmt.Fprintf(w, "%s in %s: draft, offered to no session\n", st.Name, st.Scope)
	default:
		fmt.Fprintf(w, "%s in %s: stable, no release in progress\n", st.Name, st.Scope)
	}
	fmt.Fprintf(w, "  stable     %s\n", ref(st.Stable))
	if st.Channel != store.ChannelStable {
		fmt.Fprintf(w, "  candidate  %s\n", ref(st.Candidate))
		if st.HeldBack {
			fmt.Fprintf(w, "  the candidate is not the newest revision (%s): a push was interrupted; no session gets the newest\n", ref(st.Head))
		}
		if st.By != "" {
			fmt.Fprintf(w, "  by %s at %s\n", st.By, stamp(time.UnixMilli(st.At)))
		} else {
			fmt.Fprintf(w, "  at %s\n", stamp(time.UnixMilli(st.At)))
		}
	}
	if len(st.Pins) == 0 {
		fmt.Fprintln(w, "  pins       none")
	}
	for _, p := range st.Pins {
		fmt.Fprintf(w, "  pinned     for %s: %s\n", p.Scope, ref(&store.RevRef{Rev: p.Rev, Revision: p.Store, Digest: p.Digest}))
	}
	for _, m := range st.Malformed {
		fmt.Fprintf(w, "  ignored    %s\n", m)
	}
	if t := st.Trust; t != nil {
		signed := "unsigned"
		if t.Key != "" {
			signed = "signed by " + t.Key
		}
		switch {
		case t.Revoked && t.Offered != nil:
			fmt.Fprintf(w, "  trust      newest revision %s, %s: not offered (whatever require says), %s offered instead\n", signed, t.Reason, ref(t.Offered))
		case t.Revoked:
			fmt.Fprintf(w, "  trust      newest revision %s, %s: not offered (whatever require says), and no earlier revision to offer\n", signed, t.Reason)
		case t.Trusted:
			fmt.Fprintf(w, "  trust      newest revision %s, trusted (require %s)\n", signed, t.Require)
		case t.Require == store.RequireSigned && t.Offered != nil:
			fmt.Fprintf(w, "  trust      newest revision %s, not trusted: %s; require signed: not offered, %s offered instead\n", signed, t.Reason, ref(t.Offered))
		case t.Require == store.RequireSigned:
			fmt.Fprintf(w, "  trust      newest revision %s, not trusted: %s; require signed: not offered, and no earlier trusted revision\n", signed, t.Reason)
		default:
			fmt.Fprintf(w, "  trust      newest revision %s, not trusted: %s; require %s: offered\n", signed, t.Reason, t.Require)
		}
	}
}

// libraryPinAction checks the arguments of pin and unpin with --library
// and returns what runs them: the tenant's pin of a library skill, kept
// in the tenant's store, its revision read from the library.
func (a *app) libraryPinAction(c *Config, action string, args []string, scope string) (func(context.Context, *store.Publisher) error, error) {
	if c.Tenant == "" || c.Tenant == libraryTenant {
		return nil, usagef("skills %s --library needs --tenants FILE --tenant T: the tenant whose sessions the pin holds", action)
	}
	if scope != "global" {
		return nil, usagef("skills %s --library needs --scope global: a tenant pins a library skill for every session of the tenant", action)
	}
	name, at, err := pinArgs(action, args, "skills "+action+" --library", "the library skill's revision to hold (skills history --tenant library lists them)")
	if err != nil {
		return nil, err
	}
	if action == "unpin" {
		return func(ctx context.Context, pb *store.Publisher) error {
			if _, err := pb.UnpinLibrary(ctx, name); err != nil {
				return err
			}
			fmt.Fprintf(a.stdout, "unpinned library skill %s for tenant %s\n", name, c.Tenant)
			return nil
		}, nil
	}
	return func(ctx context.Context, pb *store.Publisher) error {
		closeLib, err := c.dialLibrary(a.stderr)
		if err != nil {
			return err
		}
		defer closeLib()
		if c.library == nil {
			return usagef("skills pin --library: the tenants file names no library")
		}
		lib, err := store.NewPublisher(ctx, c.library.js, store.Config{Bucket: c.library.bucket, Objects: c.library.objects})
		if err != nil {
			return fmt.Errorf("library: %w", err)
		}
		p, err := pb.PinLibrary(ctx, lib, name, at)
		if err != nil {
			return err
		}
		fmt.Fprintf(a.stdout, "pinned library skill %s for tenant %s to rev %d %s\n", name, c.Tenant, p.Pin.Rev, skillstore.Short(p.Pin.Digest))
		return nil
	}, nil
}
