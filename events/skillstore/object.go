package skillstore

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrObjectMissing reports a skill whose object is not in the object store.
var ErrObjectMissing = errors.New("skill files missing from the object store")

// objectReadTimeout bounds one read of an object whatever the caller's
// deadline: skill objects are at most a few MiB.
const objectReadTimeout = 30 * time.Second

// Fetch reads the object of digest from obs and unpacks it (see Unpack),
// bounded by lim. An object that is not there is an error wrapping
// ErrObjectMissing; one that is a link, larger than lim allows or not a
// valid archive of files hashing to digest, one wrapping ErrBadArchive.
func Fetch(ctx context.Context, obs jetstream.ObjectStore, digest string, lim Limits) ([]File, error) {
	if !ValidDigest(digest) {
		return nil, fmt.Errorf("%w: digest %q is not 64 lowercase hex digits", ErrBadArchive, clip(digest))
	}
	lim = lim.WithDefaults()
	name := ObjectName(digest)
	// The object store's Get follows links, within the bucket without a
	// bound on their number: a link to itself spins forever. Skill objects
	// are never links, so one is refused before Get, and Get runs under a
	// deadline in case a link was put in place meanwhile.
	meta, err := obs.GetInfo(ctx, name)
	if err != nil {
		if errors.Is(err, jetstream.ErrObjectNotFound) {
			return nil, fmt.Errorf("%w: object %s", ErrObjectMissing, Short(digest))
		}
		return nil, fmt.Errorf("read object %s: %w", Short(digest), err)
	}
	if meta.Opts != nil && meta.Opts.Link != nil {
		return nil, fmt.Errorf("%w: object %s is a link (to %q in %q); skill objects never are", ErrBadArchive,
			Short(digest), clip(meta.Opts.Link.Name), clip(meta.Opts.Link.Bucket))
	}
	gctx, cancel := context.WithTimeout(ctx, objectReadTimeout)
	defer cancel()
	res, err := obs.Get(gctx, name)
	if err != nil {
		if errors.Is(err, jetstream.ErrObjectNotFound) {
			return nil, fmt.Errorf("%w: object %s", ErrObjectMissing, Short(digest))
		}
		return nil, fmt.Errorf("read object %s: %w", Short(digest), err)
	}
	defer res.Close()
	info, err := res.Info()
	if err != nil {
		return nil, fmt.Errorf("read object %s: %w", Short(digest), err)
	}
	if info.Name != name || (info.Opts != nil && info.Opts.Link != nil) {
		return nil, fmt.Errorf("%w: object %s became a link while it was read", ErrBadArchive, Short(digest))
	}
	max := lim.MaxObjectSize()
	if info.Size > uint64(max) {
		return nil, fmt.Errorf("%w: object %s is %d bytes, over the limit of %d", ErrBadArchive, Short(digest), info.Size, max)
	}
	files, err := Unpack(io.LimitReader(res, max), digest, lim)
	if err != nil {
		return nil, fmt.Errorf("object %s: %w", Short(digest), err)
	}
	return files, nil
}
