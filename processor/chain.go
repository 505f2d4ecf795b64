package processor

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"slices"
	"strconv"

	lru "github.com/hashicorp/golang-lru/v2"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/history"
)

// Change lists (Config.Catalog.Updates "changes"). A session's current
// list is then its newest full catalog (the base) and the change lists
// after it. What a pre-step reads stays what it was: the newest catalog
// record, now a small change list, whose digest says which list the model
// has. Two things would cost reads that grow with the chain, and are
// remembered instead:
//
//   - the chain itself (which records it is made of, and that each is
//     ours, consistent, and still in the stream): found once by reading it
//     back (history.Session.WalkChain), then remembered per session with
//     the newest record's sequence, digest and step. Each later pre-step
//     checks with one small Direct Get that nothing of it was deleted: the
//     server's count of the session's catalog records and heads (on
//     <prefix>.<sid>.catalog.>, counted from the stream's start, which the
//     server answers from its per-subject totals without reading message
//     blocks) must be the count seen then, and the first of them the
//     record seen then (a head when the first catalog was large: small). A record deleted by hand, purged or aged out, or a
//     stream recreated, changes one or the other (the newest record is
//     read by every pre-step anyway, so nothing can be added unseen); the
//     chain is then read back again (and found broken, the list is
//     re-established by a replacement);
//   - the lists themselves, needed only to decide the next change: kept by
//     digest (a list of a given digest is the same in every session), from
//     the views this member prepared or the records it read back.

// chainMemoSize bounds the remembered chains (a few hundred bytes each).
const chainMemoSize = 4096

// listMemoSize bounds the remembered lists: each may be as large as a
// catalog, and mostly shares its entries with a prepared view.
const listMemoSize = 64

// chainMemo is a session's newest change list's chain as known to this
// member.
type chainMemo struct {
	seq          uint64 // the newest record of the chain
	digest, step string // its digest and step
	seqs         []uint64
	head         uint64 // the base's head, 0 when it has none
	// The presence check: first is the sequence of the session's first
	// catalog record or head in the stream, fp a fingerprint of it, total
	// the count of the session's catalog records and heads then.
	first uint64
	fp    uint64
	total uint64
}

// chains remembers sessions' chains and lists.
type chains struct {
	seed  maphash.Seed
	byID  *lru.Cache[string, chainMemo]
	lists *lru.Cache[string, *catalog.List]
	// wire are current lists as Decisions carry them, by digest: the
	// same for every step of every session that has the list.
	wire *lru.Cache[string, wireList]
}

// wireList is a current list as a Decision carries it, and encoded.
type wireList struct {
	list *events.CurrentList
	raw  []byte // nil when it could not be encoded (the answer encodes it whole)
}

func newChains() *chains {
	byID, _ := lru.New[string, chainMemo](chainMemoSize)
	lists, _ := lru.New[string, *catalog.List](listMemoSize)
	wire, _ := lru.New[string, wireList](listMemoSize)
	return &chains{seed: maphash.MakeSeed(), byID: byID, lists: lists, wire: wire}
}

// encoded is the list l of digest as a Decision's currentList, and its
// msgpack encoding: made once per list. The list returned is shared by
// every answer that carries it and must not be modified.
func (c *chains) encoded(digest string, l *catalog.List) (*events.CurrentList, []byte) {
	if w, ok := c.wire.Get(digest); ok {
		return w.list, w.raw
	}
	cl := &events.CurrentList{Entries: wireEntries(l.Entries), Digest: digest}
	raw, err := events.EncodeCurrentList(*cl)
	if err != nil {
		raw = nil
	}
	c.wire.Add(digest, wireList{list: cl, raw: raw})
	return cl, raw
}

// List implements history.Lists.
func (c *chains) List(digest string) *catalog.List {
	l, _ := c.lists.Get(digest)
	return l
}

// RememberList implements history.Lists.
func (c *chains) RememberList(digest string, l *catalog.List) { c.lists.Add(digest, l) }

func (c *chains) fingerprint(r record) uint64 {
	return maphash.Bytes(c.seed, append([]byte(r.Subject+"\x00"), r.Data...))
}

// resolveChain is history.Session.Resolve for session sid: the chain of
// change list cat, from memory when its records are shown to be still
// there, else read back (h.WalkChain) and remembered.
// sent, when not nil, is the presence check's request, already sent.
func (p *Processor) resolveChain(ctx context.Context, h history.Session, log history.Log, sid string, cat history.Catalog, sent *chainCountCall) (*history.Chain, error) {
	if m, ok := p.chains.byID.Get(sid); ok && m.seq == cat.Seq && m.digest == cat.Digest && m.step == cat.Step {
		if l := p.chains.List(cat.Digest); l != nil {
			present, err := p.chainPresent(ctx, sid, m, sent)
			if err == nil && present {
				return &history.Chain{Seqs: m.seqs, Head: m.head, List: l}, nil
			}
			if err != nil {
				p.log.Debug("check catalog chain", "session", sid, "err", err)
			}
		}
		p.chains.byID.Remove(sid)
	}
	ch, err := h.WalkChain(ctx, log, cat)
	if err != nil || ch == nil {
		return ch, err
	}
	p.chains.RememberList(cat.Digest, ch.List)
	if first, total, err := p.chainCount(ctx, sid); err == nil {
		p.chains.byID.Add(sid, chainMemo{seq: cat.Seq, digest: cat.Digest, step: cat.Step, seqs: ch.Seqs, head: ch.Head,
			first: first.Seq, fp: p.chains.fingerprint(first), total: total})
	}
	return ch, nil
}

// chainPresent reports whether the records of the chain m are still there:
// the session's catalog records and heads are as many as then, and the
// first is the one seen then.
func (p *Processor) chainPresent(ctx context.Context, sid string, m chainMemo, sent *chainCountCall) (bool, error) {
	if sent == nil {
		sent = p.sendChainCount(sid)
		defer sent.close()
	}
	first, total, err := sent.result(ctx)
	if errors.Is(err, errNoMessage) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return first.Seq == m.first && total == m.total && p.chains.fingerprint(first) == m.fp, nil
}

// chainCount reads the session's first record on <prefix>.<sid>.catalog.>
// and the server's count of them (one Direct Get of a batch of one from
// the stream's start: from there the server adds up its per-subject
// totals, two subjects here, without reading message blocks, whatever the
// stream's size).
func (p *Processor) chainCount(ctx context.Context, sid string) (record, uint64, error) {
	c := p.sendChainCount(sid)
	defer c.close()
	return c.result(ctx)
}

// chainCountCall is chainCount's request, sent (sendChainCount) before its
// answer is needed: a pre-step of a session whose chain this member
// remembers sends it beside its read, so that checking the chain costs no
// round trip of its own.
type chainCountCall struct {
	p     *Processor
	reply string
	a     *answers
	err   error
}

func (p *Processor) sendChainCount(sid string) *chainCountCall {
	c := &chainCountCall{p: p}
	body, err := json.Marshal(directRequest{Seq: 1, NextFor: p.cfg.Prefix + "." + sid + ".catalog.>", Batch: 1})
	if err != nil {
		c.err = err
		return c
	}
	c.reply, c.a, c.err = p.rd.send(body)
	return c
}

// close stops waiting for the answer.
func (c *chainCountCall) close() {
	if c.err == nil {
		c.p.rd.closeAnswer(c.reply)
	}
}

// result is chainCount's result from the answer.
func (c *chainCountCall) result(ctx context.Context) (record, uint64, error) {
	if c.err != nil {
		return record{}, 0, c.err
	}
	rctx, cancel := context.WithTimeout(ctx, c.p.cfg.RequestTimeout)
	defer cancel()
	recs, err := c.a.all(rctx)
	if err != nil {
		return record{}, 0, err
	}
	if len(recs) == 0 {
		return record{}, 0, errNoMessage
	}
	pending, err := strconv.ParseUint(recs[0].Header.Get(hdrNumPending), 10, 64)
	if err != nil {
		return record{}, 0, fmt.Errorf("catalog chain count: %w", err)
	}
	return recs[0], pending, nil
}

// current rebuilds the session's current list when the decision may be a
// change list and the history does not hold it yet (history.Session.Current).
func (s *preStepPlan) current(ctx context.Context) error {
	p := s.p
	if !s.hist.Wants(s.prepared) {
		return nil
	}
	h := p.historySession(s.t.sid, s.view)
	if err := h.Current(ctx, sessionLog{p: p, sid: s.t.sid, view: s.view}, &s.hist, s.prepared); err != nil {
		return p.deadlineOr(s.ps.DeadlineMs, fmt.Errorf("read current catalog list of %s: %w", s.t.sid, err))
	}
	return nil
}

// body is the encoded shared part of the catalog d decides: a full catalog
// from the bodies kept for every session, a change list made for this
// session (it names the session's base).
func (s *preStepPlan) body(d catalog.Decision, rev uint64, epoch string) (*events.CatalogBody, error) {
	p := s.p
	if d.Update != catalog.UpdateChanges {
		return p.bodies.get(d, s.origins(), s.revoked(), rev, epoch, p.cfg.ToolOwner, p.cfg.Instance, s.recordedOptions())
	}
	return events.NewCatalogBody(d.Text, events.CatalogSource{
		Kind:     events.SourceKindCatalog,
		Producer: p.cfg.ToolOwner,
		Update:   events.UpdateChanges,
		Base:     s.hist.Chain.Base(),
		Changes:  wireChanges(d.Changes),
		Count:    len(d.Entries),
		Digest:   d.Digest,
		Omitted:  d.Omitted,
		Origins:  history.CatalogOrigins(d, s.origins()),
		Revoked:  history.CatalogRevoked(d, s.revoked()),
		View:     &events.View{Revision: rev, Instance: p.cfg.Instance, Epoch: epoch},
		Options:  s.recordedOptions(),
	})
}

// revoked are the skills withheld as revoked from the view this pre-step
// decided on (none when the tool is not visible).
func (s *preStepPlan) revoked() []string {
	if s.prepared == nil {
		return nil
	}
	return s.prepared.Revoked
}

// origins are the origins of the skills this pre-step decided on (none
// when the tool is not visible).
func (s *preStepPlan) origins() catalog.Origins {
	if s.prepared == nil {
		return catalog.Origins{}
	}
	return s.prepared.Origins
}

func wireChanges(cs []catalog.Change) []events.Change {
	out := make([]events.Change, len(cs))
	for i, c := range cs {
		out[i] = events.Change{Name: c.Name, Change: string(c.Kind), Description: c.Description}
	}
	return out
}

// appendedChain remembers what the catalog just appended at a (decided as
// d) makes of the session's current list: its list by digest, and for a
// change list its chain, whose presence check counts the new record (and
// its head). The append expected the session as read, so nothing else of
// the session came between.
func (s *preStepPlan) appendedChain(a appended) {
	p, sid := s.p, s.t.sid
	if s.prepared == nil || !s.prepared.ChangeLists || s.cat == nil {
		return
	}
	if s.decided.Update == catalog.UpdateChanges || (s.prepared.Digest == s.decided.Digest && len(s.decided.Entries) > 0) {
		l := catalog.ListOf(*s.prepared)
		p.chains.RememberList(s.decided.Digest, &l)
	}
	if s.decided.Update != catalog.UpdateChanges {
		s.seqs = nil
		return
	}
	s.seqs = append(slices.Clone(s.hist.Chain.Seqs), a.seq)
	m, ok := p.chains.byID.Get(sid)
	if len(s.hist.Chain.Seqs) > 1 && ok && m.seq == s.hist.Chain.Seqs[len(s.hist.Chain.Seqs)-1] {
		m.total++
		if a.head != 0 {
			m.total++
		}
	} else {
		// The first change list on this base: count the session's catalog
		// records now, and remember the chain only if its base is still
		// the record read (nothing of the chain went missing meanwhile).
		ctx, cancel := context.WithTimeout(context.Background(), p.cfg.RequestTimeout)
		defer cancel()
		first, total, err := p.chainCount(ctx, sid)
		if err != nil {
			return // read back at the next pre-step
		}
		base, err := p.rd.bySeq(ctx, s.hist.Chain.Base())
		if err != nil || base.Subject != events.Subject(p.cfg.Prefix, sid, events.KindCatalog) {
			return
		}
		m = chainMemo{head: s.hist.Chain.Head, first: first.Seq, fp: p.chains.fingerprint(first), total: total}
	}
	m.seq, m.digest, m.step, m.seqs = a.seq, s.cat.Source.Digest, s.cat.Step, s.seqs
	p.chains.byID.Add(sid, m)
}

// historySession is the history rule for session sid, reading through
// view v: recognitions remembered (memo.go), chains and lists too.
func (p *Processor) historySession(sid string, v view) history.Session {
	return p.historySessionWith(sid, v, nil)
}

// historySessionWith is historySession whose chain check uses the
// request sent, when not nil.
func (p *Processor) historySessionWith(sid string, v view, sent *chainCountCall) history.Session {
	var h history.Session
	h = history.Session{Prefix: p.cfg.Prefix, ID: sid, Layout: p.cfg.Layout, Owner: p.cfg.ToolOwner,
		Recognise: func(s record) (history.Catalog, bool) {
			if v.known != nil && s.Seq == v.known.Seq {
				return *v.known, true
			}
			return p.recognise(sid, s)
		},
		Resolve: func(ctx context.Context, log history.Log, c history.Catalog) (*history.Chain, error) {
			return p.resolveChain(ctx, h, log, sid, c, sent)
		},
		Lists: p.chains,
	}
	return h
}

// currentList adds to a decision whose catalog the model sees (CatalogSeq)
// the records and the whole list when that list is made of several
// records: the change list appended for this step, or found already
// appended, or the one the session has. It returns the list's msgpack
// encoding, encoded once per list (chains.encoded), nil when the decision
// carries none or it could not be encoded.
func (s *preStepPlan) currentList(d *events.Decision) []byte {
	if d.CatalogSeq == 0 {
		return nil
	}
	var seqs []uint64
	var list *catalog.List
	var digest string
	chain := s.hist.Chain
	switch {
	case len(s.seqs) > 1 && s.seqs[len(s.seqs)-1] == d.CatalogSeq && s.prepared != nil:
		l := catalog.ListOf(*s.prepared)
		seqs, list, digest = s.seqs, &l, s.decided.Digest
	case s.dup != nil && s.dup.Source.Update == events.UpdateChanges && chain != nil && chain.List != nil && chain.Base() == s.dup.Source.Base:
		// An earlier attempt of this step appended it, on the list read.
		changes, notice, ok := catalog.ParseChanges(s.dup.Text)
		if !ok {
			return nil
		}
		l, ok := chain.List.Apply(changes, notice)
		if !ok || l.Digest() != s.dup.Source.Digest {
			return nil
		}
		seqs, list, digest = append(slices.Clone(chain.Seqs), d.CatalogSeq), &l, s.dup.Source.Digest
	case chain != nil && chain.List != nil && chain.Seqs[len(chain.Seqs)-1] == d.CatalogSeq && s.hist.Seen != nil && s.hist.Seen.Seq == d.CatalogSeq:
		// The newest record's digest is the list's: a change list's was
		// checked when its chain was resolved.
		seqs, list, digest = chain.Seqs, chain.List, s.hist.Seen.Digest
	}
	if len(seqs) <= 1 || list == nil {
		return nil
	}
	cl, raw := s.p.chains.encoded(digest, list)
	d.CatalogSeqs, d.CurrentList = seqs, cl
	return raw
}
