package agentskills

import (
	"encoding/binary"
	"errors"
	"io/fs"
	"slices"
	"syscall"
)

// treeWatch is the inotify instance behind the watched digests (see
// loadcache.go): one watch per folder and per file of each skill folder
// whose digest is kept. A watch is on an inode, so a file changed under
// another name (a hard link from elsewhere) is reported too. Nothing reads
// it in the background: its queue is read, without blocking, before a kept
// digest is served, and since the kernel queues an event before the system
// call that caused it returns, a change made before a Load began is always
// seen by that Load. Its methods are called with loadCache.mu held.
type treeWatch struct {
	fd   int
	byWd map[int32][]*watchedTree // the trees each watch serves
	buf  []byte
}

// watchedTree is the set of watches one kept digest relies on.
type watchedTree struct {
	wds   []int32
	stale bool // an event was reported on one of them
}

// treeMask is every change to a folder's entries or a file's content or
// metadata; reads and opens are not reported, so computing a digest does
// not make it stale.
const treeMask = syscall.IN_MODIFY | syscall.IN_ATTRIB | syscall.IN_CREATE | syscall.IN_DELETE |
	syscall.IN_MOVED_FROM | syscall.IN_MOVED_TO | syscall.IN_DELETE_SELF | syscall.IN_MOVE_SELF |
	syscall.IN_DONT_FOLLOW

func newTreeWatch() (*treeWatch, error) {
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		return nil, err
	}
	return &treeWatch{fd: fd, byWd: make(map[int32][]*watchedTree), buf: make([]byte, 16<<10)}, nil
}

// held returns how many watches are in place.
func (w *treeWatch) held() int { return len(w.byWd) }

// add watches paths for a new tree. A path whose inode is watched already
// shares that watch. On error nothing is left watched for the tree.
func (w *treeWatch) add(paths []string) (*watchedTree, error) {
	t := &watchedTree{wds: make([]int32, 0, len(paths))}
	for _, p := range paths {
		wd, err := syscall.InotifyAddWatch(w.fd, p, treeMask)
		if err != nil {
			w.release(t)
			return nil, &fs.PathError{Op: "watch", Path: p, Err: err}
		}
		t.wds = append(t.wds, int32(wd))
		w.byWd[int32(wd)] = append(w.byWd[int32(wd)], t)
	}
	return t, nil
}

// release drops t's watches; those no other tree shares are removed.
func (w *treeWatch) release(t *watchedTree) {
	for _, wd := range t.wds {
		ts := w.byWd[wd]
		i := slices.Index(ts, t)
		if i < 0 {
			continue // the kernel dropped it (its inode is gone)
		}
		if ts = slices.Delete(ts, i, i+1); len(ts) > 0 {
			w.byWd[wd] = ts
			continue
		}
		delete(w.byWd, wd)
		_, _ = syscall.InotifyRmWatch(w.fd, uint32(wd))
	}
	t.wds, t.stale = nil, true
}

// drain reads every queued event and marks the trees they concern stale.
func (w *treeWatch) drain() {
	for {
		n, err := syscall.Read(w.fd, w.buf)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || n <= 0 {
			if !errors.Is(err, syscall.EAGAIN) {
				w.staleAll() // events may be lost: trust nothing kept
			}
			return
		}
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			wd := int32(binary.NativeEndian.Uint32(w.buf[off:]))
			mask := binary.NativeEndian.Uint32(w.buf[off+4:])
			off += syscall.SizeofInotifyEvent + int(binary.NativeEndian.Uint32(w.buf[off+12:]))
			if mask&syscall.IN_Q_OVERFLOW != 0 {
				w.staleAll()
				continue
			}
			for _, t := range w.byWd[wd] {
				t.stale = true
			}
			if mask&syscall.IN_IGNORED != 0 {
				delete(w.byWd, wd) // removed by the kernel or by release
			}
		}
	}
}

func (w *treeWatch) staleAll() {
	for _, ts := range w.byWd {
		for _, t := range ts {
			t.stale = true
		}
	}
}

func (w *treeWatch) close() { _ = syscall.Close(w.fd) }

// inodeOf returns the device and inode of a file.
func inodeOf(fi fs.FileInfo) [2]uint64 {
	id := identityOf(fi)
	return [2]uint64{id.dev, id.ino}
}

// oneDevice reports whether files are on the file system of root.
func oneDevice(root fs.FileInfo, files []File) bool {
	dev := identityOf(root).dev
	for _, f := range files {
		if f.id.dev != dev {
			return false
		}
	}
	return true
}

// remoteFS names file systems whose changes may be made by another machine
// (or a user-space server), which inotify does not report.
var remoteFS = map[uint32]string{
	0x6969:     "nfs",
	0x517b:     "smb",
	0xfe534d42: "smb2",
	0xff534d42: "cifs",
	0x65735546: "fuse",
	0x01021997: "9p",
	0x00c36400: "ceph",
	0x5346414f: "afs",
	0x6b414653: "afs",
	0x73757245: "coda",
	0x7461636f: "ocfs2",
	0x01161970: "gfs2",
	0x0bd00bd0: "lustre",
	0x786f4256: "vboxsf",
}

// localFS reports whether path is on a file system whose every change
// passes through this kernel.
func localFS(path string) bool {
	var st syscall.Statfs_t
	if err := syscall.Statfs(path, &st); err != nil {
		return false
	}
	_, remote := remoteFS[uint32(st.Type)]
	return !remote
}
