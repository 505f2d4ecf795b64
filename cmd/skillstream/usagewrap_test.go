package main

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestUsageWrapsLongLists: a catalog of 300 skills of which one was
// loaded, and 40 searches that found nothing: usage lists the 299 never
// used and the 40 queries under their headings, in aligned columns, no
// line of them wider than 100 columns, each name once (a list that fits
// on its heading's line stays there, as TestUsageCountsRecordedWorkload
// checks).
func TestUsageWrapsLongLists(t *testing.T) {
	l, url := newUsageLog(t)
	var names []string
	for i := range 300 {
		name := fmt.Sprintf("skill-%03d", i)
		if i%7 == 0 {
			name += "-with-a-longer-name"
		}
		names = append(names, name)
	}
	l.catalog("s1", "initial", names...)
	l.load("s1", "c1", names[0], "d1", 1)
	for i := range 40 {
		l.search("s1", fmt.Sprintf("q%d", i), fmt.Sprintf("query number %d about ünïcode", i))
	}

	code, stdout, stderr := runMain(t, "usage", "--nats-url", url)
	if code != exitOK {
		t.Fatalf("usage: exit %d\n%s", code, stderr)
	}
	t.Logf("usage:\n%s", stdout)
	lines := strings.Split(stdout, "\n")
	listed := func(heading string) []string {
		t.Helper()
		at := slices.Index(lines, heading)
		if at < 0 {
			t.Fatalf("no line %q:\n%s", heading, stdout)
		}
		var items []string
		for _, l := range lines[at+1:] {
			if !strings.HasPrefix(l, "  ") {
				break
			}
			if n := utf8.RuneCountInString(l); n > 100 {
				t.Errorf("under %q, a line of %d columns:\n%s", heading, n, l)
			}
			items = append(items, regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(l), -1)...)
		}
		return items
	}
	never := listed("listed, never used (299):")
	slices.Sort(never)
	if want := names[1:]; !slices.Equal(never, want) {
		t.Errorf("listed as never used: %d names, want the %d of the catalog but the one loaded:\n%v", len(never), len(want), never)
	}
	queries := listed("found nothing (40):")
	if len(queries) != 40 || !slices.Contains(queries, `"query number 39 about ünïcode"`) {
		t.Errorf("queries that found nothing: %d: %v", len(queries), queries)
	}
	// Sorted down the columns: the first rows start with the first names.
	at := slices.Index(lines, "listed, never used (299):")
	if first := strings.Fields(lines[at+1])[0]; first != names[1] {
		t.Errorf("the first name under the heading is %q, want %q", first, names[1])
	}
	if second := strings.Fields(lines[at+2])[0]; second != names[2] {
		t.Errorf("the second row starts with %q, want %q (sorted down each column)", second, names[2])
	}
	// Every row's columns start where the first row's do.
	starts := func(l string) []int {
		var s []int
		rs := []rune(l)
		for i, r := range rs {
			if r != ' ' && rs[i-1] == ' ' && (i < 2 || rs[i-2] == ' ') {
				s = append(s, i)
			}
		}
		return s
	}
	want := starts(lines[at+1])
	for _, l := range lines[at+2:] {
		if !strings.HasPrefix(l, "  ") {
			break
		}
		if got := starts(l); !slices.Equal(got, want[:len(got)]) {
			t.Errorf("columns at %v, the first row's at %v:\n%s\n%s", got, want, lines[at+1], l)
		}
	}
}
