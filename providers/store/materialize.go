package store

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/providers/agentskills"
)

// ErrExists reports a materialisation target that holds other files.
var ErrExists = errors.New("directory exists with other files")

// ResourcePath is where a worker materialises a store skill's files under
// its resource directory: <resourceDir>/<name>/<first 16 hex of digest>.
// One directory per digest, so the instructions and every file read later
// come from one version.
func ResourcePath(resourceDir, name, digest string) string {
	d := digest
	if len(d) > 16 {
		d = d[:16]
	}
	return filepath.Join(resourceDir, name, d)
}

// Materialize writes the files of the skill whose digest is digest,
// fetched from the store's object store (cfg.Objects), into dir,
// atomically: they are written to a temporary directory beside dir,
// checked against the digest, made read-only and renamed into place, so dir
// either does not exist or holds exactly those files. When dir already
// holds exactly those files (an earlier call, another process) it does
// nothing. Archive entries that would land outside dir, and names that
// are not valid UTF-8 or hold control characters, are refused. Temporary
// folders of materialisations killed before their rename are removed
// (see leftovers.go).
func Materialize(ctx context.Context, js jetstream.JetStream, cfg Config, digest, dir string) error {
	cfg = cfg.withDefaults()
	obs, err := js.ObjectStore(ctx, cfg.Objects)
	if err != nil {
		return fmt.Errorf("skill object store %s: %w", cfg.Objects, err)
	}
	return materialize(ctx, obs, cfg, digest, dir)
}

func materialize(ctx context.Context, obs jetstream.ObjectStore, cfg Config, digest, dir string) error {
	if !hexDigest.MatchString(digest) {
		return fmt.Errorf("materialize: digest %q is not 64 lowercase hex digits", clip(digest))
	}
	if done, err := holds(dir, digest); done || err != nil {
		return err
	}
	files, err := fetch(ctx, obs, cfg.Objects, digest, cfg.limits())
	if err != nil {
		return fmt.Errorf("materialize %s: %w", short(digest), err)
	}
	for _, f := range files {
		if err := checkEntryName(f.path); err != nil {
			return fmt.Errorf("materialize %s: %w", short(digest), err)
		}
	}
	parent := filepath.Dir(dir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("materialize %s: %w", short(digest), err)
	}
	removeLeftovers(parent)
	tmp, err := os.MkdirTemp(parent, tempPattern(dir))
	if err != nil {
		return fmt.Errorf("materialize %s: %w", short(digest), err)
	}
	if err := writeTree(tmp, files); err != nil {
		removeTree(tmp)
		return fmt.Errorf("materialize %s: %w", short(digest), err)
	}
	if got, err := agentskills.Digest(tmp); err != nil || got != digest {
		removeTree(tmp)
		return fmt.Errorf("materialize %s: written files do not match the digest (%v)", short(digest), err)
	}
	if err := readOnly(tmp); err != nil {
		removeTree(tmp)
		return fmt.Errorf("materialize %s: %w", short(digest), err)
	}
	if err := os.Rename(tmp, dir); err != nil {
		removeTree(tmp)
		if done, herr := holds(dir, digest); done {
			return nil // materialised by someone else meanwhile
		} else if herr != nil {
			return herr
		}
		return fmt.Errorf("materialize %s: %w", short(digest), err)
	}
	return nil
}

// holds reports whether dir exists holding exactly the files of digest;
// an existing dir with other files is an error wrapping ErrExists.
func holds(dir, digest string) (bool, error) {
	fi, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("materialize %s: %w", short(digest), err)
	}
	if !fi.IsDir() {
		return false, fmt.Errorf("materialize %s: %s: %w", short(digest), dir, ErrExists)
	}
	got, err := agentskills.Digest(dir)
	if err != nil || got != digest {
		return false, fmt.Errorf("materialize %s: %s: %w", short(digest), dir, ErrExists)
	}
	return true, nil
}

// writeTree writes files below root. Their paths were checked when they
// were unpacked; the check is repeated here so that no caller can make
// this write outside root.
func writeTree(root string, files []fileData) error {
	for _, f := range files {
		if err := checkEntryPath(f.path); err != nil {
			return err
		}
		p := filepath.Join(root, filepath.FromSlash(f.path))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, f.data, 0o444); err != nil {
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
