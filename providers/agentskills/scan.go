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
	id      identity
	sum     catalog.Summary // when reason is empty and not ignored
	reason  string          // why the file is not a skill
	ignored bool            // a flat .md file without frontmatter: not a skill, not an error
	body    int             // bytes of the trimmed body (instructions)
	text    []TextWarning   // when the scanner lints
	spec    []string        // when the scanner lints: what Document.Check refuses
}

// found is a skill found in a root.
type found struct {
	path string          // the file read
	dir  string          // the folder it lies in: a skill folder, or the root for a flat file
	sum  catalog.Summary // ResourceBase set; Source, Provider left to the caller
	body int             // bytes of its instructions
	text []TextWarning   // when the scanner lints
	spec []string        // when the scanner lints
}

// listing is what one scan of one root found.
type listing struct {
	skills  []found
	diags   []providers.Diagnostic
	err     error                // I/O errors: the answer is incomplete
	files   map[string]fileState // parse cache for the next scan
	ignored []string             // flat .md files without frontmatter
	bare    []string             // directories without SKILL.md
	needed  int                  // watches the skill folders and linked files need
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
	lint     bool                 // check each skill's text (CheckText) and the spec's rules (Check, CheckFileName), for validate
	base     string               // with noFollow, links from below base down to the root are refused
	prev     map[string]fileState // may be nil
	touched  map[string]struct{}  // files known to have changed
	hooks    hooks                // may be nil
	count    *counters
	// parsed, when set, is given every skill file the scan parses, so
	// that a first Load of it need not read and parse it again.
	parsed func(path string, id identity, sk catalog.Skill)

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
	if link := s.linkAbove(dir); link != "" {
		s.diag(link, "symbolic link skipped: following links is disabled")
		return s.out
	}
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
		if linked {
			s.out.needed++
			if s.hooks != nil {
				s.hooks.watchFile(path)
			}
		}
		s.add(path, dir, fi, true)
	}
}

// linkAbove returns, when links are not followed, the first symbolic link
// among the path elements of dir below s.base (dir included): a skills
// folder that is a link, or lies in a linked folder of the project, is not
// read then.
func (s *scanner) linkAbove(dir string) string {
	if !s.noFollow || s.base == "" {
		return ""
	}
	rel, err := filepath.Rel(s.base, dir)
	if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return ""
	}
	d := s.base
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		d = filepath.Join(d, part)
		fi, err := os.Lstat(d)
		if err != nil {
			return "" // missing: a confirmed absence, found by the scan
		}
		if fi.Mode()&fs.ModeSymlink != 0 {
			return d
		}
	}
	return ""
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
	s.out.needed++
	if s.hooks != nil {
		s.hooks.watchDir(dir) // so a SKILL.md created later is seen
	}
	if s.lint {
		if m := Misnamed(dir); m != "" {
			s.diag(m, reasonOf(CheckFileName(m)))
			return
		}
	}
	file := filepath.Join(dir, SkillFile)
	fi, err := os.Lstat(file)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, syscall.ENOTDIR) {
			s.errs = append(s.errs, err)
			return
		}
		s.out.bare = append(s.out.bare, dir) // a directory without SKILL.md is not a skill
		return
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
		s.out.needed++
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
	s.add(file, dir, fi, false)
}

// add parses (or reuses the parse of) a skill file whose resource base is
// base; flat tells a <folder>/<x>.md file from a SKILL.md.
func (s *scanner) add(path, base string, fi fs.FileInfo, flat bool) {
	st, err := s.read(path, fi, flat)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			s.errs = append(s.errs, err)
		}
		return
	}
	s.out.files[path] = st
	if st.ignored {
		s.out.ignored = append(s.out.ignored, path)
		return
	}
	if st.reason != "" {
		s.diag(path, st.reason)
		return
	}
	sum := st.sum
	sum.ResourceBase = &catalog.ResourceBase{Kind: catalog.ResourceDirectory, Path: base}
	s.out.skills = append(s.out.skills, found{path: path, dir: filepath.Dir(path), sum: sum, body: st.body, text: st.text, spec: st.spec})
}

func (s *scanner) read(path string, fi fs.FileInfo, flat bool) (fileState, error) {
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
	if flat && !hasFrontmatter(data) {
		// A README.md or notes beside the skills: not meant as a skill.
		return fileState{id: id, ignored: true}, nil
	}
	s.count.parses.Add(1)
	d, err := Parse(data)
	if err != nil {
		var pe *ParseError
		if errors.As(err, &pe) {
			return fileState{id: id, reason: pe.Reason}, nil
		}
		return fileState{}, err
	}
	sk := d.skill()
	if s.parsed != nil {
		s.parsed(path, id, sk)
	}
	st := fileState{id: id, sum: sk.Summary, body: len(sk.Content)}
	if s.lint {
		st.text = CheckText(data)
		st.spec = d.Check(path)
	}
	return st, nil
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

// Found is a skill file found by a scan: the file and the skill's summary
// (with its resource base; Source and Provider are left empty).
type Found struct {
	Path      string
	Summary   catalog.Summary
	BodyBytes int           // size of the instructions (the trimmed body)
	Text      []TextWarning // characters in the skill's text its author probably did not mean
	// Problems are what the Agent Skills specification refuses in the
	// skill though serve serves it (see Document.Check).
	Problems []string
}

// Listing is what ScanFolder or ScanSkill found.
type Listing struct {
	// Skills are the valid skill files, in file name order.
	Skills []Found
	// Diagnostics name every file dropped, with the reason.
	Diagnostics []providers.Diagnostic
	// Ignored are flat .md files without frontmatter (a README.md beside
	// the skills): not skills, and not errors.
	Ignored []string
	// NoSkillFile are directories without a SKILL.md: not skills.
	NoSkillFile []string
	// Err reports I/O failures; what was found despite them is above.
	Err error
}

// reasonOf is a *ParseError's reason.
func reasonOf(err error) string {
	var pe *ParseError
	if errors.As(err, &pe) {
		return pe.Reason
	}
	return err.Error()
}

// ScanFolder lists one skills folder the way the provider does, with the
// same guards (size limit, regular files only, no blocking on a FIFO,
// links followed only when asked), without watching or caching. It is
// what a `validate` command needs.
func ScanFolder(ctx context.Context, dir string, followSymlinks bool) Listing {
	s := &scanner{noFollow: !followSymlinks, lint: true, base: filepath.Dir(filepath.Clean(dir)), count: new(counters)}
	return s.scan(ctx, dir).public(dir)
}

// ScanSkill reads one skill the way the provider reads it inside a skills
// folder: path is a skill folder (holding SKILL.md) or a skill file (a
// SKILL.md or a flat <x>.md file).
func ScanSkill(ctx context.Context, path string, followSymlinks bool) Listing {
	s := &scanner{noFollow: !followSymlinks, lint: true, count: new(counters)}
	s.out = listing{files: make(map[string]fileState)}
	fi, err := os.Lstat(path)
	if err == nil && fi.Mode()&fs.ModeSymlink != 0 {
		if s.noFollow {
			s.diag(path, "symbolic link skipped: following links is disabled")
			return s.out.public(path)
		}
		var ok bool
		if fi, ok = s.follow(path); !ok {
			s.out.err = errors.Join(s.errs...)
			return s.out.public(path)
		}
	}
	switch {
	case err != nil:
		s.errs = append(s.errs, err)
	case fi.IsDir():
		s.dirSkill(path)
	case !fi.Mode().IsRegular():
		s.diag(path, "not a regular file")
	case CheckFileName(path) != nil:
		s.diag(path, reasonOf(CheckFileName(path)))
	default:
		s.add(path, filepath.Dir(path), fi, filepath.Base(path) != SkillFile)
	}
	s.out.err = errors.Join(s.errs...)
	if ctx.Err() != nil && s.out.err == nil {
		s.out.err = ctx.Err()
	}
	return s.out.public(path)
}

func (l listing) public(dir string) Listing {
	out := Listing{Diagnostics: l.diags, Ignored: l.ignored, NoSkillFile: l.bare}
	for _, f := range l.skills {
		out.Skills = append(out.Skills, Found{Path: f.path, Summary: f.sum, BodyBytes: f.body, Text: f.text, Problems: f.spec})
	}
	if l.err != nil {
		out.Err = fmt.Errorf("scan %s: %w", dir, l.err)
	}
	return out
}

// Scan lists one skills folder the way the provider does, without watching
// or caching: the skills it holds (with their resource base) and a
// diagnostic for every file it skipped. The error reports I/O failures; the
// skills and diagnostics found despite them are still returned.
func Scan(ctx context.Context, dir string, followSymlinks bool) ([]catalog.Summary, []providers.Diagnostic, error) {
	l := ScanFolder(ctx, dir, followSymlinks)
	sums := make([]catalog.Summary, len(l.Skills))
	for i, f := range l.Skills {
		sums[i] = f.Summary
	}
	return sums, l.Diagnostics, l.Err
}
