package replay

import (
	"context"
	"sort"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/history"
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
	// Omitted counts the skills the catalog does not list.
	Omitted int `json:"omitted,omitempty"`
}

// mark is a point of the recorded log: the sequence of the last event
// observed there.
type mark uint64

// state is the recorded log as the history rule reads it: the session's
// catalog and compaction records (the only kinds the rule reads), by
// subject in stream order. The processor's own rule (history.Session)
// reads it at any earlier point through a recordingLog.
type state struct {
	rule      history.Session
	bySubject map[string][]history.Record
	last      uint64
	// judged remembers what the rule concluded about each catalog record,
	// views the catalogs shown as seen.
	judged map[uint64]judgement
	views  map[uint64]CatalogView
}

type judgement struct {
	c  history.Catalog
	ok bool
}

func newState(l events.Layout, prefix, sid, owner string) *state {
	s := &state{bySubject: map[string][]history.Record{}, judged: map[uint64]judgement{}, views: map[uint64]CatalogView{}}
	s.rule = history.Session{Prefix: prefix, ID: sid, Layout: l, Owner: owner, Recognise: s.recognise}
	return s
}

func (s *state) mark() mark { return mark(s.last) }

// observe adds a recorded event of the session; only catalogs and
// compactions are kept.
func (s *state) observe(e Event, kind events.Kind) {
	s.last = max(s.last, e.Seq)
	if kind != events.KindCatalog && kind != events.KindCompaction {
		return
	}
	s.bySubject[e.Subject] = append(s.bySubject[e.Subject], record(e))
}

// record is e as the history rule reads it.
func record(e Event) history.Record {
	return history.Record{Seq: e.Seq, Subject: e.Subject, Time: e.Time, Header: e.Headers, Data: e.Data}
}

func (s *state) recognise(r history.Record) (history.Catalog, bool) {
	j, ok := s.judged[r.Seq]
	if !ok {
		j.c, j.ok = history.RecogniseIn(s.rule.Layout, s.rule.ID, s.rule.Owner, r)
		s.judged[r.Seq] = j
	}
	return j.c, j.ok
}

// at reads the history at mark m with the processor's own rule: what the
// processor's read finds there, the newest catalog still visible (nil when
// none is) and the compaction in force (nil when none).
func (s *state) at(ctx context.Context, m mark) (history.State, *CatalogView, *history.Surface, error) {
	log := recordingLog{s: s, upTo: uint64(m)}
	st, err := s.rule.Read(ctx, log)
	if err != nil {
		return history.State{}, nil, nil, err
	}
	comp := st.Compaction
	if st.Newest == nil {
		if comp, err = s.rule.Compaction(ctx, log); err != nil {
			return history.State{}, nil, nil, err
		}
	}
	if st.Seen == nil {
		return st, nil, comp, nil
	}
	v, ok := s.views[st.Seen.Seq]
	if !ok {
		if v, ok = viewOf(s.rule.Layout, *st.Seen); !ok {
			return st, nil, comp, nil
		}
		if st.Seen.Changes {
			// A change list: the list the model has is its chain's.
			if st.Chain == nil || st.Chain.List == nil {
				return st, nil, comp, nil
			}
			v.Entries = listEntries(st.Chain.List)
		}
		s.views[st.Seen.Seq] = v
	}
	return st, &v, comp, nil
}

// viewOf decodes a recognised catalog for showing.
func viewOf(l events.Layout, c history.Catalog) (CatalogView, bool) {
	d, err := c.DecodeIn(l)
	if err != nil {
		return CatalogView{}, false
	}
	return CatalogView{Seq: c.Seq, Step: c.Step, Update: updateKind(d.Source.Update, len(d.Source.Entries)+d.Source.Omitted), Entries: d.Source.Entries, Digest: c.Digest, Text: d.Text, Omitted: d.Source.Omitted}, true
}

func updateKind(update string, entries int) string {
	if update == UpdateReplacement && entries == 0 {
		return UpdateTombstone
	}
	return update
}

// recordingLog is the history.Log of the recording as it was at sequence
// upTo.
type recordingLog struct {
	s    *state
	upTo uint64
}

// upTo returns the records of rs with a sequence <= seq.
func upTo(rs []history.Record, seq uint64) []history.Record {
	return rs[:sort.Search(len(rs), func(i int) bool { return rs[i].Seq > seq })]
}

func newestOf(rs []history.Record) *history.Record {
	if len(rs) == 0 {
		return nil
	}
	r := rs[len(rs)-1]
	return &r
}

func (l recordingLog) Newest(_ context.Context, k events.Kind) (*history.Record, error) {
	subject := events.Subject(l.s.rule.Prefix, l.s.rule.ID, k)
	return newestOf(upTo(l.s.bySubject[subject], l.upTo)), nil
}

func (l recordingLog) Before(_ context.Context, subject string, seq uint64) (*history.Record, error) {
	return newestOf(upTo(l.s.bySubject[subject], min(seq-1, l.upTo))), nil
}

// At finds seq among the kept records; any other kind is of no interest to
// the rule, which reads catalogs by sequence only.
func (l recordingLog) At(_ context.Context, seq uint64) (*history.Record, error) {
	if seq > l.upTo {
		return nil, nil
	}
	for _, rs := range l.s.bySubject {
		rs = upTo(rs, seq)
		if r := newestOf(rs); r != nil && r.Seq == seq {
			return r, nil
		}
	}
	return nil, nil
}

// listEntries are a list's entries as the wire has them (an entry shown
// without a description has an empty one).
func listEntries(l *catalog.List) []events.Entry {
	out := make([]events.Entry, len(l.Entries))
	for i, e := range l.Entries {
		out[i] = events.Entry{Name: e.Name, Description: e.Description}
	}
	return out
}
