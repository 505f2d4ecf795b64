package catalog

// Fast paths for the common description, printable ASCII: a view of a
// thousand skills measures, checks and escapes every description again,
// and a byte at a time that was most of a new working directory's cost.
// These look at eight bytes at a time; whatever they cannot vouch for
// takes the general path.

const (
	ones = 0x0101010101010101
	high = 0x8080808080808080
)

// word is the eight bytes of s from i, the first the lowest.
func word(s string, i int) uint64 {
	return uint64(s[i]) | uint64(s[i+1])<<8 | uint64(s[i+2])<<16 | uint64(s[i+3])<<24 |
		uint64(s[i+4])<<32 | uint64(s[i+5])<<40 | uint64(s[i+6])<<48 | uint64(s[i+7])<<56
}

// isASCII reports whether s holds no byte of 0x80 or above.
func isASCII(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		if word(s, i)&high != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// printableASCII reports whether every byte of s is printable ASCII,
// 0x20 (space) to 0x7e: no control character, no DEL, nothing beyond.
func printableASCII(s string) bool {
	i := 0
	for ; i+8 <= len(s); i += 8 {
		x := word(s, i)
		// A byte with its high bit set; or, all bytes below 0x80, one below
		// 0x20 (subtracting 0x20 from it borrows into its high bit); or one
		// equal to 0x7f (zero once xored with 0x7f). A borrow may mark a
		// higher byte too, but only once a lower one is bad already.
		below := (x - 0x20*ones) &^ x
		y := x ^ 0x7f*ones
		del := (y - ones) &^ y
		if (x|below|del)&high != 0 {
			return false
		}
	}
	for ; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f {
			return false
		}
	}
	return true
}
