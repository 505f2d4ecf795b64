package skillstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"path/filepath"
	"strconv"
)

// ErrDigestOrder reports files added to a Hasher out of path order, or a
// file whose content is not as long as declared.
var ErrDigestOrder = errors.New("skill files out of order or of the wrong size")

// ValidDigest reports whether d is a digest: 64 lowercase hex digits.
func ValidDigest(d string) bool {
	if len(d) != 64 {
		return false
	}
	for i := 0; i < len(d); i++ {
		if c := d[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// Short is the first 12 hex digits of a digest, as messages print it.
func Short(digest string) string {
	if len(digest) > 12 {
		return digest[:12]
	}
	return digest
}

// ObjectName is the name of the object holding the files of digest: the
// digest itself. An object so never changes, and two skills with the same
// files share one.
func ObjectName(digest string) string { return digest }

// ResourcePath is where a worker materialises a store skill's files under
// its resource directory: <resourceDir>/<name>/<first 16 hex of digest>.
// One directory per digest, so the instructions and every file read later
// come from one version. Callers check name (ValidName) and digest
// (ValidDigest) first when they come from elsewhere.
func ResourcePath(resourceDir, name, digest string) string {
	d := digest
	if len(d) > 16 {
		d = d[:16]
	}
	return filepath.Join(resourceDir, name, d)
}

// Hasher computes a skill digest from files given in byte order of path.
type Hasher struct {
	h    hash.Hash
	last string
	n    int
}

// NewHasher returns an empty Hasher.
func NewHasher() *Hasher { return &Hasher{h: sha256.New()} }

// Add hashes one file of size bytes read from r. Paths must come in
// strictly increasing byte order and r must hold exactly size bytes;
// otherwise Add returns an error wrapping ErrDigestOrder.
func (h *Hasher) Add(p string, size int64, r io.Reader) error {
	if h.n > 0 && p <= h.last {
		return fmt.Errorf("%w: %q after %q", ErrDigestOrder, clip(p), clip(h.last))
	}
	h.last, h.n = p, h.n+1
	io.WriteString(h.h, p)
	h.h.Write([]byte{0})
	io.WriteString(h.h, strconv.FormatInt(size, 10))
	h.h.Write([]byte{0})
	n, err := io.Copy(h.h, io.LimitReader(r, size+1))
	if err != nil {
		return err
	}
	if n != size {
		return fmt.Errorf("%w: %q holds %d bytes, not %d", ErrDigestOrder, clip(p), n, size)
	}
	return nil
}

// Sum returns the digest of the files added so far.
func (h *Hasher) Sum() string { return hex.EncodeToString(h.h.Sum(nil)) }

// Digest returns the digest of files, which must be in byte order of path.
func Digest(files []File) (string, error) {
	h := NewHasher()
	for _, f := range files {
		if err := h.Add(f.Path, int64(len(f.Data)), bytes.NewReader(f.Data)); err != nil {
			return "", err
		}
	}
	return h.Sum(), nil
}
