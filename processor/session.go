package processor

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/history"
)

// view is what one read of a session returns: the newest event of every
// subject of the session, from one consistent state of one replica.
type view struct {
	// last is the sequence of the session's newest event: the expected last
	// sequence of an append.
	last uint64
	// newest holds one record per subject read (put): a read returns a
	// few, so a slice scanned for the subject costs less than a map.
	newest []record
	// known, when set, is the newest catalog, known to this member and
	// shown to be still the newest by its head (head.go): not read, so its
	// record has no bytes.
	known *history.Catalog
}

// of returns the newest event of kind k, or nil.
func (v view) of(prefix, sid string, k events.Kind) *record {
	if k == events.KindCatalog && v.known != nil {
		return &v.known.Record
	}
	for i := range v.newest {
		if isSubject(v.newest[i].Subject, prefix, sid, k) {
			s := v.newest[i]
			return &s
		}
	}
	return nil
}

// put records r as the newest event of its subject.
func (v *view) put(r record) {
	for i := range v.newest {
		if v.newest[i].Subject == r.Subject {
			v.newest[i] = r
			return
		}
	}
	v.newest = append(v.newest, r)
}

// isSubject reports whether subject is events.Subject(prefix, sid, k),
// without building that.
func isSubject(subject, prefix, sid string, k events.Kind) bool {
	if len(subject) != len(prefix)+len(sid)+len(k)+2 {
		return false
	}
	rest, ok := strings.CutPrefix(subject, prefix)
	if !ok || rest[0] != '.' {
		return false
	}
	rest, ok = strings.CutPrefix(rest[1:], sid)
	return ok && rest[0] == '.' && rest[1:] == string(k)
}

// readSession reads the newest event of each of the given kinds of the
// session (of every kind when kinds is nil: <prefix>.<sid>.>) in one Direct
// Get multi-last request: an indexed read whose cost depends on the number
// of kinds read, not on the session's length. One request keeps the view
// consistent even when a lagging replica answers; a view older than the
// trigger (atLeast) is read again, so kinds must include the trigger's.
//
// A view of some kinds only has the newest sequence among them as its
// last: an append expecting it is refused when the session holds a newer
// event of another kind, and appendAnswer then reads every kind.
func (p *Processor) readSession(ctx context.Context, sid string, atLeast uint64, kinds []events.Kind) (view, error) {
	start := p.now()
	defer func() { p.m.observe(stageRead, p.now().Sub(start)) }()
	filters := []string{events.SessionWildcard(p.cfg.Prefix, sid)}
	if kinds != nil {
		filters = make([]string, len(kinds))
		for i, k := range kinds {
			filters[i] = events.Subject(p.cfg.Prefix, sid, k)
		}
	}
	for attempt := 1; ; attempt++ {
		rctx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
		ms, err := p.rd.lastOf(rctx, filters, 0, 0)
		cancel()
		if err != nil {
			return view{}, fmt.Errorf("read session %s: %w", sid, err)
		}
		v := view{newest: make([]record, 0, len(ms))}
		for _, m := range ms {
			v.put(m)
			v.last = max(v.last, m.Seq)
		}
		if v.last >= atLeast {
			return v, nil
		}
		// A replica that has not yet seen the trigger answered.
		if attempt >= p.cfg.AppendRetries {
			return view{}, fmt.Errorf("read session %s: replicas lag behind sequence %d", sid, atLeast)
		}
		if err := pause(ctx, time.Duration(attempt)*5*time.Millisecond); err != nil {
			return view{}, err
		}
	}
}

// pause waits d or until ctx ends.
func pause(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// encodingOfStored is the encoding a stored event declares; an unknown one
// makes the event unreadable.
func encodingOfStored(s record) (events.Encoding, error) {
	return events.EncodingOf(s.Header.Get(events.HeaderContentType))
}

// sessionLog is the history.Log of one pre-step: the newest record of each
// kind comes from the view already read (no further request); the rare
// walk back past a foreign or malformed record, and the catalogs a
// compaction keeps, are one indexed read each.
type sessionLog struct {
	p    *Processor
	sid  string
	view view
}

func (l sessionLog) Newest(_ context.Context, k events.Kind) (*record, error) {
	return l.view.of(l.p.cfg.Prefix, l.sid, k), nil
}

// Before returns the newest event on subject older than seq, or nil.
func (l sessionLog) Before(ctx context.Context, subject string, seq uint64) (*record, error) {
	rctx, cancel := context.WithTimeout(ctx, l.p.cfg.RequestTimeout)
	defer cancel()
	s, err := l.p.rd.last(rctx, subject, seq-1)
	if errors.Is(err, errNoMessage) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s before %d: %w", subject, seq, err)
	}
	return &s, nil
}

// At returns the event at seq, or nil.
func (l sessionLog) At(ctx context.Context, seq uint64) (*record, error) {
	rctx, cancel := context.WithTimeout(ctx, l.p.cfg.RequestTimeout)
	defer cancel()
	m, err := l.p.rd.bySeq(rctx, seq)
	if errors.Is(err, errNoMessage) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read kept event %d: %w", seq, err)
	}
	return &m, nil
}

// catalogHistory reads what Decide needs to know about earlier catalogs of
// session sid from the view v (history.Session.Read: the newest
// recognisable catalog of ours and, when the newest compaction masks it,
// the newest one of ours the compaction keeps). A catalog the view knows
// without its bytes is the one recognised when it was first read.
//
// When this member remembers the session's chain of change lists, the
// request that checks it is still there is sent before the read, so that
// both travel together.
func (p *Processor) catalogHistory(ctx context.Context, sid string, v view) (history.State, error) {
	var sent *chainCountCall
	if _, ok := p.chains.byID.Peek(sid); ok {
		sent = p.sendChainCount(sid)
		defer sent.close()
	}
	return p.historySessionWith(sid, v, sent).Read(ctx, sessionLog{p: p, sid: sid, view: v})
}

// recognise reports whether s is a catalog this processor published for
// sid (history.Recognise). The conclusion about each record is remembered
// (see recognition), so the newest catalog that every pre-step of a
// session reads again is decoded and hashed once.
func (p *Processor) recognise(sid string, s record) (history.Catalog, bool) {
	rc, fp, hit := p.recognised.lookup(s)
	if !hit {
		c, ok := history.RecogniseIn(p.cfg.Layout, sid, p.cfg.ToolOwner, s)
		rc = recognition{ok: ok, digest: c.Digest, step: c.Step, view: c.View, changes: c.Changes, base: c.Base}
		p.recognised.store(s, fp, rc)
	}
	if !rc.ok {
		return history.Catalog{}, false
	}
	return history.Catalog{Record: s, Step: rc.step, Digest: rc.digest, View: rc.view, Changes: rc.changes, Base: rc.base}, true
}
