package skillstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"unicode"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrExists reports a materialisation target that holds other files.
var ErrExists = errors.New("directory exists with other files")

// Materialize writes the files of the skill whose digest is digest,
// fetched from the object store obs (see Fetch) within lim, into dir,
// atomically: they are written to a temporary directory beside dir,
// checked against the digest, made read-only and renamed into place, so
// dir either does not exist or holds exactly those files. When dir
// already holds exactly those files (an earlier call, another process) it
// does nothing; when it holds anything else the error wraps ErrExists.
// Paths that are not valid UTF-8 or hold control characters are refused
// (ErrBadArchive), as is everything Fetch refuses. Temporary folders of
// materialisations killed before their rename are removed.
func Materialize(ctx context.Context, obs jetstream.ObjectStore, digest, dir string, lim Limits) error {
	return MaterializeFrom(ctx, storeReader{obs}, digest, dir, lim)
}

// Reader reads and unpacks skill objects by digest: a *Direct (what
// workers use), or the object store itself through Materialize.
type Reader interface {
	Fetch(ctx context.Context, digest string, lim Limits) ([]File, error)
}

// storeReader is the package's Fetch as a Reader.
type storeReader struct{ obs jetstream.ObjectStore }

func (o storeReader) Fetch(ctx context.Context, digest string, lim Limits) ([]File, error) {
	return Fetch(ctx, o.obs, digest, lim)
}

// MaterializeFrom is Materialize with the files read by r.
func MaterializeFrom(ctx context.Context, r Reader, digest, dir string, lim Limits) error {
	if !ValidDigest(digest) {
		return fmt.Errorf("materialize: digest %q is not 64 lowercase hex digits", clip(digest))
	}
	lim = lim.WithDefaults()
	if done, err := holds(dir, digest, lim); done || err != nil {
		return err
	}
	files, err := r.Fetch(ctx, digest, lim)
	if err != nil {
		return fmt.Errorf("materialize %s: %w", Short(digest), err)
	}
	for _, f := range files {
		if err := checkWritable(f.Path); err != nil {
			return fmt.Errorf("materialize %s: %w", Short(digest), err)
		}
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("materialize %s: %w", Short(digest), err)
	}
	removeLeftovers(parent)
	tmp, err := os.MkdirTemp(parent, tempPattern(dir))
	if err != nil {
		return fmt.Errorf("materialize %s: %w", Short(digest), err)
	}
	if err := writeTree(tmp, files); err != nil {
		removeTree(tmp)
		return fmt.Errorf("materialize %s: %w", Short(digest), err)
	}
	if got, err := DigestDir(tmp, lim); err != nil || got != digest {
		removeTree(tmp)
		return fmt.Errorf("materialize %s: written files do not match the digest (%v)", Short(digest), err)
	}
	if err := readOnly(tmp); err != nil {
		removeTree(tmp)
		return fmt.Errorf("materialize %s: %w", Short(digest), err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		removeTree(tmp)
		if done, herr := holds(dir, digest, lim); done {
			return nil // materialised by someone else meanwhile
		} else if herr != nil {
			return herr
		}
		return fmt.Errorf("materialize %s: %w", Short(digest), err)
	}
	return nil
}

// ErrNotSkillFolder reports a folder DigestDir cannot digest: it holds
// something other than regular files and folders, or more than the limits.
var ErrNotSkillFolder = errors.New("not a folder of regular files within the limits")

// DigestDir returns the digest of the files below dir, within lim. It
// digests what is there, as Materialize left it: every regular file,
// hidden ones included. A symbolic link or special file anywhere below
// dir, or more files or bytes than lim allows, is an error wrapping
// ErrNotSkillFolder.
func DigestDir(dir string, lim Limits) (string, error) {
	lim = lim.WithDefaults()
	type entry struct{ rel, abs string }
	var files []entry
	var total int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s: %w", p, ErrNotSkillFolder)
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		total += fi.Size()
		if len(files) >= lim.MaxFiles || total > lim.MaxBytes {
			return fmt.Errorf("%s: %w", dir, ErrNotSkillFolder)
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		files = append(files, entry{rel: filepath.ToSlash(rel), abs: p})
		return nil
	})
	if err != nil {
		return "", err
	}
	sort.Slice(files, func(i, j int) bool { return files[i].rel < files[j].rel })
	h := NewHasher()
	for _, f := range files {
		if err := hashFile(h, f.rel, f.abs); err != nil {
			return "", err
		}
	}
	return h.Sum(), nil
}

func hashFile(h *Hasher, rel, abs string) error {
	fh, err := os.Open(abs)
	if err != nil {
		return err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("%s: %w", abs, ErrNotSkillFolder)
	}
	return h.Add(rel, fi.Size(), fh)
}

// holds reports whether dir exists holding exactly the files of digest;
// an existing dir with other files is an error wrapping ErrExists.
func holds(dir, digest string, lim Limits) (bool, error) {
	fi, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("materialize %s: %w", Short(digest), err)
	}
	if !fi.IsDir() {
		return false, fmt.Errorf("materialize %s: %s: %w", Short(digest), dir, ErrExists)
	}
	got, err := DigestDir(dir, lim)
	if err != nil || got != digest {
		return false, fmt.Errorf("materialize %s: %s: %w", Short(digest), dir, ErrExists)
	}
	return true, nil
}

// checkWritable refuses a file name a worker's file system should not get
// from a skill: one that is not valid UTF-8 or holds a control character
// (a newline, an escape sequence that rewrites a terminal).
func checkWritable(p string) error {
	if !utf8.ValidString(p) {
		return fmt.Errorf("%w: entry path %q is not valid UTF-8", ErrBadArchive, clip(p))
	}
	for _, r := range p {
		if unicode.IsControl(r) {
			return fmt.Errorf("%w: entry path %q holds control character %q", ErrBadArchive, clip(p), r)
		}
	}
	return nil
}

// writeTree writes files below root. Their paths were checked when they
// were unpacked; the check is repeated here so that no caller can make
// this write outside root.
func writeTree(root string, files []File) error {
	for _, f := range files {
		if err := CheckPath(f.Path); err != nil {
			return err
		}
		p := filepath.Join(root, filepath.FromSlash(f.Path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.Data, 0o444); err != nil {
			return err
		}
	}
	return nil
}

// readOnly makes every directory below and including root read-only,
// deepest first.
func readOnly(root string) error {
	var dirs []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, p)
		}
		return nil
	})
	if err != nil {
		return err
	}
	sort.Sort(sort.Reverse(sort.StringSlice(dirs)))
	for _, d := range dirs {
		if err := os.Chmod(d, 0o555); err != nil {
			return err
		}
	}
	return nil
}

// removeTree removes a (possibly read-only) temporary tree.
func removeTree(root string) {
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(p, 0o755)
		}
		return nil
	})
	_ = os.RemoveAll(root)
}
