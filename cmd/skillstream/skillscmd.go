package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/providers/store"
	"github.com/skillstream/skillstream/providers/store/audit"
)

// storeNATSFlags registers how commands other than serve reach the skill
// store: --nats-url and its credentials, or a running serve's embedded
// server on --listen.
func (c *Config) storeNATSFlags(cmd *command) {
	cmd.group("NATS (a running serve's embedded server by default)")
	cmd.pick(c.natsFlags, "listen", "nats-url", "nats-user", "nats-password", "nats-token",
		"nats-nkey", "nats-creds", "nats-tls-ca", "nats-tls-cert", "nats-tls-key", "tenants", "tenant")
	cmd.fs.Lookup("listen").Usage = "client `address` of a running serve's embedded server, used when no --nats-url is given"
}

// dialStore connects to the NATS system holding the skill store:
// --nats-url when given, else the embedded server of a serve on --listen.
// required says whether a missing server is an error; when it is not, a
// nil JetStream and a note on stderr say the store is left out.
func (a *app) dialStore(c *Config, name string, required bool) (jetstream.JetStream, func(), error) {
	noop := func() {}
	if c.NoSkillStore {
		return nil, noop, nil
	}
	url := c.NATSURL
	var opts []nats.Option
	if url == "" {
		if !serving(c.Listen) {
			if required {
				return nil, noop, fmt.Errorf("no NATS server answers on --listen %s: start `skillstream serve` or give --nats-url", c.Listen)
			}
			fmt.Fprintf(a.stderr, "skillstream %s: no NATS server answers on %s; previewing without the skill store (give --nats-url, or --no-skill-store to silence this)\n", name, c.Listen)
			return nil, noop, nil
		}
		url = "nats://" + c.Listen
		opts = []nats.Option{nats.Name("skillstream " + name)}
	} else {
		var err error
		if opts, err = c.connectOptions(c.newLogger(a.stderr)); err != nil {
			return nil, noop, err
		}
	}
	// The handler runs on the connection's own goroutine, which Close does
	// not wait for: once closed, it no longer writes (the command is
	// printing its result on the same stderr).
	var (
		asyncMu sync.Mutex
		closed  bool
	)
	if c.onAsyncError != nil {
		log := c.newLogger(a.stderr)
		note := c.onAsyncError
		opts = append(opts, nats.ErrorHandler(func(_ *nats.Conn, sub *nats.Subscription, err error) {
			reported := note(err)
			asyncMu.Lock()
			defer asyncMu.Unlock()
			if closed || reported {
				return // the command's own error says it
			}
			subject := ""
			if sub != nil {
				subject = sub.Subject
			}
			log.Warn("NATS asynchronous error", "subject", subject, "err", err)
		}))
	}
	nc, err := nats.Connect(url, append(opts, nats.MaxReconnects(0))...)
	if err != nil {
		return nil, noop, fmt.Errorf("connect to %s: %w", url, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, noop, fmt.Errorf("jetstream context: %w", err)
	}
	return js, func() {
		nc.Close()
		asyncMu.Lock()
		closed = true
		asyncMu.Unlock()
	}, nil
}

func (a *app) skillsCommand() (*command, runFunc) {
	var (
		c      Config
		scope  string
		prune  bool
		out    string
		dryRun bool
		minAge time.Duration
		asJSON bool
		to     string

		revision string
		draft    bool
		canary   string
		library  bool

		includeHidden, linksOut bool
		sign                    string
		revokeKey, revokeDigest string
	)
	cmd := newCommand("skills", "skillstream skills push|ls|history|rm|get|diff|rollback|gc|status|release|promote|pin|unpin|keygen|trust|revoke|unrevoke|revocations [arguments] [flags]", `
Publish and inspect the skill store: the skills every serve of a fleet
reads from NATS (a key-value index and an object store of the skills'
files, see "Running a fleet" in cmd/skillstream/MANUAL.md).

  push DIR... [--scope S] [--prune] [--draft] [--json] [--include-hidden] [--follow-links-out] [--sign SEEDFILE]
      publish the skills in each DIR (a skills root, a skill folder or a
      flat skill file). Only what belongs to a skill is published: version
      control folders (.git, .hg, .svn) never, other hidden files and
      folders only with --include-hidden; a skill folder of a root that is
      a symbolic link leading outside the root is refused unless
      --follow-links-out. Each file is read without following a link and
      only if it is still the file the listing found, so a file swapped
      for a link meanwhile is never published. Every skill is validated
      first: what validate calls an error (a name other than its folder's,
      a description over 1024 characters...) is refused with validate's
      message; on any problem nothing is written, every problem is listed
      and the exit status is 1. validate's warnings about control and
      bidirectional-text characters in a skill's text are printed on
      stderr, and the skill is published. Skills whose files are unchanged are not written
      again.
      --prune also removes the scope's skills that are not in any DIR.
      One line per skill: added, updated, unchanged or removed, with the
      skill's revision (see REV below) and the first 12 hex digits of the
      skill's digest; then "store revision N epoch E": the store
      revision a serve must have applied to see every skill as pushed,
      and the epoch of the store's buckets it counts in (recreated
      buckets have another). A trigger that carries them as
      minStoreRevision and minStoreEpoch is decided on that revision of
      those buckets or later, never on an older one (read-your-writes),
      and is answered at once when the buckets were recreated since.
      --json prints one object instead: {"revision": N, "epoch": E,
      "token": "E:N", "skills": [{"name", "change", "rev", "revision",
      "digest", "draft", "releaseEnded"}]}; the token is both in one string, as the clients take
      it; a skill's "rev" is its revision, its "revision" the store
      revision of that revision.
      Writes are conditional on what was read: a concurrent publisher's
      change fails the push with "changed since read", never lost.
      --draft publishes each changed skill as a draft: kept (history,
      status, get, eval --skill-revision) and offered to no session; the
      others keep the revision they had (see release). Without --draft,
      a new revision of a skill in a release is stable for every session
      at once and ends the release ("release ended").
      --sign SEEDFILE signs each revision written with the key in
      SEEDFILE (made by keygen, mode 0600): the signature covers the
      skill's scope and name, its digest and its summary. A skill whose
      files are unchanged is written again when its newest revision is
      not signed by that key.
  ls [--scope S]
      the published skills (every scope without --scope), one row each
      under a header: scope, name, the skill's revision, digest (first 12 hex
      digits), time published; nothing when there are none.
  history NAME [--scope S]
      the revisions the index keeps of a skill: revision, digest, time
      and store revision, the key that signed it, and (with --tenants,
      where the deployment runs the audit service) who wrote it as the
      NATS server knows them, and the skill's release and pin writes.
  rm NAME --scope S
      remove a skill from a scope (earlier revisions stay readable); a
      removal takes the skill's next revision. Prints the store revision
      and epoch, as push.
  get NAME[@REV] --out DIR [--scope S] [--revision REV]
      write a skill's files (the current revision, or REV) to DIR/NAME,
      read-only, verified against the skill's digest.
  diff NAME REV_A [REV_B] [--scope S]
      the files added, removed and changed from revision REV_A to REV_B
      (the current one when absent), then a unified diff of each such
      text file, read from the store alone and verified.
  rollback NAME [--to REV] --scope S
      publish the files of an earlier revision (by default the newest one
      before the current whose files differ) as the skill's next
      revision, with the earlier digest; the history keeps every
      revision. Conditional on what was read, as push. Refused when that
      revision's files were removed by gc, or the index no longer keeps
      it. With a release in progress (a draft or canary), rollback
      without --to ends it instead: every session is back on the
      release's stable revision (published again as the next revision
      when it is not the newest; a skill new in the release is removed).
  status NAME [--scope S] [--json]
      the skill's release state: its channel (stable without a release,
      draft, or canary with its share of sessions), the stable revision
      and the candidate, and every scope that pins it. --json prints the
      same as one object.
  release NAME REV --canary P% [--scope S]
      offer REV, the draft pushed with --draft, to P% of sessions (0 to
      100, at most two decimals: 10%, 2.5%); the others keep the stable
      revision. Which sessions is a pure function of the tenant, the
      session id, the skill and the candidate's digest: the same on
      every serve, after restarts and in replay; raising P keeps the
      sessions that had it. Run again to change P.
  promote NAME [--scope S]
      make the canary's revision stable for every session (ends the
      release).
  pin NAME@REV --scope S
      hold the sessions of S (global: every session; project/<id>: that
      project's) at revision REV, whatever the release or newest
      revision: the project's own skill when it has one, else the global
      skill. A project's pin beats a global pin.
  unpin NAME --scope S
      remove S's pin of the skill.
  pin NAME@REV --library --scope global --tenants FILE --tenant T
  unpin NAME --library --scope global --tenants FILE --tenant T
      pin (unpin) a skill of the shared library for every session of
      tenant T: REV is the library skill's revision; the pin is kept in
      T's own store (the library stays read-only to T) and beats the
      library's releases and newest revision for T's sessions only.
  keygen [--out FILE]
      make a signing key (ed25519, an nkey): the seed is written to FILE
      (default skillstream-signing.seed; created with mode 0600, never
      overwritten, never printed) and the public key (N...) printed.
      Needs no NATS.
  trust show [--json] | add KEY | remove KEY | require off|warn|signed | library trust|ignore
      the store's trust policy, which every serve enforces within
      seconds of a change: the publishers' public keys trusted, and what
      is required of a revision: off (anything offered), warn (offered;
      a revision not signed by a trusted key is reported in the log, the
      warning counter, skills status and catalog --json), signed (such a
      revision is not offered: the skill's newest trusted revision the
      index keeps is, or none). library trust also trusts, for the
      library's skills, the keys the library's own policy names.
      Changes are conditional on the policy read; each prints the policy.
  revoke --key KEY | --digest DIGEST
  unrevoke --key KEY | --digest DIGEST
  revocations [--json]
      revoke a publisher's key or a skill version's digest in the store's
      trust policy: whatever require says, a revision signed by a revoked
      key, or whose digest is revoked, is not offered by any serve within
      seconds (the skill's newest revision not revoked the index keeps is,
      or none), and live sessions drop it at their next step. unrevoke
      undoes one; revocations lists them. Revoking what is revoked, or
      unrevoking what is not, is an error that changes nothing.
  gc [--dry-run] [--min-age DURATION]
      remove the stored files (objects) of skill versions that no revision
      kept by the index names any more: updates and rm keep the old files,
      and nothing else ever deletes them. Every revision that history
      lists stays fetchable, removed skills' included. An object younger
      than --min-age (default 1h) is kept even when nothing names it: a
      push stores a skill's files before its index entry, and gc must not
      take the files of a push still in flight; --min-age 0 is safe when
      no push runs. One line per object, "removed <digest12> <size>
      bytes" ("would remove" with --dry-run, which removes nothing), then
      a summary of the objects kept and removed. When a revision of the
      index cannot be read (written by something else), gc removes
      nothing, names it and exits 1.

A scope is "global" (every session; the default) or "project/<id>"
(sessions whose triggers carry project "<id>").

A revision (REV) is the skill's own: its first publication is revision
1, and each update, rollback or removal of it takes the next number,
whatever other skills do meanwhile; numbers stay as the index drops its
oldest revisions (it keeps --skill-store-history of each skill).
store:N names a revision by its store revision instead: the index's
sequence over every skill, which push prints for read-your-writes and
tool results carry as value.revision.`[1:], `
  skillstream skills push skills/
  skillstream skills push skills/ --prune --nats-url nats://n1:4222 --nats-creds ci.creds
  skillstream skills push team-skills/ --scope project/payments
  skillstream skills ls
  skillstream skills history commit-message
  skillstream skills get commit-message@2 --out /tmp/skills
  skillstream skills diff commit-message 1 2
  skillstream skills rollback commit-message --scope global
  skillstream skills push skills/commit-message --draft
  skillstream skills release commit-message 3 --canary 10%
  skillstream skills status commit-message
  skillstream skills promote commit-message
  skillstream skills pin commit-message@2 --scope project/payments
  skillstream skills gc --dry-run
  skillstream skills keygen --out ~/.skillstream/signing.seed
  skillstream skills push skills/ --sign ~/.skillstream/signing.seed
  skillstream skills trust add NBZJ...
  skillstream skills trust require signed
  skillstream skills revoke --key NBZJ...`[1:])
	cmd.group("Flags")
	cmd.localString(&scope, "scope", "", "`scope`: global or project/<id> (push, history, get: default global; rm: required)")
	cmd.localBool(&prune, "prune", false, "push: remove the scope's skills that are not in any DIR")
	cmd.localBool(&includeHidden, "include-hidden", false, "push: publish hidden files and folders too (never .git, .hg, .svn)")
	cmd.localBool(&linksOut, "follow-links-out", false, "push: publish skill folders of a root that are symbolic links leading outside it")
	cmd.localString(&out, "out", "", "get: write the skill's files to `dir`/NAME; keygen: the seed file")
	cmd.localString(&revokeKey, "key", "", "revoke, unrevoke: a publisher's public `key` (N...)")
	cmd.localString(&revokeDigest, "digest", "", "revoke, unrevoke: a skill version's `digest` (64 hex digits)")
	cmd.localString(&sign, "sign", "", "push: sign each revision written with the seed in `file` (skills keygen)")
	cmd.localString(&revision, "revision", "", "get: the skill's `revision` to write, as NAME@REV does")
	cmd.localString(&to, "to", "", "rollback: publish the files of `revision` (default: the newest earlier one with other files)")
	cmd.localBool(&dryRun, "dry-run", false, "gc: list the objects that would be removed, remove nothing")
	cmd.localBool(&asJSON, "json", false, "push: print the changes and the store revision as one JSON object; status, trust show, revocations: the state as one JSON object")
	cmd.localBool(&draft, "draft", false, "push: publish changed skills as drafts, offered to no session until released")
	cmd.localBool(&library, "library", false, "pin, unpin: a skill of the shared library, for every session of --tenant (kept in the tenant's store)")
	cmd.localString(&canary, "canary", "", "release: the `percentage` of sessions offered the revision (10%, 2.5%)")
	cmd.localDuration(&minAge, "min-age", time.Hour, "gc: keep unreferenced objects younger than `duration` (a push in flight writes its files first)")
	c.storeFlags(cmd)
	cmd.pick(c.streamFlags, "replicas")
	cmd.fs.Lookup("replicas").Usage = "replicas of the skill store's buckets when they are created"
	c.storeNATSFlags(cmd)
	return cmd, func(ctx context.Context, args []string) error {
		if len(args) == 0 {
			return usagef("skills needs an action: push, ls, history, rm, get, diff, rollback, gc, status, release, promote, pin, unpin, keygen, trust, revoke, unrevoke or revocations")
		}
		action, args := args[0], args[1:]
		if sign != "" && action != "push" {
			return usagef("--sign applies to push only")
		}
		if (revokeKey != "" || revokeDigest != "") && action != "revoke" && action != "unrevoke" {
			return usagef("--key and --digest apply to revoke and unrevoke only")
		}
		if action == "keygen" {
			return a.keygen(args, out)
		}
		if err := c.validateNATS(); err != nil {
			return err
		}
		if c.NoSkillStore {
			return usagef("--no-skill-store leaves nothing for skills to do")
		}
		if err := c.validateStore(); err != nil {
			return err
		}
		sc := skillstore.Global
		if scope != "" {
			var err error
			if sc, err = skillstore.ParseScope(scope); err != nil {
				return usagef("--scope: %v", err)
			}
		}
		if (prune || includeHidden || linksOut) && action != "push" {
			return usagef("--prune, --include-hidden and --follow-links-out apply to push only")
		}
		if out != "" && action != "get" {
			return usagef("--out applies to get and keygen only")
		}
		if to != "" && action != "rollback" {
			return usagef("--to applies to rollback only")
		}
		if revision != "" && action != "get" {
			return usagef("--revision applies to get only")
		}
		if asJSON && action != "push" && action != "status" && action != "trust" && action != "revocations" {
			return usagef("--json applies to push, status, trust show and revocations only")
		}
		if draft && action != "push" {
			return usagef("--draft applies to push only")
		}
		if canary != "" && action != "release" {
			return usagef("--canary applies to release only")
		}
		if draft && prune {
			return usagef("--draft and --prune: a removal cannot be a draft; push the drafts and prune separately")
		}
		gcOnly := false
		cmd.fs.Visit(func(f *flag.Flag) { gcOnly = gcOnly || f.Name == "dry-run" || f.Name == "min-age" })
		if gcOnly && action != "gc" {
			return usagef("--dry-run and --min-age apply to gc only")
		}
		var run func(context.Context, *store.Publisher) error
		// What the action writes, claimed in the audit trail once it
		// succeeded: push and rm fill it with what they wrote; the others
		// name the key they write (its newest entry is claimed).
		var claims []audit.Claim
		var nc *nats.Conn
		switch action {
		case "push":
			if len(args) == 0 {
				return usagef("skills push needs at least one skills root, skill folder or skill file")
			}
			var signer nkeys.KeyPair
			if sign != "" {
				var err error
				if signer, err = readSigner(sign); err != nil {
					return err
				}
				defer signer.Wipe()
			}
			locals, err := a.readForPush(args, c.storeConfig(), store.ReadOptions{IncludeHidden: includeHidden, LinksOut: linksOut})
			if err != nil {
				return err
			}
			run = func(ctx context.Context, pb *store.Publisher) error {
				before, err := pb.Epoch(ctx)
				if err != nil {
					return err
				}
				changes, err := pb.PushWith(ctx, sc, locals, store.PushOptions{Prune: prune, Draft: draft, By: c.publisherName(a), Sign: signer})
				claims = changeClaims(sc, changes)
				tok := events.StoreToken{Epoch: before, Revision: pushRevision(changes)}
				if err == nil {
					err = samePushEpoch(ctx, pb, before)
				}
				if asJSON {
					if jerr := printPushJSON(a.stdout, tok, changes); jerr != nil {
						return errors.Join(err, jerr)
					}
					return err
				}
				for _, ch := range changes {
					printChange(a.stdout, ch)
				}
				if tok.Revision > 0 {
					fmt.Fprintf(a.stdout, "store revision %d epoch %s\n", tok.Revision, tok.Epoch)
				}
				if signer != nil && err == nil {
					fmt.Fprintf(a.stdout, "signed by %s\n", keyOf(signer))
				}
				return err
			}
		case "ls":
			if len(args) > 0 {
				return usagef("skills ls takes no arguments, got %q", args[0])
			}
			run = func(ctx context.Context, pb *store.Publisher) error {
				var ps []store.Published
				var err error
				if scope == "" {
					ps, err = pb.ListAll(ctx)
				} else {
					ps, err = pb.List(ctx, sc)
				}
				printPublished(a.stdout, ps)
				return err
			}
		case "history":
			if len(args) != 1 {
				return usagef("skills history needs one skill name")
			}
			run = func(ctx context.Context, pb *store.Publisher) error {
				hs, err := pb.History(ctx, sc, args[0])
				if err != nil {
					return err
				}
				h := a.readAudit(ctx, &c, nc, args[0])
				printHistory(a.stdout, hs, h)
				h.printOther(a.stdout)
				if hs[0].Counted {
					fmt.Fprintf(a.stderr, "skillstream skills history: no revision the index keeps of %s records its number (written by an older skillstream): "+
						"they are counted from the oldest kept, and shift when it leaves the history, until the skill's next push or rollback records one\n", args[0])
				}
				return nil
			}
		case "rm":
			if len(args) != 1 {
				return usagef("skills rm needs one skill name")
			}
			if scope == "" {
				return usagef("skills rm needs --scope (global or project/<id>)")
			}
			run = func(ctx context.Context, pb *store.Publisher) error {
				epoch, err := pb.Epoch(ctx)
				if err != nil {
					return err
				}
				ch, err := pb.RemoveSkill(ctx, sc, args[0])
				if err != nil {
					return err
				}
				claims = changeClaims(sc, []store.Change{ch})
				if err := samePushEpoch(ctx, pb, epoch); err != nil {
					return err
				}
				printChange(a.stdout, ch)
				if ch.Revision > 0 {
					fmt.Fprintf(a.stdout, "store revision %d epoch %s\n", ch.Revision, epoch)
				}
				return nil
			}
		case "get":
			if len(args) != 1 {
				return usagef("skills get needs one skill name, NAME or NAME@REVISION")
			}
			if out == "" {
				return usagef("skills get needs --out DIR")
			}
			name, at, err := parseNameRev(args[0])
			if err != nil {
				return err
			}
			if revision != "" {
				if at != (store.At{}) {
					return usagef("give the revision as %s or with --revision, not both", args[0])
				}
				if at, err = parseRevision(revision); err != nil {
					return err
				}
			}
			run = func(ctx context.Context, pb *store.Publisher) error {
				p, err := pb.Get(ctx, sc, name, at)
				if err != nil {
					return explainMissing(ctx, pb, sc, err)
				}
				dir := filepath.Join(out, name)
				if err := pb.Materialize(ctx, p.Record.Digest, dir); err != nil {
					return err
				}
				fmt.Fprintf(a.stdout, "wrote %s rev %d %s to %s\n", name, p.Rev, skillstore.Short(p.Record.Digest), dir)
				return nil
			}
		case "diff":
			if len(args) < 2 || len(args) > 3 {
				return usagef("skills diff needs NAME REV_A [REV_B]")
			}
			if err := catalog.CheckName(args[0]); err != nil {
				return err
			}
			revs := make([]store.At, 2)
			for i, s := range args[1:] {
				var err error
				if revs[i], err = parseRevision(s); err != nil {
					return err
				}
			}
			run = func(ctx context.Context, pb *store.Publisher) error {
				return a.skillsDiff(ctx, pb, sc, args[0], revs[0], revs[1])
			}
		case "rollback":
			if len(args) != 1 {
				return usagef("skills rollback needs one skill name")
			}
			if scope == "" {
				return usagef("skills rollback needs --scope (global or project/<id>)")
			}
			if err := catalog.CheckName(args[0]); err != nil {
				return err
			}
			var rev store.At
			if to != "" {
				var err error
				if rev, err = parseRevision(to); err != nil {
					return err
				}
			}
			run = func(ctx context.Context, pb *store.Publisher) error {
				return a.skillsRollback(ctx, pb, sc, args[0], rev)
			}
			claims = []audit.Claim{{Op: audit.OpRollback, Key: sc.Key(args[0]), Name: args[0]}}
		case "gc":
			if len(args) > 0 {
				return usagef("skills gc takes no arguments, got %q", args[0])
			}
			if scope != "" {
				return usagef("skills gc covers every scope: --scope does not apply")
			}
			if minAge < 0 {
				return usagef("--min-age %v: must not be negative", minAge)
			}
			run = func(ctx context.Context, pb *store.Publisher) error {
				return a.collect(ctx, pb, store.CollectOptions{MinAge: minAge, DryRun: dryRun})
			}
		case "pin", "unpin":
			if !library {
				var err error
				if run, err = a.releaseAction(action, args, sc, scope != "", canary, asJSON, c.publisherName(a)); err != nil {
					return err
				}
				claims = []audit.Claim{{Op: audit.OpRelease, Key: store.PinKey(sc, args[0]), Name: args[0]}}
				break
			}
			var err error
			if run, err = a.libraryPinAction(&c, action, args, scope); err != nil {
				return err
			}
			if len(args) > 0 {
				claims = []audit.Claim{{Op: audit.OpRelease, Key: store.LibraryPinKey(args[0]), Name: args[0]}}
			}
		case "trust":
			var err error
			if run, err = a.trustAction(args, asJSON); err != nil {
				return err
			}
			if len(args) > 0 && args[0] != "show" {
				claims = []audit.Claim{{Op: audit.OpPolicy, Key: store.TrustKey}}
			}
		case "revoke", "unrevoke", "revocations":
			var err error
			if run, err = a.revokeAction(action, args, revokeKey, revokeDigest, asJSON); err != nil {
				return err
			}
			if action != "revocations" {
				claims = []audit.Claim{{Op: audit.OpPolicy, Key: store.TrustKey}}
			}
		case "status", "release", "promote":
			var err error
			if run, err = a.releaseAction(action, args, sc, scope != "", canary, asJSON, c.publisherName(a)); err != nil {
				return err
			}
			if action != "status" {
				claims = []audit.Claim{{Op: audit.OpRelease, Key: store.ReleaseKey(sc, args[0]), Name: args[0]}}
			}
		default:
			return usagef("unknown skills action %q: want push, ls, history, rm, get, diff, rollback, gc, status, release, promote, pin, unpin, keygen, trust, revoke, unrevoke or revocations", action)
		}
		// A refusal by the server stops the command at once: the refused
		// publish would otherwise be noticed only when its acknowledgement
		// times out.
		ctx, stop := context.WithCancelCause(ctx)
		defer stop(nil)
		refused := &refusals{stop: stop, user: c.natsUserName()}
		c.onAsyncError = refused.note
		js, closeNC, err := a.dialStore(&c, "skills", true)
		if err != nil {
			return err
		}
		defer closeNC()
		if js != nil {
			nc = js.Conn()
		}
		pb, err := store.NewPublisher(ctx, js, c.storeConfig())
		if err == nil {
			err = run(ctx, pb) // a missing skill, revision or scope: exit 1, like every command
		}
		if err == nil {
			detail := "skills " + action + " " + strings.Join(args, " ")
			if action == "release" {
				detail += " --canary " + canary
			}
			a.claimWrites(ctx, &c, nc, claims, detail)
		}
		return refused.explain(err)
	}
}

// refusals remembers the first permissions violation the server reported
// on a connection. A publish the server refuses is not answered, so the
// operation that made it fails later with a timeout; the refusal is what
// the operator needs to read.
type refusals struct {
	stop  context.CancelCauseFunc // cancels the operation at the first refusal
	user  string                  // the user connected as, for the message ("" when unknown)
	mu    sync.Mutex
	first error
}

// note hears an asynchronous error of the connection; it reports whether
// the command's own error will say it (a refusal), so that it is not
// logged as well.
func (r *refusals) note(err error) bool {
	if !errors.Is(err, nats.ErrPermissionViolation) && !strings.Contains(strings.ToLower(err.Error()), "permissions violation") {
		return false
	}
	r.mu.Lock()
	first := r.first == nil
	if first {
		r.first = err
	}
	r.mu.Unlock()
	if first && r.stop != nil {
		r.stop(err)
	}
	return true
}

// explain adds the refusal to err, when there was one.
func (r *refusals) explain(err error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil || r.first == nil {
		return err
	}
	who := "these credentials"
	if r.user != "" {
		who = "user " + r.user
	}
	if errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		// The operation stopped because of the refusal: say only that.
		return fmt.Errorf("the NATS server refused it (%v): %s may not do this", r.first, who)
	}
	return fmt.Errorf("%w: the NATS server refused it (%v): %s may not do this", err, r.first, who)
}

// collect runs skills gc: a line per object removed (or that would be),
// then a summary; unreadable index revisions are listed on stderr.
func (a *app) collect(ctx context.Context, pb *store.Publisher, opts store.CollectOptions) error {
	c, err := pb.Collect(ctx, opts)
	verb := "removed"
	if opts.DryRun {
		verb = "would remove"
	}
	for _, o := range c.Removed {
		fmt.Fprintf(a.stdout, "%s %s %d bytes\n", verb, skillstore.Short(o.Digest), o.Size)
	}
	var ue *store.UnreadableError
	if errors.As(err, &ue) {
		for _, e := range ue.Entries {
			fmt.Fprintf(a.stderr, "skillstream skills gc: cannot read %s at store revision %d: %v\n", e.Key, e.Revision, e.Err)
		}
		fmt.Fprintf(a.stderr, "skillstream skills gc: nothing was removed, since these revisions may name any object; "+
			"remove them from the index (`nats kv purge <bucket> <key>` drops every revision of a key) "+
			"or let newer revisions push them out of its history, then run gc again\n")
		return errReported
	}
	if err != nil {
		return err
	}
	why := []string{fmt.Sprintf("%d named by the %d %s the index holds", c.Named, c.Revisions, plural(c.Revisions, "revision", "revisions"))}
	if c.Young > 0 {
		why = append(why, fmt.Sprintf("%d unreferenced but younger than --min-age %v", c.Young, opts.MinAge))
	}
	if other := c.Kept - c.Named - c.Young; other > 0 {
		why = append(why, fmt.Sprintf("%d not named by a digest", other))
	}
	kept := fmt.Sprintf("kept %d %s (%s)", c.Kept, plural(c.Kept, "object", "objects"), strings.Join(why, ", "))
	if opts.DryRun {
		fmt.Fprintf(a.stdout, "%s, would remove %d (%d bytes)\n", kept, len(c.Removed), c.Freed)
	} else {
		fmt.Fprintf(a.stdout, "%s, removed %d (%d bytes freed)\n", kept, len(c.Removed), c.Freed)
	}
	return nil
}

// readForPush validates and reads every skill under the paths; on any
// problem it prints them all (as validate does) and nothing is published.
func (a *app) readForPush(paths []string, cfg store.Config, opts store.ReadOptions) ([]store.Local, error) {
	l := linter{ctx: context.Background(), follow: true}
	type found struct{ path, root string }
	var skills []found // as the provider's scan found them
	for _, p := range paths {
		for _, s := range l.path(p) {
			f := found{path: s}
			if s != p {
				f.root = p // found in a skills root
			}
			skills = append(skills, f)
		}
	}
	var locals []store.Local
	for _, f := range skills {
		s := f.path
		o := opts
		o.Root = f.root
		loc, err := store.ReadSkillWith(s, cfg, o)
		if err != nil {
			if l.hasError(s) {
				continue // the linter said why already
			}
			l.add(s, levelError, "%s", strings.TrimPrefix(strings.TrimPrefix(err.Error(), store.ErrInvalidSkill.Error()+": "), s+": "))
			continue
		}
		locals = append(locals, loc)
	}
	if l.errors > 0 {
		l.report(a.stderr)
		fmt.Fprintln(a.stderr, "nothing was published")
		return nil, reportedf("%d %s, nothing was published", l.errors, plural(l.errors, "error", "errors"))
	}
	for _, f := range l.findings {
		if f.text {
			f.print(a.stderr)
		}
	}
	return locals, nil
}

// pushRevision is the index revision a reader must have applied to see
// every change of a push: the newest revision among them (an unchanged
// skill's is the revision that holds it already).
func pushRevision(changes []store.Change) uint64 {
	var rev uint64
	for _, ch := range changes {
		rev = max(rev, ch.Revision)
	}
	return rev
}

// samePushEpoch checks that the store's buckets are still those of epoch,
// read before the push: buckets recreated meanwhile may have lost some of
// its writes, and its revision counts in neither epoch.
func samePushEpoch(ctx context.Context, pb *store.Publisher, epoch string) error {
	after, err := pb.Epoch(ctx)
	if err != nil {
		return err
	}
	if after != epoch {
		return fmt.Errorf("the store's buckets were recreated during the push (epoch %s, now %s): push again", epoch, after)
	}
	return nil
}

// pushJSON is push --json's output; its keys are documented in the help.
type pushJSON struct {
	Revision uint64           `json:"revision"`
	Epoch    string           `json:"epoch"`
	Token    string           `json:"token"`
	Skills   []pushJSONChange `json:"skills"`
}

type pushJSONChange struct {
	Name     string `json:"name"`
	Change   string `json:"change"`
	Rev      uint64 `json:"rev"`      // the skill's revision
	Revision uint64 `json:"revision"` // its store revision
	Digest   string `json:"digest,omitempty"`
	Draft    bool   `json:"draft,omitempty"`
	Ended    bool   `json:"releaseEnded,omitempty"`
}

func printPushJSON(w io.Writer, tok events.StoreToken, changes []store.Change) error {
	out := pushJSON{Revision: tok.Revision, Epoch: tok.Epoch, Token: tok.String(), Skills: []pushJSONChange{}}
	for _, ch := range changes {
		out.Skills = append(out.Skills, pushJSONChange{Name: ch.Name, Change: string(ch.Action), Rev: ch.Rev, Revision: ch.Revision, Digest: ch.Digest, Draft: ch.Draft, Ended: ch.Ended})
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

func printChange(w io.Writer, ch store.Change) {
	if ch.Action == store.Removed {
		fmt.Fprintf(w, "%s %s rev %d%s\n", ch.Action, ch.Name, ch.Rev, releaseNote(ch))
		return
	}
	fmt.Fprintf(w, "%s %s rev %d %s%s\n", ch.Action, ch.Name, ch.Rev, skillstore.Short(ch.Digest), releaseNote(ch))
}

// printHistory writes one line per revision: the skill's revision, its
// digest (or removed, or malformed), its time and its store revision,
// the key that signed it, and who wrote it as the audit trail records
// (au nil: no trail read).
func printHistory(w io.Writer, hs []store.Revision, au *historyAudit) {
	for _, h := range hs {
		who := au.suffix(h.Revision)
		switch {
		case h.Removed:
			fmt.Fprintf(w, "rev %d removed %s store revision %d%s\n", h.Rev, stamp(h.Created), h.Revision, who)
		case h.Err != nil:
			fmt.Fprintf(w, "rev %d malformed %s store revision %d: %v%s\n", h.Rev, stamp(h.Created), h.Revision, h.Err, who)
		default:
			signed := ""
			if sig := h.Record.Signature; sig != nil {
				signed = " signed " + sig.Key
			}
			fmt.Fprintf(w, "rev %d %s %s store revision %d%s%s\n", h.Rev, skillstore.Short(h.Record.Digest), stamp(h.Created), h.Revision, signed, who)
		}
	}
}

func stamp(t time.Time) string { return t.UTC().Format(time.RFC3339) }

// printPublished writes skills ls's table: a header, then one aligned row
// per skill; nothing at all when the store holds none.
func printPublished(w io.Writer, ps []store.Published) {
	if len(ps) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SCOPE\tNAME\tREVISION\tDIGEST\tPUBLISHED")
	for _, p := range ps {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", p.Scope, p.Record.Name, p.Rev, skillstore.Short(p.Record.Digest), stamp(p.Created))
	}
	tw.Flush()
}

// parseNameRev splits NAME[@REV] (see parseRevision).
func parseNameRev(s string) (string, store.At, error) {
	name, revText, ok := strings.Cut(s, "@")
	if err := catalog.CheckName(name); err != nil {
		return "", store.At{}, usagef("%v", err)
	}
	if !ok {
		return name, store.At{}, nil
	}
	at, err := parseRevision(revText)
	if err != nil {
		return "", store.At{}, err
	}
	return name, at, nil
}

// hasError reports whether the linter found an error at or below path.
func (l *linter) hasError(path string) bool {
	for _, f := range l.findings {
		if f.level == levelError && (f.path == path || strings.HasPrefix(f.path, path+string(filepath.Separator))) {
			return true
		}
	}
	return false
}
