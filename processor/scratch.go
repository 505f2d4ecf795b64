package processor

import "sync"

// Buffers lent to triggers for encoding. The outputs a trigger appends and
// the reply it sends are encoded into buffers borrowed here and given back
// once the trigger is settled. Nothing holds those bytes beyond that: the
// NATS client copies what it publishes before the call returns, and the
// memories keep fingerprints, not bytes. So the next trigger encodes into
// the same memory instead of allocating and zeroing a new buffer, which
// for a large catalog is over 100 KiB per append and again per reply.

// maxScratch bounds the buffers kept for reuse; larger ones (a catalog
// near the payload limit) are left to the garbage collector.
const maxScratch = 4 << 20

var scratchPool = sync.Pool{New: func() any { return new([]byte) }}

// borrow runs encode on a borrowed buffer and returns what it wrote. The
// bytes are t's until giveBack: they must not be kept past the trigger.
func (t *trigger) borrow(encode func(dst []byte) ([]byte, error)) ([]byte, error) {
	p := scratchPool.Get().(*[]byte)
	b, err := encode((*p)[:0])
	if cap(b) > cap(*p) {
		*p = b[:0] // keep the grown array
	}
	t.lent = append(t.lent, p)
	return b, err
}

// giveBack returns the buffers t borrowed to the pool.
func (t *trigger) giveBack() {
	for _, p := range t.lent {
		if cap(*p) <= maxScratch {
			scratchPool.Put(p)
		}
	}
	t.lent = nil
}
