package events

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// decodeBoth reads one entry from b with decodeEntry and with the
// library's struct decoder (refuseNil), as the payload decoders would:
// only input that passes the bounds check is decoded.
func decodeBoth(b []byte) (fast, slow Entry, fastErr, slowErr error, ok bool) {
	if checkMsgpack(b) != nil {
		return fast, slow, nil, nil, false
	}
	fastErr = decodeEntry(msgpack.NewDecoder(bytes.NewReader(b)), reflect.ValueOf(&fast).Elem())
	slowErr = refuseNil[entryFields](msgpack.NewDecoder(bytes.NewReader(b)), reflect.ValueOf(&slow).Elem())
	return fast, slow, fastErr, slowErr, true
}

func entrySeeds(t testing.TB) [][]byte {
	enc := func(v any) []byte {
		b, err := msgpack.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return [][]byte{
		enc(Entry{Name: "a-skill", Description: "Does a."}),
		enc(map[string]any{"name": "a", "description": nil}),
		enc(map[string]any{"name": "a", "other": []int{1, 2}, "description": "d"}),
		enc(map[string]any{"name": 7}),
		enc(map[string]any{"name": []byte("bin")}),
		enc(map[any]any{1: "x"}),
		enc([]any{"a", "d"}), // a struct's array form
		enc(nil),
		enc("text"),
		{0x82, 0xa4, 'n', 'a', 'm', 'e', 0xa1, 'x', 0xa4, 'n', 'a', 'm', 'e', 0xa1, 'y'}, // a key twice
		{0x81, 0xa4, 'n', 'a', 'm', 'e'},                                                 // cut short
	}
}

// The entry decoder reads what the library's struct decoder reads, refuses
// what it refuses, and gives the same entry.
func TestDecodeEntryMatchesStructDecoder(t *testing.T) {
	for _, b := range entrySeeds(t) {
		fast, slow, fe, se, ok := decodeBoth(b)
		if !ok {
			continue
		}
		if (fe == nil) != (se == nil) || fast != slow {
			t.Errorf("%x: decodeEntry = %+v, %v; struct decoder = %+v, %v", b, fast, fe, slow, se)
		}
	}
}

func FuzzDecodeEntry(f *testing.F) {
	for _, b := range entrySeeds(f) {
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		fast, slow, fe, se, ok := decodeBoth(b)
		if ok && ((fe == nil) != (se == nil) || (fe == nil && fast != slow)) {
			t.Fatalf("%x: decodeEntry = %+v, %v; struct decoder = %+v, %v", b, fast, fe, slow, se)
		}
	})
}
