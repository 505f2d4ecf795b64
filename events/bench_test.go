package events

import (
	"fmt"
	"strings"
	"testing"
)

// Benchmarks of Encode and Decode for every payload sample in both
// encodings:
//
//	go test ./events -run XXX -bench . -benchmem
func BenchmarkEncode(b *testing.B) {
	all := samples()
	for _, name := range sampleNames() {
		v := all[name]
		for _, enc := range []Encoding{Msgpack, JSON} {
			b.Run(name+"/"+enc.String(), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := Encode(enc, v); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkDecode(b *testing.B) {
	all := samples()
	for _, name := range sampleNames() {
		v := all[name]
		for _, enc := range []Encoding{Msgpack, JSON} {
			data, err := Encode(enc, v)
			if err != nil {
				b.Fatal(err)
			}
			b.Run(name+"/"+enc.String(), func(b *testing.B) {
				b.ReportAllocs()
				b.SetBytes(int64(len(data)))
				for b.Loop() {
					if _, err := decodeAny(enc, v, data); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkRejectHugeHeader measures refusing an array32 header that
// declares 2^32-1 elements.
func BenchmarkRejectHugeHeader(b *testing.B) {
	data := []byte{0xdd, 0xff, 0xff, 0xff, 0xff}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := DecodePreStep(Msgpack, data); err == nil {
			b.Fatal("accepted")
		}
	}
}

// BenchmarkLargeCatalog encodes and decodes a catalog of 1,000 entries, the
// size the catalog size limit allows, whole and from its shared body.
func BenchmarkLargeCatalog(b *testing.B) {
	src := CatalogSource{Kind: SourceKindCatalog, Producer: "skillstream", Update: "initial", Digest: "d"}
	for i := range 1000 {
		src.Entries = append(src.Entries, Entry{Name: fmt.Sprintf("bench-skill-%04d", i)})
	}
	cat := Catalog{V: Version, Session: "s", Step: "1", ID: "s:1:catalog.append", Role: "user", Text: strings.Repeat("- `bench-skill-0000`\n", 1000), Source: src}
	data, err := Encode(Msgpack, cat)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Encode(Msgpack, cat); err != nil {
				b.Fatal(err)
			}
		}
	})
	body, err := NewCatalogBody(cat.Text, cat.Source)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("encode-from-body", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := body.Encode("s", "1", "s:1:catalog.append"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(data)))
		for b.Loop() {
			if _, err := DecodeCatalog(Msgpack, data); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkNewCatalogBody1000 encodes the body of a catalog listing 1,000
// skills: once per view of a working directory.
func BenchmarkNewCatalogBody1000(b *testing.B) {
	entries := make([]Entry, 1000)
	var text strings.Builder
	for i := range entries {
		entries[i] = Entry{Name: fmt.Sprintf("skill-%04d", i), Description: fmt.Sprintf("Use when the task involves area %d of the benchmark project.", i)}
		fmt.Fprintf(&text, "- `%s`: %s\n", entries[i].Name, entries[i].Description)
	}
	src := CatalogSource{Kind: SourceKindCatalog, Producer: "skillstream", Update: "initial", Entries: entries, Digest: "d"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := NewCatalogBody(text.String(), src); err != nil {
			b.Fatal(err)
		}
	}
}
