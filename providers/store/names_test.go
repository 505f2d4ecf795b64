package store_test

import (
	"strings"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
)

// Every name a catalog accepts is one the store can hold (the store's
// alphabet is wider; the provider checks both), so no valid skill is ever
// refused by the store's format.
func TestCatalogNamesAreStoreNames(t *testing.T) {
	if catalog.MaxNameLength > skillstore.MaxNameLength {
		t.Fatalf("catalog names may be %d bytes, store names %d", catalog.MaxNameLength, skillstore.MaxNameLength)
	}
	check := func(n string) {
		if catalog.ValidName(n) && !skillstore.ValidName(n) {
			t.Errorf("%q: a valid skill name the store refuses", n)
		}
	}
	alphabet := "az09-A._/ \x00"
	var walk func(prefix string, depth int)
	walk = func(prefix string, depth int) {
		check(prefix)
		if depth == 0 {
			return
		}
		for _, c := range alphabet {
			walk(prefix+string(c), depth-1)
		}
	}
	walk("", 4)
	check(strings.Repeat("a", catalog.MaxNameLength))
	check(strings.Repeat("a-", catalog.MaxNameLength/2-1) + "a")
}

func FuzzCatalogNamesAreStoreNames(f *testing.F) {
	f.Add("pdf-tools")
	f.Fuzz(func(t *testing.T, n string) {
		if catalog.ValidName(n) && !skillstore.ValidName(n) {
			t.Fatalf("%q: a valid skill name the store refuses", n)
		}
	})
}
