package search

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers"
)

// BenchmarkCorpusOneChange is the index's part of a change among 10,000
// skills, without the registry: the changed skill analysed, the others'
// analyses found, the postings of the new set built.
func BenchmarkCorpusOneChange(b *testing.B) {
	skills := make([]catalog.Summary, 10000)
	for i := range skills {
		skills[i] = catalog.Summary{
			Name:        fmt.Sprintf("skill-%05d", i),
			Description: fmt.Sprintf("Review terraform plans %d for destructive changes, drift and security diffs before apply, with word%d and term%d", i, i%97, i%1013),
			Invocation:  catalog.Invocation{ModelInvocable: true},
		}
	}
	ix := New(nil, Options{})
	if _, err := ix.corpusFor(skills); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		next := slices.Clone(skills)
		j := i * 7919 % len(next)
		next[j].Description = fmt.Sprintf("%s (revision %d)", next[j].Description, i)
		if _, err := ix.corpusFor(next); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// static serves a fixed list of skills that never changes.
type static []catalog.Summary

func (s static) Name() string { return "static" }
func (s static) List(context.Context, catalog.Query) ([]providers.Candidate, error) {
	out := make([]providers.Candidate, len(s))
	for i, sk := range s {
		out[i] = providers.Candidate{Summary: sk}
	}
	return out, nil
}
func (s static) Load(context.Context, string, catalog.Query) (catalog.Skill, error) {
	return catalog.Skill{}, catalog.ErrNotFound
}
func (s static) Changes(catalog.Query) <-chan struct{} { return nil }

func skill(name, desc string) catalog.Summary {
	return catalog.Summary{Name: name, Description: desc, Invocation: catalog.Invocation{ModelInvocable: true}}
}

// TestNothingBuiltPerSearch: searches of an unchanged view analyse and
// build nothing; a new set of the same texts (another working directory)
// shares the corpus.
func TestNothingBuiltPerSearch(t *testing.T) {
	reg := providers.NewRegistry([]providers.Provider{static{skill("alpha", "walrus one"), skill("beta", "walrus two")}})
	defer reg.Close()
	ix := New(reg, Options{})
	defer ix.Close()
	ctx := context.Background()
	corpusAt := func(cwd string) *corpus {
		t.Helper()
		if _, err := ix.Search(ctx, catalog.At(cwd), "walrus", 8, 0); err != nil {
			t.Fatal(err)
		}
		v, err := reg.Derive(ctx, catalog.At(cwd), viewKey{ix}, candidatesOf)
		if err != nil {
			t.Fatal(err)
		}
		return v.(*candidates).corpus.Load().Value()
	}
	c := corpusAt("/a")
	serial := ix.serial
	for range 3 {
		if corpusAt("/a") != c || ix.serial != serial {
			t.Fatal("a search of an unchanged view built again")
		}
	}
	if corpusAt("/b") != c || ix.serial != serial {
		t.Fatal("another view of the same texts built a corpus of its own")
	}
}

// TestOneChangeAnalysesOne: a set that differs by one skill analyses that
// skill only.
func TestOneChangeAnalysesOne(t *testing.T) {
	ix := New(nil, Options{})
	skills := []catalog.Summary{skill("a", "one"), skill("b", "two"), skill("c", "three")}
	c1, err := ix.corpusFor(skills)
	if err != nil {
		t.Fatal(err)
	}
	next := slices.Clone(skills)
	next[1].Description = "two, edited"
	c2, err := ix.corpusFor(next)
	if err != nil {
		t.Fatal(err)
	}
	if ix.serial != 4 || c1.as[0] != c2.as[0] || c1.as[2] != c2.as[2] || c1.as[1] == c2.as[1] {
		t.Fatalf("serial %d: one change analysed more than the changed skill", ix.serial)
	}
	// Back to the first text: its analysis is still kept.
	if c3, _ := ix.corpusFor(skills); c3 != c1 || ix.serial != 4 {
		t.Fatalf("the first set again was built again (serial %d)", ix.serial)
	}
}

// TestDictBound: past MaxTerms the index numbers terms anew and analyses
// again; searches still find what they did.
func TestDictBound(t *testing.T) {
	reg := providers.NewRegistry(nil)
	defer reg.Close()
	ix := New(nil, Options{MaxTerms: 8})
	for i := range 5 {
		skills := []catalog.Summary{skill("fixed", "walrus pelican"), skill("moving", fmt.Sprintf("word%d other%d more%d", i, i, i))}
		c, err := ix.corpusFor(skills)
		if err != nil {
			t.Fatal(err)
		}
		if page, total := c.rank(queryTerms("walrus"), nil, 8, 0); total != 1 || page[0] != 0 {
			t.Fatalf("round %d: %v of %d", i, page, total)
		}
		if c.dict.size() > 8+6 {
			t.Fatalf("round %d: %d terms", i, c.dict.size())
		}
	}
}

func TestWords(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"Don't fix the team's CI; it doesn't build", "fix team ci build"},
		{"k8s-pod-debugging OOMKilled", "k8s pod debugging oomkilled"},
		{"Größe über ÄRGER", "größe über ärger"},
		{"a b cc", "cc"},
		{"’s s’ x’y", "xy"},
		{strings.Repeat("x", 41) + " ok", "ok"},
	} {
		var got []string
		words(c.in, nil, func(w string) { got = append(got, w) })
		if strings.Join(got, " ") != c.want {
			t.Errorf("words(%q) = %q; want %q", c.in, got, c.want)
		}
	}
	if got := queryTerms("Deploying deployments deploy"); !reflect.DeepEqual(got, []string{"deploy"}) {
		t.Errorf("stems: %q", got)
	}
}
