package replay

import (
	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
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

// compaction is the newest compaction of a session.
type compaction struct {
	seq, retainFrom uint64
	keep            map[uint64]bool
}

// masks reports whether the compaction takes an event of stream sequence
// seq off the model-visible surface (PROTOCOL.md, Compaction).
func (c *compaction) masks(seq uint64) bool {
	return c != nil && seq < c.retainFrom && !c.keep[seq] && seq < c.seq
}

// state is what the recorded log says about a session's catalogs at some
// point: every recognisable catalog so far and the newest compaction. It
// grows by one entry per catalog; marks are cheap views of earlier points.
type state struct {
	prefix, owner string
	catalogs      []CatalogView
	compaction    *compaction
}

// mark is the state as it was at one point of the log.
type mark struct {
	catalogs   int
	compaction *compaction
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
		if err != nil {
			return
		}
		keep := make(map[uint64]bool, len(c.Keep))
		for _, k := range c.Keep {
			keep[k] = true
		}
		s.compaction = &compaction{seq: e.Seq, retainFrom: c.RetainFrom, keep: keep}
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
	if err != nil || c.Source.Producer != s.owner {
		return CatalogView{}, false
	}
	digest, ok := catalog.Recognize(c.Text)
	if !ok {
		return CatalogView{}, false
	}
	return CatalogView{Seq: e.Seq, Step: c.Step, Update: updateKind(c.Source.Update, len(c.Source.Entries)), Entries: c.Source.Entries, Digest: digest, Text: c.Text}, true
}

func updateKind(update string, entries int) string {
	if update == UpdateReplacement && entries == 0 {
		return UpdateTombstone
	}
	return update
}

// at returns what the processor's history read finds at mark m: whether
// anything was ever published, and the newest catalog still visible (nil
// when every catalog is masked or none exists).
func (s *state) at(m mark) (catalog.History, *CatalogView) {
	h := catalog.History{Published: m.catalogs > 0}
	for i := m.catalogs - 1; i >= 0; i-- {
		c := &s.catalogs[i]
		if !m.compaction.masks(c.Seq) {
			h.Visible, h.Digest = true, c.Digest
			return h, c
		}
	}
	return h, nil
}
