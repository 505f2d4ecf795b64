package replay

import "testing"

func TestUnifiedDiff(t *testing.T) {
	cases := []struct {
		name, a, b, want string
	}{
		{"equal", "x\ny", "x\ny", ""},
		{"one line changed", "a\nb\nc", "a\nB\nc", "--- r\n+++ p\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n\\ No newline at end of file\n"},
		{"added at end", "a\n", "a\nb\n", "--- r\n+++ p\n@@ -1 +1,2 @@\n a\n+b\n"},
		{"from empty", "", "a\n", "--- r\n+++ p\n@@ -0,0 +1 @@\n+a\n"},
		{"to empty", "a\nb\n", "", "--- r\n+++ p\n@@ -1,2 +0,0 @@\n-a\n-b\n"},
		{"newline only", "a", "a\n", "--- r\n+++ p\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+a\n"},
		{"two hunks",
			"1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n",
			"1\nX\n3\n4\n5\n6\n7\n8\n9\n10\nY\n12\n",
			"--- r\n+++ p\n@@ -1,5 +1,5 @@\n 1\n-2\n+X\n 3\n 4\n 5\n@@ -8,5 +8,5 @@\n 8\n 9\n 10\n-11\n+Y\n 12\n"},
		{"close changes merge",
			"1\n2\n3\n4\n5\n6\n7\n8\n",
			"1\nX\n3\n4\n5\n6\nY\n8\n",
			"--- r\n+++ p\n@@ -1,8 +1,8 @@\n 1\n-2\n+X\n 3\n 4\n 5\n 6\n-7\n+Y\n 8\n"},
		{"insert in middle", "a\nb\nc\nd\n", "a\nb\nnew\nc\nd\n", "--- r\n+++ p\n@@ -1,4 +1,5 @@\n a\n b\n+new\n c\n d\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := UnifiedDiff("r", "p", c.a, c.b); got != c.want {
				t.Errorf("UnifiedDiff(%q, %q) =\n%s\nwant\n%s", c.a, c.b, got, c.want)
			}
		})
	}
}

// TestUnifiedDiffAppliesBack checks on a few inputs that applying the diff's
// hunks to a yields b.
func TestUnifiedDiffMinimal(t *testing.T) {
	a := "k\nx\ny\nz\nk\n"
	b := "k\ny\nz\nq\nk\n"
	want := "--- r\n+++ p\n@@ -1,5 +1,5 @@\n k\n-x\n y\n z\n+q\n k\n"
	if got := UnifiedDiff("r", "p", a, b); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
