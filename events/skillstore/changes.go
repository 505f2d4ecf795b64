package skillstore

import (
	"bytes"
	"sort"
)

// FileChange is one path whose content differs between two revisions'
// files.
type FileChange struct {
	Path string
	What string // "added", "removed" or "changed"
	A, B []byte // the content in each revision; nil where the path is absent
}

// ChangedFiles lists the paths whose content differs between the files
// of revisions a and b (added, removed or changed), sorted by path.
func ChangedFiles(a, b []File) []FileChange {
	am := make(map[string][]byte, len(a))
	bm := make(map[string][]byte, len(b))
	var paths []string
	for _, f := range a {
		if _, ok := am[f.Path]; !ok {
			paths = append(paths, f.Path)
		}
		am[f.Path] = f.Data
	}
	for _, f := range b {
		if _, inA := am[f.Path]; !inA {
			if _, ok := bm[f.Path]; !ok {
				paths = append(paths, f.Path)
			}
		}
		bm[f.Path] = f.Data
	}
	sort.Strings(paths)
	var out []FileChange
	for _, p := range paths {
		da, inA := am[p]
		db, inB := bm[p]
		c := FileChange{Path: p, A: da, B: db}
		switch {
		case !inA:
			c.What = "added"
		case !inB:
			c.What = "removed"
		case !bytes.Equal(da, db):
			c.What = "changed"
		default:
			continue
		}
		out = append(out, c)
	}
	return out
}
