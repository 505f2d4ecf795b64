package usage

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"hash/maphash"
	"sync"

	"github.com/skillstream/skillstream/events"
)

// Every session given the same catalog gets a record whose text and source
// are the same bytes (events.CatalogBody): at a thousand skills tens of
// kilobytes that take most of a report's time to decode, again for every
// session. An OutputReader recognises a catalog's body by a hash of its
// bytes and decodes each body once.

// bodyCacheSize bounds the catalog bodies an OutputReader remembers: the
// catalogs of a few hundred skill sets (a few kilobytes each, their names).
const bodyCacheSize = 512

// bodyKey is a body's hash, with a seed of the reader's own (so that no
// one can make two bodies collide on purpose), and its length.
type bodyKey [2]uint64

// bodySummary is what a report takes from a catalog's body.
type bodySummary struct {
	update    string
	textBytes int64
	listed    []string // shared: never modified
	key       string
}

// OutputReader reads output records as ReadOutput does, remembering the
// catalog bodies it decoded: a catalog whose body it has seen is counted
// from what it remembers after checking only the record's own fields (its
// version, session and step), with the same result as decoding it. It is
// safe for concurrent use.
type OutputReader struct {
	seed   maphash.Seed
	mu     sync.Mutex
	bodies map[bodyKey]*bodySummary
	order  []bodyKey // ring of insertion order, for eviction
	next   int
	// Hits and Misses count catalogs recognised and decoded.
	Hits, Misses uint64
}

// NewOutputReader returns an OutputReader with nothing remembered.
func NewOutputReader() *OutputReader {
	return &OutputReader{
		seed:   maphash.MakeSeed(),
		bodies: make(map[bodyKey]*bodySummary, bodyCacheSize),
		order:  make([]bodyKey, 0, bodyCacheSize),
	}
}

// Read is ReadOutput, with catalogs' bodies remembered (none by a nil
// OutputReader).
func (r *OutputReader) Read(ctx context.Context, get MsgGetter, l events.Layout, prefix, subject, contentType string, data []byte) Output {
	sid, kind, err := events.ParseSubjectIn(l, prefix, subject)
	if err != nil {
		return Output{}
	}
	enc, err := events.EncodingOf(contentType)
	if err != nil {
		return Output{Session: sid}
	}
	return r.read(ctx, get, l, prefix, sid, kind, enc, data)
}

func (r *OutputReader) read(ctx context.Context, get MsgGetter, l events.Layout, prefix, sid string, kind events.Kind, enc events.Encoding, data []byte) Output {
	if r == nil || kind != events.KindCatalog || enc != events.Msgpack {
		return readOutput(ctx, get, l, prefix, sid, kind, enc, data)
	}
	parts, split := events.SplitCatalog(data)
	if !split || len(data) > events.MaxPayloadSize {
		return readOutput(ctx, get, l, prefix, sid, kind, enc, data)
	}
	key := r.hash(parts.Body)
	r.mu.Lock()
	s := r.bodies[key]
	if s != nil {
		r.Hits++
	} else {
		r.Misses++
	}
	r.mu.Unlock()
	if s != nil {
		out := Output{Session: sid}
		if parts.Session != sid || parts.Validate(l) != nil {
			return out // as a decode would: not this session's catalog, or invalid
		}
		out.Kind, out.Update, out.TextBytes, out.Listed, out.ListedKey = OutputCatalog, s.update, s.textBytes, s.listed, s.key
		return out
	}
	out := readOutput(ctx, get, l, prefix, sid, kind, enc, data)
	if out.Kind != OutputCatalog {
		return out
	}
	s = &bodySummary{update: out.Update, textBytes: out.TextBytes, listed: out.Listed, key: keyString(key)}
	out.ListedKey = s.key
	r.remember(key, s)
	return out
}

func (r *OutputReader) hash(b []byte) bodyKey {
	return bodyKey{maphash.Bytes(r.seed, b), uint64(len(b))}
}

func keyString(k bodyKey) string {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], k[0])
	binary.BigEndian.PutUint64(b[8:], k[1])
	return hex.EncodeToString(b[:])
}

func (r *OutputReader) remember(k bodyKey, s *bodySummary) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.bodies[k]; ok {
		return
	}
	if len(r.order) < bodyCacheSize {
		r.order = append(r.order, k)
	} else {
		delete(r.bodies, r.order[r.next])
		r.order[r.next] = k
		r.next = (r.next + 1) % bodyCacheSize
	}
	r.bodies[k] = s
}
