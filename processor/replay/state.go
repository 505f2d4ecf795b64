package replay

import (
	"cmp"
	"slices"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor"
)

// Update kinds a CatalogView reports: the two templates, and the tombstone
// (a replacement with no entries).
const (
	UpdateInitial     = "initial"
	UpdateReplacement = "replacement"
	UpdateTombstone   = "tombstone"
)

// CatalogView is one recognisable catalog of ours in a session log.
type CatalogView struct {
	Seq     uint64         `json:"seq"`
	Step    string         `json:"step"`
	Update  string         `json:"update"`
	Entries []events.Entry `json:"entries"`
	Digest  string         `json:"digest"`
	Text    string         `json:"text"`
}

// state is what the recorded log says about a session's catalogs at some
// point: every recognisable catalog so far and the newest compaction. It
// grows by one entry per catalog; marks are cheap views of earlier points.
type state struct {
	sid, owner string
	catalogs   []CatalogView
	compaction *processor.Surface
}

// mark is the state as it was at one point of the log.
type mark struct {
	catalogs   int
	compaction *processor.Surface
}

func (s *state) mark() mark { return mark{len(s.catalogs), s.compaction} }

// observe updates the state with a recorded event. Catalogs that are not
// ours or not recognisable, and compactions that do not decode, are
// skipped, as the processor skips them.
func (s *state) observe(e Event, kind events.Kind) {
	switch kind {
	case events.KindCatalog:
		if v, ok := s.recognise(e); ok {
			s.catalogs = append(s.catalogs, v)
		}
	case events.KindCompaction:
		enc, err := events.EncodingOf(e.Header(events.HeaderContentType))
		if err != nil {
			return
		}
		c, err := events.DecodeCompaction(enc, e.Data)
		if err != nil || c.Session != s.sid {
			return
		}
		s.compaction = &processor.Surface{Seq: e.Seq, RetainFrom: c.RetainFrom, Keep: c.Keep}
	}
}

// recognise decodes a catalog.append event and reports whether it is a
// recognisable catalog of ours: our producer, and a text holding the
// <available_skills> block.
func (s *state) recognise(e Event) (CatalogView, bool) {
	enc, err := events.EncodingOf(e.Header(events.HeaderContentType))
	if err != nil {
		return CatalogView{}, false
	}
	c, err := events.DecodeCatalog(enc, e.Data)
	if err != nil || c.Session != s.sid || c.Source.Producer != s.owner {
		return CatalogView{}, false
	}
	digest, ok := catalog.Recognize(c.Text)
	if !ok {
		return CatalogView{}, false
	}
	return CatalogView{Seq: e.Seq, Step: c.Step, Update: updateKind(c.Source.Update, len(c.Source.Entries)+c.Source.Omitted), Entries: c.Source.Entries, Digest: digest, Text: c.Text}, true
}

func updateKind(update string, entries int) string {
	if update == UpdateReplacement && entries == 0 {
		return UpdateTombstone
	}
	return update
}

// at returns what the processor's history read finds at mark m, decided by
// the processor's own processor.HistoryOf: the newest recognisable catalog
// and, when the compaction masks it, the newest one the compaction keeps.
// It also returns the newest catalog still visible (nil when none is).
func (s *state) at(m mark) (catalog.History, *CatalogView) {
	if m.catalogs == 0 {
		return processor.HistoryOf(nil, m.compaction), nil
	}
	newest := &s.catalogs[m.catalogs-1]
	marks := []processor.Mark{{Seq: newest.Seq, Digest: newest.Digest}}
	seen := newest
	if m.compaction.Masks(newest.Seq) {
		seen = nil
		if kept := s.kept(m); kept != nil {
			marks = append(marks, processor.Mark{Seq: kept.Seq, Digest: kept.Digest})
			seen = kept
		}
	}
	return processor.HistoryOf(marks, m.compaction), seen
}

// kept returns the newest catalog before mark m that m's compaction keeps.
func (s *state) kept(m mark) *CatalogView {
	var best *CatalogView
	for _, k := range m.compaction.Keep {
		if best != nil && k <= best.Seq {
			continue
		}
		// Catalogs are in sequence order: binary search.
		cs := s.catalogs[:m.catalogs]
		i, found := slices.BinarySearchFunc(cs, k, func(c CatalogView, seq uint64) int { return cmp.Compare(c.Seq, seq) })
		if found && !m.compaction.Masks(cs[i].Seq) {
			best = &cs[i]
		}
	}
	return best
}
