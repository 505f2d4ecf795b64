package processor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strconv"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/history"
)

// Catalog heads. Most pre-steps change nothing, and the read that tells
// them so carries the session's newest catalog: tens of kilobytes once a
// catalog lists many skills, copied out of the store and over the wire at
// every step. A processor appending a catalog of at least catalogHeadMin
// bytes therefore appends a small head just before it (events.CatalogHead,
// on <prefix>.<sid>.catalog.head), the catalog expecting the head as the
// session's last event and naming it in HeaderCatalogHead. Nothing of the
// session can lie between the two. (Appending both as one atomic batch
// would save the head's round trip, but the server stages each batch in a
// store of its own before committing it: ten times slower per catalog,
// BenchmarkHeadAndCatalogAppend.)
//
// A member that knows such a catalog (it appended it, or read it in full
// once and saw its head right before it: adjacent) answers the next pre-steps of the session with two small Direct
// Gets sent together instead of the full read:
//
//   - the newest pre-step, compaction and catalog.> record from the
//     catalog's sequence + 1 on (the server skips older ones without
//     loading them): any catalog or head after it means the catalog is no
//     longer the newest;
//   - the newest record of each subject under <prefix>.<sid>.catalog.>
//     from the head's sequence on, one record at most (batch 1): it must
//     be the head, byte for byte as expected, and the server's count of
//     newest records after it must be 1. The newest catalog.append is then
//     after the head; since nothing of the session lies between head and
//     catalog, and (first read) nothing on catalog.> lies after the
//     catalog, it is the catalog: still in the stream. The server finds
//     these newest records by its subject index and loads only the head,
//     where a count of matching records from the head on (a batch read by
//     next_by_subj) scans every block written since.
//
// A catalog deleted by hand, a stream recreated under the same name, a
// newer catalog of another member or a head left without its catalog all
// fail one of these checks, and the pre-step reads the session in full as
// before (and does not try the head again for that catalog). Like every
// read, both may be answered by a replica that lags; the append that may
// follow is checked against the session's last sequence as always.

// catalogHeadMin is the size from which a catalog gets a head: below it,
// reading the catalog costs about what the two small reads cost
// (BenchmarkReadPlan).
const catalogHeadMin = 16 << 10

// headMemoSize bounds the remembered catalogs with a head (a few hundred
// bytes each).
const headMemoSize = 4096

// Results of head reads (the head_reads_total label).
const (
	headHit    = "hit"    // the catalog is still the newest: not read
	headStale  = "stale"  // it is not, or cannot be shown to be: read in full
	headUnsure = "unsure" // the reads failed or lagged: read in full, try again next time
)

var headReadResults = []string{headHit, headStale, headUnsure}

// headMemo is a session's newest catalog as known to this member, with
// its head.
type headMemo struct {
	head     uint64 // the head's stream sequence
	headData []byte // the head's bytes as expected
	// cat is the catalog as recognised; its Record holds sequence,
	// subject and the headers the rules read, not the bytes.
	cat history.Catalog
	// failed: a head read of this catalog failed; the session is read in
	// full until a newer catalog is known.
	failed bool
}

// heads remembers each session's newest catalog with a head, by session.
type heads struct {
	cache *lru.Cache[string, headMemo]
}

func newHeads() *heads {
	c, _ := lru.New[string, headMemo](headMemoSize)
	return &heads{cache: c}
}

// catalogHead is the head of catalog c of session sid.
func catalogHead(sid string, c history.Catalog) events.CatalogHead {
	return events.CatalogHead{V: events.Version, Session: sid, Step: c.Step, Digest: c.Digest, View: c.View}
}

// remember records catalog c of session sid, whose head is at seq head.
// Only the headers the rules read are kept of the record.
func (h *heads) remember(sid string, head uint64, c history.Catalog) {
	data, err := events.Encode(events.Msgpack, catalogHead(sid, c))
	if err != nil {
		return
	}
	c.Record = record{Seq: c.Seq, Subject: c.Subject, Header: history.Header{
		events.HeaderContentType:  {c.Header.Get(events.HeaderContentType)},
		events.HeaderCausationSeq: {c.Header.Get(events.HeaderCausationSeq)},
		events.HeaderCatalogHead:  {strconv.FormatUint(head, 10)},
	}}
	h.cache.Add(sid, headMemo{head: head, headData: data, cat: c})
}

// learn remembers the newest catalog of a session read in full when it
// names a head, unless it is known already, and only when the head is
// shown to be the session's record right before it (adjacent): the header
// alone is the word of whoever appended the catalog.
func (p *Processor) learnHead(ctx context.Context, sid string, newest *history.Catalog) {
	h := p.heads
	if newest == nil {
		return
	}
	named := newest.Header.Get(events.HeaderCatalogHead)
	if named == "" {
		return
	}
	head, err := strconv.ParseUint(named, 10, 64)
	if err != nil || head == 0 || head >= newest.Seq {
		return
	}
	if m, ok := h.cache.Peek(sid); ok && m.cat.Seq == newest.Seq {
		return
	}
	if ok, err := p.adjacent(ctx, sid, head, newest.Seq); !ok {
		if err != nil {
			p.log.Debug("check catalog head", "session", sid, "err", err)
		}
		return
	}
	h.remember(sid, head, *newest)
}

// adjacent reports whether the session's first record after the one at
// head is the one at cat (one Direct Get of the next record on
// <prefix>.<sid>.>, found by the server's per-block subject index; it is
// the catalog, read once more when learned). Records are never inserted
// between others, so once shown this holds for good; a catalog this
// member appended expected its head as the session's last record, so the
// server has shown it already.
func (p *Processor) adjacent(ctx context.Context, sid string, head, cat uint64) (bool, error) {
	req, err := json.Marshal(directRequest{Seq: head + 1, NextFor: events.SessionWildcard(p.cfg.Prefix, sid)})
	if err != nil {
		return false, err
	}
	rctx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
	defer cancel()
	p.rd.reads.Add(1)
	m, err := p.rd.nc.RequestWithContext(rctx, p.rd.api, req)
	if err != nil {
		return false, err
	}
	rec, err := oneRecord(m)
	switch {
	case errors.Is(err, errNoMessage):
		return false, nil
	case err != nil:
		return false, err
	}
	return rec.Seq == cat, nil
}

// usable returns the catalog to read the head of for a pre-step of
// session sid at trigger sequence seq for step: one known, not failed,
// older than the trigger and not answering it (an answer is read in full).
func (h *heads) usable(sid string, seq uint64, step string) (headMemo, bool) {
	m, ok := h.cache.Get(sid)
	if !ok || m.failed || seq <= m.cat.Seq || m.cat.Step == step || history.CausedBy(m.cat.Record, seq) {
		return headMemo{}, false
	}
	return m, true
}

// fail marks the catalog at seq of session sid as not to be read by its
// head again.
func (h *heads) fail(sid string, seq uint64) {
	if m, ok := h.cache.Peek(sid); ok && m.cat.Seq == seq {
		m.failed = true
		h.cache.Add(sid, m)
	}
}

// errHeadStale reports a head read showing that the remembered catalog is
// not, or cannot be shown to be, the session's newest.
var errHeadStale = errors.New("remembered catalog is not the newest")

// headView reads session sid for a pre-step at trigger sequence atLeast
// through the head of its remembered catalog m (see above). The view has
// the newest pre-step and any newer compaction; the catalog is m's, known
// and not read. It fails with errHeadStale when the catalog is not shown
// to be the newest, with another error when the reads fail or lag.
func (p *Processor) headView(ctx context.Context, sid string, atLeast uint64, m headMemo) (view, error) {
	start := p.now()
	defer func() { p.m.observe(stageRead, p.now().Sub(start)) }()
	prefix := p.cfg.Prefix
	preStep := events.Subject(prefix, sid, events.KindPreStep)
	compaction := events.Subject(prefix, sid, events.KindCompaction)
	catalogs := prefix + "." + sid + ".catalog.>"
	newer, err := multiLastRequest([]string{preStep, catalogs, compaction}, m.cat.Seq+1, 0)
	if err != nil {
		return view{}, err
	}
	atHead, err := json.Marshal(directRequest{Seq: m.head, MultiLast: []string{catalogs}, Batch: 1})
	if err != nil {
		return view{}, err
	}
	rctx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
	defer cancel()
	r1, a1, err := p.rd.send(newer)
	if err != nil {
		return view{}, err
	}
	defer p.rd.closeAnswer(r1)
	r2, a2, err := p.rd.send(atHead)
	if err != nil {
		return view{}, err
	}
	defer p.rd.closeAnswer(r2)
	recs, err := a1.all(rctx)
	if err != nil {
		return view{}, err
	}
	head, err := a2.first(rctx)
	switch {
	case errors.Is(err, errNoMessage):
		return view{}, errHeadStale
	case err != nil:
		return view{}, err
	}
	if head.Seq != m.head || head.Subject != events.Subject(prefix, sid, events.KindCatalogHead) ||
		!bytes.Equal(head.Data, m.headData) ||
		head.Header.Get(events.HeaderCausationSeq) != m.cat.Header.Get(events.HeaderCausationSeq) ||
		head.Header.Get(hdrNumPending) != "1" {
		return view{}, errHeadStale
	}
	v := view{last: m.cat.Seq, newest: make([]record, 0, len(recs)), known: &m.cat}
	for _, r := range recs {
		if r.Subject != preStep && r.Subject != compaction {
			return view{}, errHeadStale // a newer catalog or head
		}
		v.put(r)
		v.last = max(v.last, r.Seq)
	}
	if v.last < atLeast {
		return view{}, errors.New("replica lags behind the trigger")
	}
	return v, nil
}

// hdrNumPending is the header of a batch or multi-last Direct Get answer
// counting the records after the one answered.
const hdrNumPending = "Nats-Num-Pending"
