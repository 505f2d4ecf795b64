package history

import (
	"testing"

	"github.com/skillstream/skillstream/catalog"
)

func TestSurfaceAndHistory(t *testing.T) {
	// Catalogs of ours at 5 and 10; compactions at 20.
	newest, older := Catalog{Record: Record{Seq: 10}, Digest: "new"}, Catalog{Record: Record{Seq: 5}, Digest: "old"}
	cases := []struct {
		name  string
		marks []Catalog
		comp  *Surface
		want  catalog.History
	}{
		{"nothing published", nil, nil, catalog.History{}},
		{"no compaction", []Catalog{newest}, nil, catalog.History{Published: true, Visible: true, Digest: "new"}},
		{"retained", []Catalog{newest}, &Surface{Seq: 20, RetainFrom: 10}, catalog.History{Published: true, Visible: true, Digest: "new"}},
		{"masked", []Catalog{newest}, &Surface{Seq: 20, RetainFrom: 11}, catalog.History{Published: true}},
		{"masked but kept", []Catalog{newest}, &Surface{Seq: 20, RetainFrom: 15, Keep: []uint64{3, 10}}, catalog.History{Published: true, Visible: true, Digest: "new"}},
		{"newest masked, older kept", []Catalog{newest, older}, &Surface{Seq: 20, RetainFrom: 15, Keep: []uint64{5}}, catalog.History{Published: true, Visible: true, Digest: "old"}},
		{"after the compaction", []Catalog{{Record: Record{Seq: 25}, Digest: "later"}}, &Surface{Seq: 20, RetainFrom: 30}, catalog.History{Published: true, Visible: true, Digest: "later"}},
		{"compaction itself", []Catalog{{Record: Record{Seq: 20}, Digest: "x"}}, &Surface{Seq: 20, RetainFrom: 30}, catalog.History{Published: true, Visible: true, Digest: "x"}},
	}
	for _, c := range cases {
		if got, _ := Of(c.marks, c.comp); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
	}
	var none *Surface
	if none.Masks(1) {
		t.Error("no compaction masks nothing")
	}
}
