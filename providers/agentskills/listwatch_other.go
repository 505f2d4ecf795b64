//go:build !linux

package agentskills

import (
	"time"

	"github.com/fsnotify/fsnotify"
)

// listWatch is fsnotify's watcher where there is no inotify. Its events
// arrive on a goroutine of fsnotify's and cannot be read on demand, so
// drain has nothing to read: a change is seen once that goroutine has
// delivered its event (see the package documentation, "Fresh listings").
type listWatch struct {
	w    *fsnotify.Watcher
	sink watchSink
	done chan struct{}
}

func newListWatch(sink watchSink) (*listWatch, error) {
	fw, err := fsnotify.NewWatcher()
	if err != nil {
		return nil, err
	}
	w := &listWatch{w: fw, sink: sink, done: make(chan struct{})}
	go w.run()
	return w, nil
}

func (w *listWatch) run() {
	defer close(w.done)
	for {
		select {
		case ev, ok := <-w.w.Events:
			if !ok {
				return
			}
			if w.sink.event(ev.Name) {
				w.sink.releaseForgotten()
			}
		case _, ok := <-w.w.Errors:
			if !ok {
				return
			}
			if w.sink.overflow() {
				w.sink.releaseForgotten()
			}
		}
	}
}

func (w *listWatch) Add(path string) error    { return w.w.Add(path) }
func (w *listWatch) Remove(path string) error { return w.w.Remove(path) }
func (w *listWatch) drain(time.Time) bool     { return false }
func (w *listWatch) queueReads() uint64       { return 0 }

func (w *listWatch) Close() error {
	err := w.w.Close()
	<-w.done
	return err
}
