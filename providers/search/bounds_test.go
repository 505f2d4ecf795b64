package search_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/search"
	"github.com/skillstream/skillstream/providers/store"
)

// pairs returns n distinct two-letter words of consonants: no stop word,
// each its own term.
func pairs(n int) []string {
	const cons = "bcdfghjklmnpqrstvwxz"
	var out []string
	for _, a := range cons {
		for _, b := range cons {
			if len(out) == n {
				return out
			}
			out = append(out, string(a)+string(b))
		}
	}
	return out
}

// A skill pushed to a real store with a whenToUse of as many distinct
// words as a push allows (1,024 characters: 340 terms) is indexed for its
// first terms only (Options.MaxSkillTerms, default 256): its early words
// match, its late ones do not, and the index says how many it left out.
func TestSearchIndexBoundsTermsPerSkill(t *testing.T) {
	srv := natstest.Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	words := pairs(340)
	dir := filepath.Join(t.TempDir(), "many-words")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	md := fmt.Sprintf("---\nname: many-words\ndescription: A skill with many words.\nwhenToUse: %s\n---\nBody.\n", strings.Join(words, " "))
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := store.ReadSkill(dir, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	pb, err := store.NewPublisher(ctx, srv.JS, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pb.Push(ctx, skillstore.Global, []store.Local{l}, false); err != nil {
		t.Fatal(err)
	}
	p, err := store.Open(ctx, srv.JS, store.Config{})
	if err != nil {
		t.Fatal(err)
	}
	reg := providers.NewRegistry([]providers.Provider{p})
	defer reg.Close()
	ix := search.New(reg, search.Options{})
	defer ix.Close()
	for _, c := range []struct {
		word string
		want int
	}{{words[0], 1}, {words[200], 1}, {words[300], 0}, {words[339], 0}} {
		r, err := ix.Search(ctx, catalog.Query{}, c.word, 10, 0)
		if err != nil || r.Total != c.want {
			t.Errorf("search %q: %d matches, %v; want %d", c.word, r.Total, err, c.want)
		}
	}
	if got := ix.LeftOut(); got == 0 {
		t.Error("the index does not count the words it left out")
	}
}
