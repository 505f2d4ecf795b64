package events

import (
	"encoding/binary"
	"iter"
)

// MaxPayloadSize is the largest payload, in bytes, Decode accepts and Encode
// produces (1 MiB).
const MaxPayloadSize = 1 << 20

// MaxDepth is the deepest nesting of maps and arrays a payload may have. The
// top-level map is depth 1. Payloads of this protocol need at most 6 (plus
// the tool definition's parameter schema).
const MaxDepth = 32

// checkMsgpack walks one msgpack value in b without decoding it and checks
// that it is well formed and bounded before the real decoder sees it:
//
//   - every declared str, bin and ext length fits in the bytes that remain;
//   - every declared array or map count fits too, at one byte per element
//     and two per map entry (the smallest msgpack value is one byte), so a
//     five-byte header claiming 2^32-1 elements is rejected at once;
//   - maps and arrays nest at most MaxDepth deep;
//   - the value ends exactly at the end of b (no truncation, no trailing
//     bytes), and the never-used code 0xc1 does not appear.
//
// It allocates nothing, so the memory any later decode uses is bounded by
// len(b).
func checkMsgpack(b []byte) error {
	// pending[d] is the number of values still to read in the container
	// open at depth d; pending[0] is the single top-level value.
	var pending [MaxDepth + 1]uint64
	depth := 0
	pending[0] = 1
	i := 0
	for {
		for depth >= 0 && pending[depth] == 0 {
			depth--
		}
		if depth < 0 {
			break
		}
		pending[depth]--
		if i < len(b) {
			// Most values are short strings and small integers: skipped
			// here; everything else, and a string running past the end
			// (reported below), takes readHeader.
			switch c := b[i]; {
			case c <= 0x7f, c >= 0xe0:
				i++
				continue
			case c >= 0xa0 && c <= 0xbf && int(c&0x1f) < len(b)-i:
				i += 1 + int(c&0x1f)
				continue
			}
		}
		h, err := readHeader(b, i)
		if err != nil {
			return err
		}
		i = h.next
		remaining := uint64(len(b) - i)
		if h.kids > 0 {
			if h.kids > remaining {
				return badPayload("msgpack: %s at byte %d declares %d values but only %d bytes follow", h.kind, h.at, h.kids, remaining)
			}
			if depth+1 > MaxDepth {
				return badPayload("msgpack: nested deeper than %d at byte %d", MaxDepth, h.at)
			}
			depth++
			pending[depth] = h.kids
			continue
		}
		if h.body > remaining {
			return badPayload("msgpack: %s at byte %d declares %d bytes but only %d follow", h.kind, h.at, h.body, remaining)
		}
		i += int(h.body)
	}
	if i != len(b) {
		return badPayload("msgpack: %d trailing bytes after the payload", len(b)-i)
	}
	return nil
}

// header is the decoded head of one msgpack value.
type header struct {
	at   int       // offset of the code byte
	next int       // offset just after the head (code and length bytes)
	kind valueKind // what the value is
	body uint64    // bytes of payload after the head (str, bin, ext, numbers)
	kids uint64    // values inside a container: elements, or 2 per map entry
}

// readHeader reads the head of the value at b[i:]. It checks only that the
// head itself is present, not that the declared body or children are.
func readHeader(b []byte, i int) (header, error) {
	h := header{at: i}
	if i >= len(b) {
		return h, badPayload("msgpack: truncated at byte %d", i)
	}
	c := b[i]
	h.kind = codeKind(c)
	i++
	var size int // bytes of the length field, if any
	switch {
	case c <= 0x7f, c >= 0xe0: // positive and negative fixint
	case c <= 0x8f: // fixmap
		h.kids = 2 * uint64(c&0x0f)
	case c <= 0x9f: // fixarray
		h.kids = uint64(c & 0x0f)
	case c <= 0xbf: // fixstr
		h.body = uint64(c & 0x1f)
	default:
		switch c {
		case 0xc0, 0xc2, 0xc3: // nil, false, true
		case 0xc1:
			return h, badPayload("msgpack: invalid code 0xc1 at byte %d", h.at)
		case 0xc4, 0xd9, 0xc7: // bin8, str8, ext8
			size = 1
		case 0xc5, 0xda, 0xc8, 0xdc, 0xde: // bin16, str16, ext16, array16, map16
			size = 2
		case 0xc6, 0xdb, 0xc9, 0xdd, 0xdf: // bin32, str32, ext32, array32, map32
			size = 4
		case 0xcc, 0xd0: // uint8, int8
			h.body = 1
		case 0xcd, 0xd1: // uint16, int16
			h.body = 2
		case 0xca, 0xce, 0xd2: // float32, uint32, int32
			h.body = 4
		case 0xcb, 0xcf, 0xd3: // float64, uint64, int64
			h.body = 8
		case 0xd4, 0xd5, 0xd6, 0xd7, 0xd8: // fixext 1/2/4/8/16, after a type byte
			h.body = 1 + 1<<(c-0xd4)
		}
	}
	if size > 0 {
		if len(b)-i < size {
			return h, badPayload("msgpack: truncated %s header at byte %d", h.kind, h.at)
		}
		var n uint64
		switch size {
		case 1:
			n = uint64(b[i])
		case 2:
			n = uint64(binary.BigEndian.Uint16(b[i:]))
		default:
			n = uint64(binary.BigEndian.Uint32(b[i:]))
		}
		i += size
		switch h.kind {
		case kindArray:
			h.kids = n
		case kindMap:
			h.kids = 2 * n
		case kindExt:
			h.body = n + 1 // type byte
		default:
			h.body = n
		}
	}
	h.next = i
	return h, nil
}

// skipMsgpack returns the offset just after the value at b[i:]. b must have
// passed checkMsgpack.
func skipMsgpack(b []byte, i int) int {
	for pending := uint64(1); pending > 0; pending-- {
		h, _ := readHeader(b, i)
		i = h.next + int(h.body)
		pending += h.kids
	}
	return i
}

// items yields the values inside the msgpack array or map at the start of b,
// for a map each key and then its value. b must have passed checkMsgpack.
func items(b []byte) iter.Seq[[]byte] {
	return func(yield func([]byte) bool) {
		h, _ := readHeader(b, 0)
		for i, n := h.next, h.kids; n > 0; n-- {
			j := skipMsgpack(b, i)
			if !yield(b[i:j]) {
				return
			}
			i = j
		}
	}
}

// checkJSONDepth rejects JSON text whose objects and arrays nest deeper than
// MaxDepth. It only counts brackets outside strings; well-formedness is left
// to encoding/json, whose memory use is bounded by the input size.
func checkJSONDepth(b []byte) error {
	depth := 0
	inString, escaped := false, false
	for i, c := range b {
		if inString {
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
			continue
		}
		switch c {
		case '"':
			inString = true
		case '{', '[':
			depth++
			if depth > MaxDepth {
				return badPayload("json: nested deeper than %d at byte %d", MaxDepth, i)
			}
		case '}', ']':
			depth--
		}
	}
	return nil
}
