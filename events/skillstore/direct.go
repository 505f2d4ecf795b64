package skillstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// A worker reads store skills with direct gets and nothing else. Creating
// a consumer (what the object store's own reader does) lets the creator
// choose where the consumer delivers, and a delivery subject in the store's
// account is a write into whatever stream listens there; stream info is
// not needed either. So a worker's permissions hold two request subjects
// of the object store's stream, both read-only: the object's metadata by
// its subject, and its chunks one after the other.

// Direct reads skill objects from the object store named bucket with
// JetStream direct gets only ($JS.API.DIRECT.GET.OBJ_<bucket> and
// $JS.API.DIRECT.GET.OBJ_<bucket>.>): no stream info, no consumer.
type Direct struct {
	js     nats.JetStreamContext
	bucket string
}

// NewDirect returns a reader of bucket (DefaultObjects when empty) on nc.
// It makes no request until Fetch.
func NewDirect(nc *nats.Conn, bucket string) (*Direct, error) {
	if bucket == "" {
		bucket = DefaultObjects
	}
	js, err := nc.JetStream()
	if err != nil {
		return nil, fmt.Errorf("object store %s: %w", bucket, err)
	}
	return &Direct{js: js, bucket: bucket}, nil
}

// Fetch reads the object of digest and unpacks it, as the package's Fetch
// does from an object store: an object that is not there is an error
// wrapping ErrObjectMissing; a link, an object larger than lim allows, one
// whose chunks do not add up to its size and digest, or that is not a
// valid archive of files hashing to digest, one wrapping ErrBadArchive.
func (d *Direct) Fetch(ctx context.Context, digest string, lim Limits) ([]File, error) {
	if !ValidDigest(digest) {
		return nil, fmt.Errorf("%w: digest %q is not 64 lowercase hex digits", ErrBadArchive, clip(digest))
	}
	lim = lim.WithDefaults()
	ctx, cancel := context.WithTimeout(ctx, objectReadTimeout)
	defer cancel()
	data, err := d.read(ctx, ObjectName(digest), lim.MaxObjectSize())
	if err != nil {
		return nil, fmt.Errorf("read object %s: %w", Short(digest), err)
	}
	files, err := Unpack(bytes.NewReader(data), digest, lim)
	if err != nil {
		return nil, fmt.Errorf("object %s: %w", Short(digest), err)
	}
	return files, nil
}

// read returns the bytes of the object name, at most limit of them.
func (d *Direct) read(ctx context.Context, name string, limit int64) ([]byte, error) {
	stream := "OBJ_" + d.bucket
	meta := "$O." + d.bucket + ".M." + base64.URLEncoding.EncodeToString([]byte(name))
	m, err := d.js.GetLastMsg(stream, meta, nats.DirectGet(), nats.Context(ctx))
	if errors.Is(err, nats.ErrMsgNotFound) {
		return nil, ErrObjectMissing
	}
	if err != nil {
		return nil, err
	}
	var info jetstream.ObjectInfo
	if err := json.Unmarshal(m.Data, &info); err != nil {
		return nil, fmt.Errorf("%w: metadata: %v", ErrBadArchive, err)
	}
	switch {
	case info.Deleted:
		return nil, ErrObjectMissing
	case info.Opts != nil && info.Opts.Link != nil:
		return nil, fmt.Errorf("%w: a link (to %q in %q); skill objects never are", ErrBadArchive,
			clip(info.Opts.Link.Name), clip(info.Opts.Link.Bucket))
	case info.Name != name:
		return nil, fmt.Errorf("%w: metadata names %q", ErrBadArchive, clip(info.Name))
	case info.Size > uint64(limit):
		return nil, fmt.Errorf("%w: %d bytes, over the limit of %d", ErrBadArchive, info.Size, limit)
	case uint64(info.Chunks) > max(info.Size, 1):
		return nil, fmt.Errorf("%w: %d chunks for %d bytes", ErrBadArchive, info.Chunks, info.Size)
	case info.NUID == "" || !jetstreamToken(info.NUID):
		return nil, fmt.Errorf("%w: chunk id %q", ErrBadArchive, clip(info.NUID))
	}
	chunks := "$O." + d.bucket + ".C." + info.NUID
	buf := make([]byte, 0, info.Size)
	h := sha256.New()
	seq := uint64(1)
	for range info.Chunks {
		c, err := d.js.GetMsg(stream, seq, nats.DirectGetNext(chunks), nats.Context(ctx))
		if errors.Is(err, nats.ErrMsgNotFound) {
			return nil, fmt.Errorf("%w: %d of its %d chunks", ErrObjectMissing, len(buf), info.Chunks)
		}
		if err != nil {
			return nil, err
		}
		if c.Subject != chunks || c.Sequence < seq {
			return nil, fmt.Errorf("%w: chunk read at %d came from %q", ErrBadArchive, c.Sequence, clip(c.Subject))
		}
		if uint64(len(buf)+len(c.Data)) > info.Size {
			return nil, fmt.Errorf("%w: chunks hold more than its %d bytes", ErrBadArchive, info.Size)
		}
		buf = append(buf, c.Data...)
		h.Write(c.Data)
		seq = c.Sequence + 1
	}
	if uint64(len(buf)) != info.Size {
		return nil, fmt.Errorf("%w: chunks hold %d of its %d bytes", ErrBadArchive, len(buf), info.Size)
	}
	if want := "SHA-256=" + base64.URLEncoding.EncodeToString(h.Sum(nil)); info.Digest != want {
		return nil, fmt.Errorf("%w: chunks do not hash to the object's digest", ErrBadArchive)
	}
	return buf, nil
}

// jetstreamToken reports whether s is one subject token of safe bytes.
func jetstreamToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c <= ' ' || c == '.' || c == '*' || c == '>' || c > '~' {
			return false
		}
	}
	return len(s) <= 256
}
