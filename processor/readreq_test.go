package processor

import (
	"bytes"
	"encoding/json"
	"testing"
)

// The hand-written multi-last request is the JSON encoding/json writes,
// for plain subjects and for subjects that need escaping.
func TestMultiLastRequestIsJSON(t *testing.T) {
	for _, c := range []struct {
		filters    []string
		from, upTo uint64
	}{
		{[]string{"skillstream.s-1.agent.pre-step", "skillstream.s-1.catalog.append", "skillstream.s-1.context.compact"}, 0, 0},
		{[]string{"skillstream.s-1.agent.pre-step", "skillstream.s-1.catalog.>"}, 987, 0},
		{[]string{"p.s.>"}, 0, 12345678901},
		{[]string{"p.s.>"}, 18446744073709551615, 12},
		{[]string{"a.*.b"}, 0, 1},
		{[]string{`we"ird`, `back\slash`, "<html>&", "tab\there", "ü", "\x7f"}, 3, 0},
		{nil, 0, 0},
		{nil, 5, 0},
	} {
		want, err := json.Marshal(directRequest{Seq: c.from, MultiLast: c.filters, UpToSeq: c.upTo})
		if err != nil {
			t.Fatal(err)
		}
		got, err := multiLastRequest(c.filters, c.from, c.upTo)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("multiLastRequest(%q, %d, %d) = %s, %v; want %s", c.filters, c.from, c.upTo, got, err, want)
		}
	}
}

func FuzzMultiLastRequest(f *testing.F) {
	f.Add("skillstream.s-1.agent.pre-step", "x\"y", uint64(0), uint64(0))
	f.Add("skillstream.s-1.agent.pre-step", "skillstream.s-1.catalog.>", uint64(41), uint64(0))
	f.Fuzz(func(t *testing.T, a, b string, from, upTo uint64) {
		filters := []string{a, b}
		want, err := json.Marshal(directRequest{Seq: from, MultiLast: filters, UpToSeq: upTo})
		if err != nil {
			t.Skip()
		}
		got, err := multiLastRequest(filters, from, upTo)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("multiLastRequest(%q, %d, %d) = %s, %v; want %s", filters, from, upTo, got, err, want)
		}
	})
}
