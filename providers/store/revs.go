package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
)

// A skill's revisions are numbered from 1 in its own history: its first
// publication is revision 1, every later entry of its key (an update, a
// rollback, a removal) the next number, whatever other skills were
// published in between. The index's own sequence, the store revision,
// counts every write to the bucket; it is what read-your-writes compares
// (a trigger's minStoreRevision) and what tool results and push report
// for that, and it stays beside the skill's number everywhere.
//
// Each publication records its number in its record (Record.Rev), fixed
// when it is written: the number of the key's newest kept entry plus one.
// A removal (a delete marker, which holds no value) and a record written
// without a number (by a skillstream older than the numbers, or by hand)
// take the number after the entry before them, or, when they are the
// oldest kept, the number before the entry after them. So numbers never
// shift when the index drops its oldest revisions (its history is bounded
// per key), as long as one kept entry records its number. A key none of
// whose kept entries records one is counted from its oldest kept entry,
// as 1; such numbers are marked counted (Revision.Counted) and shift when
// the oldest drops, until the next publication records one.

// maxRev bounds a recorded number: a record claiming more (beyond 2^53,
// the largest integer every JSON reader holds exactly) is numbered as one
// that records none.
const maxRev = 1 << 53

// At names one revision of a skill: by its own number (Rev), or by store
// revision (Store). The zero At is the current one.
type At struct {
	Rev   uint64
	Store uint64
}

// number gives each of a key's kept entries (oldest first; recorded[i] is
// the number entry i records, 0 for none) its number in the skill's
// history. The first entry recording a number that leaves room for the
// entries before it anchors the count: those before it count back from
// it, those after it take the number they record when it is greater than
// the one before (a hand-written record may claim anything), else the one
// before plus one. Without an anchor the entries count from 1 and counted
// is true.
func number(recorded []uint64) (nums []uint64, counted bool) {
	nums = make([]uint64, len(recorded))
	anchor := -1
	for i, r := range recorded {
		if r > uint64(i) && r <= maxRev {
			anchor = i
			break
		}
	}
	if anchor < 0 {
		for i := range nums {
			nums[i] = uint64(i) + 1
		}
		return nums, len(nums) > 0
	}
	for i := 0; i <= anchor; i++ {
		nums[i] = recorded[anchor] - uint64(anchor-i)
	}
	for i := anchor + 1; i < len(nums); i++ {
		if r := recorded[i]; r > nums[i-1] && r <= maxRev {
			nums[i] = r
		} else {
			nums[i] = nums[i-1] + 1
		}
	}
	return nums, false
}

// numberHistory sets the Rev and Counted of each of a key's revisions,
// oldest first.
func numberHistory(hist []Revision) {
	recorded := make([]uint64, len(hist))
	for i, h := range hist {
		if !h.Removed && h.Err == nil {
			recorded[i] = h.Record.Rev
		}
	}
	nums, counted := number(recorded)
	for i := range hist {
		hist[i].Rev, hist[i].Counted = nums[i], counted
	}
}

// pick finds the revision at names in a skill's history (numbered by
// numberHistory): the newest for the zero At. It refuses, wrapping
// ErrNotKept, a revision the history does not hold and a removal, and
// returns a malformed revision's error.
func pick(hist []Revision, scope skillstore.Scope, name string, at At) (Revision, error) {
	first, last := hist[0], hist[len(hist)-1]
	h, found := last, at == At{}
	for _, r := range hist {
		if (at.Store != 0 && r.Revision == at.Store) || (at.Store == 0 && at.Rev != 0 && r.Rev == at.Rev) {
			h, found = r, true
		}
	}
	switch {
	case !found && at.Store != 0:
		return Revision{}, fmt.Errorf("skill %q in %s: store revision %d is not one of its revisions the index keeps (store revisions %d to %d; see skills history): %w",
			name, scope, at.Store, first.Revision, last.Revision, ErrNotKept)
	case !found && at.Rev < first.Rev:
		return Revision{}, fmt.Errorf("skill %q in %s: revision %d is not one the index keeps (it keeps revisions %d to %d, older ones left its history): %w",
			name, scope, at.Rev, first.Rev, last.Rev, ErrNotKept)
	case !found:
		return Revision{}, fmt.Errorf("skill %q in %s: revision %d is not one the index keeps (its newest is %d; see skills history): %w",
			name, scope, at.Rev, last.Rev, ErrNotKept)
	case h.Removed && at == At{}:
		return Revision{}, fmt.Errorf("skill %q in %s: %w (removed at revision %d)", name, scope, catalog.ErrNotFound, h.Rev)
	case h.Removed:
		return Revision{}, fmt.Errorf("skill %q in %s: revision %d (store revision %d) is a removal, not a publication: %w", name, scope, h.Rev, h.Revision, ErrNotKept)
	case h.Err != nil:
		return h, fmt.Errorf("skill %q in %s: revision %d (store revision %d): %w", name, scope, h.Rev, h.Revision, h.Err)
	}
	return h, nil
}

// head is what a write of a key builds on: its newest entry.
type head struct {
	last   uint64 // the store revision of the newest entry; 0: the key has none
	rev    uint64 // its number in the skill's history
	rec    Record // the newest entry's record, when live
	live   bool   // the newest entry is a valid record (not a removal, not malformed)
	exists bool   // the newest entry is not a removal
}

// headOf reads the newest entry of name in scope and its number: from
// its record when it records one (one read), else from the key's
// history.
func (pb *Publisher) headOf(ctx context.Context, scope skillstore.Scope, name string) (head, error) {
	key := scope.Key(name)
	e, err := pb.kv.Get(ctx, key)
	switch {
	case err == nil:
		if rec, derr := decodeRecord(name, e.Value()); derr == nil && rec.Rev > 0 && rec.Rev <= maxRev {
			return head{last: e.Revision(), rev: rec.Rev, rec: rec, live: true, exists: true}, nil
		}
	case errors.Is(err, jetstream.ErrKeyNotFound):
		// Never written (most keys a first push writes: no history to
		// read), or removed.
		if never, err := pb.neverWritten(ctx, key); err != nil {
			return head{}, err
		} else if never {
			return head{}, nil
		}
	default:
		return head{}, fmt.Errorf("read %s: %w", key, err)
	}
	hist, err := pb.History(ctx, scope, name)
	if errors.Is(err, catalog.ErrNotFound) {
		return head{}, nil
	}
	if err != nil {
		return head{}, err
	}
	h := hist[len(hist)-1]
	return head{last: h.Revision, rev: h.Rev, rec: h.Record, live: !h.Removed && h.Err == nil, exists: !h.Removed}, nil
}

// neverWritten reports whether the index holds no entry at all of key,
// not even a removal: one read of the index's stream (the bucket's own,
// named and laid out as every NATS key-value bucket is).
func (pb *Publisher) neverWritten(ctx context.Context, key string) (bool, error) {
	_, err := pb.idx.GetLastMsgForSubject(ctx, "$KV."+pb.cfg.Bucket+"."+key)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", key, err)
	}
	return false, nil
}

// numbersOf numbers, in one watch of the index's history under filter,
// the kept revisions of each key in keys: for each, the number of each
// of its store revisions. For listings holding records written without
// their number.
func (pb *Publisher) numbersOf(ctx context.Context, filter string, keys map[string]bool) (map[string]map[uint64]uint64, error) {
	w, err := pb.kv.Watch(ctx, filter, jetstream.IncludeHistory())
	if err != nil {
		return nil, fmt.Errorf("history of %s: %w", pb.cfg.Bucket, err)
	}
	defer w.Stop()
	type kept struct{ revs, recorded []uint64 }
	hist := map[string]*kept{}
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case e, ok := <-w.Updates():
			if !ok {
				return nil, fmt.Errorf("history of %s: watch ended", pb.cfg.Bucket)
			}
			if e != nil {
				if !keys[e.Key()] {
					continue
				}
				k := hist[e.Key()]
				if k == nil {
					k = &kept{}
					hist[e.Key()] = k
				}
				var r uint64
				if _, name, err := parseKey(e.Key()); err == nil && e.Operation() == jetstream.KeyValuePut {
					if rec, err := decodeRecord(name, e.Value()); err == nil {
						r = rec.Rev
					}
				}
				k.revs, k.recorded = append(k.revs, e.Revision()), append(k.recorded, r)
				continue
			}
			out := make(map[string]map[uint64]uint64, len(hist))
			for key, k := range hist {
				nums, _ := number(k.recorded)
				m := make(map[uint64]uint64, len(nums))
				for i, n := range nums {
					m[k.revs[i]] = n
				}
				out[key] = m
			}
			return out, nil
		}
	}
}
