package store

import (
	"slices"
	"testing"
)

// The numbering of a key's kept entries from what they record: anchored
// by the first recorded number that leaves room for the entries before
// it, counted from 1 without one, never going back or repeating whatever
// the records claim.
func TestNumber(t *testing.T) {
	for _, c := range []struct {
		what     string
		recorded []uint64
		want     []uint64
		counted  bool
	}{
		{"nothing kept", nil, []uint64{}, false},
		{"all recorded", []uint64{1, 2, 3}, []uint64{1, 2, 3}, false},
		{"oldest dropped", []uint64{5, 6, 7}, []uint64{5, 6, 7}, false},
		{"a removal between", []uint64{1, 2, 0, 4}, []uint64{1, 2, 3, 4}, false},
		{"a removal oldest kept", []uint64{0, 7}, []uint64{6, 7}, false},
		{"a removal newest", []uint64{3, 0}, []uint64{3, 4}, false},
		{"a removal alone", []uint64{0}, []uint64{1}, true},
		{"none recorded", []uint64{0, 0, 0}, []uint64{1, 2, 3}, true},
		{"old records then recorded", []uint64{0, 0, 0, 4}, []uint64{1, 2, 3, 4}, false},
		{"old records dropped, anchored", []uint64{0, 0, 4}, []uint64{2, 3, 4}, false},
		{"an old record after recorded ones", []uint64{4, 5, 0, 7}, []uint64{4, 5, 6, 7}, false},
		{"a claim with no room before it", []uint64{0, 0, 1, 9}, []uint64{6, 7, 8, 9}, false},
		{"a claim going back", []uint64{3, 4, 2, 9}, []uint64{3, 4, 5, 9}, false},
		{"a repeated claim", []uint64{3, 3, 3}, []uint64{3, 4, 5}, false},
		{"a claim past the bound", []uint64{1, maxRev + 1}, []uint64{1, 2}, false},
		{"only claims past the bound", []uint64{maxRev + 1, 1 << 63}, []uint64{1, 2}, true},
		{"at the bound", []uint64{maxRev, 0}, []uint64{maxRev, maxRev + 1}, false},
	} {
		got, counted := number(c.recorded)
		if !slices.Equal(got, c.want) || counted != c.counted {
			t.Errorf("%s: number(%v) = %v counted %v, want %v counted %v", c.what, c.recorded, got, counted, c.want, c.counted)
		}
	}
}

// Whatever the records claim, the numbers start at 1 or later and rise
// by at least one per entry.
func FuzzNumber(f *testing.F) {
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0})
	f.Add([]byte{255, 255, 255, 255, 255, 255, 255, 255, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		var recorded []uint64
		for i := 0; i+8 <= len(data) && len(recorded) < 64; i += 8 {
			var r uint64
			for _, b := range data[i : i+8] {
				r = r<<8 | uint64(b)
			}
			recorded = append(recorded, r)
		}
		nums, _ := number(recorded)
		for i, n := range nums {
			if n < 1 || (i > 0 && n <= nums[i-1]) {
				t.Fatalf("number(%v) = %v", recorded, nums)
			}
		}
	})
}
