package events

import (
	"sync"
)

// knownLists are the entries of the current lists decoded last, by the
// bytes they were read from (listCache).
var knownLists = listCache{max: 8}

// listCache remembers a few decoded entry lists by their msgpack bytes.
// A lookup first finds where the array at b[start:] ends without reading
// it (fixed-size headers only), then compares those bytes whole, so a hit
// is exactly the list a decode would have given.
type listCache struct {
	mu   sync.Mutex
	max  int
	byID map[string][]Entry
}

// get returns the entries of the array at b[start:] when its bytes are
// known, and the offset just after it.
func (c *listCache) get(b []byte, start int) ([]Entry, int, bool) {
	end, ok := entriesEnd(b, start)
	if !ok || end-start < minCachedList {
		return nil, 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	es, ok := c.byID[string(b[start:end])]
	return es, end, ok
}

// put remembers es as the entries the bytes raw hold.
func (c *listCache) put(raw []byte, es []Entry) {
	if len(raw) < minCachedList {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byID == nil || len(c.byID) >= c.max {
		c.byID = make(map[string][]Entry, c.max)
	}
	c.byID[string(raw)] = es
}

// minCachedList: a small list is decoded again rather than remembered.
const minCachedList = 512

// entriesEnd finds the end of an array of entries at b[start:] as the
// fast path reads them: maps whose keys and values are strings. It reports
// false for anything else, and never reads past b.
func entriesEnd(b []byte, start int) (int, bool) {
	r := plain{b: b, i: start}
	n, ok := r.container(true)
	if !ok || n == 0 || n > len(b)-r.i {
		return 0, false
	}
	for range n {
		keys, ok := r.container(false)
		if !ok {
			return 0, false
		}
		for range 2 * keys {
			if _, ok := r.strBytes(); !ok {
				return 0, false
			}
		}
	}
	return r.i, true
}
