//go:build unix

package agentskills

import (
	"io/fs"
	"os"
	"syscall"
)

// identity tells whether a file may have changed since it was parsed.
type identity struct {
	dev, ino     uint64
	size         int64
	mtime, ctime int64 // nanoseconds
}

func identityOf(fi fs.FileInfo) identity {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return identity{size: fi.Size(), mtime: fi.ModTime().UnixNano()}
	}
	return identity{
		dev:   uint64(st.Dev),
		ino:   uint64(st.Ino),
		size:  st.Size,
		mtime: fi.ModTime().UnixNano(),
		ctime: ctimeOf(st),
	}
}

// openFile opens path for reading without ever blocking on a FIFO or a
// device; with noFollow it refuses a symbolic link as the last element.
func openFile(path string, noFollow bool) (*os.File, error) {
	flags := os.O_RDONLY | syscall.O_NONBLOCK | syscall.O_CLOEXEC
	if noFollow {
		flags |= syscall.O_NOFOLLOW
	}
	return os.OpenFile(path, flags, 0)
}

// sameFile reports whether two identities are of the same file, unchanged
// (a new file may reuse a removed one's inode number: times tell them
// apart).
func sameFile(a, b identity) bool { return a == b }
