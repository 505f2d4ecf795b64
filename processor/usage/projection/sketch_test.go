package projection

import (
	"encoding/base64"
	"encoding/json"
	"math"
	"strconv"
	"testing"
)

// TestSketchCounts: exact up to SparseMax sessions (a session added twice
// counts once), an estimate within 3 standard errors beyond, at every
// size; merging sketches counts the union; a sketch survives its JSON.
func TestSketchCounts(t *testing.T) {
	for _, n := range []int{0, 1, SparseMax, SparseMax + 1, 100, 1000, 10000, 200000} {
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
		if tolerance := 3 * 1.04 / math.Sqrt(registers) * float64(n); math.Abs(float64(got-n)) > tolerance {
			t.Errorf("%d sessions: estimated %d, off by more than %.0f", n, got, tolerance)
		}
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var back Sketch
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%d sessions: %s: %v", n, b, err)
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
	a.Merge(&b) // in an hour: past SparseMax
	if n, exact := a.Count(); exact || math.Abs(float64(n-50)) > 10 {
		t.Errorf("union in an hour: %d (exact %v), want about 50, estimated", n, exact)
	}
}

// TestSketchRefusesBadJSON: anything but a sketch's own encoding is an
// error, never a sketch.
func TestSketchRefusesBadJSON(t *testing.T) {
	for _, in := range []string{`12`, `"!!"`, `"eA"`, `"cwEC"`, `"ZAE"`, `"cwAAAAAAAAACAAAAAAAAAAE"`} {
		var s Sketch
		if err := json.Unmarshal([]byte(in), &s); err == nil {
			t.Errorf("%s read as a sketch", in)
		}
	}
}

// TestSketchJSON: a sketch is one JSON string, the base64 (no padding) of
// its tag and its hashes or registers, as hours already stored hold it.
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
	want := map[string]string{
		"empty":  `""`,
		"sparse": `"` + base64.RawStdEncoding.EncodeToString([]byte{'s', 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2}) + `"`,
		"dense":  `"` + base64.RawStdEncoding.EncodeToString(append([]byte{'d'}, dense.dense...)) + `"`,
	}
	for name, s := range map[string]Sketch{"empty": empty, "sparse": sparse, "dense": dense} {
		b, err := json.Marshal(struct{ S Sketch }{s})
		if err != nil {
			t.Fatal(err)
		}
		if got := string(b); got != `{"S":`+want[name]+`}` {
			t.Errorf("%s: %s, want %s", name, got, want[name])
		}
		var back struct{ S Sketch }
		n, _ := s.Count()
		err = json.Unmarshal(b, &back)
		if got, _ := back.S.Count(); err != nil || got != n {
			t.Errorf("%s: read back %v, count %d of %d", name, err, got, n)
		}
	}
}
