package store

import (
	"sync"

	lru "github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/skillstream/skillstream/catalog"
)

// bodyCache keeps loaded skills by digest. A digest names immutable
// content, so an entry never needs validating; the cache is bounded by the
// bytes of the bodies it holds, evicting the least recently used.
type bodyCache struct {
	mu    sync.Mutex
	lru   *lru.LRU[string, catalog.Skill]
	bytes int64
	max   int64
}

func newBodyCache(max int64) *bodyCache {
	c := &bodyCache{max: max}
	// The count bound is only a backstop: bytes evict first.
	c.lru, _ = lru.NewLRU[string, catalog.Skill](1<<20, func(_ string, sk catalog.Skill) { c.bytes -= cost(sk) })
	return c
}

func cost(sk catalog.Skill) int64 {
	return int64(len(sk.Content)+len(sk.Description)+len(sk.WhenToUse)+len(sk.Name)) + 128
}

func (c *bodyCache) get(digest string) (catalog.Skill, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.lru.Get(digest)
}

func (c *bodyCache) put(digest string, sk catalog.Skill) {
	n := cost(sk)
	if n > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.lru.Contains(digest) {
		return
	}
	c.lru.Add(digest, sk)
	c.bytes += n
	for c.bytes > c.max {
		c.lru.RemoveOldest()
	}
}
