package search

import (
	"math"
	"slices"
	"sync"

	"github.com/skillstream/skillstream/catalog"
)

// The ranking's parameters (see the package documentation): BM25F with
// k1 and, per field, a weight and a length normalisation b; the factor
// of a term a query word only partly matches, and when it does; and the
// exponent of the share of query words a skill matches.
const (
	k1            = 1.2
	partialFactor = 0.5
	minPrefix     = 4 // a word or term this long may match as a prefix
	sharedLead    = 6 // words sharing this many leading bytes match
	maxPartial    = 32
	coverage      = 0.5
)

var (
	fieldWeight = [nFields]float64{fieldName: 2, fieldDescription: 1, fieldWhenToUse: 1, fieldBody: bodyWeight}
	fieldB      = [nFields]float64{fieldName: 0.3, fieldDescription: 0.75, fieldWhenToUse: 0.75, fieldBody: 0.75}
)

// bodyWeight is the body's weight against the name (2), the description
// and whenToUse (1): a body names the tools and steps of a task, many of
// them shared with other skills, so it counts, but less than what the
// skill says it is for. A skill without a body (Options.Bodies off) has
// no term in the field, which adds exactly 0 to every score.
const bodyWeight = 0.3

// corpus is the postings of one set of candidates: for each term of its
// dict, the candidates (by position in the set) whose text holds it, each
// with the term's saturated, length-normalised weight in that candidate
// (the BM25F term weight without the idf, which a search takes from the
// posting list's length). It is immutable once built, and shared by every
// view whose candidates have the same texts.
type corpus struct {
	dict    *dict
	skills  []catalog.Summary // the candidates it was built for (shared, read only)
	as      []*analysis       // their analyses
	bodies  []uint64          // their bodies' keys (nil: no body indexed)
	serials []uint64          // the analyses' serials
	n       int
	offsets []uint32 // term t's postings are [offsets[t], offsets[t+1])
	docs    []uint32
	weights []float32
}

// buildCorpus builds the postings of skills, with bodies keyed as bodies
// (nil: none), analysed as as (all made with d, which has nterms terms at
// least as large as every id in them).
func buildCorpus(d *dict, skills []catalog.Summary, bodies []uint64, as []*analysis, serials []uint64, nterms int) *corpus {
	c := &corpus{dict: d, skills: skills, bodies: bodies, as: as, serials: serials, n: len(as)}
	var avg [nFields]float64
	for _, a := range as {
		for f := range avg {
			avg[f] += float64(a.length[f])
		}
	}
	for f := range avg {
		if avg[f] = avg[f] / float64(max(len(as), 1)); avg[f] == 0 {
			avg[f] = 1
		}
	}
	c.offsets = make([]uint32, nterms+1)
	for _, a := range as {
		for _, t := range a.terms {
			c.offsets[t+1]++
		}
	}
	for t := 1; t <= nterms; t++ {
		c.offsets[t] += c.offsets[t-1]
	}
	total := c.offsets[nterms]
	c.docs = make([]uint32, total)
	c.weights = make([]float32, total)
	next := slices.Clone(c.offsets[:nterms])
	for doc, a := range as {
		var norm [nFields]float64
		for f := range norm {
			norm[f] = fieldWeight[f] / (1 - fieldB[f] + fieldB[f]*float64(a.length[f])/avg[f])
		}
		for i, t := range a.terms {
			tf := 0.0
			for f := range nFields {
				tf += float64(a.tf[i*nFields+f]) * norm[f]
			}
			p := next[t]
			next[t]++
			c.docs[p] = uint32(doc)
			c.weights[p] = float32(tf * (k1 + 1) / (k1 + tf))
		}
	}
	return c
}

// reuse sets as[i] to c's analysis of skills[i] (whose body is keyed
// bodies[i], bodies nil for none) when c was built for a skill of the
// same text; both are in name order. An unchanged skill's
// strings are usually the very strings c was built for, which compare
// without reading them: finding the analyses of a view that differs from
// c's by one skill costs a pass over the names, not hashing every text.
func (c *corpus) reuse(skills []catalog.Summary, bodies []uint64, as []*analysis) {
	j := 0
	for i, s := range skills {
		for j < len(c.skills) && c.skills[j].Name < s.Name {
			j++
		}
		if j < len(c.skills) && textOf(c.skills[j], bodyKey(c.bodies, j)) == textOf(s, bodyKey(bodies, i)) {
			as[i] = c.as[j]
		}
	}
}

// bodyKey is keys[i], or 0 (no body) when keys is nil.
func bodyKey(keys []uint64, i int) uint64 {
	if keys == nil {
		return 0
	}
	return keys[i]
}

// postings returns the candidates holding term id and their weights.
func (c *corpus) postings(id uint32) ([]uint32, []float32) {
	if int(id) >= len(c.offsets)-1 {
		return nil, nil // a term newer than the corpus: no candidate has it
	}
	lo, hi := c.offsets[id], c.offsets[id+1]
	return c.docs[lo:hi], c.weights[lo:hi]
}

// idf is the inverse document frequency of a term held by df of n
// candidates; it is positive for every df ≤ n.
func idf(n, df int) float64 {
	return math.Log(1 + (float64(n)-float64(df)+0.5)/(float64(df)+0.5))
}

// match is a term of the corpus a query word matches, with the factor its
// score counts with: 1 for the word's own term, partialFactor for the
// others.
type match struct {
	id     uint32
	factor float64
}

// matches returns, for each query term that matches anything in the
// corpus, the terms it matches: itself; when it has at least minPrefix
// bytes, the terms it begins, and the terms of at least minPrefix bytes
// that begin it ("config" and "configur", "postgresql" and "postgr");
// when it has at least sharedLead bytes, the terms that begin with the
// same sharedLead bytes ("respond" and "respons"). At most maxPartial
// partial matches count per word, the first in byte order. The result is
// aligned with terms: a term matching nothing has no match.
func (c *corpus) matches(terms []string) [][]match {
	var out [][]match
	c.dict.mu.RLock()
	defer c.dict.mu.RUnlock()
	for _, t := range terms {
		var g []match
		own, ok := c.dict.ids[t]
		if ok && c.has(own) {
			g = append(g, match{own, 1})
		}
		partial := func(id uint32) bool {
			if (ok && id == own) || !c.has(id) {
				return true
			}
			g = append(g, match{id, partialFactor})
			return len(g) < maxPartial
		}
		if len(t) >= minPrefix {
			for k := minPrefix; k < len(t) && k < sharedLead; k++ {
				if id, ok := c.dict.ids[t[:k]]; ok && !partial(id) {
					break
				}
			}
			lead := t
			if len(t) > sharedLead {
				lead = t[:sharedLead]
			}
			for _, id := range c.dict.withPrefix(lead) {
				if !partial(id) {
					break
				}
			}
		}
		out = append(out, g)
	}
	return out
}

// df is the number of candidates whose text holds term t.
func (c *corpus) df(t string) int {
	c.dict.mu.RLock()
	id, ok := c.dict.ids[t]
	c.dict.mu.RUnlock()
	if !ok {
		return 0
	}
	docs, _ := c.postings(id)
	return len(docs)
}

// has reports whether some candidate holds term id.
func (c *corpus) has(id uint32) bool {
	return int(id) < len(c.offsets)-1 && c.offsets[id] < c.offsets[id+1]
}

// scratch is one search's working memory, pooled: per candidate its score
// and the number of query words it matched (zero between searches) and
// the best score of the current word; the candidates scored; and the
// selection heap.
type scratch struct {
	score   []float64
	words   []uint16
	word    []float64
	touched []uint32
	wordHit []uint32
	heap    []uint32
}

var scratchPool = sync.Pool{New: func() any { return new(scratch) }}

// rank scores the candidates against the query terms and returns the
// positions of the matches from offset, at most limit of them, in rank
// order, and the number of matches.
//
// learned, when not nil, is aligned with terms: the candidates each term
// matches through the learned field. A word's score in a candidate is
// then its best over the text's terms plus its learned score, and a word
// matched only there counts as matched.
func (c *corpus) rank(terms []string, learned [][]lposting, limit, offset int) (page []int, total int) {
	if len(terms) == 0 || c.n == 0 {
		return nil, 0
	}
	groups := c.matches(terms)
	nwords := 0
	for i, g := range groups {
		if len(g) > 0 || (learned != nil && len(learned[i]) > 0) {
			nwords++
		}
	}
	if nwords == 0 {
		return nil, 0
	}
	sc := scratchPool.Get().(*scratch)
	defer scratchPool.Put(sc)
	if len(sc.score) < c.n {
		sc.score = make([]float64, c.n)
		sc.words = make([]uint16, c.n)
		sc.word = make([]float64, c.n)
	}
	score, words, word := sc.score[:c.n], sc.words[:c.n], sc.word[:c.n]
	touched := sc.touched[:0]
	for gi, g := range groups {
		var lp []lposting
		if learned != nil {
			lp = learned[gi]
		}
		if len(g) == 0 && len(lp) == 0 {
			continue
		}
		if len(g) == 1 && len(lp) == 0 {
			docs, ws := c.postings(g[0].id)
			w := g[0].factor * idf(c.n, len(docs))
			for i, d := range docs {
				if words[d] == 0 {
					touched = append(touched, d)
				}
				words[d]++
				score[d] += w * float64(ws[i])
			}
			continue
		}
		// A word that matches several terms counts once per candidate,
		// with the best of them.
		hit := sc.wordHit[:0]
		for _, m := range g {
			docs, ws := c.postings(m.id)
			w := m.factor * idf(c.n, len(docs))
			for i, d := range docs {
				if word[d] == 0 {
					hit = append(hit, d)
				}
				word[d] = max(word[d], w*float64(ws[i]))
			}
		}
		for _, p := range lp {
			if word[p.doc] == 0 {
				hit = append(hit, p.doc)
			}
			word[p.doc] += p.score
		}
		for _, d := range hit {
			if words[d] == 0 {
				touched = append(touched, d)
			}
			words[d]++
			score[d] += word[d]
			word[d] = 0
		}
		sc.wordHit = hit
	}
	// Coverage: a skill matching more of the query's words goes first.
	if nwords > 1 {
		for _, d := range touched {
			score[d] *= math.Pow(float64(words[d])/float64(nwords), coverage)
		}
	}
	total = len(touched)
	defer func() {
		for _, d := range touched {
			score[d], words[d] = 0, 0
		}
		sc.touched = touched[:0]
	}()
	if offset >= total || limit <= 0 {
		return nil, total
	}

	// better orders the matches: higher score first, then lower position
	// (candidates are in name order, so ties go by name in byte order).
	better := func(a, b uint32) bool {
		if score[a] != score[b] {
			return score[a] > score[b]
		}
		return a < b
	}
	cmp := func(a, b uint32) int {
		switch {
		case better(a, b):
			return -1
		case better(b, a):
			return 1
		}
		return 0
	}
	k := offset + min(limit, total-offset)
	var top []uint32
	if k*4 >= total {
		slices.SortFunc(touched, cmp)
		top = touched[:k]
	} else {
		top = selectTop(sc, touched, k, better)
		slices.SortFunc(top, cmp)
	}
	page = make([]int, 0, k-offset)
	for _, d := range top[offset:k] {
		page = append(page, int(d))
	}
	return page, total
}

// selectTop returns the k best of ds (unordered), with a heap whose root
// is the worst of the best so far.
func selectTop(sc *scratch, ds []uint32, k int, better func(a, b uint32) bool) []uint32 {
	h := sc.heap[:0]
	for _, d := range ds {
		if len(h) < k {
			h = append(h, d)
			for i := len(h) - 1; i > 0; {
				p := (i - 1) / 2
				if !better(h[p], h[i]) {
					break
				}
				h[i], h[p] = h[p], h[i]
				i = p
			}
			continue
		}
		if !better(d, h[0]) {
			continue
		}
		h[0] = d
		for i := 0; ; {
			w := i
			if l := 2*i + 1; l < len(h) && better(h[w], h[l]) {
				w = l
			}
			if r := 2*i + 2; r < len(h) && better(h[w], h[r]) {
				w = r
			}
			if w == i {
				break
			}
			h[i], h[w] = h[w], h[i]
			i = w
		}
	}
	sc.heap = h
	return h
}
