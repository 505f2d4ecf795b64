package processor

import (
	"hash/maphash"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/history"
)

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
	view   events.View // source.view of the catalog
	// changes and base: a change list, on the base at that sequence.
	changes bool
	base    uint64

	// byBytes: fp hashes the bytes, not the store time. A conclusion the
	// processor records about its own append (remember) is of this kind: the
	// store time is not known until the record is read back.
	byBytes bool
}

// recognitions remembers recognise's conclusions by stream sequence, the
// least recently used forgotten past its size. The processor's workers
// share it without a lock of their own, so it is golang-lru's Cache, which
// locks. A size of 0 or less remembers nothing: every lookup misses.
type recognitions struct {
	seed  maphash.Seed
	cache *lru.Cache[uint64, recognition] // nil: remember nothing
}

func newRecognitions(size int) *recognitions {
	r := &recognitions{seed: maphash.MakeSeed()}
	if size > 0 {
		r.cache, _ = lru.New[uint64, recognition](size)
	}
	return r
}

// hdrTimeStamp is the header of a Direct Get answer holding the message's
// store time.
const hdrTimeStamp = "Nats-Time-Stamp"

// fingerprint hashes the declared encoding of s and its store time, or its
// bytes when it has none (hashing a large catalog's bytes at every
// pre-step costs more than the store time's few bytes).
func (r *recognitions) fingerprint(s record) uint64 {
	if ts := s.Header.Get(hdrTimeStamp); ts != "" {
		return r.hash(contentType(s.Header), ts, nil)
	}
	return r.bytesFingerprint(contentType(s.Header), s.Data)
}

// bytesFingerprint hashes a declared encoding and the bytes of a record.
func (r *recognitions) bytesFingerprint(ct string, data []byte) uint64 {
	return r.hash(ct, "", data)
}

func (r *recognitions) hash(ct, ts string, data []byte) uint64 {
	var h maphash.Hash
	h.SetSeed(r.seed)
	h.WriteString(ct)
	h.WriteByte(0)
	if data == nil {
		h.WriteString(ts)
	} else {
		h.WriteByte(1)
		h.Write(data)
	}
	return h.Sum64()
}

// lookup returns the remembered conclusion about s, if any, and the
// fingerprint to store a new one under. A conclusion seeded from the
// processor's own append is checked against the bytes once, then
// remembered under the store time like any other.
func (r *recognitions) lookup(s record) (recognition, uint64, bool) {
	fp := r.fingerprint(s)
	if r.cache == nil {
		return recognition{}, fp, false
	}
	rc, ok := r.cache.Get(s.Seq)
	if !ok || rc.subject != s.Subject || rc.size != len(s.Data) {
		return recognition{}, fp, false
	}
	if rc.byBytes {
		if rc.fp != r.bytesFingerprint(contentType(s.Header), s.Data) {
			return recognition{}, fp, false
		}
		rc.byBytes = false
		r.store(s, fp, rc)
		return rc, fp, true
	}
	if rc.fp != fp {
		return recognition{}, fp, false
	}
	return rc, fp, true
}

// remember records the conclusion about a catalog the processor has just
// appended at seq (msgpack bytes data on subject), so that the pre-step
// reading it back next does not decode it again.
func (r *recognitions) remember(seq uint64, subject string, data []byte, rc recognition) {
	if r.cache == nil {
		return
	}
	rc.subject, rc.size, rc.byBytes = subject, len(data), true
	rc.fp = r.bytesFingerprint(events.ContentTypeMsgpack, data)
	r.cache.Add(seq, rc)
}

func (r *recognitions) store(s record, fp uint64, rc recognition) {
	if r.cache == nil {
		return
	}
	rc.subject, rc.size, rc.fp = s.Subject, len(s.Data), fp
	r.cache.Add(s.Seq, rc)
}

func contentType(h history.Header) string {
	return h.Get(events.HeaderContentType)
}
