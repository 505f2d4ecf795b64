package search_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers/search"
)

// FuzzSearch searches the evaluation skills with any text: no panic, at
// most limit matches, a total at least the matches shown, no match twice,
// and the same answer twice.
func FuzzSearch(f *testing.F) {
	for _, s := range []string{"", "pdf", "terraform plan", "k8s pod OOMKilled", "don't won't team's", "ÄÖÜ größe ﬁle", "a-b-c--d", "'s '' ’", "\x00\xff\xfe", "configuration config configur"} {
		f.Add(s, 8, 0)
	}
	f.Add("review", 3, 2)
	f.Add("the", 16, 100000)
	ix, _ := newIndex(f, search.Options{}, newMemory(evalSkills(f)))
	f.Fuzz(func(t *testing.T, text string, limit, offset int) {
		ctx := context.Background()
		r, err := ix.Search(ctx, catalog.At("/w"), text, limit, offset)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Matches) > max(limit, 0) || r.Total < len(r.Matches) || !r.Complete {
			t.Fatalf("limit %d: %d matches, total %d, complete %v", limit, len(r.Matches), r.Total, r.Complete)
		}
		seen := make(map[string]bool)
		for _, m := range r.Matches {
			if seen[m.Name] {
				t.Fatalf("%s twice", m.Name)
			}
			seen[m.Name] = true
		}
		again, err := ix.Search(ctx, catalog.At("/w"), text, limit, offset)
		if err != nil || !reflect.DeepEqual(r, again) {
			t.Fatalf("second search differs: %v / %v, %v", names(r), names(again), err)
		}
	})
}
