package agentskills

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers"
)

// SkillFile is the file that makes a directory a skill.
const SkillFile = "SKILL.md"

var errNotDir error = syscall.ENOTDIR

// fileState is the parse cache of one skill file, valid while the file's
// identity is unchanged.
type fileState struct {
	id     identity
	sum    catalog.Summary // when reason is empty
	reason string          // why the file is not a skill
}

// found is a skill found in a root.
type found struct {
	path string          // the file read
	sum  catalog.Summary // ResourceBase set; Source, Provider left to the caller
}

// listing is what one scan of one root found.
type listing struct {
	skills []found
	diags  []providers.Diagnostic
	err    error                // I/O errors: the answer is incomplete
	files  map[string]fileState // parse cache for the next scan
}

// hooks let the provider watch what a scan visits, before it looks inside.
type hooks interface {
	watchDir(path string)  // a skill directory (or candidate)
	watchFile(path string) // a skill file reached through a symbolic link
}

type counters struct {
	reads, parses, scans atomic.Uint64
}

// scanner scans one root once.
type scanner struct {
	noFollow bool
	prev     map[string]fileState // may be nil
	touched  map[string]struct{}  // files known to have changed
	hooks    hooks                // may be nil
	count    *counters

	out  listing
	errs []error
}

func (s *scanner) diag(path, reason string) {
	s.out.diags = append(s.out.diags, providers.Diagnostic{Path: path, Reason: reason})
}

// scan lists dir one level deep. A missing dir is a complete, empty answer.
func (s *scanner) scan(ctx context.Context, dir string) listing {
	s.out = listing{files: make(map[string]fileState)}
	s.count.scans.Add(1)
	entries, err := os.ReadDir(dir)
	if err != nil {
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// Confirmed absence: complete and empty.
		case errors.Is(err, errNotDir):
			s.diag(dir, "not a directory")
		default:
			s.out.err = fmt.Errorf("list skills folder: %w", err)
		}
		return s.out
	}
	for _, e := range entries {
		if err := ctx.Err(); err != nil {
			s.errs = append(s.errs, err)
			break
		}
		s.entry(dir, e)
	}
	s.out.err = errors.Join(s.errs...)
	return s.out
}

func (s *scanner) entry(dir string, e fs.DirEntry) {
	name := e.Name()
	if strings.HasPrefix(name, ".") {
		return
	}
	path := filepath.Join(dir, name)
	mode := e.Type()
	linked := false
	var fi fs.FileInfo
	if mode&fs.ModeSymlink != 0 {
		if s.noFollow {
			s.diag(path, "symbolic link skipped: following links is disabled")
			return
		}
		var ok bool
		if fi, ok = s.follow(path); !ok {
			return
		}
		linked = true
		mode = fi.Mode().Type()
	}
	switch {
	case mode.IsDir():
		s.dirSkill(path)
	case strings.HasSuffix(name, ".md"):
		if !mode.IsRegular() {
			s.diag(path, "not a regular file")
			return
		}
		if fi == nil {
			var err error
			if fi, err = os.Stat(path); err != nil {
				if !errors.Is(err, fs.ErrNotExist) {
					s.errs = append(s.errs, err)
				}
				return
			}
		}
		if linked && s.hooks != nil {
			s.hooks.watchFile(path)
		}
		s.add(path, dir, fi)
	}
}

// follow stats a symbolic link's target; dangling links and loops are
// skipped with a diagnostic.
func (s *scanner) follow(path string) (fs.FileInfo, bool) {
	fi, err := os.Stat(path)
	switch {
	case err == nil:
		return fi, true
	case errors.Is(err, fs.ErrNotExist):
		s.diag(path, "dangling symbolic link")
	case errors.Is(err, syscall.ELOOP):
		s.diag(path, "symbolic link loop")
	default:
		s.errs = append(s.errs, err)
	}
	return nil, false
}

func (s *scanner) dirSkill(dir string) {
	if s.hooks != nil {
		s.hooks.watchDir(dir) // so a SKILL.md created later is seen
	}
	file := filepath.Join(dir, SkillFile)
	fi, err := os.Lstat(file)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			s.errs = append(s.errs, err)
		}
		return // a directory without SKILL.md is not a skill
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		if s.noFollow {
			s.diag(file, "symbolic link skipped: following links is disabled")
			return
		}
		var ok bool
		if fi, ok = s.follow(file); !ok {
			return
		}
		if s.hooks != nil {
			s.hooks.watchFile(file)
		}
	}
	switch {
	case fi.IsDir():
		s.errs = append(s.errs, &fs.PathError{Op: "read", Path: file, Err: syscall.EISDIR})
		return
	case !fi.Mode().IsRegular():
		s.diag(file, "not a regular file")
		return
	}
	s.add(file, dir, fi)
}

// add parses (or reuses the parse of) a skill file whose resource base is
// base.
func (s *scanner) add(path, base string, fi fs.FileInfo) {
	st, err := s.read(path, fi)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.errs = append(s.errs, err)
		}
		return
	}
	s.out.files[path] = st
	if st.reason != "" {
		s.diag(path, st.reason)
		return
	}
	sum := st.sum
	sum.ResourceBase = &catalog.ResourceBase{Kind: catalog.ResourceDirectory, Path: base}
	s.out.skills = append(s.out.skills, found{path: path, sum: sum})
}

func (s *scanner) read(path string, fi fs.FileInfo) (fileState, error) {
	if st, ok := s.prev[path]; ok && st.id == identityOf(fi) {
		if _, changed := s.touched[path]; !changed {
			return st, nil
		}
	}
	data, id, reason, err := readFile(path, s.noFollow, s.count)
	if err != nil {
		return fileState{}, err
	}
	if reason != "" {
		return fileState{id: id, reason: reason}, nil
	}
	s.count.parses.Add(1)
	sk, err := ParseFile(path, data)
	if err != nil {
		var pe *ParseError
		if errors.As(err, &pe) {
			return fileState{id: id, reason: pe.Reason}, nil
		}
		return fileState{}, err
	}
	return fileState{id: id, sum: sk.Summary}, nil
}

// readFile reads a skill file. A file that is not a regular file or is too
// large yields a reason instead of data; ELOOP under noFollow is reported as
// a reason too.
func readFile(path string, noFollow bool, count *counters) (data []byte, id identity, reason string, err error) {
	f, err := openFile(path, noFollow)
	if err != nil {
		if noFollow && errors.Is(err, syscall.ELOOP) {
			return nil, id, "symbolic link skipped: following links is disabled", nil
		}
		return nil, id, "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, id, "", err
	}
	id = identityOf(fi)
	if !fi.Mode().IsRegular() {
		return nil, id, "not a regular file", nil
	}
	if fi.Size() > MaxFileSize {
		return nil, id, fmt.Sprintf("file is larger than %d bytes", MaxFileSize), nil
	}
	count.reads.Add(1)
	data, err = io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, id, "", err
	}
	if len(data) > MaxFileSize {
		return nil, id, fmt.Sprintf("file is larger than %d bytes", MaxFileSize), nil
	}
	return data, id, "", nil
}

// Scan lists one skills folder the way the provider does, without watching
// or caching: the skills it holds (with their resource base) and a
// diagnostic for every file it skipped. The error reports I/O failures; the
// skills and diagnostics found despite them are still returned. It is what
// a `validate` command needs.
func Scan(ctx context.Context, dir string, followSymlinks bool) ([]catalog.Summary, []providers.Diagnostic, error) {
	s := &scanner{noFollow: !followSymlinks, count: new(counters)}
	l := s.scan(ctx, dir)
	sums := make([]catalog.Summary, len(l.skills))
	for i, f := range l.skills {
		sums[i] = f.sum
	}
	if l.err != nil {
		return sums, l.diags, fmt.Errorf("scan %s: %w", dir, l.err)
	}
	return sums, l.diags, nil
}
