package events

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// decoders lists every Decode function, for fuzzing.
var decoders = []func(Encoding, []byte) (any, error){
	preStep, skillCall, compaction, catalog, toolResult, decision, toolDefinition, catalogHead, skillSearch, toolDefinitions,
}

// FuzzDecode feeds arbitrary bytes to every decoder in both encodings. It
// must never panic; whatever decodes must survive encode/decode/encode
// unchanged; the validator must agree with the msgpack reader on where a value
// ends; and memory allocated must stay proportional to the input.
func FuzzDecode(f *testing.F) {
	msgpackFiles, err1 := filepath.Glob(filepath.Join("testdata", "*.msgpack"))
	jsonFiles, err2 := filepath.Glob(filepath.Join("testdata", "*.json"))
	if err := errors.Join(err1, err2); err != nil || len(msgpackFiles) == 0 || len(jsonFiles) == 0 {
		f.Fatal("no fixtures to seed from", err)
	}
	for _, path := range append(msgpackFiles, jsonFiles...) {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte{0xdd, 0xff, 0xff, 0xff, 0xff})
	f.Add([]byte{0x81, 0xa1, 'v', 0xdb, 0x7f, 0xff, 0xff, 0xff})
	f.Add([]byte(`{"v":1,"session":"s","step":{}}`))
	f.Add([]byte(`{"v":1,"session":"s","call":12,"args":{"name":"x"}}`))
	f.Add([]byte(`{"v":1,"session":"s","call":"c","args":{"query":"pdf","limit":"5","offset":-1.5,"more":[1]}}`))
	f.Add([]byte(`{"v":1,"session":"s","call":"c","args":{"query":["a"],"limit":{"a":1},"offset":1e300}}`))
	f.Add([]byte(`[{"name":"skill","description":"d","parameters":{}}]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		if err := checkMsgpack(b); err == nil {
			// The msgpack reader must consume exactly the bytes the
			// validator accepted.
			d := msgpack.NewDecoder(bytes.NewReader(b))
			if err := d.Skip(); err != nil {
				t.Fatalf("validator accepted %x but msgpack cannot skip it: %v", b, err)
			}
			if _, err := d.PeekCode(); err == nil {
				t.Fatalf("validator accepted %x but msgpack stops early", b)
			}
		}
		for _, enc := range []Encoding{Msgpack, JSON} {
			for _, decode := range decoders {
				v, err := decode(enc, b)
				if err != nil {
					if !errors.Is(err, ErrBadPayload) {
						t.Fatalf("%v: error %v does not match ErrBadPayload", enc, err)
					}
					continue
				}
				again, err := Encode(enc, v)
				if err != nil {
					t.Fatalf("%v: re-encode %#v: %v", enc, v, err)
				}
				w, err := decode(enc, again)
				if err != nil {
					t.Fatalf("%v: decode of re-encoded %q: %v", enc, again, err)
				}
				// Encoding is canonical from here on (nil lists become
				// empty ones, raw JSON is compacted): a second round
				// trip must not change a byte.
				third, err := Encode(enc, w)
				if err != nil {
					t.Fatalf("%v: re-encode %#v: %v", enc, w, err)
				}
				if !bytes.Equal(again, third) {
					t.Fatalf("%v: round trip changed\n%q\n%q", enc, again, third)
				}
			}
		}
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for _, decode := range decoders {
			_, _ = decode(Msgpack, b)
			_, _ = decode(JSON, b)
		}
		runtime.ReadMemStats(&after)
		if allocated := after.TotalAlloc - before.TotalAlloc; allocated > 2*uint64(len(decoders))*(64*uint64(len(b))+64<<10) {
			t.Fatalf("decoding %d bytes allocated %d bytes", len(b), allocated)
		}
	})
}

// TestValidatorRejectsEveryTruncation: no strict prefix of a fixture is a
// complete msgpack value, whatever the cut.
func TestValidatorRejectsEveryTruncation(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.msgpack"))
	if err != nil || len(files) == 0 {
		t.Fatal("no msgpack fixtures", err)
	}
	for _, path := range files {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkMsgpack(b); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		for n := range len(b) {
			if err := checkMsgpack(b[:n]); err == nil {
				t.Errorf("%s cut to %d of %d bytes passes the validator", path, n, len(b))
			}
		}
	}
}
