package agentskills

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/providers"
)

// Files implements providers.Filer: the files of the winning skill called
// name for q, found as Load finds it. A folder skill gives the files of
// its folder its digest covers, hidden ones left out (see the
// package-level Files, also for what is refused); a
// flat-file skill gives one file, SKILL.md, as its digest counts it.
func (p *Provider) Files(ctx context.Context, name string, q catalog.Query, maxFiles int, maxBytes int64) ([]providers.File, error) {
	if !catalog.ValidName(name) {
		return nil, fmt.Errorf("skill %q: %w", name, catalog.ErrNotFound)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p.sync()
	roots, _, err := p.roots(ctx, q.Cwd)
	if err != nil {
		return nil, err
	}
	for _, r := range roots {
		s := p.scan(ctx, r)
		for _, f := range s.skills {
			if f.sum.Name != name {
				continue
			}
			files, err := p.files(ctx, r, f, maxFiles, maxBytes)
			if errors.Is(err, fs.ErrNotExist) {
				continue // gone before the watcher said so: the next candidate wins
			}
			return files, err
		}
	}
	return nil, fmt.Errorf("skill %q: %w", name, catalog.ErrNotFound)
}

func (p *Provider) files(ctx context.Context, r *root, f found, maxFiles int, maxBytes int64) ([]providers.File, error) {
	if filepath.Dir(f.path) == r.path { // a flat file
		data, _, reason, err := readFile(f.path, p.noFollow, &p.count)
		if err != nil {
			return nil, err
		}
		if reason != "" {
			return nil, fmt.Errorf("skill file is no longer valid: %s", reason)
		}
		if int64(len(data)) > maxBytes {
			return nil, fmt.Errorf("%s: %d bytes, over %d: %w", f.path, len(data), maxBytes, ErrTooLarge)
		}
		return []providers.File{{Path: SkillFile, Data: data}}, nil
	}
	var out []providers.File
	read := func(list []File) (string, error) {
		out = make([]providers.File, 0, len(list))
		h := skillstore.NewHasher()
		for _, lf := range list {
			if err := ctx.Err(); err != nil {
				return "", err
			}
			data, err := readExact(lf)
			if err != nil {
				return "", err
			}
			if err := h.Add(lf.Path, int64(len(data)), bytes.NewReader(data)); err != nil {
				return "", err
			}
			out = append(out, providers.File{Path: lf.Path, Data: data})
		}
		return h.Sum(), nil
	}
	if err := p.loads.readFolder(filepath.Dir(f.path), Limits{MaxFiles: maxFiles, MaxBytes: maxBytes}, read); err != nil {
		return nil, err
	}
	return out, nil
}

// readExact reads a listed file, refusing one that is no longer what the
// listing saw (another kind of file, or grown past its listed size).
// Source is already the target of a link inside the folder.
func readExact(lf File) ([]byte, error) {
	fh, err := openFile(lf.Source, false)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: %w", lf.Source, ErrNotRegular)
	}
	data, err := io.ReadAll(io.LimitReader(fh, lf.Size+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) != lf.Size {
		return nil, fmt.Errorf("%s: changed while read: %w", lf.Source, skillstore.ErrDigestOrder)
	}
	return data, nil
}

// Frontmatter returns the YAML text between a skill file's `---` lines, as
// Parse finds it (a byte order mark and CRLF line ends tolerated), without
// judging it.
func Frontmatter(data []byte) ([]byte, error) {
	front, _, err := split(data)
	return front, err
}
