package usage

import (
	"context"
	"reflect"
	"testing"

	"github.com/skillstream/skillstream/events"
)

// An OutputReader counts every catalog as ReadOutput does, decoding each
// body once.
func TestOutputReaderRemembersBodies(t *testing.T) {
	body, err := events.NewCatalogBody("<available_skills>\n- `pdf`\n</available_skills>", events.CatalogSource{
		Kind: "skill-catalog", Producer: "p", Update: "replacement", Digest: "d",
		Entries: []events.Entry{{Name: "pdf", Description: "PDFs"}, {Name: "Not A Name", Description: "x"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	empty, err := events.NewCatalogBody("<available_skills>\n</available_skills>", events.CatalogSource{Kind: "skill-catalog", Update: "replacement"})
	if err != nil {
		t.Fatal(err)
	}
	enc := func(b *events.CatalogBody, sid, step string) []byte {
		data, err := b.Encode(sid, step, sid+":"+step+":catalog.append")
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	cases := []struct {
		name, subject string
		data          []byte
	}{
		{"first", "ev.s1.catalog.append", enc(body, "s1", "1")},
		{"same body, other session", "ev.s2.catalog.append", enc(body, "s2", "4")},
		{"same body, session not the subject's", "ev.s3.catalog.append", enc(body, "s2", "5")},
		{"same body, no step", "ev.s4.catalog.append", enc(body, "s4", "")},
		{"same body, bad session", "ev.s5.catalog.append", enc(body, "bad session", "1")},
		{"tombstone", "ev.s1.catalog.append", enc(empty, "s1", "2")},
		{"tombstone again", "ev.s6.catalog.append", enc(empty, "s6", "1")},
		{"not a catalog", "ev.s1.catalog.append", []byte{0x80}},
	}
	r := NewOutputReader()
	ctx := context.Background()
	for _, c := range cases {
		want := ReadOutput(ctx, nil, events.LayoutFlat, "ev", c.subject, events.ContentTypeMsgpack, c.data)
		got := r.Read(ctx, nil, events.LayoutFlat, "ev", c.subject, events.ContentTypeMsgpack, c.data)
		if got.Kind == OutputCatalog && got.ListedKey == "" {
			t.Errorf("%s: no listed key", c.name)
		}
		got.ListedKey = ""
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.name, got, want)
		}
	}
	if r.Misses != 2 || r.Hits != 5 {
		t.Errorf("decoded %d bodies and recognised %d, want 2 and 5", r.Misses, r.Hits)
	}
}
