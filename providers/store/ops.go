package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
)

// ErrNotKept reports a revision the index does not keep for a skill: never
// one of its revisions, or dropped from the index's history.
var ErrNotKept = errors.New("revision not kept")

// Files returns the files of the skill version named by digest, in the
// order they were archived, checked against the digest and bounded by the
// store's limits. A version whose files were removed (by gc) is an error
// wrapping skillstore.ErrObjectMissing.
func (pb *Publisher) Files(ctx context.Context, digest string) ([]skillstore.File, error) {
	if !skillstore.ValidDigest(digest) {
		return nil, fmt.Errorf("%w: digest %q is not 64 lowercase hex digits", ErrBadRecord, clip(digest))
	}
	return skillstore.Fetch(ctx, pb.obs, digest, pb.cfg.objectLimits())
}

// Rollback publishes the files of an earlier revision of name in scope as
// a new revision: its index record (summary, digest, files) with a new
// publication time and the next number in the skill's history. The
// history stays append-only and the new revision's digest is the earlier
// one's. to names the revision; the zero At means the newest publication
// before the current one whose digest differs from it. The write is
// conditional on the revision read (an error wrapping ErrChanged when
// another publisher wrote in between). It refuses, writing nothing, a
// revision that is not one of the skill's kept publications (ErrNotKept)
// and one whose files are gone from the object store (skillstore.ErrObjectMissing,
// checked by fetching and verifying them). When the revision's digest is
// the current one it writes nothing and returns Unchanged. from is the
// revision whose files were published. With a release in progress (a
// draft or canary) and the zero At, it ends the release instead
// (Change.Ended): every session is back on the release's stable revision,
// published again as the next revision when the newest is not it (a skill
// new in the release is removed); a release entry skillstream did not
// write is removed. With a release and another At it refuses.
func (pb *Publisher) Rollback(ctx context.Context, scope skillstore.Scope, name string, to At) (c Change, from Revision, err error) {
	hist, err := pb.History(ctx, scope, name)
	if err != nil {
		return Change{}, Revision{}, err
	}
	rel, err := pb.readRelease(ctx, scope, name)
	if errors.Is(err, ErrBadControl) && to == (At{}) {
		// A release entry skillstream did not write: ending the release
		// is removing it (servers ignore it meanwhile).
		return pb.dropBadRelease(ctx, scope, name, hist)
	}
	if err != nil {
		return Change{}, Revision{}, err
	}
	if rel.revision != 0 {
		if to != (At{}) {
			return Change{}, Revision{}, fmt.Errorf("skill %q in %s: a release is in progress (rev %d, %s): skills rollback without a revision ends it first", name, scope, rel.r.Candidate.Rev, rel.r.Channel)
		}
		return pb.endByRollback(ctx, scope, name, rel, hist)
	}
	cur := hist[len(hist)-1]
	if to == (At{}) {
		found := false
		for i := len(hist) - 2; i >= 0; i-- {
			h := hist[i]
			if !h.Removed && h.Err == nil && (cur.Removed || cur.Err != nil || h.Record.Digest != cur.Record.Digest) {
				from, found = h, true
				break
			}
		}
		if !found {
			return Change{}, Revision{}, fmt.Errorf("skill %q in %s: no earlier revision with other files is kept: %w", name, scope, ErrNotKept)
		}
	} else if from, err = pick(hist, scope, name, to); err != nil {
		return Change{}, Revision{}, err
	}
	if !cur.Removed && cur.Err == nil && cur.Record.Digest == from.Record.Digest {
		return Change{Action: Unchanged, Name: name, Rev: cur.Rev, Revision: cur.Revision, Digest: cur.Record.Digest}, from, nil
	}
	if _, err := pb.Files(ctx, from.Record.Digest); err != nil {
		if errors.Is(err, skillstore.ErrObjectMissing) {
			return Change{}, from, fmt.Errorf("skill %q in %s: the files of revision %d (%s) were removed by gc; push that version from its folder instead: %w",
				name, scope, from.Rev, skillstore.Short(from.Record.Digest), err)
		}
		return Change{}, from, fmt.Errorf("skill %q in %s: files of revision %d: %w", name, scope, from.Rev, err)
	}
	if pb.beforeWrite != nil {
		pb.beforeWrite()
	}
	rec := from.Record
	rec.Published = pb.now().UnixMilli()
	rec.Rev = cur.Rev + 1
	rev, err := pb.kv.Update(ctx, scope.Key(name), rec.encode(), cur.Revision)
	if errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
		return Change{}, from, fmt.Errorf("skill %q in %s %w (revision %d): another publisher wrote it; read again and retry", name, scope, ErrChanged, cur.Rev)
	}
	if err != nil {
		return Change{}, from, fmt.Errorf("write %s: %w", scope.Key(name), err)
	}
	c = Change{Action: Updated, Name: name, Rev: rec.Rev, Revision: rev, Digest: rec.Digest}
	// A gc that ran between the check and the write may have taken the
	// files (they were named by no kept revision only if history dropped
	// them); look again so that the operator hears of it.
	if _, err := pb.obs.GetInfo(ctx, rec.Object); errors.Is(err, jetstream.ErrObjectNotFound) {
		return c, from, fmt.Errorf("revision %d of %q names files a concurrent gc removed: %w; push that version from its folder", rec.Rev, name, skillstore.ErrObjectMissing)
	}
	return c, from, nil
}

// NotFound reports whether err says a skill or revision is not in the
// store (catalog.ErrNotFound or ErrNotKept).
func NotFound(err error) bool {
	return errors.Is(err, catalog.ErrNotFound) || errors.Is(err, ErrNotKept)
}
