package processor

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// errCwd is wrapped by every refusal of a trigger's working directory.
var errCwd = errors.New("working directory refused")

// A trigger's cwd makes the processor read the file system: the project
// root is found by walking up from cwd to the nearest folder holding .git,
// and that root's skills folders are read and served. Without
// Config.CwdRoots any absolute path is taken; with them, only paths under
// one of the roots are, checked both as written (cleaned: "/srv/a/../../etc"
// is "/etc") and with the symbolic links of its existing part resolved, so
// that a link planted under a root does not lead out of it. The walk for
// .git may still end above the root when the root and its subfolders hold
// no .git: an operator confining workers keeps .git out of the folders
// above the roots.

// cwdRoots holds Config.CwdRoots cleaned and, when they exist, with their
// links resolved.
type cwdRoots struct {
	clean    []string // as configured, cleaned
	resolved []string // links resolved; the cleaned path for a root missing here
}

func newCwdRoots(roots []string) cwdRoots {
	var r cwdRoots
	for _, d := range roots {
		c := filepath.Clean(d)
		r.clean = append(r.clean, c)
		if real, err := filepath.EvalSymlinks(c); err == nil {
			r.resolved = append(r.resolved, real)
		} else {
			r.resolved = append(r.resolved, c)
		}
	}
	return r
}

// check returns the cleaned cwd when a trigger may use it: empty (no
// project skills), or absolute and, when roots are configured, under one
// of them.
func (r cwdRoots) check(cwd string) (string, error) {
	if cwd == "" {
		return "", nil
	}
	if !filepath.IsAbs(cwd) {
		return "", fmt.Errorf("%w: cwd %q is not an absolute path", errCwd, truncate(cwd, 300))
	}
	clean := filepath.Clean(cwd)
	if len(r.clean) == 0 {
		return clean, nil
	}
	if !inside(clean, r.clean) {
		return "", fmt.Errorf("%w: cwd %q (%s) is outside the allowed cwd roots %s", errCwd,
			truncate(cwd, 300), truncate(clean, 300), strings.Join(r.clean, ", "))
	}
	if real := resolveExisting(clean); !inside(real, r.resolved) {
		return "", fmt.Errorf("%w: cwd %q leads through a symbolic link to %s, outside the allowed cwd roots %s", errCwd,
			truncate(cwd, 300), truncate(real, 300), strings.Join(r.clean, ", "))
	}
	return clean, nil
}

// inside reports whether path is one of roots or below one.
func inside(path string, roots []string) bool {
	for _, r := range roots {
		if path == r || r == string(filepath.Separator) ||
			(strings.HasPrefix(path, r) && path[len(r)] == filepath.Separator) {
			return true
		}
	}
	return false
}

// resolveExisting resolves the symbolic links of the longest existing
// ancestor of path (path itself included) and joins the rest back on.
func resolveExisting(path string) string {
	rest := ""
	for p := path; ; {
		if real, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(real, rest)
		} else if !errors.Is(err, os.ErrNotExist) {
			return path
		}
		parent := filepath.Dir(p)
		if parent == p {
			return path
		}
		rest = filepath.Join(filepath.Base(p), rest)
		p = parent
	}
}
