//go:build !unix

package agentskills

import (
	"io/fs"
	"os"
)

// identity tells whether a file may have changed since it was parsed.
type identity struct {
	size  int64
	mtime int64
}

func identityOf(fi fs.FileInfo) identity {
	return identity{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
}

// openFile opens path for reading. Without O_NOFOLLOW, noFollow relies on
// the Lstat checks made before.
func openFile(path string, _ bool) (*os.File, error) { return os.Open(path) }

// sameFile reports whether two identities are of a file of the same size
// and time (without inode numbers, the best this platform tells).
func sameFile(a, b identity) bool {
	return a.size == b.size && a.mtime == b.mtime
}
