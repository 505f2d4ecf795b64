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
// registers of 6 bits, 24 KiB (32 KiB as base64 in an hour's JSON), a
// standard error of 1.04/sqrt(32768), about 0.57%: an estimate is
// within 2% but for 3.5 standard errors, about one in 2,000.
const Precision = 15

// MinPrecision is the precision an hour too large for its bucket may
// lower its sketches to (512 registers, 384 bytes, about 4.6%), as the
// sketches of every hour written before Precision rose were.
const MinPrecision = 9

// legacyPrecision is the precision of the dense sketches stored with the
// tag 'd' (one byte a register).
const legacyPrecision = 9

// Bounds of a stored sketch's precision: what a reader accepts.
const (
	readMinPrecision = 4
	readMaxPrecision = 16
)

// SparseMax is how many distinct sessions a Sketch stored in an hour
// bucket counts exactly (8 KiB of hashes, a third of a dense sketch);
// past it the bucket keeps the HyperLogLog.
const SparseMax = 1024

// mergeSparseMax is how many distinct sessions a Sketch summed over a
// window counts exactly (every hour exact, and no more than this many
// together); past it the sum is the HyperLogLog of them all.
const mergeSparseMax = 8192

// Sketch counts distinct sessions. Up to a bound it holds the sessions'
// 64-bit hashes, sorted, and its count is exact (two sessions would have
// to share a 64-bit hash to be counted once); past it, it holds a
// HyperLogLog and its count is an estimate. Two sketches merge into the
// sketch of the union of their sessions; a HyperLogLog of a lower
// precision merged in lowers the sum's to it.
type Sketch struct {
	sparse []uint64
	dense  []byte // registers, one byte each in memory; nil while sparse
	p      uint8  // precision of dense
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
		s.densify(Precision)
		s.set(h)
		return
	}
	s.sparse = slices.Insert(s.sparse, i, h)
}

// set raises the register of h: the top p bits index it, its rank is one
// more than the leading zeros of the rest (at most 64-p+1).
func (s *Sketch) set(h uint64) {
	p := uint(s.p)
	idx := h >> (64 - p)
	rank := byte(bits.LeadingZeros64(h<<p|1<<(p-1)) + 1)
	if rank > s.dense[idx] {
		s.dense[idx] = rank
	}
}

// densify turns the hashes held into registers of precision p.
func (s *Sketch) densify(p uint8) {
	s.dense, s.p = make([]byte, 1<<p), p
	for _, h := range s.sparse {
		s.set(h)
	}
	s.sparse = nil
}

// fold lowers a dense sketch's precision to p, as if its hashes had been
// added at p: a register's index loses its low bits, which then lead
// the rest of the hash.
func (s *Sketch) fold(p uint8) {
	if s.dense == nil || s.p <= p {
		return
	}
	d := uint(s.p - p)
	out := make([]byte, 1<<p)
	for i, r := range s.dense {
		if r == 0 {
			continue
		}
		low := uint64(i) & (1<<d - 1)
		rank := byte(d) + r
		if low != 0 {
			rank = byte(d-uint(bits.Len64(low))) + 1
		}
		if j := i >> d; rank > out[j] {
			out[j] = rank
		}
	}
	s.dense, s.p = out, p
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
		s.densify(o.p)
	}
	src := o.dense
	switch {
	case s.p > o.p:
		s.fold(o.p)
	case s.p < o.p:
		c := Sketch{dense: o.dense, p: o.p}
		c.fold(s.p) // a copy: o is left as it was
		src = c.dense
	}
	for i, r := range src {
		if r > s.dense[i] {
			s.dense[i] = r
		}
	}
}

// coarsen bounds the sketch's stored size by that of a HyperLogLog of
// precision p: a denser one folds to p, and a sparse one larger than it
// becomes one. It says whether it changed the sketch.
func (s *Sketch) coarsen(p uint8) bool {
	switch {
	case s.dense != nil && s.p > p:
		s.fold(p)
		return true
	case s.dense == nil && 8*len(s.sparse) > packedLen(p):
		s.densify(p)
		return true
	}
	return false
}

// encodedLen is the length of the sketch's text (MarshalText) were it
// coarsened to precision p.
func (s *Sketch) encodedLen(p uint8) int {
	raw := 0
	switch {
	case s.dense != nil:
		raw = 2 + packedLen(min(s.p, p))
	case 8*len(s.sparse) > packedLen(p):
		raw = 2 + packedLen(p)
	case len(s.sparse) > 0:
		raw = 1 + 8*len(s.sparse)
	}
	return base64.RawStdEncoding.EncodedLen(raw)
}

// Count returns how many distinct sessions were added, and whether that
// is exact (false: a HyperLogLog estimate).
func (s *Sketch) Count() (n int, exact bool) {
	if s.dense == nil {
		return len(s.sparse), true
	}
	return int(math.Round(estimate(s.dense, int(s.p)))), false
}

// estimate is the HyperLogLog estimate of registers of precision p: the
// improved raw estimator of O. Ertl ("New cardinality estimation
// algorithms for HyperLogLog sketches", 2017), which corrects the raw
// harmonic mean for empty and for full registers alike, so that it needs
// neither linear counting for small counts nor a table of empirical bias
// corrections for the mid range, where the classic estimator's switch
// between the two errs most.
func estimate(regs []byte, p int) float64 {
	q := 64 - p // the largest rank is q+1
	var c [66]int
	for _, r := range regs {
		c[min(int(r), q+1)]++
	}
	m := float64(len(regs))
	z := m * ertlTau(1-float64(c[q+1])/m)
	for k := q; k >= 1; k-- {
		z = 0.5 * (z + float64(c[k]))
	}
	z += m * ertlSigma(float64(c[0])/m)
	return m * m / (2 * math.Ln2 * z)
}

func ertlSigma(x float64) float64 {
	if x == 1 {
		return math.Inf(1)
	}
	y, z := 1.0, x
	for {
		x *= x
		prev := z
		z += x * y
		y += y
		if z == prev {
			return z
		}
	}
}

func ertlTau(x float64) float64 {
	if x == 0 || x == 1 {
		return 0
	}
	y, z := 1.0, 1-x
	for {
		x = math.Sqrt(x)
		prev := z
		y *= 0.5
		z -= (1 - x) * (1 - x) * y
		if z == prev {
			return z / 3
		}
	}
}

// Sketches are stored as one base64 string of a tag and its content:
// "s" and the hashes, 8 bytes each, big-endian; "h", the precision (one
// byte) and the registers packed 6 bits each, big-endian; or, as hours
// written before the precision rose hold them, "d" and 512 registers of
// one byte. An empty sketch is "".
const (
	tagSparse = 's'
	tagHLL    = 'h'
	tagDense  = 'd' // read only
)

// packedLen is the length of the packed registers of precision p.
func packedLen(p uint8) int { return 6 << p / 8 }

// MarshalText writes the sketch as base64 (in JSON, one string) of its
// tag and its hashes or registers. It is a text marshaler rather than a
// JSON one so that an hour of a thousand rows is written without each
// row's string being encoded twice and checked again.
func (s Sketch) MarshalText() ([]byte, error) {
	var raw []byte
	switch {
	case s.dense != nil:
		raw = make([]byte, 2, 2+packedLen(s.p))
		raw[0], raw[1] = tagHLL, s.p
		for i := 0; i < len(s.dense); i += 4 {
			v := uint32(s.dense[i])<<18 | uint32(s.dense[i+1])<<12 | uint32(s.dense[i+2])<<6 | uint32(s.dense[i+3])
			raw = append(raw, byte(v>>16), byte(v>>8), byte(v))
		}
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

// UnmarshalJSON reads what MarshalText writes (as a JSON string), and
// the one-byte registers of earlier hours; anything else is an error.
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
	case tagHLL:
		if len(b) < 2 || b[1] < readMinPrecision || b[1] > readMaxPrecision || len(b) != 2+packedLen(b[1]) {
			return errBadSketch
		}
		p := b[1]
		regs := make([]byte, 1<<p)
		for i, j := 0, 2; i < len(regs); i, j = i+4, j+3 {
			v := uint32(b[j])<<16 | uint32(b[j+1])<<8 | uint32(b[j+2])
			regs[i], regs[i+1], regs[i+2], regs[i+3] = byte(v>>18), byte(v>>12&63), byte(v>>6&63), byte(v&63)
		}
		if err := s.setDense(regs, p); err != nil {
			return err
		}
	case tagDense:
		if len(b) != 1+1<<legacyPrecision {
			return errBadSketch
		}
		if err := s.setDense(b[1:], legacyPrecision); err != nil {
			return err
		}
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

// setDense takes registers of precision p read from a stored sketch,
// none of which may be above the largest rank at p.
func (s *Sketch) setDense(regs []byte, p uint8) error {
	for _, r := range regs {
		if int(r) > 64-int(p)+1 {
			return errBadSketch
		}
	}
	s.dense, s.p = regs, p
	return nil
}
