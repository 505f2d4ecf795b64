package mcp

import (
	"container/list"
	"sync"

	"github.com/skillstream/skillstream/providers"
)

// DefaultFileCacheBytes bounds the file bytes kept for resources/read.
const DefaultFileCacheBytes = 64 << 20

// fileCache keeps the files of recently read skills by the skill's digest
// (its exact files), least recently used first out, within a byte budget,
// so that a host reading a skill's files one by one does not make the
// server read the whole skill again for each.
type fileCache struct {
	mu    sync.Mutex
	max   int64
	size  int64
	order *list.List // of *cached, most recent at the front
	by    map[string]*list.Element
}

type cached struct {
	digest string
	files  map[string][]byte
	size   int64
}

func newFileCache(max int64) *fileCache {
	return &fileCache{max: max, order: list.New(), by: map[string]*list.Element{}}
}

func (c *fileCache) get(digest string) (map[string][]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.by[digest]
	if !ok {
		return nil, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*cached).files, true
}

func (c *fileCache) put(digest string, files []providers.File) {
	e := &cached{digest: digest, files: make(map[string][]byte, len(files))}
	for _, f := range files {
		e.files[f.Path] = f.Data
		e.size += int64(len(f.Data))
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.size > c.max || c.by[digest] != nil {
		return
	}
	c.by[digest] = c.order.PushFront(e)
	c.size += e.size
	for c.size > c.max {
		old := c.order.Back()
		o := old.Value.(*cached)
		c.order.Remove(old)
		delete(c.by, o.digest)
		c.size -= o.size
	}
}

// files returns the bytes of path in the skill of digest, if kept.
func (c *fileCache) files(digest, path string) ([]byte, bool) {
	fs, ok := c.get(digest)
	if !ok {
		return nil, false
	}
	data, ok := fs[path]
	return data, ok
}
