package search

import (
	"fmt"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/catalog"
)

// One numbering of terms holds at most twice Options.MaxTerms, however
// many new words one build brings (the skills' text within their own
// bound): the dictionary, and the stems remembered, stay bounded.
func TestSearchIndexBoundsTermsInAll(t *testing.T) {
	const maxTerms = 100
	skills := make([]catalog.Summary, 20)
	for i := range skills {
		var ws []string
		for j := range 50 {
			ws = append(ws, fmt.Sprintf("w%dx%d", i, j))
		}
		skills[i] = catalog.Summary{Name: fmt.Sprintf("skill-%02d", i), Description: strings.Join(ws, " "),
			Invocation: catalog.Invocation{ModelInvocable: true}}
	}
	ix := New(nil, Options{MaxTerms: maxTerms})
	if _, err := ix.corpusFor(skills); err != nil {
		t.Fatal(err)
	}
	if n := ix.dict.size(); n > 2*maxTerms {
		t.Errorf("the dictionary holds %d terms, over %d", n, 2*maxTerms)
	}
	if n := len(ix.dict.stems); n > 2*maxTerms {
		t.Errorf("%d stems remembered, over %d", n, 2*maxTerms)
	}
	if ix.LeftOut() == 0 {
		t.Error("no word counted as left out")
	}
	// A text far past the bytes analysed costs what its first bytes do.
	a, _ := analyze(newDict(), text{name: "x", description: strings.Repeat("alpha ", 1<<20)}, "", 0, &analyzeScratch{})
	if n := a.length[fieldDescription]; int(n) > maxFieldBytes/len("alpha ")+1 {
		t.Errorf("%d words of a 6 MiB description analysed, want at most its first %d bytes'", n, maxFieldBytes)
	}
}
