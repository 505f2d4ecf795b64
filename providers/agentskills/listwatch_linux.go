package agentskills

import (
	"encoding/binary"
	"errors"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// listWatch is the inotify instance behind the listings (watch.go). A
// goroutine reads its queue as events arrive, so that a change is noticed
// and announced without anyone asking; and drain reads it synchronously,
// so that a caller about to decide sees every change the kernel has
// queued. The kernel queues an event before the system call that made the
// change returns, so after drain every change completed before the call
// began has been dispatched. Both readers hold readMu from the read of a
// batch to the end of its dispatch: drain never returns while events
// already taken off the queue by the goroutine are still undispatched.
type listWatch struct {
	sink watchSink
	file *os.File
	fd   int
	done chan struct{}

	readMu sync.Mutex // held while events are read and dispatched
	closed bool       // under readMu
	buf    []byte
	// reads counts the reads of the queue begun (under readMu, before
	// the read): a caller that finds it grew while it waited for readMu
	// knows a whole read began after its own call and was dispatched.
	reads atomic.Uint64
	// lastRead is when the latest read began (under readMu, taken before
	// the read): a caller whose request arrived before it knows every
	// change completed by then was read and dispatched.
	lastRead time.Time

	mu     sync.Mutex
	byWd   map[int32][]string // the paths each watch was added for
	byPath map[string]int32
}

// listMask is what the listings need to hear of: entries created,
// removed or renamed in a watched folder, content or metadata of a
// watched file, and the watched path itself going away.
const listMask = syscall.IN_CREATE | syscall.IN_MODIFY | syscall.IN_ATTRIB | syscall.IN_DELETE |
	syscall.IN_MOVED_FROM | syscall.IN_MOVED_TO | syscall.IN_DELETE_SELF | syscall.IN_MOVE_SELF

func newListWatch(sink watchSink) (*listWatch, error) {
	fd, err := syscall.InotifyInit1(syscall.IN_NONBLOCK | syscall.IN_CLOEXEC)
	if err != nil {
		return nil, err
	}
	w := &listWatch{
		sink:   sink,
		file:   os.NewFile(uintptr(fd), "inotify"),
		fd:     fd,
		done:   make(chan struct{}),
		buf:    make([]byte, 64<<10),
		byWd:   make(map[int32][]string),
		byPath: make(map[string]int32),
	}
	rc, err := w.file.SyscallConn()
	if err != nil {
		_ = w.file.Close()
		return nil, err
	}
	go w.run(rc)
	return w, nil
}

// run dispatches events as they arrive, until Close. The runtime's poller
// calls the function again once the descriptor is readable.
func (w *listWatch) run(rc syscall.RawConn) {
	defer close(w.done)
	for {
		err := rc.Read(func(uintptr) bool {
			if w.drain(time.Time{}) {
				w.sink.releaseForgotten()
			}
			return false // wait for the next event
		})
		if err != nil {
			return // closed
		}
	}
}

// Add watches path (following a symbolic link, as a listing does). Adding
// a path again renews its watch, which also restores one the kernel
// dropped when the path was deleted.
func (w *listWatch) Add(path string) error {
	wd, err := syscall.InotifyAddWatch(w.fd, path, listMask)
	if err != nil {
		return &os.PathError{Op: "watch", Path: path, Err: err}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if old, ok := w.byPath[path]; ok && old != int32(wd) {
		w.forgetLocked(old, path)
	}
	w.byPath[path] = int32(wd)
	if !slices.Contains(w.byWd[int32(wd)], path) {
		w.byWd[int32(wd)] = append(w.byWd[int32(wd)], path)
	}
	return nil
}

// Remove stops watching path; a path not watched is no error.
func (w *listWatch) Remove(path string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if wd, ok := w.byPath[path]; ok {
		w.forgetLocked(wd, path)
	}
	return nil
}

// forgetLocked drops path from watch wd, removing the watch when no path
// needs it any more. w.mu must be held.
func (w *listWatch) forgetLocked(wd int32, path string) {
	delete(w.byPath, path)
	paths := slices.DeleteFunc(w.byWd[wd], func(p string) bool { return p == path })
	if len(paths) > 0 {
		w.byWd[wd] = paths
		return
	}
	delete(w.byWd, wd)
	_, _ = syscall.InotifyRmWatch(w.fd, uint32(wd)) // the kernel may have dropped it
}

// queueReads counts the reads of the queue begun.
func (w *listWatch) queueReads() uint64 { return w.reads.Load() }

// drain reads every queued event and dispatches it; it reports whether
// remembered project roots were forgotten (their watches are then to be
// released by the caller).
//
// Callers arriving together share a read: one that, once it holds
// readMu, finds that a read began after it called (reads grew) returns at
// once. That read began after the call, so it took every event queued
// before the call began, and it was dispatched before readMu was released:
// the guarantee is the same as reading the queue again, without the
// system call.
//
// With since set (the arrival of the request the caller serves), a read
// that began after since is enough in the same way: the changes the
// request must see were queued before it arrived. Requests that arrive
// while others are being served then share reads, instead of one each.
func (w *listWatch) drain(since time.Time) (stale bool) {
	ticket := w.reads.Load()
	w.readMu.Lock()
	defer w.readMu.Unlock()
	if w.closed || w.reads.Load() != ticket || (!since.IsZero() && w.lastRead.After(since)) {
		return false
	}
	w.reads.Add(1)
	w.lastRead = time.Now()
	for {
		n, err := syscall.Read(w.fd, w.buf)
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil || n <= 0 {
			if !errors.Is(err, syscall.EAGAIN) {
				stale = w.sink.overflow() || stale // events may be lost
			}
			return stale
		}
		for off := 0; off+syscall.SizeofInotifyEvent <= n; {
			wd := int32(binary.NativeEndian.Uint32(w.buf[off:]))
			mask := binary.NativeEndian.Uint32(w.buf[off+4:])
			nameLen := int(binary.NativeEndian.Uint32(w.buf[off+12:]))
			name := w.buf[off+syscall.SizeofInotifyEvent : min(n, off+syscall.SizeofInotifyEvent+nameLen)]
			off += syscall.SizeofInotifyEvent + nameLen
			if mask&syscall.IN_Q_OVERFLOW != 0 {
				stale = w.sink.overflow() || stale
				continue
			}
			for len(name) > 0 && name[len(name)-1] == 0 {
				name = name[:len(name)-1]
			}
			for _, path := range w.paths(wd, mask) {
				if len(name) > 0 {
					path += "/" + string(name)
				}
				stale = w.sink.event(path) || stale
			}
		}
	}
}

// paths returns the paths watch wd serves, and forgets the watch when
// the event ends it: the kernel dropped it (IN_IGNORED), or the watched
// path was moved, so that it no longer names what is watched (a later
// Add watches whatever it names then).
func (w *listWatch) paths(wd int32, mask uint32) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	paths := w.byWd[wd]
	switch {
	case mask&syscall.IN_IGNORED != 0:
		for _, p := range paths {
			delete(w.byPath, p)
		}
		delete(w.byWd, wd)
		return nil // the event that caused it was reported already
	case mask&syscall.IN_MOVE_SELF != 0:
		paths = slices.Clone(paths)
		for _, p := range paths {
			w.forgetLocked(wd, p)
		}
	}
	return paths
}

// Close stops the reader and releases every watch.
func (w *listWatch) Close() error {
	w.readMu.Lock()
	w.closed = true
	w.readMu.Unlock()
	err := w.file.Close()
	<-w.done
	return err
}
