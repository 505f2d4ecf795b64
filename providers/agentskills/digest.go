package agentskills

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"

	"github.com/skillstream/skillstream/events/skillstore"
)

// A skill's digest identifies the exact files of a skill; its rule (the
// files hashed in byte order of path) is the skill store's, kept in
// skillstore.Hasher. A skill's files are the regular files of its folder
// but hidden ones (a name starting with a dot, version control folders
// among them): what skills push publishes, so a folder served from disk
// and the same folder pushed have one digest. A flat-file skill is
// digested as one file named SKILL.md. The skill store names its objects
// by it, and tool results carry it so a worker can tell which version of
// a skill it was given.

// Errors of Files. Match them with errors.Is.
var (
	// ErrLinkOutside reports a symbolic link that leaves the skill folder.
	ErrLinkOutside = errors.New("symbolic link leaves the skill folder")
	// ErrNotRegular reports an entry that is neither a regular file nor a
	// directory (a device, a FIFO, a socket, a link to a directory).
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooManyFiles reports a skill folder with more files than allowed.
	ErrTooManyFiles = errors.New("too many files")
	// ErrTooLarge reports a skill whose files are larger than allowed.
	ErrTooLarge = errors.New("too large")
	// ErrFileChanged reports a file that is no longer the one Files found
	// (replaced, by a symbolic link or another file, or resized).
	ErrFileChanged = errors.New("file changed since the folder was listed")
)

// Selection says which files of a skill folder FilesOf lists.
type Selection int

// The selections of FilesOf.
const (
	// NoHidden leaves out every file and folder whose name starts with a
	// dot, version control folders included: a skill's files, as served,
	// digested and published by default.
	NoHidden Selection = iota
	// NoVCS leaves out only version control folders (.git, .hg, .svn) and
	// files of those names: what skills push --include-hidden publishes.
	NoVCS
)

// Hidden reports whether the "/"-separated relative path p has an element
// starting with a dot.
func Hidden(p string) bool {
	for _, el := range strings.Split(p, "/") {
		if strings.HasPrefix(el, ".") {
			return true
		}
	}
	return false
}

func (s Selection) skips(name string) bool {
	switch s {
	case NoVCS:
		return skillstore.VCS(name)
	case NoHidden:
		return strings.HasPrefix(name, ".")
	}
	return false
}

// Limits bound what Files accepts. Zero fields take the defaults.
type Limits struct {
	MaxFiles int   // files in the folder, subfolders included
	MaxBytes int64 // their total size
	MaxDepth int   // nesting of subfolders
}

// Defaults of Limits: a skill folder holds what the skill store accepts.
const (
	DefaultMaxFiles = skillstore.DefaultMaxFiles
	DefaultMaxBytes = skillstore.DefaultMaxBytes
	DefaultMaxDepth = 16
)

func (l Limits) withDefaults() Limits {
	if l.MaxFiles <= 0 {
		l.MaxFiles = DefaultMaxFiles
	}
	if l.MaxBytes <= 0 {
		l.MaxBytes = DefaultMaxBytes
	}
	if l.MaxDepth <= 0 {
		l.MaxDepth = DefaultMaxDepth
	}
	return l
}

// File is one regular file of a skill.
type File struct {
	Path string // relative to the skill folder, "/"-separated
	Size int64
	// Source is the file to read on disk (the link's target for a
	// symbolic link inside the folder).
	Source string
	id     identity
}

// Files lists the files of the skill folder dir, in byte order of Path,
// without reading them: its regular files but hidden ones (NoHidden).
// Symbolic links are followed when they resolve to a regular file inside
// the folder; a link leaving the folder (ErrLinkOutside), a link to a
// directory, a special file (ErrNotRegular), more files or bytes than lim
// allows (ErrTooManyFiles, ErrTooLarge) are errors naming the path.
func Files(dir string, lim Limits) ([]File, error) {
	return FilesOf(dir, lim, NoHidden)
}

// FilesOf is Files listing only the files sel selects: the folders it
// leaves out are not walked, so their files count against no limit.
func FilesOf(dir string, lim Limits, sel Selection) ([]File, error) {
	w, err := walkFolderOf(dir, lim, sel)
	if err != nil {
		return nil, err
	}
	return w.files, nil
}

// FlatFile lists a flat-file skill as Files lists a folder's files: its
// one file (symbolic links resolved), named SKILL.md.
func FlatFile(path string) (File, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return File{}, err
	}
	fi, err := os.Stat(real)
	if err != nil {
		return File{}, err
	}
	if !fi.Mode().IsRegular() {
		return File{}, fmt.Errorf("%s: %w", path, ErrNotRegular)
	}
	return File{Path: SkillFile, Size: fi.Size(), Source: real, id: identityOf(fi)}, nil
}

// Open opens f, as Files listed it, for reading: without following a
// symbolic link as its last element and without blocking, and only while
// it is still the file Files found (the same file on the same device, of
// the same size); otherwise the error wraps ErrFileChanged. A file
// swapped for a link, or a folder on its path swapped for one, between
// the listing and the read is so never read.
func Open(f File) (*os.File, error) {
	fh, err := openFile(f.Source, true)
	if err != nil {
		return nil, fmt.Errorf("%s: %w (%v)", f.Source, ErrFileChanged, err)
	}
	fi, err := fh.Stat()
	if err != nil {
		fh.Close()
		return nil, err
	}
	if !fi.Mode().IsRegular() || !sameFile(identityOf(fi), f.id) {
		fh.Close()
		return nil, fmt.Errorf("%s: %w", f.Source, ErrFileChanged)
	}
	return fh, nil
}

// walkFolder walks the skill folder dir as Files does and returns the
// walker, which also knows the subfolders and links it went through.
func walkFolder(dir string, lim Limits) (*walker, error) {
	return walkFolderOf(dir, lim, NoHidden)
}

func walkFolderOf(dir string, lim Limits, sel Selection) (*walker, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	real, err = filepath.Abs(real)
	if err != nil {
		return nil, err
	}
	w := &walker{root: real, lim: lim.withDefaults(), sel: sel}
	if err := w.walk(real, "", 0); err != nil {
		return nil, err
	}
	sort.Slice(w.files, func(i, j int) bool { return w.files[i].Path < w.files[j].Path })
	return w, nil
}

type walker struct {
	root  string // the folder, symbolic links resolved
	lim   Limits
	sel   Selection
	files []File
	total int64
	dirs  []string // the subfolders, in walk order
	links int      // symbolic links met
}

func (w *walker) walk(dir, rel string, depth int) error {
	if depth > w.lim.MaxDepth {
		return fmt.Errorf("%s: folders nested deeper than %d levels: %w", dir, w.lim.MaxDepth, ErrTooLarge)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		if w.sel.skips(name) {
			continue
		}
		p := filepath.Join(dir, name)
		r := path.Join(rel, name)
		mode := e.Type()
		src := p
		switch {
		case mode.IsDir():
			w.dirs = append(w.dirs, p)
			if err := w.walk(p, r, depth+1); err != nil {
				return err
			}
			continue
		case mode&fs.ModeSymlink != 0:
			w.links++
			target, err := filepath.EvalSymlinks(p)
			if err != nil {
				return fmt.Errorf("%s: dangling or looping symbolic link: %w", p, ErrNotRegular)
			}
			if !inside(w.root, target) {
				return fmt.Errorf("%s -> %s: %w", p, target, ErrLinkOutside)
			}
			src = target
		case !mode.IsRegular():
			return fmt.Errorf("%s: %w", p, ErrNotRegular)
		}
		fi, err := os.Stat(src)
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return fmt.Errorf("%s: %w", p, ErrNotRegular)
		}
		if len(w.files) >= w.lim.MaxFiles {
			return fmt.Errorf("%s: more than %d files: %w", w.root, w.lim.MaxFiles, ErrTooManyFiles)
		}
		if fi.Size() > w.lim.MaxBytes {
			return fmt.Errorf("%s: file of %d bytes, over the limit of %d: %w", p, fi.Size(), w.lim.MaxBytes, ErrTooLarge)
		}
		w.total += fi.Size()
		if w.total > w.lim.MaxBytes {
			return fmt.Errorf("%s: files total more than %d bytes: %w", w.root, w.lim.MaxBytes, ErrTooLarge)
		}
		w.files = append(w.files, File{Path: r, Size: fi.Size(), Source: src, id: identityOf(fi)})
	}
	return nil
}

// inside reports whether p is root or below it.
func inside(root, p string) bool {
	return p == root || strings.HasPrefix(p, root+string(filepath.Separator))
}

// DigestFiles reads files (as Files lists them) and returns their digest.
func DigestFiles(files []File) (string, error) {
	h := skillstore.NewHasher()
	for _, f := range files {
		if err := digestOne(h, f); err != nil {
			return "", err
		}
	}
	return h.Sum(), nil
}

func digestOne(h *skillstore.Hasher, f File) error {
	fh, err := Open(f)
	if err != nil {
		return err
	}
	defer fh.Close()
	if err := h.Add(f.Path, f.Size, fh); err != nil {
		return fmt.Errorf("%s changed while it was read: %w", f.Source, err)
	}
	return nil
}

// Digest returns the digest of the skill folder dir under the default
// limits: of its files as Files lists them, hidden ones left out.
func Digest(dir string) (string, error) {
	files, err := Files(dir, Limits{})
	if err != nil {
		return "", err
	}
	return DigestFiles(files)
}

// DigestFile returns the digest of a flat-file skill: its one file,
// digested as if it were named SKILL.md.
func DigestFile(file string) (string, error) {
	fh, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer fh.Close()
	fi, err := fh.Stat()
	if err != nil {
		return "", err
	}
	if !fi.Mode().IsRegular() {
		return "", fmt.Errorf("%s: %w", file, ErrNotRegular)
	}
	h := skillstore.NewHasher()
	if err := h.Add(SkillFile, fi.Size(), fh); err != nil {
		return "", fmt.Errorf("%s changed while it was read: %w", file, err)
	}
	return h.Sum(), nil
}
