package search

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/skillstream/skillstream/catalog"
)

// Defaults of the learned terms' options.
const (
	DefaultLearnHalfLife = 30 * 24 * time.Hour
	DefaultMaxLearned    = 1 << 16
)

// learnWeight is the weight of the learned field against the skill's own
// text (name 2, description 1, whenToUse 1): what users asked for before
// counts, but less than what the skill says of itself.
const learnWeight = 0.2

// A candidate's learned field counts for a query only when it holds at
// least learnedShare of the query's terms, and at least minLearnedWords
// of them (or all, for a shorter query): a word or two a past query
// shared with this one by chance says nothing of what this one wants.
const (
	minLearnedWords = 2
	learnedShare    = 0.5
)

// maxTermSkills bounds the skills one term is learned for: past it, the
// weakest goes. It bounds a search's work in the learned field to
// maxTermSkills postings a query word.
const maxTermSkills = 32

// learnEpoch is the instant weights are stored relative to, so that
// learning a pair never rescales the others: a pair learned at t adds
// 2^((t − epoch)/halfLife), and a search multiplies by
// 2^(−(asOf − epoch)/halfLife).
var learnEpoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// ErrLearn wraps what Learn refuses.
var ErrLearn = errors.New("learn search terms")

// learned is what an index learned from searches followed by loads: for
// each query term, the skills loaded after it and each pair's weight
// (relative to learnEpoch). Its version is the number of pairs learned
// and a digest of them in order; the ranking depends on nothing else.
type learned struct {
	mu       sync.RWMutex
	halfLife float64 // seconds
	max      int
	terms    map[string]map[string]float64
	pairs    int
	asOf     time.Time // the latest instant learned: decay is reckoned to it
	version  LearnedVersion
	dropped  uint64
}

// LearnedVersion identifies what an index learned: Pairs learned since
// the last reset and a digest of them (skill, query terms, instant) in the
// order learned. The zero version is an index that learned nothing, whose
// ranking is the skills' text alone.
type LearnedVersion struct {
	Pairs  uint64 `json:"pairs,omitempty"`
	Digest uint64 `json:"digest,omitempty"`
}

// String is the version as a search result records it: "<pairs>-<digest
// in hex>", or "" for the zero version.
func (v LearnedVersion) String() string {
	if v == (LearnedVersion{}) {
		return ""
	}
	return fmt.Sprintf("%d-%016x", v.Pairs, v.Digest)
}

func newLearned(halfLife time.Duration, max int) *learned {
	return &learned{halfLife: halfLife.Seconds(), max: max, terms: make(map[string]map[string]float64)}
}

// Learn records that a search for query was followed, in the same
// session and before any other search, by the load of skill at the
// instant at: the query's terms are added to the skill's learned field,
// weighted by their age (halved every Options.LearnHalfLife, reckoned to
// the latest instant learned). It costs a few map updates, whatever the
// number of skills. A query of stop words alone teaches nothing. An
// invalid skill name or a zero instant is refused (ErrLearn).
func (ix *Index) Learn(skill, query string, at time.Time) error {
	if !catalog.ValidName(skill) {
		return fmt.Errorf("%w: skill name %q is invalid", ErrLearn, skill)
	}
	if at.IsZero() {
		return fmt.Errorf("%w: no instant given for skill %q", ErrLearn, skill)
	}
	terms := queryTerms(query)
	if len(terms) == 0 {
		return nil
	}
	l := ix.learned
	l.mu.Lock()
	defer l.mu.Unlock()
	w := math.Exp2(at.Sub(learnEpoch).Seconds() / l.halfLife)
	if math.IsInf(w, 0) || w == 0 {
		return fmt.Errorf("%w: instant %v out of range", ErrLearn, at)
	}
	for _, t := range terms {
		m := l.terms[t]
		if _, ok := m[skill]; !ok {
			if l.pairs >= l.max {
				l.dropped++
				continue
			}
			if len(m) >= maxTermSkills {
				// The term's weakest skill makes room (ties: the last
				// name); a word learned for this many skills tells
				// little of any of them.
				var weakest string
				for n, v := range m {
					if weakest == "" || v < m[weakest] || (v == m[weakest] && n > weakest) {
						weakest = n
					}
				}
				delete(m, weakest)
				l.pairs--
				l.dropped++
			}
		}
		if m == nil {
			m = make(map[string]float64)
			l.terms[t] = m
		}
		if _, ok := m[skill]; !ok {
			l.pairs++
		}
		m[skill] += w
	}
	if at.After(l.asOf) {
		l.asOf = at
	}
	h := fnv.New64a()
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], l.version.Digest)
	h.Write(b[:])
	h.Write([]byte(skill))
	for _, t := range terms {
		h.Write([]byte{0})
		h.Write([]byte(t))
	}
	binary.LittleEndian.PutUint64(b[:], uint64(at.UnixNano()))
	h.Write(b[:])
	l.version.Pairs++
	l.version.Digest = h.Sum64()
	return nil
}

// ForgetLearned drops every learned term: the ranking is the skills' text
// alone again, and the version is zero.
func (ix *Index) ForgetLearned() {
	l := ix.learned
	l.mu.Lock()
	defer l.mu.Unlock()
	l.terms = make(map[string]map[string]float64)
	l.pairs = 0
	l.asOf = time.Time{}
	l.version = LearnedVersion{}
}

// Learned returns the version of what the index learned, and how many
// (term, skill) pairs the bound (Options.MaxLearned) left out.
func (ix *Index) Learned() (LearnedVersion, uint64) {
	l := ix.learned
	l.mu.RLock()
	defer l.mu.RUnlock()
	return l.version, l.dropped
}

// lposting is a candidate a query word matches through the learned field,
// with the word's score there (idf times the saturated weight).
type lposting struct {
	doc   uint32
	score float64
}

// evidence returns what a search for terms among cv's candidates takes
// from the learned terms, aligned with nothing: for each term in the
// query's order, the candidates that learned it, by name, each with its
// weight in the learned field now (decayed, times the field's weight). It
// is nil when no term holds a candidate: then the ranking is the text's
// alone. With the version, it is all the ranking depends on of what the
// index learned (see postingsOf), so that a search's result may record it
// and a replay rebuild the ranking (SearchWith). It holds at most
// maxQueryTerms terms of at most maxTermSkills skills each.
func (l *learned) evidence(terms []string, cv *candidates) ([]catalog.LearnedTerm, LearnedVersion) {
	l.mu.RLock()
	defer l.mu.RUnlock()
	if l.version.Pairs == 0 {
		return nil, LearnedVersion{}
	}
	scale := math.Exp2(-l.asOf.Sub(learnEpoch).Seconds() / l.halfLife)
	var out []catalog.LearnedTerm
	var pos map[string]uint32
	for _, t := range terms {
		m := l.terms[t]
		if len(m) == 0 {
			continue
		}
		if pos == nil {
			pos = cv.positions()
		}
		var ws []catalog.LearnedWeight
		for name, w := range m {
			if _, ok := pos[name]; ok {
				ws = append(ws, catalog.LearnedWeight{Name: name, Weight: learnWeight * w * scale})
			}
		}
		if len(ws) == 0 {
			continue
		}
		slices.SortFunc(ws, func(a, b catalog.LearnedWeight) int { return strings.Compare(a.Name, b.Name) })
		out = append(out, catalog.LearnedTerm{Term: t, Skills: ws})
	}
	return out, l.version
}

// postingsOf returns, aligned with terms, the candidates (positions in
// cv's skills, which are in name order) whose learned field holds each
// term by ev, with the term's score there, or nil when none counts: then
// the ranking is the text's alone. A learned skill that is no candidate
// is passed over.
//
// A term's idf counts the candidates whose text holds it (textDF) as well
// as those that learned it, so that a word common in the skills' text
// counts as little learned as it does there. A candidate's learned field
// counts only where it holds enough of the query's terms (learnedShare,
// minLearnedWords).
func postingsOf(terms []string, ev []catalog.LearnedTerm, cv *candidates, textDF func(string) int) [][]lposting {
	if len(ev) == 0 {
		return nil
	}
	var out [][]lposting
	n := len(cv.skills)
	pos := cv.positions()
	for _, lt := range ev {
		i := slices.Index(terms, lt.Term)
		if i < 0 {
			continue
		}
		var ps []lposting
		// Each candidate has one posting a term, so the order of the
		// postings changes no sum.
		for _, w := range lt.Skills {
			d, ok := pos[w.Name]
			if !ok {
				continue
			}
			tf := w.Weight
			ps = append(ps, lposting{doc: d, score: tf * (k1 + 1) / (k1 + tf)})
		}
		if len(ps) == 0 {
			continue
		}
		f := idf(n, min(n, len(ps)+textDF(lt.Term)))
		for j := range ps {
			ps[j].score *= f
		}
		if out == nil {
			out = make([][]lposting, len(terms))
		}
		out[i] = ps
	}
	if out == nil || len(terms) < 2 {
		return out
	}
	count := make(map[uint32]int)
	for _, ps := range out {
		for _, p := range ps {
			count[p.doc]++
		}
	}
	need := max(min(minLearnedWords, len(terms)), int(math.Ceil(learnedShare*float64(len(terms)))))
	kept := false
	for i, ps := range out {
		held := ps[:0]
		for _, p := range ps {
			if count[p.doc] >= need {
				held = append(held, p)
			}
		}
		if len(held) == 0 {
			held = nil
		} else {
			kept = true
		}
		out[i] = held
	}
	if !kept {
		return nil
	}
	return out
}

// ErrLearnedTerms wraps what CheckLearnedTerms refuses.
var ErrLearnedTerms = errors.New("recorded learned search terms")

// CheckLearnedTerms reports whether ev can be what a search for query
// took from the learned terms (Result.LearnedTerms): each entry a
// distinct term of the query, each naming one to 32 distinct skills with
// a finite positive weight. It refuses anything else (ErrLearnedTerms),
// naming what is wrong, so that a forged or damaged recording is an error
// and never a crash or an unbounded search.
func CheckLearnedTerms(query string, ev []catalog.LearnedTerm) error {
	if len(ev) == 0 {
		return nil
	}
	terms := queryTerms(query)
	if len(ev) > len(terms) {
		return fmt.Errorf("%w: %d terms for a query of %d", ErrLearnedTerms, len(ev), len(terms))
	}
	seen := make(map[string]bool, len(ev))
	for _, lt := range ev {
		if !slices.Contains(terms, lt.Term) {
			return fmt.Errorf("%w: term %q is not a term of the query %q", ErrLearnedTerms, truncate(lt.Term, 64), truncate(query, 64))
		}
		if seen[lt.Term] {
			return fmt.Errorf("%w: term %q given twice", ErrLearnedTerms, lt.Term)
		}
		seen[lt.Term] = true
		if len(lt.Skills) == 0 || len(lt.Skills) > maxTermSkills {
			return fmt.Errorf("%w: term %q names %d skills, it must name 1 to %d", ErrLearnedTerms, lt.Term, len(lt.Skills), maxTermSkills)
		}
		names := make(map[string]bool, len(lt.Skills))
		for _, w := range lt.Skills {
			if !catalog.ValidName(w.Name) {
				return fmt.Errorf("%w: term %q: %q is not a skill name", ErrLearnedTerms, lt.Term, truncate(w.Name, 64))
			}
			if names[w.Name] {
				return fmt.Errorf("%w: term %q names skill %q twice", ErrLearnedTerms, lt.Term, w.Name)
			}
			names[w.Name] = true
			if math.IsNaN(w.Weight) || math.IsInf(w.Weight, 0) || w.Weight <= 0 {
				return fmt.Errorf("%w: term %q: skill %q has weight %v, it must be a finite positive number", ErrLearnedTerms, lt.Term, w.Name, w.Weight)
			}
		}
	}
	return nil
}

// truncate cuts s to at most n bytes, on a rune boundary, for messages.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
