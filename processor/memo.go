package processor

import (
	"container/list"
	"hash/maphash"
	"sync"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/history"
)

// lru is a bounded, least-recently-used map safe for concurrent use. A
// capacity of 0 or less stores nothing: every get misses.
type lru[K comparable, V any] struct {
	mu    sync.Mutex
	size  int
	items map[K]*list.Element // of *lruItem[K, V]
	order *list.List          // front: most recently used
}

type lruItem[K comparable, V any] struct {
	key K
	val V
}

func newLRU[K comparable, V any](size int) *lru[K, V] {
	return &lru[K, V]{size: size, items: make(map[K]*list.Element), order: list.New()}
}

func (c *lru[K, V]) get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.items[k]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*lruItem[K, V]).val, true
}

func (c *lru[K, V]) put(k K, v V) {
	if c.size <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.items[k]; ok {
		el.Value.(*lruItem[K, V]).val = v
		c.order.MoveToFront(el)
		return
	}
	c.items[k] = c.order.PushFront(&lruItem[K, V]{key: k, val: v})
	for c.order.Len() > c.size {
		old := c.order.Back()
		c.order.Remove(old)
		delete(c.items, old.Value.(*lruItem[K, V]).key)
	}
}

func (c *lru[K, V]) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

// recognitionMemoSize bounds the remembered catalog records: about 200
// bytes each (the text is not kept), so well under a megabyte, and enough
// for the newest catalog of thousands of active sessions.
const recognitionMemoSize = 4096

// recognition is what recognise concluded about one stored catalog record:
// whether it is a catalog of ours for the session of its subject and, if
// so, the digest of its text and the step it answered. Every pre-step of a
// session reads the same newest catalog again; remembering the conclusion
// spares decoding the whole record and hashing its text each time.
type recognition struct {
	// The record the conclusion is about: a stream sequence identifies a
	// message, and subject, size and a fingerprint guard against a stream
	// deleted and created again under the same name, whose sequences start
	// over with other messages. The fingerprint covers the declared
	// encoding and the server's store time (Nats-Time-Stamp, nanoseconds,
	// set on every Direct Get answer), or the bytes when a record comes
	// without it.
	subject string
	size    int
	fp      uint64

	ok     bool
	digest string
	step   string
}

// recognitions remembers recognise's conclusions by stream sequence.
type recognitions struct {
	seed  maphash.Seed
	cache *lru[uint64, recognition]
}

func newRecognitions(size int) *recognitions {
	return &recognitions{seed: maphash.MakeSeed(), cache: newLRU[uint64, recognition](size)}
}

// hdrTimeStamp is the header of a Direct Get answer holding the message's
// store time.
const hdrTimeStamp = "Nats-Time-Stamp"

// fingerprint hashes the declared encoding of s and its store time, or its
// bytes when it has none (hashing a large catalog's bytes at every
// pre-step costs more than the store time's few bytes).
func (r *recognitions) fingerprint(s record) uint64 {
	var h maphash.Hash
	h.SetSeed(r.seed)
	h.WriteString(contentType(s.Header))
	h.WriteByte(0)
	if ts := s.Header.Get(hdrTimeStamp); ts != "" {
		h.WriteString(ts)
	} else {
		h.WriteByte(1)
		h.Write(s.Data)
	}
	return h.Sum64()
}

// lookup returns the remembered conclusion about s, if any, and the
// fingerprint to store a new one under.
func (r *recognitions) lookup(s record) (recognition, uint64, bool) {
	fp := r.fingerprint(s)
	rc, ok := r.cache.get(s.Seq)
	if !ok || rc.subject != s.Subject || rc.size != len(s.Data) || rc.fp != fp {
		return recognition{}, fp, false
	}
	return rc, fp, true
}

func (r *recognitions) store(s record, fp uint64, rc recognition) {
	rc.subject, rc.size, rc.fp = s.Subject, len(s.Data), fp
	r.cache.put(s.Seq, rc)
}

func contentType(h history.Header) string {
	return h.Get(events.HeaderContentType)
}
