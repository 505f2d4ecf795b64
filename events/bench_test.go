package events

import "testing"

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
