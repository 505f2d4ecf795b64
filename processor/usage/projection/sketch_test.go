package projection

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestSketchCounts: exact up to SparseMax sessions (a session added twice
// counts once), an estimate within 3 standard errors beyond, at every
// size; merging sketches counts the union; a sketch survives its JSON.
func TestSketchCounts(t *testing.T) {
	for _, n := range []int{0, 1, SparseMax, SparseMax + 1, 5000, 200000} {
		var s Sketch
		for i := range n {
			s.Add(HashSession("session-" + strconv.Itoa(i)))
			s.Add(HashSession("session-" + strconv.Itoa(i/2))) // seen before
		}
		got, exact := s.Count()
		if exact != (n <= SparseMax) {
			t.Errorf("%d sessions: exact %v", n, exact)
		}
		if exact && got != n {
			t.Errorf("%d sessions: counted %d exactly", n, got)
		}
		if tolerance := 3 * 1.04 / math.Sqrt(1<<Precision) * float64(n); math.Abs(float64(got-n)) > tolerance {
			t.Errorf("%d sessions: estimated %d, off by more than %.0f", n, got, tolerance)
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var back Sketch
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%d sessions: %.40s: %v", n, b, err)
		}
		if again, _ := back.Count(); again != got {
			t.Errorf("%d sessions: %d after JSON, %d before", n, again, got)
		}
	}

	// Two halves that overlap: the union, exactly while small enough.
	var a, b Sketch
	for i := range 30 {
		a.Add(HashSession(strconv.Itoa(i)))
		b.Add(HashSession(strconv.Itoa(i + 20)))
	}
	sum := a
	sum.merge(&b, mergeSparseMax)
	if n, exact := sum.Count(); n != 50 || !exact {
		t.Errorf("union of 0-29 and 20-49: %d (exact %v), want 50 exactly", n, exact)
	}
	a.merge(&b, 32) // past the bound: a HyperLogLog
	if n, exact := a.Count(); exact || a.p != Precision || n < 48 || n > 52 {
		t.Errorf("union past the sparse bound: %d (exact %v, precision %d), want about 50 estimated at %d", n, exact, a.p, Precision)
	}
}

// splitmix64 is a seeded stream of uniform 64-bit values: session hashes
// without hashing session ids (HashSession's mixing is tested apart).
type splitmix64 uint64

func (x *splitmix64) next() uint64 {
	*x += 0x9e3779b97f4a7c15
	z := uint64(*x)
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// sketchErrorSeeds are the seeds TestSketchWithinTwoPercent measures.
const sketchErrorSeeds = 8

// TestSketchWithinTwoPercent measures the distinct-session estimate's
// error as usage reports it, over sketchErrorSeeds seeds at 2,500 and
// 50,000 sessions of one skill (plus 1,000,000 to show the bound holds
// beyond): all in one hour, and spread over a day, each session seen in
// one to three hours, each hour stored (JSON) and read back and the day
// summed as a report sums it. Every estimate is within 2%; the table of
// the largest error per size is logged (go test -run
// TestSketchWithinTwoPercent -v ./processor/usage/projection).
func TestSketchWithinTwoPercent(t *testing.T) {
	sizes := []int{2500, 50000, 1000000}
	if testing.Short() {
		sizes = sizes[:2]
	}
	var table strings.Builder
	fmt.Fprintf(&table, "%-10s %-16s %s\n", "sessions", "max |error| hour", "max |error| day (24 hours)")
	for _, n := range sizes {
		worstHour, worstDay := 0.0, 0.0
		for seed := range sketchErrorSeeds {
			rng := splitmix64(seed)
			var hour Sketch
			var day [24]Sketch
			for range n {
				h := rng.next()
				hour.Add(h)
				for k := range 1 + rng.next()%3 {
					day[(rng.next()+k)%24].Add(h)
				}
			}
			var sum Sketch
			for i := range day {
				var stored Sketch
				b, err := json.Marshal(day[i])
				if err != nil {
					t.Fatal(err)
				}
				if err := json.Unmarshal(b, &stored); err != nil {
					t.Fatal(err)
				}
				sum.merge(&stored, mergeSparseMax)
			}
			for _, c := range []struct {
				what  string
				s     *Sketch
				worst *float64
			}{{"one hour", &hour, &worstHour}, {"a day", &sum, &worstDay}} {
				got, _ := c.s.Count()
				e := float64(got-n) / float64(n)
				*c.worst = max(*c.worst, math.Abs(e))
				if math.Abs(e) > 0.02 {
					t.Errorf("seed %d, %d sessions in %s: estimated %d, %+.2f%%", seed, n, c.what, got, 100*e)
				}
			}
		}
		fmt.Fprintf(&table, "%-10d %-16s %.2f%%\n", n, fmt.Sprintf("%.2f%%", 100*worstHour), 100*worstDay)
	}
	t.Logf("distinct-session estimates, %d seeds, %d registers:\n%s", sketchErrorSeeds, 1<<Precision, table.String())
}

// TestSketchFold: a HyperLogLog folded to a lower precision holds the
// registers it would hold had its sessions been added at that precision,
// so that sketches of two precisions merge into the lower one's sketch
// of the union.
func TestSketchFold(t *testing.T) {
	rng := splitmix64(7)
	var high, low, other Sketch
	high.densify(Precision)
	low.densify(MinPrecision)
	other.densify(MinPrecision)
	for i := range 20000 {
		h := rng.next()
		if i%2 == 0 {
			high.Add(h)
		} else {
			other.Add(h)
		}
		low.Add(h)
	}
	sum := high
	sum.dense = append([]byte(nil), high.dense...)
	sum.Merge(&other)
	if sum.p != MinPrecision || string(sum.dense) != string(low.dense) {
		t.Fatalf("precision %d, %d registers differ from the sketch made at %d", sum.p, countDiff(sum.dense, low.dense), MinPrecision)
	}
	// The other way round, and the higher one left as it was.
	kept := string(high.dense)
	sum = other
	sum.dense = append([]byte(nil), other.dense...)
	sum.Merge(&high)
	if string(sum.dense) != string(low.dense) || string(high.dense) != kept || high.p != Precision {
		t.Error("merging a higher precision in: not the sketch of the union, or the higher one changed")
	}
}

func countDiff(a, b []byte) int {
	n := 0
	for i := range a {
		if i >= len(b) || a[i] != b[i] {
			n++
		}
	}
	return n
}

// TestSketchReadsEarlierHours: an hour written before the precision rose
// (its dense sketches one byte a register, 512 of them; testdata written
// by that release) reads, counts as it did within the old sketch's
// error, and sums with a new hour into the union at the old precision.
func TestSketchReadsEarlierHours(t *testing.T) {
	b, err := os.ReadFile("testdata/hour_512_registers.json")
	if err != nil {
		t.Fatal(err)
	}
	old, err := DecodeHour(b)
	if err != nil {
		t.Fatal(err)
	}
	busy, few := old.Skills["busy"], old.Skills["few"]
	if busy.Sessions.p != legacyPrecision {
		t.Fatalf("busy: precision %d, want %d", busy.Sessions.p, legacyPrecision)
	}
	if n, exact := few.Sessions.Count(); n != 5 || !exact {
		t.Errorf("few: %d sessions (exact %v), want 5 exactly", n, exact)
	}
	if n, exact := busy.Sessions.Count(); exact || math.Abs(float64(n-500)) > 3*0.046*500 {
		t.Errorf("busy: %d sessions (exact %v), want about 500", n, exact)
	}

	// Sessions legacy-0..499 then; legacy-250..2249 in the next hour.
	at := time.Unix(old.Hour, 0).Add(time.Hour)
	h := newHour(old.Gen, at)
	for i := 250; i < 2250; i++ {
		h.row("busy").Sessions.Add(HashSession("legacy-" + strconv.Itoa(i)))
	}
	m := newMerger(old.Gen)
	m.merge(HourKey(time.Unix(old.Hour, 0)), old)
	m.merge(HourKey(at), h)
	rep := m.report()
	for _, r := range rep.Skills {
		if r.Name == "busy" && (!r.SessionsEstimated || math.Abs(float64(r.Sessions-2250)) > 3*0.046*2250) {
			t.Errorf("busy over both hours: %d (estimated %v), want about 2,250", r.Sessions, r.SessionsEstimated)
		}
	}
	// Written again, the old hour keeps its registers in the new format.
	again, err := old.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeHour(again)
	if err != nil || back.Skills["busy"].Sessions.p != legacyPrecision || string(back.Skills["busy"].Sessions.dense) != string(busy.Sessions.dense) {
		t.Errorf("re-encoded: %v", err)
	}
}

// TestSketchRefusesBadJSON: anything but a sketch's own encoding is an
// error, never a sketch.
func TestSketchRefusesBadJSON(t *testing.T) {
	enc := func(b ...byte) string { return `"` + base64.RawStdEncoding.EncodeToString(b) + `"` }
	hll := func(p byte, fill byte) []byte {
		b := append([]byte{'h', p}, make([]byte, packedLen(p))...)
		for i := 2; i < len(b); i++ {
			b[i] = fill
		}
		return b
	}
	for _, in := range []string{`12`, `"!!"`, `"eA"`, `"cwEC"`, `"ZAE"`, `"cwAAAAAAAAACAAAAAAAAAAE"`,
		enc('h'),                                // no precision
		enc(hll(Precision, 0)[:100]...),         // short
		enc(hll(3, 0)...),                       // precision too low
		enc(hll(17, 0)...),                      // precision too high
		enc(append(hll(MinPrecision, 0), 0)...), // a byte too many
		enc(hll(Precision, 0xff)...),            // registers of 63, above the largest rank
		enc(append([]byte{'d'}, make([]byte, 511)...)...),
		enc(append([]byte{'d', 57}, make([]byte, 511)...)...), // a register above 56
	} {
		var s Sketch
		if err := json.Unmarshal([]byte(in), &s); err == nil {
			t.Errorf("%.60s read as a sketch", in)
		}
	}
}

// TestSketchJSON: a sketch is one JSON string, the base64 (no padding) of
// its tag and its hashes or registers (6 bits each after the precision).
func TestSketchJSON(t *testing.T) {
	var empty, sparse, dense Sketch
	sparse.Add(1)
	sparse.Add(2)
	for i := range SparseMax + 1 {
		dense.Add(HashSession("s" + strconv.Itoa(i)))
	}
	if dense.dense == nil {
		t.Fatal("not dense past SparseMax")
	}
	packed := []byte{'h', Precision}
	for i := 0; i < len(dense.dense); i += 4 {
		r := dense.dense[i : i+4]
		packed = append(packed, r[0]<<2|r[1]>>4, r[1]<<4|r[2]>>2, r[2]<<6|r[3])
	}
	if len(packed) != 2+24<<10 {
		t.Fatalf("%d bytes packed", len(packed))
	}
	want := map[string]string{
		"empty":  `""`,
		"sparse": `"` + base64.RawStdEncoding.EncodeToString([]byte{'s', 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2}) + `"`,
		"dense":  `"` + base64.RawStdEncoding.EncodeToString(packed) + `"`,
	}
	for name, s := range map[string]Sketch{"empty": empty, "sparse": sparse, "dense": dense} {
		b, err := json.Marshal(struct{ S Sketch }{s})
		if err != nil {
			t.Fatal(err)
		}
		if got := string(b); got != `{"S":`+want[name]+`}` {
			t.Errorf("%s: %.80s, want %.80s", name, got, want[name])
		}
		var back struct{ S Sketch }
		n, _ := s.Count()
		err = json.Unmarshal(b, &back)
		if got, _ := back.S.Count(); err != nil || got != n || string(back.S.dense) != string(s.dense) {
			t.Errorf("%s: read back %v, count %d of %d", name, err, got, n)
		}
	}
}

// FuzzSketchJSON: whatever a stored sketch holds, reading it never
// panics, and a sketch read is written back as a sketch that reads the
// same and counts the same.
func FuzzSketchJSON(f *testing.F) {
	var dense, legacy Sketch
	dense.densify(MinPrecision)
	legacy.densify(legacyPrecision)
	for i := range 100 {
		dense.Add(HashSession(strconv.Itoa(i)))
		legacy.Add(HashSession(strconv.Itoa(i)))
	}
	d, _ := json.Marshal(dense)
	f.Add(d)
	f.Add([]byte(`"` + base64.RawStdEncoding.EncodeToString(append([]byte{'d'}, legacy.dense...)) + `"`))
	f.Add([]byte(`"cwAAAAAAAAABAAAAAAAAAAI"`))
	f.Add([]byte(`""`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var s Sketch
		if err := json.Unmarshal(b, &s); err != nil {
			return
		}
		n, exact := s.Count()
		out, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var back Sketch
		if err := json.Unmarshal(out, &back); err != nil {
			t.Fatalf("%s read, %s written, not read back: %v", b, out, err)
		}
		if m, e := back.Count(); m != n || e != exact || n < 0 {
			t.Fatalf("%s: %d (exact %v), written and read back %d (%v)", b, n, exact, m, e)
		}
	})
}
