package search

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"
	"weak"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers"
)

// ErrClosed reports a search on a closed index.
var ErrClosed = errors.New("search index closed")

// Defaults of the options.
const (
	DefaultMaxAnalyses = 32768
	DefaultMaxCorpora  = 8
	DefaultMaxTerms    = 1 << 18
	DefaultSkillTerms  = 256
)

// Options bound what an Index keeps. The zero value takes the defaults.
type Options struct {
	// MaxAnalyses bounds the skills whose analysis is kept (least recently
	// used first out); a skill analysed again costs tens of microseconds.
	// It should hold the distinct skills of the views searched at once.
	MaxAnalyses int
	// MaxCorpora bounds the corpora kept (one per distinct set of
	// candidate texts); a corpus of 10,000 skills is a few megabytes and
	// a few milliseconds to build again.
	MaxCorpora int
	// MaxTerms bounds the terms the index numbers before it starts a new
	// numbering (and analyses every skill again as it is searched). One
	// numbering never holds more than twice MaxTerms: past that, the new
	// words of the skills analysed are left out (not searchable) until
	// the next numbering.
	MaxTerms int
	// MaxSkillTerms bounds the distinct terms of one skill (its first
	// ones, name first); default 256. Each field is analysed for its
	// first 16 KiB.
	MaxSkillTerms int
	// LearnHalfLife is the age at which a learned query counts half
	// (default 30 days); MaxLearned bounds the (term, skill) pairs
	// learned (default 65,536), past which new pairs are left out until
	// ForgetLearned.
	LearnHalfLife time.Duration
	MaxLearned    int
	// Bodies indexes each skill's instruction body too, its first
	// MaxBodyBytes, at a low weight (see the package documentation). Off,
	// the ranking is the name's, description's and whenToUse's alone and
	// no body is read.
	Bodies bool
}

// MaxBodyBytes bounds the bytes of a skill's body that Options.Bodies
// indexes: its beginning, where a body says what it does.
const MaxBodyBytes = 4 << 10

// Index ranks the skills a registry offers for a query's session. It is
// safe for concurrent use; see the package documentation for the rules.
type Index struct {
	reg  *providers.Registry
	opts Options

	// build serialises what builds: analyses, the dict's growth, corpora.
	// Searches of a view whose corpus exists never take it.
	build   sync.Mutex
	dict    *dict   // guarded by build (the pointer; the dict has its lock)
	last    *corpus // the corpus built last, guarded by build
	scratch analyzeScratch

	mu       sync.Mutex // guards the fields below (and Close)
	closed   bool
	serial   uint64
	analyses *simplelru.LRU[text, *analysis]
	corpora  *simplelru.LRU[uint64, *corpus]
	seed     maphash.Seed

	leftOut    atomic.Uint64 // words left out of analyses by the bounds
	bodyErrors atomic.Uint64 // bodies that could not be read (indexed empty)
	bodyReads  atomic.Uint64 // bodies read

	learned *learned // what searches followed by loads taught (own lock)
}

// LeftOut is how many words of the skills analysed so far the bounds
// left out (Options.MaxSkillTerms, twice Options.MaxTerms): they match
// no search.
func (ix *Index) LeftOut() uint64 { return ix.leftOut.Load() }

// New returns an index of the skills reg offers. The index does not own
// reg: Close leaves it open.
func New(reg *providers.Registry, opts Options) *Index {
	if opts.MaxAnalyses <= 0 {
		opts.MaxAnalyses = DefaultMaxAnalyses
	}
	if opts.MaxCorpora <= 0 {
		opts.MaxCorpora = DefaultMaxCorpora
	}
	if opts.MaxTerms <= 0 {
		opts.MaxTerms = DefaultMaxTerms
	}
	if opts.MaxSkillTerms <= 0 {
		opts.MaxSkillTerms = DefaultSkillTerms
	}
	if opts.LearnHalfLife <= 0 {
		opts.LearnHalfLife = DefaultLearnHalfLife
	}
	if opts.MaxLearned <= 0 {
		opts.MaxLearned = DefaultMaxLearned
	}
	ix := &Index{reg: reg, opts: opts, dict: newDictOf(2 * opts.MaxTerms), seed: maphash.MakeSeed(),
		learned: newLearned(opts.LearnHalfLife, opts.MaxLearned)}
	// Guarded by ix.mu with the rest, so the LRU without a lock of its own.
	ix.analyses, _ = simplelru.NewLRU[text, *analysis](opts.MaxAnalyses, nil)
	ix.corpora, _ = simplelru.NewLRU[uint64, *corpus](opts.MaxCorpora, nil)
	return ix
}

// Result is one page of a search.
type Result struct {
	Matches  []catalog.Summary // the page shown, in rank order
	Total    int               // all matches
	Complete bool              // the snapshot searched was complete
	// Learned is the version of the learned terms the ranking used (zero
	// when the index learned nothing: the skills' text alone).
	Learned LearnedVersion
	// LearnedTerms is all the ranking took from the learned terms: for
	// each query term a candidate learned, those candidates and their
	// weights (nil for none). With the candidates, it rebuilds the ranking
	// (SearchWith). At most 64 terms (a query's) of at most 32 skills each.
	LearnedTerms []catalog.LearnedTerm
}

// Search returns the matches of text among the candidates of q: the skills
// an unlimited catalog of that session would list (the snapshot's
// winners, model-invocable only; a shadowed skill is no candidate; an
// incomplete snapshot is searched for what resolved). Matches come in rank
// order from offset, at most limit of them; Total counts every candidate
// with positive relevance. The same candidates and text give the same
// order; ties go by name in byte order. A negative offset counts as 0; a
// limit ≤ 0 returns no match but the total. The ResourceBase values the
// matches point to are shared and must not be modified. Errors are the
// registry's (ctx's cancellation) and ErrClosed.
func (ix *Index) Search(ctx context.Context, q catalog.Query, text string, limit, offset int) (Result, error) {
	return ix.search(ctx, q, text, limit, offset, false, nil)
}

// SearchWith is Search ranking with the learned terms ev (as a Result's
// LearnedTerms recorded them) instead of what the index learned: over the
// same candidates it returns the recorded search's page. ev is checked
// first (CheckLearnedTerms).
func (ix *Index) SearchWith(ctx context.Context, q catalog.Query, text string, limit, offset int, ev []catalog.LearnedTerm) (Result, error) {
	if err := CheckLearnedTerms(text, ev); err != nil {
		return Result{}, fmt.Errorf("search skills: %w", err)
	}
	return ix.search(ctx, q, text, limit, offset, true, ev)
}

func (ix *Index) search(ctx context.Context, q catalog.Query, text string, limit, offset int, given bool, ev []catalog.LearnedTerm) (Result, error) {
	ix.mu.Lock()
	closed := ix.closed
	ix.mu.Unlock()
	if closed {
		return Result{}, fmt.Errorf("search skills: %w", ErrClosed)
	}
	v, err := ix.reg.Derive(ctx, q, viewKey{ix}, candidatesOf)
	if err != nil {
		return Result{}, fmt.Errorf("search skills: %w", err)
	}
	cv := v.(*candidates)
	res := Result{Complete: cv.complete}
	terms := queryTerms(text)
	if len(terms) == 0 || len(cv.skills) == 0 {
		return res, nil
	}
	var bodies []uint64
	if ix.opts.Bodies {
		if bodies, err = ix.bodiesOf(ctx, q, cv); err != nil {
			return Result{}, fmt.Errorf("search skills: %w", err)
		}
	}
	c, err := ix.corpusOf(cv, bodies)
	if err != nil {
		return Result{}, fmt.Errorf("search skills: %w", err)
	}
	var ver LearnedVersion
	if !given {
		ev, ver = ix.learned.evidence(terms, cv)
	}
	lp := postingsOf(terms, ev, cv, c.df)
	page, total := c.rank(terms, lp, limit, max(offset, 0))
	res.Total, res.Learned, res.LearnedTerms = total, ver, ev
	if len(page) > 0 {
		res.Matches = make([]catalog.Summary, len(page))
		for i, d := range page {
			res.Matches[i] = cv.skills[d]
		}
	}
	return res, nil
}

// Searcher returns the index bound to q's session, as catalog.Search
// takes it: its searches are Search's for q.
func (ix *Index) Searcher(q catalog.Query) catalog.Searcher {
	return searcher{ix, q}
}

type searcher struct {
	ix *Index
	q  catalog.Query
}

func (s searcher) Search(ctx context.Context, text string, limit, offset int) (catalog.Matches, error) {
	r, err := s.ix.Search(ctx, s.q, text, limit, offset)
	return catalog.Matches{Skills: r.Matches, Total: r.Total, Learned: r.Learned.String(), LearnedTerms: r.LearnedTerms}, err
}

// SearcherWith returns the index bound to q's session ranking with the
// learned terms ev of version learned, as a search's result recorded them
// (SearchWith): what a replay rebuilds a recorded search's ranking with.
func (ix *Index) SearcherWith(q catalog.Query, learned string, ev []catalog.LearnedTerm) catalog.Searcher {
	return recordedSearcher{ix, q, learned, ev}
}

type recordedSearcher struct {
	ix      *Index
	q       catalog.Query
	learned string
	ev      []catalog.LearnedTerm
}

func (s recordedSearcher) Search(ctx context.Context, text string, limit, offset int) (catalog.Matches, error) {
	r, err := s.ix.SearchWith(ctx, s.q, text, limit, offset, s.ev)
	if err != nil {
		return catalog.Matches{}, err
	}
	return catalog.Matches{Skills: r.Matches, Total: r.Total, Learned: s.learned, LearnedTerms: r.LearnedTerms}, nil
}

// Close drops what the index keeps; later searches fail with ErrClosed.
func (ix *Index) Close() error {
	ix.mu.Lock()
	defer ix.mu.Unlock()
	ix.closed = true
	ix.analyses.Purge()
	ix.corpora.Purge()
	return nil
}

// viewKey is the index's key for what it derives of a registry view.
type viewKey struct{ ix *Index }

// candidates is what the index keeps with a registry view: the skills
// searched, and the corpus built of them (weakly: the index's bound on
// corpora decides how long it lives).
type candidates struct {
	skills   []catalog.Summary // model-invocable winners, in name order
	complete bool
	corpus   atomic.Pointer[weak.Pointer[corpus]]
	pos      atomic.Pointer[map[string]uint32] // skills' positions by name, made when learned terms need them

	// With Options.Bodies: the skills' bodies as indexed (their first
	// MaxBodyBytes) and their keys, read at the view's first search
	// (bodyNext of them so far, when a search ended while reading: the
	// next goes on); bodyKeys is set once all are read.
	bodyMu    sync.Mutex
	bodyTexts []string
	bodyRead  []uint64
	bodyNext  int
	bodyKeys  []uint64
}

// positions returns the candidates' positions by name, making them at
// the first call.
func (cv *candidates) positions() map[string]uint32 {
	if p := cv.pos.Load(); p != nil {
		return *p
	}
	m := make(map[string]uint32, len(cv.skills))
	for i, s := range cv.skills {
		m[s.Name] = uint32(i)
	}
	cv.pos.Store(&m)
	return m
}

// candidatesOf keeps the model-invocable skills of a snapshot, sharing
// its slice when all of them are.
func candidatesOf(s catalog.Snapshot) any {
	cv := &candidates{skills: s.Skills, complete: s.Complete}
	if !slices.ContainsFunc(s.Skills, func(s catalog.Summary) bool { return !s.Invocation.ModelInvocable }) {
		return cv
	}
	cv.skills = nil
	for _, sk := range s.Skills {
		if sk.Invocation.ModelInvocable {
			cv.skills = append(cv.skills, sk)
		}
	}
	return cv
}

// corpusOf returns the corpus of cv's skills, with their bodies keyed as
// bodies (nil: none): the one cv last used while it lives, else one of
// the same texts the index keeps, else a new one.
func (ix *Index) corpusOf(cv *candidates, bodies []uint64) (*corpus, error) {
	if wp := cv.corpus.Load(); wp != nil {
		if c := wp.Value(); c != nil {
			return c, nil
		}
	}
	var texts []string
	if bodies != nil {
		texts = cv.bodyTexts
	}
	c, err := ix.corpusWith(cv.skills, bodies, texts)
	if err != nil {
		return nil, err
	}
	wp := weak.Make(c)
	cv.corpus.Store(&wp)
	return c, nil
}

// corpusFor is corpusWith, without bodies.
func (ix *Index) corpusFor(skills []catalog.Summary) (*corpus, error) {
	return ix.corpusWith(skills, nil, nil)
}

// corpusWith returns a corpus of skills, whose bodies are keyed bodies
// and read texts (both nil: no body), building what it lacks: the
// analyses of skills whose text it has not analysed (or no longer keeps),
// and the postings when it keeps none of exactly these analyses.
func (ix *Index) corpusWith(skills []catalog.Summary, bodies []uint64, texts []string) (*corpus, error) {
	ix.build.Lock()
	defer ix.build.Unlock()
	as, err := ix.analysesOf(skills, bodies, texts)
	if err != nil {
		return nil, err
	}
	serials := make([]uint64, len(as))
	for i, a := range as {
		serials[i] = a.serial
	}
	fp := maphash.Bytes(ix.seed, unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(serials))), len(serials)*8))
	ix.mu.Lock()
	c, ok := ix.corpora.Get(fp)
	ix.mu.Unlock()
	if ok && c.dict == ix.dict && slices.Equal(c.serials, serials) {
		return c, nil
	}
	c = buildCorpus(ix.dict, skills, bodies, as, serials, ix.dict.size())
	ix.last = c
	ix.mu.Lock()
	if !ix.closed {
		ix.corpora.Add(fp, c)
	}
	ix.mu.Unlock()
	return c, nil
}

// analysesOf returns the analysis of each skill (with its body keyed
// bodies[i] and read texts[i], both nil for none), analysing those the
// index does not keep. The caller holds ix.build. When the dict has grown
// past its bound, it starts a new one and analyses every skill again.
func (ix *Index) analysesOf(skills []catalog.Summary, bodies []uint64, texts []string) ([]*analysis, error) {
	if ix.dict.size() > ix.opts.MaxTerms {
		ix.dict = newDictOf(2 * ix.opts.MaxTerms)
		ix.mu.Lock()
		ix.analyses.Purge()
		ix.mu.Unlock()
	}
	as := make([]*analysis, len(skills))
	if ix.last != nil && ix.last.dict == ix.dict {
		ix.last.reuse(skills, bodies, as)
	}
	var missing []int
	ix.mu.Lock()
	if ix.closed {
		ix.mu.Unlock()
		return nil, ErrClosed
	}
	for i, s := range skills {
		if as[i] != nil {
			continue
		}
		if a, ok := ix.analyses.Get(textOf(s, bodyKey(bodies, i))); ok {
			as[i] = a
		} else {
			missing = append(missing, i)
		}
	}
	ix.mu.Unlock()
	if len(missing) == 0 {
		return as, nil
	}
	d := ix.dict
	d.mu.Lock()
	from := len(d.terms)
	for _, i := range missing {
		var left int
		body := ""
		if texts != nil {
			body = texts[i]
		}
		as[i], left = analyze(d, textOf(skills[i], bodyKey(bodies, i)), body, ix.opts.MaxSkillTerms, &ix.scratch)
		ix.leftOut.Add(uint64(left))
	}
	d.sortNew(from)
	d.mu.Unlock()
	ix.mu.Lock()
	for _, i := range missing {
		ix.serial++
		as[i].serial = ix.serial
		ix.analyses.Add(textOf(skills[i], bodyKey(bodies, i)), as[i])
	}
	ix.mu.Unlock()
	return as, nil
}
