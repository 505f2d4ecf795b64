package search

import (
	"cmp"
	"slices"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/kljensen/snowball/english"

	"github.com/skillstream/skillstream/catalog"
)

// Analysis: text → words → terms. A word is a run of letters and digits,
// lower-cased; an apostrophe inside a word is dropped ("doesn't" is
// "doesnt", "team's" is "team"). Words of one character, stop words and
// words longer than maxWord bytes are left out; the others are stemmed
// (English Porter2) when made of ASCII letters only, and kept as they are
// otherwise ("k8s", "oauth2", "größe").

// Fields of a skill, in the order of their weights.
const (
	fieldName = iota
	fieldDescription
	fieldWhenToUse
	fieldBody // the instruction body, indexed only with Options.Bodies
	nFields
)

// maxWord bounds a word's length in bytes; longer runs are not words
// anyone searches for (hashes, base64).
const maxWord = 40

// extraStops are stop words the stemmer's list lacks: contractions as the
// tokenizer spells them, and the filler of requests.
var extraStops = map[string]bool{
	"aren": true, "cant": true, "couldnt": true, "didnt": true, "doesnt": true, "dont": true,
	"hadnt": true, "hasnt": true, "havent": true, "im": true, "isnt": true, "ive": true,
	"its": true, "lets": true, "shouldnt": true, "thats": true, "theyre": true, "wasnt": true,
	"werent": true, "wont": true, "wouldnt": true, "youre": true, "youve": true,
	"also": true, "could": true, "may": true, "might": true, "must": true, "would": true,
	"please": true, "etc": true, "eg": true, "ie": true,
}

func stopWord(w string) bool { return english.IsStopWord(w) || extraStops[w] }

// words calls f with each word of s that analysis keeps, lower-cased but
// not stemmed.
func words(s string, buf []byte, f func(w string)) []byte {
	w := buf[:0]
	flush := func() {
		if n := len(w); n > 1 && n <= maxWord {
			if s := string(w); !stopWord(s) {
				f(s)
			}
		}
		w = w[:0]
	}
	for i := 0; i < len(s); {
		r, size := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		i += size
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			w = append(w, byte(r))
		case r >= 'A' && r <= 'Z':
			w = append(w, byte(r)+'a'-'A')
		case r == '\'' || r == '’':
			// Inside a word it joins ("doesn't"); "'s" at the end of one
			// is a possessive, left out.
			if len(w) > 0 && i < len(s) && (s[i] == 's' || s[i] == 'S') && (i+1 == len(s) || !isWordByte(s, i+1)) {
				i++
				flush()
				continue
			}
			if len(w) == 0 {
				flush()
			}
		case r >= utf8.RuneSelf && (unicode.IsLetter(r) || unicode.IsDigit(r)):
			w = utf8.AppendRune(w, unicode.ToLower(r))
		default:
			flush()
		}
	}
	flush()
	return w
}

// isWordByte reports whether the rune at s[i:] is a letter or digit.
func isWordByte(s string, i int) bool {
	r, _ := utf8.DecodeRuneInString(s[i:])
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// stem returns the term of a word: its Porter2 stem when it is made of
// ASCII letters only, else the word.
func stem(w string) string {
	for i := 0; i < len(w); i++ {
		if c := w[i]; c < 'a' || c > 'z' {
			return w
		}
	}
	return english.Stem(w, true)
}

// dict numbers terms for one generation of analyses: ids are dense from
// 0, so a corpus keeps its postings in arrays indexed by them. It only
// grows; the index replaces it (and every analysis made with it) when it
// passes Options.MaxTerms. stems remembers the stem of every word seen,
// as stemming costs more than a map lookup.
type dict struct {
	max    int // terms numbered at most (0: no bound); later ones are left out
	mu     sync.RWMutex
	ids    map[string]uint32
	terms  []string
	sorted []uint32 // every id, by term in byte order; replaced, never modified
	stems  map[string]string
}

func newDict() *dict {
	return &dict{ids: make(map[string]uint32), stems: make(map[string]string)}
}

// newDictOf is a dict numbering at most max terms.
func newDictOf(max int) *dict {
	d := newDict()
	d.max = max
	return d
}

// size is the number of terms.
func (d *dict) size() int {
	d.mu.RLock()
	defer d.mu.RUnlock()
	return len(d.terms)
}

// intern returns the id of term, adding it; ok is false when term is new
// and the dict is full (it is left out). The caller holds d.mu.
func (d *dict) intern(term string) (id uint32, ok bool) {
	id, ok = d.ids[term]
	if !ok {
		if d.max > 0 && len(d.terms) >= d.max {
			return 0, false
		}
		id = uint32(len(d.terms))
		d.ids[term] = id
		d.terms = append(d.terms, term)
	}
	return id, true
}

// sortNew adds the terms from id from on to sorted. The caller holds d.mu
// for writing.
func (d *dict) sortNew(from int) {
	if from == len(d.terms) {
		return
	}
	add := make([]uint32, 0, len(d.terms)-from)
	for id := from; id < len(d.terms); id++ {
		add = append(add, uint32(id))
	}
	byTerm := func(a, b uint32) int { return strings.Compare(d.terms[a], d.terms[b]) }
	slices.SortFunc(add, byTerm)
	merged := make([]uint32, 0, len(d.sorted)+len(add))
	i, j := 0, 0
	for i < len(d.sorted) && j < len(add) {
		if byTerm(d.sorted[i], add[j]) < 0 {
			merged = append(merged, d.sorted[i])
			i++
		} else {
			merged = append(merged, add[j])
			j++
		}
	}
	merged = append(merged, d.sorted[i:]...)
	d.sorted = append(merged, add[j:]...)
}

// withPrefix returns the ids of the terms that start with p, in byte
// order. The caller holds d.mu.
func (d *dict) withPrefix(p string) []uint32 {
	lo, _ := slices.BinarySearchFunc(d.sorted, p, func(id uint32, p string) int { return strings.Compare(d.terms[id], p) })
	hi := lo
	for hi < len(d.sorted) && strings.HasPrefix(d.terms[d.sorted[hi]], p) {
		hi++
	}
	return d.sorted[lo:hi]
}

// stemLocked is stem, remembered. The caller holds d.mu for writing.
func (d *dict) stemLocked(w string) string {
	s, ok := d.stems[w]
	if !ok {
		s = stem(w)
		if d.max <= 0 || len(d.stems) < d.max {
			d.stems[w] = s
		}
	}
	return s
}

// text is what the index analyses of a skill, and the key of its
// analysis: a skill whose name, description, whenToUse and body are
// unchanged is not analysed again. The body is keyed by a hash of the
// text indexed (0: no body), so that the analyses kept do not hold it.
type text struct {
	name, description, whenToUse string
	body                         uint64
}

// textOf is the key of s's analysis with the body whose key is body.
func textOf(s catalog.Summary, body uint64) text {
	return text{s.Name, s.Description, s.WhenToUse, body}
}

// analysis is one skill's text as terms: its distinct terms (ids of one
// dict, ascending) with their frequency in each field, and each field's
// length in words kept.
type analysis struct {
	serial uint64   // tells this analysis apart from every other of the index
	terms  []uint32 // ascending
	tf     []uint8  // nFields per term: tf[i*nFields+f], at most 255
	length [nFields]uint16
}

// maxFieldBytes bounds the bytes of each field analysed: a description
// or whenToUse a store publishes is at most 1,024 characters; a longer
// text (a skill folder's) is analysed for its beginning.
const maxFieldBytes = 16 << 10

// analyze makes the analysis of t, whose body's text is body, with d,
// whose lock the caller holds for writing, keeping at most maxTerms distinct terms (0: no bound):
// words of terms past it, or that d has no room left for, are left out.
// scratch is reused between calls. It returns the words left out.
func analyze(d *dict, t text, body string, maxTerms int, sc *analyzeScratch) (*analysis, int) {
	a := &analysis{}
	left := 0
	sc.counts = sc.counts[:0]
	if sc.pos == nil {
		sc.pos = make(map[uint32]int)
	}
	clear(sc.pos)
	for f, s := range [nFields]string{t.name, t.description, t.whenToUse, body} {
		if len(s) > maxFieldBytes {
			s = s[:maxFieldBytes]
		}
		n := 0
		sc.buf = words(s, sc.buf, func(w string) {
			term := d.stemLocked(w)
			id, known := d.ids[term]
			if !known && maxTerms > 0 && len(sc.counts) >= maxTerms {
				left++
				return
			}
			if !known {
				var ok bool
				if id, ok = d.intern(term); !ok {
					left++
					return
				}
			}
			i, ok := sc.pos[id]
			if !ok {
				if maxTerms > 0 && len(sc.counts) >= maxTerms {
					left++
					return
				}
				i = len(sc.counts)
				sc.pos[id] = i
				sc.counts = append(sc.counts, termCount{id: id})
			}
			if c := &sc.counts[i].tf[f]; *c < 255 {
				*c++
			}
			n++
		})
		a.length[f] = uint16(min(n, 65535))
	}
	sortCounts(sc.counts)
	a.terms = make([]uint32, len(sc.counts))
	a.tf = make([]uint8, len(sc.counts)*nFields)
	for i, c := range sc.counts {
		a.terms[i] = c.id
		copy(a.tf[i*nFields:], c.tf[:])
	}
	return a, left
}

type termCount struct {
	id uint32
	tf [nFields]uint8
}

type analyzeScratch struct {
	buf    []byte
	counts []termCount
	pos    map[uint32]int
}

func sortCounts(c []termCount) {
	if len(c) > 32 {
		slices.SortFunc(c, func(a, b termCount) int { return cmp.Compare(a.id, b.id) })
		return
	}
	// Insertion sort: a skill has tens of distinct terms.
	for i := 1; i < len(c); i++ {
		for j := i; j > 0 && c[j].id < c[j-1].id; j-- {
			c[j], c[j-1] = c[j-1], c[j]
		}
	}
}

// queryTerms returns the distinct terms of a query in the order they come,
// at most maxQueryTerms of them.
func queryTerms(q string) []string {
	var out []string
	seen := make(map[string]bool)
	words(q, make([]byte, 0, 32), func(w string) {
		if len(out) >= maxQueryTerms {
			return
		}
		t := stem(w)
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	})
	return out
}

// maxQueryTerms bounds the distinct terms of a query that count; a query
// is a few words (the tool allows 512 characters).
const maxQueryTerms = 64
