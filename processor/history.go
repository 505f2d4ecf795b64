package processor

import (
	"slices"

	"github.com/skillstream/skillstream/catalog"
)

// Mark is a recognisable catalog of this processor found in a session log:
// its stream sequence and the digest recomputed from its text.
type Mark struct {
	Seq    uint64
	Digest string
}

// Surface is the newest compaction of a session: after the event at Seq, the
// model sees every session event with a sequence >= RetainFrom, the
// sequences in Keep, and the events from Seq on.
type Surface struct {
	Seq        uint64
	RetainFrom uint64
	Keep       []uint64
}

// Masks reports whether the event at seq is off the model-visible surface.
// A nil Surface (no compaction) masks nothing.
func (s *Surface) Masks(seq uint64) bool {
	if s == nil || seq >= s.Seq || seq >= s.RetainFrom {
		return false
	}
	return !slices.Contains(s.Keep, seq)
}

// HistoryOf is the catalog history of a session, given recognisable catalogs
// of this processor newest first and the session's newest compaction (nil
// when there is none). It is pure: replay and the processor share it.
//
// The processor passes at most the newest recognisable catalog plus, when
// that one is masked, the newest one a compaction keeps: no older catalog
// can be visible, since all of them lie below RetainFrom too.
func HistoryOf(newestFirst []Mark, compaction *Surface) catalog.History {
	h := catalog.History{Published: len(newestFirst) > 0}
	for _, m := range newestFirst {
		if !compaction.Masks(m.Seq) {
			h.Visible = true
			h.Digest = m.Digest
			break
		}
	}
	return h
}
