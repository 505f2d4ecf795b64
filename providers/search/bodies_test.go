package search_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers/search"
)

// qualityRun is the measures of one configuration of the index over the
// evaluation set: all queries, the used half, the held-out half, and each
// query's rank list.
type qualityRun struct {
	all, used, held scores
	ranks           map[string][]string
}

// measureConfig builds an index with opts over the evaluation skills
// (with their bodies from testdata/bodies.json), teaches it the used half
// when learn is set (each used query followed by the load of its first
// expected skill, as TestLearnedQuality does), and measures it.
func measureConfig(t *testing.T, label string, opts search.Options, learn bool, used, held []evalQuery) qualityRun {
	t.Helper()
	skills := evalSkills(t)
	m := newMemory(skills)
	m.bodies = readJSON[map[string]string](t, "testdata/bodies.json")
	ix, _ := newIndex(t, opts, m)
	rank := func(q string) []string {
		r, err := ix.Search(context.Background(), catalog.At("/w"), q, len(skills), 0)
		if err != nil {
			t.Fatal(err)
		}
		return names(r)
	}
	if learn {
		at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
		for i, q := range used {
			if err := ix.Learn(q.Expect[0], q.Query, at.Add(time.Duration(i)*time.Minute)); err != nil {
				t.Fatal(err)
			}
		}
	}
	all := append(slices.Clone(held), used...)
	run := qualityRun{
		all:   measure(t, label, all, rank),
		used:  measure(t, label+", used half", used, rank),
		held:  measure(t, label+", held-out half", held, rank),
		ranks: make(map[string][]string),
	}
	for _, q := range all {
		run.ranks[q.Query] = rank(q.Query)
	}
	if reads, errs := ix.BodyReads(); opts.Bodies && (reads != uint64(len(skills)) || errs != 0) {
		t.Errorf("%s: %d bodies read, %d failed; want each of the %d skills' once", label, reads, errs, len(skills))
	}
	return run
}

// TestBodyQuality measures what indexing the skills' bodies brings on the
// evaluation set, without and with learned terms (the odd queries used,
// as in TestLearnedQuality): hit@1, hit@5 and mean reciprocal rank of all
// queries, the used half and the held-out half. With bodies, no class may
// get worse than without (hit@5 and MRR of each), with or without
// learning, and the whole set's must rise. The queries that fall out of
// the top 5 with bodies are logged.
func TestBodyQuality(t *testing.T) {
	queries := readJSON[[]evalQuery](t, "testdata/queries.json")
	var used, held []evalQuery
	for i, q := range queries {
		if i%2 == 1 {
			used = append(used, q)
		} else {
			held = append(held, q)
		}
	}
	type config struct {
		label       string
		bodies, lrn bool
	}
	runs := map[config]qualityRun{}
	for _, c := range []config{{"text", false, false}, {"text+bodies", true, false}, {"text, learned", false, true}, {"text+bodies, learned", true, true}} {
		runs[c] = measureConfig(t, c.label, search.Options{Bodies: c.bodies}, c.lrn, used, held)
		r := runs[c]
		t.Logf("%-22s all hit@1 %.3f hit@5 %.3f MRR %.3f | used hit@5 %.3f MRR %.3f | held-out hit@1 %.3f hit@5 %.3f MRR %.3f",
			c.label, r.all.hit1, r.all.hit5, r.all.mrr, r.used.hit5, r.used.mrr, r.held.hit1, r.held.hit5, r.held.mrr)
	}
	for _, lrn := range []bool{false, true} {
		off, on := runs[config{map[bool]string{false: "text", true: "text, learned"}[lrn], false, lrn}],
			runs[config{map[bool]string{false: "text+bodies", true: "text+bodies, learned"}[lrn], true, lrn}]
		for _, cl := range []struct {
			name    string
			off, on scores
		}{{"all", off.all, on.all}, {"used half", off.used, on.used}, {"held-out half", off.held, on.held}} {
			if cl.on.hit5 < cl.off.hit5 || cl.on.mrr < cl.off.mrr {
				t.Errorf("learned %v, %s: bodies lower hit@5 %.3f→%.3f or MRR %.3f→%.3f", lrn, cl.name, cl.off.hit5, cl.on.hit5, cl.off.mrr, cl.on.mrr)
			}
		}
		if on.all.hit5 <= off.all.hit5 || on.all.mrr <= off.all.mrr {
			t.Errorf("learned %v: bodies do not help: hit@5 %.3f→%.3f, MRR %.3f→%.3f", lrn, off.all.hit5, on.all.hit5, off.all.mrr, on.all.mrr)
		}
		fell := 0
		for _, q := range queries {
			pos := func(ns []string) int {
				if p := slices.IndexFunc(ns, func(n string) bool { return slices.Contains(q.Expect, n) }); p >= 0 {
					return p
				}
				return len(ns) + 1000
			}
			if b, a := pos(off.ranks[q.Query]), pos(on.ranks[q.Query]); b < 5 && a >= 5 {
				fell++
				t.Logf("learned %v: with bodies %q fell out of the top 5 (%v from %d to %d)", lrn, q.Query, q.Expect, b+1, a+1)
			}
		}
		t.Logf("learned %v: queries that fell out of the top 5 with bodies: %d of %d", lrn, fell, len(queries))
	}
}

// TestBodiesBadInput indexes hostile bodies: one of 10 MiB (indexed for
// its first MaxBodyBytes: a word at its start matches, one past the bound
// does not), one of binary junk, an empty one, and one whose read fails
// (indexed empty and counted). Searches work, and give the same answer
// twice.
func TestBodiesBadInput(t *testing.T) {
	junk := make([]byte, 64<<10)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range junk {
		junk[i] = byte(r.IntN(256))
	}
	huge := "frobnicate the widget\n" + strings.Repeat("padding words here ", (search.MaxBodyBytes/19)+1) + "zanzibar\n" + strings.Repeat("x", 10<<20)
	skills := []catalog.Summary{
		summary("huge-body", "A skill with a large body.", ""),
		summary("junk-body", "A skill whose body is binary junk.", ""),
		summary("empty-body", "A skill with no body.", ""),
		summary("failing-body", "A skill whose body cannot be read.", ""),
		summary("plain", "A plain skill.", ""),
	}
	m := newMemory(skills)
	m.bodies = map[string]string{"huge-body": huge, "junk-body": string(junk), "empty-body": "", "plain": "Steps: run quuxtool."}
	m.fail = map[string]bool{"failing-body": true}
	ix, _ := newIndex(t, search.Options{Bodies: true}, m)
	ctx, q := context.Background(), catalog.At("/w")
	for query, want := range map[string][]string{
		"frobnicate":       {"huge-body"},
		"zanzibar":         nil, // past the bound
		"quuxtool":         {"plain"},
		"skill body":       {"empty-body", "failing-body", "huge-body", "junk-body", "plain"},
		string(junk[:300]): nil,
	} {
		r, err := ix.Search(ctx, q, query, 10, 0)
		if err != nil {
			t.Fatalf("%.20q: %v", query, err)
		}
		got := names(r)
		if want != nil && !slices.Equal(slices.Sorted(slices.Values(got)), want) {
			t.Errorf("%.20q: %v; want %v", query, got, want)
		}
		if want == nil && query == "zanzibar" && len(got) != 0 {
			t.Errorf("a word past the body's first %d bytes matched: %v", search.MaxBodyBytes, got)
		}
		again, err := ix.Search(ctx, q, query, 10, 0)
		if err != nil || !slices.Equal(names(again), got) {
			t.Errorf("%.20q: second search %v, %v; first %v", query, names(again), err, got)
		}
	}
	if reads, errs := ix.BodyReads(); reads != 5 || errs != 1 {
		t.Errorf("%d bodies read, %d failed; want 5 read (once each, whatever the searches) and 1 failed", reads, errs)
	}
}

// FuzzBodies indexes a body of any bytes beside the evaluation skills'
// and searches it: no panic, at most limit matches, the same answer twice.
func FuzzBodies(f *testing.F) {
	for _, s := range []string{"", "pdftk qpdf", "\x00\xff\xfe", strings.Repeat("é", 3000), "don't 's ’", strings.Repeat("a", 5000) + "ñ"} {
		f.Add(s, "pdf form")
	}
	skills := evalSkills(f)
	f.Fuzz(func(t *testing.T, body, query string) {
		m := newMemory(slices.Clone(skills))
		m.bodies = map[string]string{skills[0].Name: body, skills[1].Name: body + body}
		ix, _ := newIndex(t, search.Options{Bodies: true}, m)
		ctx, q := context.Background(), catalog.At("/w")
		r, err := ix.Search(ctx, q, query, 5, 0)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Matches) > 5 || r.Total < len(r.Matches) {
			t.Fatalf("%d matches, total %d", len(r.Matches), r.Total)
		}
		again, err := ix.Search(ctx, q, query, 5, 0)
		if err != nil || !slices.Equal(names(again), names(r)) || again.Total != r.Total {
			t.Fatalf("second search differs: %v / %v, %v", names(r), names(again), err)
		}
	})
}

// TestBodiesReadResumes: a search whose context ends while the bodies are
// read fails with the context's error; the next search goes on from the
// bodies read so far (each is read once) and finds a skill by its body.
func TestBodiesReadResumes(t *testing.T) {
	var skills []catalog.Summary
	bodies := map[string]string{}
	for i := range 6 {
		name := fmt.Sprintf("skill-%d", i)
		skills = append(skills, summary(name, "A skill.", ""))
		bodies[name] = fmt.Sprintf("Run tool%d on the files.", i)
	}
	m := newMemory(skills)
	m.bodies = bodies
	ctx, cancel := context.WithCancel(context.Background())
	m.onLoad = func(n int) {
		if n == 3 {
			cancel()
		}
	}
	ix, _ := newIndex(t, search.Options{Bodies: true}, m)
	if _, err := ix.Search(ctx, catalog.At("/w"), "tool5", 8, 0); !errors.Is(err, context.Canceled) {
		t.Fatalf("search cancelled while reading bodies: %v; want context.Canceled", err)
	}
	if reads, _ := ix.BodyReads(); reads != 2 {
		t.Errorf("%d bodies read before the cancel; want 2", reads)
	}
	r, err := ix.Search(context.Background(), catalog.At("/w"), "tool5", 8, 0)
	if err != nil || !slices.Equal(names(r), []string{"skill-5"}) {
		t.Fatalf("next search: %v, %v; want [skill-5]", names(r), err)
	}
	if reads, errs := ix.BodyReads(); reads != 6 || errs != 0 {
		t.Errorf("%d bodies read, %d failed; want 6 and 0", reads, errs)
	}
}
