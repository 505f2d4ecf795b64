package providers

import (
	"crypto/sha256"
	"encoding/binary"
	"sync"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/skillstream/skillstream/catalog"
)

// Prepared views shared by content. Many working directories see the same
// skills: every project of an organisation without skills of its own sees
// the user's and the store's, and a member serving more projects than
// its providers watch collects a view again at every call. Preparing a
// view of a thousand skills (entries, shortening, digest, rendered texts)
// costs milliseconds; a view whose skills are those of one prepared
// before, under the same options, is given that one's result instead.
//
// The key covers everything catalog.Prepare reads of a snapshot: each
// skill's name, description, invocation and source, in order, and the
// options. The position, diagnostics and origins (which revision of a store
// skill each entry came from) are the view's own (Prepared sets them); an
// incomplete view is never shared.

// sharedViewsSize bounds the prepared views kept by content.
const sharedViewsSize = 64

type sharedKey struct {
	opts catalog.Options
	sum  [sha256.Size]byte
}

// sharedViews is the registry's prepared views by content.
type sharedViews struct {
	cache *lru.Cache[sharedKey, *preparedView]
}

func newSharedViews() *sharedViews {
	c, _ := lru.New[sharedKey, *preparedView](sharedViewsSize)
	return &sharedViews{cache: c}
}

// get returns the prepared view of skills under opts, preparing it (once,
// however many ask at the same time) with prepare when none is kept.
func (s *sharedViews) get(sum [sha256.Size]byte, opts catalog.Options, prepare func() catalog.View) catalog.View {
	k := sharedKey{opts: opts, sum: sum}
	pv, ok := s.cache.Get(k)
	if !ok {
		pv = &preparedView{}
		if prev, found, _ := s.cache.PeekOrAdd(k, pv); found {
			pv = prev
		}
	}
	pv.once.Do(func() { pv.v = prepare() })
	return pv.v
}

// contentSum is the key of v's skills (see above), computed once.
func (v *view) contentSum() [sha256.Size]byte {
	v.sumOnce.Do(func() {
		h := sha256.New()
		var n [binary.MaxVarintLen64]byte
		str := func(s string) {
			h.Write(n[:binary.PutUvarint(n[:], uint64(len(s)))])
			h.Write([]byte(s))
		}
		h.Write(n[:binary.PutUvarint(n[:], uint64(len(v.skills)))])
		for _, s := range v.skills {
			str(s.Name)
			str(s.Description)
			str(s.Source)
			flags := byte(0)
			if s.Invocation.ModelInvocable {
				flags |= 1
			}
			if s.Invocation.UserInvocable {
				flags |= 2
			}
			h.Write([]byte{flags})
		}
		h.Sum(v.sum[:0])
	})
	return v.sum
}

// sumState is a view's content key, computed at most once.
type sumState struct {
	sumOnce sync.Once
	sum     [sha256.Size]byte
}
