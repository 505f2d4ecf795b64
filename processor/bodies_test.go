package processor

import (
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/skillstream/skillstream/catalog"
)

// Sessions arriving together with a new catalog share one encoding of its
// body, and one rendering of its text: the first one's.
func TestCatalogEncodedOnceForSessionsArrivingTogether(t *testing.T) {
	skills := make([]catalog.Summary, 300)
	for i := range skills {
		name := "skill-" + strings.Repeat("x", i%7) + string(rune('a'+i%26)) + "-" + string(rune('a'+i/26))
		skills[i] = catalog.Summary{Name: name, Description: "Does thing " + name + ".", Invocation: catalog.Invocation{ModelInvocable: true}}
	}
	v := catalog.Prepare(catalog.Snapshot{Skills: skills, Complete: true}, catalog.Options{MaxLength: catalog.DefaultMaxLength, DescriptionMaxLength: catalog.DefaultDescriptionMaxLength})
	bodies := newCatalogBodies()
	const n = 32
	texts := make([]string, n)
	got := make([]any, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			d := catalog.Decision{Update: catalog.UpdateInitial, Digest: v.Digest, Entries: v.Entries, Omitted: v.Omitted, Text: v.Text(catalog.UpdateInitial)}
			texts[i] = d.Text
			b, err := bodies.get(d, catalog.Origins{}, nil, 7, "e", "p", "i", nil)
			if err != nil {
				t.Error(err)
			}
			got[i] = b
		}()
	}
	close(start)
	wg.Wait()
	for i := 1; i < n; i++ {
		if got[i] != got[0] {
			t.Fatalf("session %d got a body of its own: the catalog was encoded again", i)
		}
		if unsafe.StringData(texts[i]) != unsafe.StringData(texts[0]) {
			t.Fatalf("session %d got a text of its own: the catalog was rendered again", i)
		}
	}
	if got[0] == nil || texts[0] == "" {
		t.Fatal("no body")
	}
}
