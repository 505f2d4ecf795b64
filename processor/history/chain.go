package history

import (
	"context"
	"strconv"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

// Chain is a session's current list and the records it is made of: a full
// catalog (the base) and the change lists after it, every one of them ours
// and consistent (each change list's digest is that of the list it leads
// to).
type Chain struct {
	// Seqs are the records' stream sequences, base first, ascending.
	Seqs []uint64
	// Head is the sequence of the base's head (the record its
	// Catalog-Head-Seq header names, before it), 0 when it has none.
	Head uint64
	// List is the list the model has after the last record; nil when not
	// rebuilt yet (a chain of one full catalog, whose list is read back
	// only when a change list is to be decided: Session.Current).
	List *catalog.List
}

// Base is the sequence of the chain's full catalog.
func (c *Chain) Base() uint64 { return c.Seqs[0] }

// masked reports whether the compaction masks any record of the chain.
func (c *Chain) masked(surf *Surface) bool {
	for _, s := range c.Seqs {
		if surf.Masks(s) {
			return true
		}
	}
	return false
}

// Lists remembers current lists by digest, so that a list is rebuilt from
// the records once (the processor keeps the lists of the views it
// prepared: a list with a given digest is the same whatever the session).
type Lists interface {
	List(digest string) *catalog.List
	RememberList(digest string, l *catalog.List)
}

// recogniseChanges is Recognise's rule for a change list: the text holds
// the <skill_catalog_changes> block, the source says update "changes",
// names an earlier base and carries a digest.
func recogniseChanges(sid, owner string, r Record, c events.Catalog) (Catalog, bool) {
	if c.Session != sid || c.Source.Producer != owner || c.Source.Update != string(catalog.UpdateChanges) ||
		c.Source.Base == 0 || (r.Seq != 0 && c.Source.Base >= r.Seq) || !digestLike(c.Source.Digest) ||
		!catalog.RecognizeChanges(c.Text) {
		return Catalog{}, false
	}
	out := Catalog{Record: r, Step: c.Step, Digest: c.Source.Digest, Changes: true, Base: c.Source.Base}
	if c.Source.View != nil {
		out.View = *c.Source.View
	}
	return out, true
}

// digestLike reports whether s is written as a digest: 64 lowercase hex
// digits.
func digestLike(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// resolve finds the chain of the change list c: through s.Resolve when
// set (a caller that remembers chains), else WalkChain.
func (s Session) resolve(ctx context.Context, log Log, c Catalog) (*Chain, error) {
	if s.Resolve != nil {
		return s.Resolve(ctx, log, c)
	}
	return s.WalkChain(ctx, log, c)
}

// WalkChain finds the chain of the change list c by reading the session's
// catalog records back from c to the base c names: every record between
// must be a change list of ours on the same base, the base a full catalog
// of ours, and each change list's digest must be that of the list its
// changes make of the one before. It returns nil (and no error) when they
// are not: a base purged or not ours, a record missing, foreign or
// unrecognisable in between, a digest the changes do not give, or more
// than catalog.MaxChangeLists change lists. It reads at most one record
// per change list, and the base.
func (s Session) WalkChain(ctx context.Context, log Log, c Catalog) (*Chain, error) {
	subject := events.Subject(s.Prefix, s.ID, events.KindCatalog)
	chain := []Catalog{c} // newest first
	var base *Catalog
	for cur := c; base == nil; {
		if len(chain) > catalog.MaxChangeLists {
			return nil, nil
		}
		prev, err := before(ctx, log, subject, cur.Seq)
		if err != nil {
			return nil, err
		}
		if prev == nil || prev.Seq < c.Base {
			return nil, nil // the base is gone
		}
		pc, ok := s.recognise(*prev)
		switch {
		case !ok:
			return nil, nil
		case prev.Seq == c.Base && pc.Changes:
			return nil, nil
		case prev.Seq == c.Base:
			base = &pc
		case !pc.Changes || pc.Base != c.Base:
			return nil, nil
		default:
			chain = append(chain, pc)
			cur = pc
		}
	}
	text, err := s.text(ctx, log, *base)
	if err != nil || text == nil {
		return nil, err
	}
	list, ok := catalog.ParseList(*text)
	if !ok {
		return nil, nil
	}
	seqs := []uint64{base.Seq}
	for i := len(chain) - 1; i >= 0; i-- {
		text, err := s.text(ctx, log, chain[i])
		if err != nil || text == nil {
			return nil, err
		}
		changes, notice, ok := catalog.ParseChanges(*text)
		if !ok {
			return nil, nil
		}
		if list, ok = list.Apply(changes, notice); !ok || list.Digest() != chain[i].Digest {
			return nil, nil
		}
		seqs = append(seqs, chain[i].Seq)
	}
	return &Chain{Seqs: seqs, Head: headOf(base.Record), List: &list}, nil
}

// text returns the text of catalog c, read again by sequence when its
// record came without its bytes (a catalog known by its head); nil when
// it is gone or no longer decodes as the same catalog.
func (s Session) text(ctx context.Context, log Log, c Catalog) (*string, error) {
	r := c.Record
	if r.Data == nil {
		m, err := log.At(ctx, c.Seq)
		if err != nil || m == nil || m.Subject != events.Subject(s.Prefix, s.ID, events.KindCatalog) {
			return nil, err
		}
		r = *m
	}
	d, err := decodeCatalog(s.Layout, r)
	if err != nil || d.Session != s.ID || d.Source.Producer != s.Owner {
		return nil, nil
	}
	return &d.Text, nil
}

// Current rebuilds, when a change list is to be decided, the current list
// of a session whose newest catalog is a full one the model sees: its list
// read back from its text (or s.Lists' list of its digest). It does
// nothing when st.Wants is false. A text that does not read back as a
// list leaves it unknown (a replacement then follows).
func (s Session) Current(ctx context.Context, log Log, st *State, prepared *catalog.View) error {
	if !st.Wants(prepared) {
		return nil
	}
	c := st.Seen
	if s.Lists != nil {
		if l := s.Lists.List(c.Digest); l != nil {
			st.setList(l)
			return nil
		}
	}
	text, err := s.text(ctx, log, *c)
	if err != nil || text == nil {
		return err
	}
	l, ok := catalog.ParseList(*text)
	if !ok || l.Digest() != c.Digest {
		return nil
	}
	if s.Lists != nil {
		s.Lists.RememberList(c.Digest, &l)
	}
	st.setList(&l)
	return nil
}

// Wants reports whether deciding on prepared may make a change list whose
// current list st does not hold yet: change lists are on, the model sees
// the newest catalog, a full one whose list is not rebuilt, and prepared
// lists something other than it.
func (st *State) Wants(prepared *catalog.View) bool {
	return prepared != nil && prepared.ChangeLists && prepared.Complete &&
		st.Chain != nil && st.Chain.List == nil && st.Seen != nil && st.Seen.Digest != prepared.Digest &&
		(len(prepared.Entries) > 0 || prepared.Omitted > 0)
}

// setList records l as the chain's list and the history's current list.
func (st *State) setList(l *catalog.List) {
	st.Chain.List = l
	st.History.Current = l
	st.History.Changes = len(st.Chain.Seqs) - 1
}

// headOf is the head a catalog record names (its Catalog-Head-Seq
// header), when that lies before it; 0 otherwise.
func headOf(r Record) uint64 {
	h, err := strconv.ParseUint(r.Header.Get(events.HeaderCatalogHead), 10, 64)
	if err != nil || h >= r.Seq {
		return 0
	}
	return h
}
