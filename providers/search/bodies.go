package search

import (
	"context"
	"hash/maphash"
	"unicode/utf8"

	"github.com/skillstream/skillstream/catalog"
)

// bodyMaxFieldBytes is the bytes of a body analysed. A body is cut to it
// when read, so the candidates of a view hold no more of it.
const bodyMaxFieldBytes = MaxBodyBytes

// bodiesOf returns the keys of the bodies of cv's skills, reading them at
// the view's first search (Options.Bodies): a registry view is replaced
// exactly when a provider announces a change, so the bodies are read once
// per change of the skills, never per search. Every body is read again
// then, as a body may change alone. A body that cannot be read (the skill
// went away since, its provider failed) is indexed empty and counted
// (BodyReads); only ctx's end fails the search, and the next search
// goes on from the bodies read so far.
func (ix *Index) bodiesOf(ctx context.Context, q catalog.Query, cv *candidates) ([]uint64, error) {
	cv.bodyMu.Lock()
	defer cv.bodyMu.Unlock()
	if cv.bodyKeys != nil {
		return cv.bodyKeys, nil
	}
	if cv.bodyTexts == nil {
		cv.bodyTexts, cv.bodyRead = make([]string, len(cv.skills)), make([]uint64, len(cv.skills))
	}
	lk := ix.reg.Lookup(q)
	for ; cv.bodyNext < len(cv.skills); cv.bodyNext++ {
		i := cv.bodyNext
		sk, err := lk.Load(ctx, cv.skills[i].Name)
		if cerr := ctx.Err(); cerr != nil {
			return nil, cerr
		}
		ix.bodyReads.Add(1)
		if err != nil {
			ix.bodyErrors.Add(1)
			continue
		}
		cv.bodyTexts[i] = boundBody(sk.Content)
		cv.bodyRead[i] = ix.bodyKeyOf(cv.bodyTexts[i])
	}
	cv.bodyKeys = cv.bodyRead
	return cv.bodyKeys, nil
}

// boundBody is the beginning of body that is indexed: at most
// MaxBodyBytes, cut before a rune that would cross the bound. A copy, so
// that the skill's whole body is not kept alive by it.
func boundBody(body string) string {
	if len(body) <= bodyMaxFieldBytes {
		return string([]byte(body))
	}
	n := bodyMaxFieldBytes
	for n > 0 && n > bodyMaxFieldBytes-utf8.UTFMax && !utf8.RuneStart(body[n]) {
		n--
	}
	return string([]byte(body[:n]))
}

// bodyKeyOf is the key of a body's text in the analyses: 0 for none, a
// hash of it (never 0) otherwise.
func (ix *Index) bodyKeyOf(body string) uint64 {
	if body == "" {
		return 0
	}
	return maphash.String(ix.seed, body) | 1
}

// BodyReads is how many skill bodies the index read (Options.Bodies), and
// BodyErrors how many of them could not be read and were indexed empty.
func (ix *Index) BodyReads() (reads, errors uint64) {
	return ix.bodyReads.Load(), ix.bodyErrors.Load()
}
