package projection

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"hash/fnv"
	"math"
	"math/bits"
	"slices"
)

// Precision is the HyperLogLog precision of a dense Sketch: 2^Precision
// one-byte registers, a standard error of 1.04/sqrt(512), about 4.6%.
const Precision = 9

const registers = 1 << Precision

// SparseMax is how many distinct sessions a Sketch stored in an hour
// bucket counts exactly; past it the bucket keeps the HyperLogLog.
const SparseMax = 32

// mergeSparseMax is how many distinct sessions a Sketch summed over a
// window counts exactly (every hour exact, and no more than this many
// together); past it the sum is the HyperLogLog of them all.
const mergeSparseMax = 8192

// Sketch counts distinct sessions. Up to a bound it holds the sessions'
// 64-bit hashes, sorted, and its count is exact (two sessions would have
// to share a 64-bit hash to be counted once); past it, it holds a
// HyperLogLog of Precision and its count is an estimate. Two sketches
// merge into the sketch of the union of their sessions.
type Sketch struct {
	sparse []uint64
	dense  []byte // registers, nil while sparse
}

// HashSession is the hash a Sketch keeps of a session id: FNV-1a,
// finished with a 64-bit mixer so that every bit is as good as another
// (the HyperLogLog reads the top bits as a register index).
func HashSession(sid string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(sid))
	x := h.Sum64()
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

// Add counts a session by its hash (HashSession).
func (s *Sketch) Add(h uint64) { s.add(h, SparseMax) }

func (s *Sketch) add(h uint64, sparseMax int) {
	if s.dense != nil {
		s.set(h)
		return
	}
	i, found := slices.BinarySearch(s.sparse, h)
	if found {
		return
	}
	if len(s.sparse) >= sparseMax {
		s.densify()
		s.set(h)
		return
	}
	s.sparse = slices.Insert(s.sparse, i, h)
}

// set raises the register of h.
func (s *Sketch) set(h uint64) {
	idx := h >> (64 - Precision)
	rank := byte(bits.LeadingZeros64(h<<Precision|1<<(Precision-1)) + 1)
	if rank > s.dense[idx] {
		s.dense[idx] = rank
	}
}

// densify turns the hashes held into registers.
func (s *Sketch) densify() {
	s.dense = make([]byte, registers)
	for _, h := range s.sparse {
		s.set(h)
	}
	s.sparse = nil
}

// Merge adds the sessions of o.
func (s *Sketch) Merge(o *Sketch) { s.merge(o, SparseMax) }

func (s *Sketch) merge(o *Sketch, sparseMax int) {
	if o.dense == nil {
		for _, h := range o.sparse {
			s.add(h, sparseMax)
		}
		return
	}
	if s.dense == nil {
		s.densify()
	}
	for i, r := range o.dense {
		if r > s.dense[i] {
			s.dense[i] = r
		}
	}
}

// Count returns how many distinct sessions were added, and whether that
// is exact (false: a HyperLogLog estimate).
func (s *Sketch) Count() (n int, exact bool) {
	if s.dense == nil {
		return len(s.sparse), true
	}
	const m = float64(registers)
	sum, zeros := 0.0, 0
	for _, r := range s.dense {
		sum += math.Ldexp(1, -int(r))
		if r == 0 {
			zeros++
		}
	}
	alpha := 0.7213 / (1 + 1.079/m)
	e := alpha * m * m / sum
	if e <= 2.5*m && zeros > 0 { // small range: linear counting
		e = m * math.Log(m/float64(zeros))
	}
	return int(math.Round(e)), false
}

// Sketches are stored as one base64 string: "s" and the hashes, 8 bytes
// each, big-endian; or "d" and the registers. An empty sketch is "".
const (
	tagSparse = 's'
	tagDense  = 'd'
)

// MarshalText writes the sketch as base64 (in JSON, one string) of its
// tag and its hashes or registers. It is a text marshaler rather than a
// JSON one so that an hour of a thousand rows is written without each
// row's string being encoded twice and checked again.
func (s Sketch) MarshalText() ([]byte, error) {
	var raw []byte
	switch {
	case s.dense != nil:
		raw = make([]byte, 0, 1+len(s.dense))
		raw = append(append(raw, tagDense), s.dense...)
	case len(s.sparse) > 0:
		raw = make([]byte, 1, 1+8*len(s.sparse))
		raw[0] = tagSparse
		for _, h := range s.sparse {
			raw = binary.BigEndian.AppendUint64(raw, h)
		}
	}
	out := make([]byte, base64.RawStdEncoding.EncodedLen(len(raw)))
	base64.RawStdEncoding.Encode(out, raw)
	return out, nil
}

var errBadSketch = errors.New("bad session sketch")

// UnmarshalJSON reads what MarshalText writes (as a JSON string);
// anything else is an error.
func (s *Sketch) UnmarshalJSON(data []byte) error {
	var str string
	if err := json.Unmarshal(data, &str); err != nil {
		return errBadSketch
	}
	b, err := base64.RawStdEncoding.DecodeString(str)
	if err != nil {
		return errBadSketch
	}
	*s = Sketch{}
	if len(b) == 0 {
		return nil
	}
	switch b[0] {
	case tagDense:
		if len(b) != 1+registers {
			return errBadSketch
		}
		s.dense = b[1:]
	case tagSparse:
		if (len(b)-1)%8 != 0 || (len(b)-1)/8 > mergeSparseMax {
			return errBadSketch
		}
		s.sparse = make([]uint64, 0, (len(b)-1)/8)
		for i := 1; i < len(b); i += 8 {
			h := binary.BigEndian.Uint64(b[i:])
			if n := len(s.sparse); n > 0 && h <= s.sparse[n-1] {
				return errBadSketch // not sorted, or a hash twice
			}
			s.sparse = append(s.sparse, h)
		}
	default:
		return errBadSketch
	}
	return nil
}
