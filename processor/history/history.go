package history

import (
	"context"
	"slices"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

// Header holds a stored message's headers.
type Header map[string][]string

// Get returns the first value of header key, or "".
func (h Header) Get(key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// Record is one message of a session log as the stream stores it.
type Record struct {
	Seq     uint64
	Subject string
	// Time is the store time where the log reader knows it (the
	// processor's reads leave it zero: no rule here needs it).
	Time   time.Time
	Header Header
	Data   []byte
}

// encoding is the encoding a record declares; an unknown one makes the
// record unreadable.
func (r Record) encoding() (events.Encoding, error) {
	return events.EncodingOf(r.Header.Get(events.HeaderContentType))
}

// Log reads one session's log. Every method answers nil, nil when there is
// no such record. The processor reads the stream (one indexed read each);
// replay reads a recording.
type Log interface {
	// Newest returns the session's newest record of kind k.
	Newest(ctx context.Context, k events.Kind) (*Record, error)
	// Before returns the newest record on subject older than seq.
	Before(ctx context.Context, subject string, seq uint64) (*Record, error)
	// At returns the record at stream sequence seq, whatever its subject.
	At(ctx context.Context, seq uint64) (*Record, error)
}

// Catalog is a recognisable catalog of ours found in a session log.
type Catalog struct {
	Record
	// Step is the step it answered, Digest the digest recomputed from its
	// text.
	Step   string
	Digest string
	// View is the view of the skills it was decided on (source.view);
	// zero when it records none.
	View events.View
	// Changes is set for a change list: Digest is then its source's (the
	// digest of the list it leads to, checked when its chain is
	// resolved), and Base the sequence of the full catalog it says it
	// builds on.
	Changes bool
	Base    uint64
}

// Decode decodes the whole record: only needed to show or answer with it.
// It reads a session of the flat layout; DecodeIn reads any.
func (c Catalog) Decode() (events.Catalog, error) {
	return decodeCatalog(events.LayoutFlat, c.Record)
}

// DecodeIn is Decode for a session of layout l.
func (c Catalog) DecodeIn(l events.Layout) (events.Catalog, error) {
	return decodeCatalog(l, c.Record)
}

// Session is the history rule bound to one session and one producer.
type Session struct {
	// Prefix is the subject prefix, ID the session id.
	Prefix, ID string
	// Layout is the session layout: its records' session fields are
	// checked in it (an id of another layout is not this session's).
	Layout events.Layout
	// Owner is the tool owner id of the processor whose catalogs count.
	Owner string
	// Recognise judges a catalog record; Recognise (the function) when
	// nil. A caller that meets the same records often may remember the
	// judgements, as the processor does.
	Recognise func(Record) (Catalog, bool)
	// Resolve finds the chain of a change list (see WalkChain, which it
	// is when nil): a caller may remember chains, and check that their
	// records are still there, rather than read them again.
	Resolve func(ctx context.Context, log Log, c Catalog) (*Chain, error)
	// Lists, when set, remembers the lists Current reads back.
	Lists Lists
}

// recognise applies s.Recognise or the rule itself.
func (s Session) recognise(r Record) (Catalog, bool) {
	if s.Recognise != nil {
		return s.Recognise(r)
	}
	return RecogniseIn(s.Layout, s.ID, s.Owner, r)
}

// Recognise reports whether r is a recognisable catalog that owner
// published for session sid: it decodes, its session and producer match,
// and its text holds the <available_skills> block, whose digest it
// recomputes; or, a change list, its text holds the
// <skill_catalog_changes> block and its source says update "changes" with
// an earlier base and a digest (of the list it leads to, which only its
// chain can confirm: Session.Read resolves it). Anything else (a foreign
// catalog, bytes that do not decode, text without a block) is not ours
// and is skipped, never fatal.
func Recognise(sid, owner string, r Record) (Catalog, bool) {
	return RecogniseIn(events.LayoutFlat, sid, owner, r)
}

// RecogniseIn is Recognise for a session of layout l.
func RecogniseIn(l events.Layout, sid, owner string, r Record) (Catalog, bool) {
	c, err := decodeCatalog(l, r)
	if err != nil {
		return Catalog{}, false
	}
	digest, ok := recogniseDecoded(sid, owner, c)
	if !ok {
		return recogniseChanges(sid, owner, r, c)
	}
	out := Catalog{Record: r, Step: c.Step, Digest: digest}
	if c.Source.View != nil {
		out.View = *c.Source.View
	}
	return out, true
}

// recogniseDecoded is Recognise for a decoded catalog: whether it is owner's for session sid with the
// <available_skills> block in its text, and that block's digest.
func recogniseDecoded(sid, owner string, c events.Catalog) (digest string, ok bool) {
	if c.Session != sid || c.Source.Producer != owner {
		return "", false
	}
	return catalog.Recognize(c.Text)
}

func decodeCatalog(l events.Layout, r Record) (events.Catalog, error) {
	enc, err := r.encoding()
	if err != nil {
		return events.Catalog{}, err
	}
	return events.DecodeCatalogIn(l, enc, r.Data)
}

// State is what the log says about a session's catalogs at one point.
type State struct {
	// History is what catalog.DecideView needs.
	catalog.History
	// Newest is the newest recognisable catalog, visible or not; nil when
	// none was ever published.
	Newest *Catalog
	// Seen is the newest catalog still visible to the model; nil when none
	// is.
	Seen *Catalog
	// Compaction is the newest readable compaction; read only when a
	// catalog exists (nil otherwise, see Session.Compaction).
	Compaction *Surface
	// Chain is the session's current list when the model sees the
	// newest catalog (Seen is Newest) and, for a change list, its chain
	// was resolved and every record of it is visible; nil otherwise. Its
	// List is set for a change list (and by Current for a full catalog);
	// History.Current is then that list.
	Chain *Chain
}

// Read finds the newest recognisable catalog and, when the newest
// compaction masks it, the newest one the compaction keeps: no other
// catalog can be visible, since every older one lies below the
// compaction's RetainFrom too. It reads a few records whatever the
// session's length: the newest catalog and compaction, the previous record
// of the same subject for each one skipped, and kept sequences by number.
func (s Session) Read(ctx context.Context, log Log) (State, error) {
	first, err := log.Newest(ctx, events.KindCatalog)
	if err != nil {
		return State{}, err
	}
	newest, err := s.newestOurs(ctx, log, first)
	if err != nil || newest == nil {
		return State{}, err
	}
	st := State{Newest: newest}
	marks := []Catalog{*newest}
	surf, err := s.Compaction(ctx, log)
	if err != nil {
		return State{}, err
	}
	st.Compaction = surf
	if surf.Masks(newest.Seq) {
		kept, err := s.keptCatalog(ctx, log, surf, newest.Seq)
		if err != nil {
			return State{}, err
		}
		if kept != nil {
			marks = append(marks, *kept)
		}
	}
	st.History, st.Seen = Of(marks, surf)
	if st.Seen == nil {
		return st, nil
	}
	// A change list counts only with its whole chain visible: else the
	// model's list is not known, and a replacement re-establishes it.
	chain := &Chain{Seqs: []uint64{st.Seen.Seq}, Head: headOf(st.Seen.Record)}
	if st.Seen.Changes {
		if chain, err = s.resolve(ctx, log, *st.Seen); err != nil {
			return State{}, err
		}
		if chain == nil || chain.masked(surf) {
			st.History.Visible, st.History.Digest, st.Seen = false, "", nil
			return st, nil
		}
	}
	if st.Seen.Seq == newest.Seq {
		st.Chain = chain
		if chain.List != nil {
			st.setList(chain.List)
		}
	}
	return st, nil
}

// Of is the catalog history given recognisable catalogs newest first and
// the newest compaction (nil when there is none), with the newest visible
// catalog (nil when none is). Read passes at most the newest catalog and
// the newest one a compaction keeps.
func Of(newestFirst []Catalog, compaction *Surface) (catalog.History, *Catalog) {
	h := catalog.History{Published: len(newestFirst) > 0}
	for i := range newestFirst {
		if m := &newestFirst[i]; !compaction.Masks(m.Seq) {
			h.Visible = true
			h.Digest = m.Digest
			return h, m
		}
	}
	return h, nil
}

// newestOurs finds the newest recognisable catalog of ours at or before
// first, walking back over the catalog subject only, past foreign and
// malformed records.
func (s Session) newestOurs(ctx context.Context, log Log, first *Record) (*Catalog, error) {
	subject := events.Subject(s.Prefix, s.ID, events.KindCatalog)
	for cur := first; cur != nil; {
		if o, ok := s.recognise(*cur); ok {
			return &o, nil
		}
		prev, err := before(ctx, log, subject, cur.Seq)
		if err != nil {
			return nil, err
		}
		cur = prev
	}
	return nil, nil
}

// before is log.Before, except that nothing lies before sequence 1.
func before(ctx context.Context, log Log, subject string, seq uint64) (*Record, error) {
	if seq <= 1 {
		return nil, nil
	}
	return log.Before(ctx, subject, seq)
}

// Compaction finds the newest readable compaction of the session
// (unreadable ones are skipped like unrecognisable catalogs); nil when
// there is none.
func (s Session) Compaction(ctx context.Context, log Log) (*Surface, error) {
	subject := events.Subject(s.Prefix, s.ID, events.KindCompaction)
	cur, err := log.Newest(ctx, events.KindCompaction)
	if err != nil {
		return nil, err
	}
	for cur != nil {
		if enc, err := cur.encoding(); err == nil {
			if c, err := events.DecodeCompactionIn(s.Layout, enc, cur.Data); err == nil && c.Session == s.ID {
				return &Surface{Seq: cur.Seq, RetainFrom: c.RetainFrom, Keep: c.Keep}, nil
			}
		}
		prev, err := before(ctx, log, subject, cur.Seq)
		if err != nil {
			return nil, err
		}
		cur = prev
	}
	return nil, nil
}

// keptCatalog returns the newest recognisable catalog of ours among the
// sequences a compaction keeps below the masked catalog at below, or nil.
// Every other older catalog is masked too.
func (s Session) keptCatalog(ctx context.Context, log Log, surf *Surface, below uint64) (*Catalog, error) {
	subject := events.Subject(s.Prefix, s.ID, events.KindCatalog)
	keep := slices.Clone(surf.Keep)
	slices.Sort(keep)
	keep = slices.Compact(keep)
	for i := len(keep) - 1; i >= 0; i-- {
		k := keep[i]
		if k >= below || k == 0 {
			continue
		}
		m, err := log.At(ctx, k)
		if err != nil {
			return nil, err
		}
		if m == nil || m.Subject != subject {
			continue
		}
		if o, ok := s.recognise(*m); ok {
			return &o, nil
		}
	}
	return nil, nil
}

// Surface is the newest compaction of a session: after the event at Seq,
// the model sees every session event with a sequence >= RetainFrom, the
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
