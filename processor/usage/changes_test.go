package usage_test

import (
	"context"
	"testing"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/usage"
)

// TestReadChangeLists: catalog bytes are reported by kind, change lists
// apart from full lists, and the skills a change list adds count as
// listed.
func TestReadChangeLists(t *testing.T) {
	l := &searchLog{t: t, js: sessionStream(t)}
	full := events.Catalog{V: 1, Session: "s1", Step: "1", ID: "1", Role: "user", Text: "0123456789",
		Source: events.CatalogSource{Kind: events.SourceKindCatalog, Producer: "skillstream", Update: "initial",
			Entries: []events.Entry{{Name: "a-skill", Description: "A."}}, Digest: "d1"}}
	base := l.pub("s1", events.KindCatalog, events.Msgpack, full)
	for i, ch := range []events.Change{{Name: "b-skill", Change: events.ChangeAdded, Description: "B."}, {Name: "a-skill", Change: events.ChangeRemoved}} {
		l.pub("s1", events.KindCatalog, events.Msgpack, events.Catalog{V: 1, Session: "s1", Step: string(rune('2' + i)), ID: "x", Role: "user", Text: "abc",
			Source: events.CatalogSource{Kind: events.SourceKindCatalog, Producer: "skillstream", Update: events.UpdateChanges,
				Base: base, Changes: []events.Change{ch}, Count: 1 - i, Digest: "d2"}})
	}
	rep, err := usage.Read(context.Background(), l.js, usage.Options{Stream: "SESSIONS", Prefix: "ev"})
	if err != nil {
		t.Fatal(err)
	}
	c := rep.Catalogs
	if c.Appends["initial"] != 1 || c.Appends[events.UpdateChanges] != 2 || c.TextBytes != 16 ||
		c.BytesByKind["initial"] != 10 || c.BytesByKind[events.UpdateChanges] != 6 || c.Listed != 2 {
		t.Fatalf("catalogs %+v", c)
	}
}
