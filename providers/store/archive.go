package store

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

	"github.com/skillstream/skillstream/providers/agentskills"
)

// A skill's files travel as one object: a tar archive of regular files
// only, in byte order of path, with fixed modes and times so that the same
// files always make the same archive. Unpacking trusts nothing in it:
// entry kinds, paths, sizes and count are checked against the limits
// before anything is kept, and the files must hash to the expected digest.

// ErrBadArchive reports a skill object that is not a valid archive of the
// expected skill.
var ErrBadArchive = errors.New("invalid skill archive")

// archiveSlack is the archive's room beyond the files' bytes: a 512-byte
// header and up to 511 bytes of padding per file, and the end marker.
func archiveSlack(files int) int64 { return int64(files)*1024 + 2048 }

// fileData is one unpacked file.
type fileData struct {
	path string
	data []byte
}

// pack archives files (as agentskills.Files lists them) and returns the
// archive and the digest of the files, computed from the bytes archived.
func pack(files []agentskills.File) ([]byte, string, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	h := agentskills.NewHasher()
	for _, f := range files {
		if err := packOne(tw, h, f); err != nil {
			return nil, "", err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, "", err
	}
	return buf.Bytes(), h.Sum(), nil
}

func packOne(tw *tar.Writer, h *agentskills.Hasher, f agentskills.File) error {
	fh, err := agentskills.Open(f)
	if err != nil {
		return err
	}
	defer fh.Close()
	data, err := io.ReadAll(io.LimitReader(fh, f.Size+1))
	if err != nil {
		return err
	}
	if int64(len(data)) != f.Size {
		return fmt.Errorf("%s changed while it was read", f.Source)
	}
	if err := h.Add(f.Path, f.Size, bytes.NewReader(data)); err != nil {
		return err
	}
	hdr := &tar.Header{
		Typeflag: tar.TypeReg, Name: f.Path, Size: f.Size, Mode: 0o644,
		ModTime: time.Unix(0, 0), Format: tar.FormatPAX,
	}
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	_, err = tw.Write(data)
	return err
}

// unpack reads an archive of at most lim files and lim bytes of files and
// checks that they hash to digest.
func unpack(r io.Reader, digest string, lim agentskills.Limits) ([]fileData, error) {
	tr := tar.NewReader(r)
	h := agentskills.NewHasher()
	var out []fileData
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
		if err := checkEntryPath(hdr.Name); err != nil {
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
			return nil, fmt.Errorf("%w: entry %q is truncated", ErrBadArchive, hdr.Name)
		}
		total += hdr.Size
		if err := h.Add(hdr.Name, hdr.Size, bytes.NewReader(data)); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadArchive, err)
		}
		out = append(out, fileData{path: hdr.Name, data: data})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no files", ErrBadArchive)
	}
	if got := h.Sum(); got != digest {
		return nil, fmt.Errorf("%w: files hash to %s, not %s", ErrBadArchive, got[:12], short(digest))
	}
	return out, nil
}

// checkEntryPath refuses archive paths that could land outside the
// folder they are unpacked in (absolute, with "." or ".." elements, empty
// elements, backslashes), names with control characters (NUL included;
// they would mislead whoever lists the folder), and version control
// folders (.git, .hg, .svn: git runs commands a .git/config names).
func checkEntryPath(p string) error {
	if p == "" || len(p) > 1024 || strings.ContainsAny(p, "\\") || path.IsAbs(p) || path.Clean(p) != p {
		return fmt.Errorf("%w: entry path %q is not a clean relative path", ErrBadArchive, clip(p))
	}
	if strings.IndexFunc(p, unicode.IsControl) >= 0 {
		return fmt.Errorf("%w: entry path %q has a control character", ErrBadArchive, clip(p))
	}
	for _, el := range strings.Split(p, "/") {
		if el == "." || el == ".." || el == "" {
			return fmt.Errorf("%w: entry path %q leaves the skill folder", ErrBadArchive, clip(p))
		}
		if agentskills.VCS(el) {
			return fmt.Errorf("%w: entry path %q is in a version control folder", ErrBadArchive, clip(p))
		}
	}
	return nil
}

// short is the first 12 hex digits of a digest, as commands print it.
func short(digest string) string {
	if len(digest) > 12 {
		return digest[:12]
	}
	return digest
}
