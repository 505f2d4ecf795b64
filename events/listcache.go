package events

import (
	"container/list"
	"sync"
)

// knownLists are the entries of the current lists decoded last, by the
// bytes they were read from (listCache).
var knownLists = listCache{budget: knownListsBudget}

// knownListsBudget bounds the bytes knownLists keeps. A worker is sent one
// list per view it works in (a project, a tenant): a budget of a few
// megabytes holds dozens of 1,000-skill lists, where a count of eight made
// a worker of ten projects decode each of them at every new session.
const knownListsBudget = 8 << 20

// listCache remembers decoded entry lists by their msgpack bytes, the
// least recently used given up first once the lists kept pass its budget.
// A lookup first finds where the array at b[start:] ends without reading
// it (fixed-size headers only), then compares those bytes whole, so a hit
// is exactly the list a decode would have given.
type listCache struct {
	mu     sync.Mutex
	budget int // bytes kept at most (each list counted twice: key and entries)
	size   int
	order  list.List // of *knownList, most recently used first
	byRaw  map[string]*list.Element
}

type knownList struct {
	raw     string
	entries []Entry
}

// listCost is what a list of raw bytes keeps in memory: its key, and the one
// copy its entries' strings are cut from.
func listCost(raw int) int { return 2 * raw }

// get returns the entries of the array at b[start:] when its bytes are
// known, and the offset just after it.
func (c *listCache) get(b []byte, start int) ([]Entry, int, bool) {
	end, ok := entriesEnd(b, start)
	if !ok || end-start < minCachedList {
		return nil, 0, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byRaw[string(b[start:end])]
	if !ok {
		return nil, 0, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*knownList).entries, end, true
}

// put remembers es as the entries the bytes raw hold.
func (c *listCache) put(raw []byte, es []Entry) {
	cost := listCost(len(raw))
	if len(raw) < minCachedList || cost > c.budget {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byRaw == nil {
		c.byRaw = make(map[string]*list.Element)
	}
	if el, ok := c.byRaw[string(raw)]; ok {
		c.order.MoveToFront(el)
		return
	}
	for c.size+cost > c.budget {
		old := c.order.Back()
		k := c.order.Remove(old).(*knownList)
		delete(c.byRaw, k.raw)
		c.size -= listCost(len(k.raw))
	}
	k := &knownList{raw: string(raw), entries: es}
	c.byRaw[k.raw] = c.order.PushFront(k)
	c.size += cost
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
