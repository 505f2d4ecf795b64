package skillstore

import (
	"archive/tar"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"
	"unicode"
)

// ErrBadArchive reports a skill object that is not a valid archive of the
// expected skill.
var ErrBadArchive = errors.New("invalid skill archive")

// Limits bound one skill's files: their count and total bytes. Zero
// fields take the defaults.
type Limits struct {
	MaxFiles int
	MaxBytes int64
}

// Defaults of Limits.
const (
	DefaultMaxFiles = 1000
	DefaultMaxBytes = 8 << 20
)

// WithDefaults returns l with zero (or negative) fields set to the
// defaults.
func (l Limits) WithDefaults() Limits {
	if l.MaxFiles <= 0 {
		l.MaxFiles = DefaultMaxFiles
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	return l
}

// MaxObjectSize is the largest object the files l allows make: the
// files' bytes plus, per file, a 512-byte header and up to 511 bytes of
// padding, plus the end marker.
func (l Limits) MaxObjectSize() int64 {
	l = l.WithDefaults()
	return l.MaxBytes + int64(l.MaxFiles)*1024 + 2048
}

// File is one file of a skill, by its path inside the skill's folder.
type File struct {
	Path string // "/"-separated, relative
	Data []byte
}

// Archive builds a skill object: a tar archive of regular files only, in
// byte order of path, with fixed modes and times, so the same files always
// make the same bytes. It computes the digest of what it archived.
type Archive struct {
	buf bytes.Buffer
	tw  *tar.Writer
	h   *Hasher
}

// NewArchive returns an empty archive.
func NewArchive() *Archive {
	a := &Archive{h: NewHasher()}
	a.tw = tar.NewWriter(&a.buf)
	return a
}

// Add archives one file. Paths must come in strictly increasing byte
// order (ErrDigestOrder otherwise) and pass CheckPath.
func (a *Archive) Add(p string, data []byte) error {
	if err := CheckPath(p); err != nil {
		return err
	}
	if err := a.h.Add(p, int64(len(data)), bytes.NewReader(data)); err != nil {
		return err
	}
	hdr := &tar.Header{
		Typeflag: tar.TypeReg, Name: p, Size: int64(len(data)), Mode: 0o644,
		ModTime: time.Unix(0, 0), Format: tar.FormatPAX,
	}
	if err := a.tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err := a.tw.Write(data)
	return err
}

// Close ends the archive and returns its bytes and the files' digest.
func (a *Archive) Close() (object []byte, digest string, err error) {
	if err := a.tw.Close(); err != nil {
		return nil, "", err
	}
	return a.buf.Bytes(), a.h.Sum(), nil
}

// Unpack reads a skill object of at most lim files and lim bytes of files
// (zero fields: the defaults) and checks that they hash to digest. Nothing
// in it is trusted: an entry that is not a regular file, a path CheckPath
// refuses, too many files or bytes, a truncated entry, files out of order
// or hashing to another digest are errors wrapping ErrBadArchive, and no
// file is returned.
func Unpack(r io.Reader, digest string, lim Limits) ([]File, error) {
	lim = lim.WithDefaults()
	tr := tar.NewReader(r)
	h := NewHasher()
	var out []File
	var total int64
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadArchive, err)
		}
		if hdr.Typeflag != tar.TypeReg {
			return nil, fmt.Errorf("%w: entry %q is not a regular file", ErrBadArchive, clip(hdr.Name))
		}
		if err := CheckPath(hdr.Name); err != nil {
			return nil, err
		}
		if len(out) >= lim.MaxFiles {
			return nil, fmt.Errorf("%w: more than %d files", ErrBadArchive, lim.MaxFiles)
		}
		if hdr.Size < 0 || hdr.Size > lim.MaxBytes-total {
			return nil, fmt.Errorf("%w: files total more than %d bytes", ErrBadArchive, lim.MaxBytes)
		}
		data, err := io.ReadAll(io.LimitReader(tr, hdr.Size))
		if err != nil || int64(len(data)) != hdr.Size {
			return nil, fmt.Errorf("%w: entry %q is truncated", ErrBadArchive, clip(hdr.Name))
		}
		total += hdr.Size
		if err := h.Add(hdr.Name, hdr.Size, bytes.NewReader(data)); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadArchive, err)
		}
		out = append(out, File{Path: hdr.Name, Data: data})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no files", ErrBadArchive)
	}
	if got := h.Sum(); got != digest {
		return nil, fmt.Errorf("%w: files hash to %s, not %s", ErrBadArchive, got[:12], Short(clip(digest)))
	}
	return out, nil
}

// MaxPathLength bounds a file's path inside a skill, in bytes.
const MaxPathLength = 1024

// CheckPath refuses, with an error wrapping ErrBadArchive, a file path
// that could land outside the folder it is written in (absolute, with
// "." or ".." elements, empty elements, backslashes, longer than
// MaxPathLength), one holding a control character (NUL, a newline, a
// terminal escape: they would mislead whoever lists the folder), and one
// in a version control folder (see VCS). Materialize also refuses paths
// that are not valid UTF-8.
func CheckPath(p string) error {
	if p == "" || len(p) > MaxPathLength || strings.ContainsAny(p, "\\") || path.IsAbs(p) || path.Clean(p) != p {
		return fmt.Errorf("%w: entry path %q is not a clean relative path", ErrBadArchive, clip(p))
	}
	if strings.IndexFunc(p, unicode.IsControl) >= 0 {
		return fmt.Errorf("%w: entry path %q has a control character", ErrBadArchive, clip(p))
	}
	for _, el := range strings.Split(p, "/") {
		if el == "." || el == ".." || el == "" {
			return fmt.Errorf("%w: entry path %q leaves the skill folder", ErrBadArchive, clip(p))
		}
		if VCS(el) {
			return fmt.Errorf("%w: entry path %q is in a version control folder", ErrBadArchive, clip(p))
		}
	}
	return nil
}

// VCS reports whether name is a version control folder's name (.git,
// .hg, .svn, in any case): never published, never materialised (git runs
// commands a .git/config names, in any folder below it).
func VCS(name string) bool {
	switch strings.ToLower(name) {
	case ".git", ".hg", ".svn":
		return true
	}
	return false
}
