package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events/skillstore"
)

// Objects are never rewritten and nothing else deletes them: an update adds
// a revision naming another object, a removal adds a delete marker, and
// the index's history depth drops the oldest revisions, so the objects of
// the digests no revision names any more stay behind. Collect removes them.
//
// An object is kept while any revision the index still holds names it,
// the revisions of removed skills included: whatever `skills history`
// lists, `skills get NAME@REV` can fetch. A push writes a skill's object
// before its index entry, so an object nothing names yet may belong to a
// push in flight: Collect keeps unreferenced objects younger than MinAge.
// It lists the objects before it reads the index, so an object written
// after the listing is not even considered.
//
// A push that reuses the object of a digest no revision names (a skill
// brought back to files it had long ago) while Collect removes that object
// leaves an entry without files. After removing, Collect reads the index
// again and reports such entries with ErrRemovedInUse. A push looks for
// the object once more after writing its entry, and stores the files of
// an unchanged skill again when they are gone: whichever of the two comes
// second sees the other, and pushing the same files again repairs an
// entry gc reported.

// CollectOptions says what Collect removes.
type CollectOptions struct {
	// MinAge keeps an unreferenced object written less than MinAge ago
	// (by the server's clock, compared with this host's). Zero removes
	// every unreferenced object.
	MinAge time.Duration
	// DryRun finds what would be removed and removes nothing.
	DryRun bool
}

// Object is one skill object of the store.
type Object struct {
	Digest   string
	Size     uint64 // bytes of the archive
	Modified time.Time
}

// Collection is what Collect did.
type Collection struct {
	// Removed are the objects removed (with DryRun: that would be), by
	// digest; Freed is their bytes.
	Removed []Object
	Freed   uint64
	// Kept counts the objects left: Named by a revision of the index,
	// Young (unreferenced but younger than MinAge), or not named by a
	// digest (not skillstream's).
	Kept, Named, Young int
	// Revisions counts the revisions read from the index (delete markers
	// left out).
	Revisions int
}

// UnreadableEntry is an index revision Collect cannot read, so it cannot
// tell which object the revision needs.
type UnreadableEntry struct {
	Key      string
	Revision uint64
	Err      error
}

// UnreadableError reports the index revisions that stopped a Collect: it
// removes nothing while any revision could name an object it cannot see.
// It wraps ErrBadRecord.
type UnreadableError struct {
	Entries []UnreadableEntry
}

func (e *UnreadableError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d index revision(s) cannot be read, so any object may be in use; nothing was removed:", len(e.Entries))
	for _, u := range e.Entries {
		fmt.Fprintf(&b, " %s rev %d (%v);", u.Key, u.Revision, u.Err)
	}
	return strings.TrimSuffix(b.String(), ";")
}

func (e *UnreadableError) Unwrap() error { return ErrBadRecord }

// ErrRemovedInUse reports index entries written while Collect ran that
// name an object it removed.
var ErrRemovedInUse = errors.New("published while gc ran, naming files it removed")

// Collect removes the objects of the store that no revision held by the
// index names and that are at least opts.MinAge old (see CollectOptions).
// It refuses, removing nothing, when a revision of the index cannot be
// read (*UnreadableError). On an error part way, the Collection says what
// was removed until then.
func (pb *Publisher) Collect(ctx context.Context, opts CollectOptions) (Collection, error) {
	var c Collection
	objs, err := pb.obs.List(ctx)
	if err != nil && !errors.Is(err, jetstream.ErrNoObjectsFound) {
		return c, fmt.Errorf("list objects of %s: %w", pb.cfg.Objects, err)
	}
	used := make(map[string]bool)
	var bad []UnreadableEntry
	err = pb.walkIndex(ctx, func(key string, rev uint64, rec Record, err error) {
		if err != nil {
			bad = append(bad, UnreadableEntry{Key: key, Revision: rev, Err: err})
			return
		}
		used[rec.Digest] = true
		c.Revisions++
	})
	if err != nil {
		return c, err
	}
	if len(bad) > 0 {
		return c, &UnreadableError{Entries: bad}
	}
	now := pb.now()
	var drop []Object
	for _, o := range objs {
		switch {
		case used[o.Name]:
			c.Kept++
			c.Named++
		case !skillstore.ValidDigest(o.Name):
			c.Kept++
		case now.Sub(o.ModTime) < opts.MinAge:
			c.Kept++
			c.Young++
		default:
			drop = append(drop, Object{Digest: o.Name, Size: o.Size, Modified: o.ModTime})
		}
	}
	sort.Slice(drop, func(i, j int) bool { return drop[i].Digest < drop[j].Digest })
	removed := make(map[string]bool, len(drop))
	for _, o := range drop {
		if !opts.DryRun {
			if pb.beforeDelete != nil {
				pb.beforeDelete()
			}
			err := pb.obs.Delete(ctx, o.Digest)
			if errors.Is(err, jetstream.ErrObjectNotFound) {
				continue // removed by someone else meanwhile
			}
			if err != nil {
				return c, fmt.Errorf("remove object %s: %w", skillstore.Short(o.Digest), err)
			}
			removed[o.Digest] = true
		}
		c.Removed = append(c.Removed, o)
		c.Freed += o.Size
	}
	if len(removed) == 0 {
		return c, nil
	}
	var lost []string
	err = pb.walkIndex(ctx, func(key string, rev uint64, rec Record, err error) {
		if err == nil && removed[rec.Digest] {
			lost = append(lost, fmt.Sprintf("%s rev %d", key, rev))
		}
	})
	if err != nil {
		return c, fmt.Errorf("check the index after removing: %w", err)
	}
	if len(lost) > 0 {
		return c, fmt.Errorf("%s %w: remove the skill and push it again", strings.Join(lost, ", "), ErrRemovedInUse)
	}
	return c, nil
}

// walkIndex calls f with every revision the index holds (delete markers
// left out), oldest first, with its record or why it cannot be read.
func (pb *Publisher) walkIndex(ctx context.Context, f func(key string, rev uint64, rec Record, err error)) error {
	w, err := pb.kv.WatchAll(ctx, jetstream.IncludeHistory())
	if err != nil {
		return fmt.Errorf("read the history of %s: %w", pb.cfg.Bucket, err)
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return fmt.Errorf("read the history of %s: watch ended", pb.cfg.Bucket)
			}
			if e == nil {
				return nil
			}
			if e.Operation() != jetstream.KeyValuePut {
				continue
			}
			if _, _, _, control, _ := controlKey(e.Key()); control {
				// A release or pin names revisions of the skill's key,
				// whose own entries keep their objects.
				continue
			}
			_, name, err := parseKey(e.Key())
			var rec Record
			if err == nil {
				rec, err = decodeShape(name, e.Value())
			}
			f(e.Key(), e.Revision(), rec, err)
		}
	}
}
