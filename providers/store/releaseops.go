package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
)

// Errors of releases and pins. Match them with errors.Is.
var (
	// ErrNoRelease reports an operation that needs a release in progress
	// (a draft pushed with --draft) where the skill has none.
	ErrNoRelease = errors.New("no release in progress")
	// ErrNoCanary reports a promote of a release that is not a canary.
	ErrNoCanary = errors.New("no canary to promote")
	// ErrBadShare reports a share outside 0 to 100%.
	ErrBadShare = errors.New("invalid share of sessions")
	// ErrNotPinned reports an unpin of a skill the scope does not pin.
	ErrNotPinned = errors.New("not pinned")
)

// changedErr is the error of a compare-and-set lost to another
// publisher: the store is as that publisher left it.
func changedErr(what, key string) error {
	return fmt.Errorf("%s: %s %w by another publisher; read again (skills status) and retry", what, key, ErrChanged)
}

func casLost(err error) bool {
	return errors.Is(err, jetstream.ErrKeyExists) || errors.Is(err, jetstream.ErrKeyRevisionMismatch)
}

// release is a release key as read: its value and its store revision
// (0: no release in progress).
type release struct {
	r        ReleaseState
	revision uint64
}

// readRelease reads the release of name in scope; a value that is not a
// release skillstream writes is an error naming it.
func (pb *Publisher) readRelease(ctx context.Context, scope skillstore.Scope, name string) (release, error) {
	key := ReleaseKey(scope, name)
	e, err := pb.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return release{}, nil
	}
	if err != nil {
		return release{}, fmt.Errorf("read %s: %w", key, err)
	}
	r, err := DecodeRelease(e.Value())
	if err != nil {
		return release{}, fmt.Errorf("%s (store revision %d): %w; remove it with skills rollback %s --scope %s", key, e.Revision(), err, name, scope)
	}
	return release{r: r, revision: e.Revision()}, nil
}

// writeRelease writes r as name's release, conditional on the release
// read (revision 0: none).
func (pb *Publisher) writeRelease(ctx context.Context, scope skillstore.Scope, name string, r ReleaseState, last uint64) (uint64, error) {
	key := ReleaseKey(scope, name)
	r.V = 1
	r.At = pb.now().UnixMilli()
	var rev uint64
	var err error
	if last == 0 {
		rev, err = pb.kv.Create(ctx, key, encodeJSON(r))
	} else {
		rev, err = pb.kv.Update(ctx, key, encodeJSON(r), last)
	}
	if casLost(err) {
		return 0, changedErr(fmt.Sprintf("skill %q in %s", name, scope), "release")
	}
	if err != nil {
		return 0, fmt.Errorf("write %s: %w", key, err)
	}
	return rev, nil
}

// endRelease deletes name's release, conditional on the release read.
func (pb *Publisher) endRelease(ctx context.Context, scope skillstore.Scope, name string, last uint64) error {
	key := ReleaseKey(scope, name)
	err := pb.kv.Delete(ctx, key, jetstream.LastRevision(last))
	if casLost(err) {
		return changedErr(fmt.Sprintf("skill %q in %s", name, scope), "release")
	}
	if err != nil {
		return fmt.Errorf("delete %s: %w", key, err)
	}
	return nil
}

// refOf is the RevRef of a kept revision.
func refOf(h Revision) *RevRef {
	return &RevRef{Rev: h.Rev, Revision: h.Revision, Digest: h.Record.Digest}
}

// Release releases the candidate of name's release in progress (a
// revision pushed with Draft) to share of sessions, in basis points (0 to
// catalog.FullShare): the channel becomes canary, and sessions whose
// cohort takes it (catalog.InCanary) get rev; a canary's share may be
// changed again. It refuses, writing nothing, a share out of range
// (ErrBadShare), a revision the skill's history does not keep
// (ErrNotKept), a skill without a release (ErrNoRelease), a revision
// that is not the release's candidate, and a release changed since it
// was read (ErrChanged).
func (pb *Publisher) Release(ctx context.Context, scope skillstore.Scope, name string, rev uint64, share int, by string) (ReleaseState, error) {
	if share < 0 || share > catalog.FullShare {
		return ReleaseState{}, fmt.Errorf("skill %q: %w: %s, want 0%% to 100%%", name, ErrBadShare, FormatShare(share))
	}
	hist, err := pb.History(ctx, scope, name)
	if err != nil {
		return ReleaseState{}, err
	}
	h, err := pick(hist, scope, name, At{Rev: rev})
	if err != nil {
		return ReleaseState{}, err
	}
	cur := hist[len(hist)-1]
	rel, err := pb.readRelease(ctx, scope, name)
	if err != nil {
		return ReleaseState{}, err
	}
	switch {
	case rel.revision == 0 && cur.Removed:
		return ReleaseState{}, fmt.Errorf("skill %q in %s: %w: the skill is removed (rev %d); push it again with skills push --draft to release it", name, scope, ErrNoRelease, cur.Rev)
	case rel.revision == 0 && h.Revision == cur.Revision:
		return ReleaseState{}, fmt.Errorf("skill %q in %s: rev %d is already stable (%w); push a new revision with skills push --draft first", name, scope, rev, ErrNoRelease)
	case rel.revision == 0:
		return ReleaseState{}, fmt.Errorf("skill %q in %s: %w: rev %d is an earlier revision; push it with skills push --draft first", name, scope, ErrNoRelease, rev)
	case rel.r.Candidate.Rev != rev || rel.r.Candidate.Digest != h.Record.Digest:
		return ReleaseState{}, fmt.Errorf("skill %q in %s: rev %d is not the release's candidate (rev %d %s)", name, scope, rev, rel.r.Candidate.Rev, skillstore.Short(rel.r.Candidate.Digest))
	case cur.Removed || cur.Err != nil || cur.Record.Digest != rel.r.Candidate.Digest:
		return ReleaseState{}, fmt.Errorf("skill %q in %s: the release's candidate rev %d is not the skill's newest revision (a push was interrupted, or wrote over it): push it again with --draft", name, scope, rev)
	}
	if pb.beforeWrite != nil {
		pb.beforeWrite()
	}
	next := rel.r
	next.Channel, next.Share, next.By = ChannelCanary, share, clipBy(by)
	next.Candidate = refOf(cur)
	if _, err := pb.writeRelease(ctx, scope, name, next, rel.revision); err != nil {
		return ReleaseState{}, err
	}
	return next, nil
}

// Promote ends name's canary: its candidate, the skill's newest
// revision, becomes stable for every session. It refuses, writing
// nothing, a skill whose release is not a canary (ErrNoCanary) and a
// release changed since it was read (ErrChanged). It returns the release
// ended.
func (pb *Publisher) Promote(ctx context.Context, scope skillstore.Scope, name string) (ReleaseState, error) {
	if err := catalog.CheckName(name); err != nil {
		return ReleaseState{}, err
	}
	rel, err := pb.readRelease(ctx, scope, name)
	if err != nil {
		return ReleaseState{}, err
	}
	if rel.revision == 0 || rel.r.Channel != ChannelCanary {
		what := "no release is in progress"
		if rel.revision != 0 {
			what = fmt.Sprintf("rev %d is a %s; release it with skills release first", rel.r.Candidate.Rev, rel.r.Channel)
		}
		return ReleaseState{}, fmt.Errorf("skill %q in %s: %w: %s", name, scope, ErrNoCanary, what)
	}
	cur, err := pb.headOf(ctx, scope, name)
	if err != nil {
		return ReleaseState{}, err
	}
	if !cur.live || cur.rec.Digest != rel.r.Candidate.Digest {
		return ReleaseState{}, fmt.Errorf("skill %q in %s: the canary's candidate rev %d is not the skill's newest revision: end the release with skills rollback", name, scope, rel.r.Candidate.Rev)
	}
	if pb.beforeWrite != nil {
		pb.beforeWrite()
	}
	if err := pb.endRelease(ctx, scope, name, rel.revision); err != nil {
		return ReleaseState{}, err
	}
	return rel.r, nil
}

// endByRollback ends name's release in progress: every session is back
// on the release's stable revision. The stable's files are published as
// the skill's next revision when the newest is not the stable (a skill
// new in the release is removed), then the release entry is deleted;
// between the two writes the newest revision is not the candidate, so no
// session gets it.
func (pb *Publisher) endByRollback(ctx context.Context, scope skillstore.Scope, name string, rel release, hist []Revision) (Change, Revision, error) {
	cur := hist[len(hist)-1]
	c := Change{Action: Unchanged, Name: name, Rev: cur.Rev, Revision: cur.Revision, Digest: cur.Record.Digest, Ended: true}
	var from Revision
	if pb.beforeWrite != nil {
		pb.beforeWrite()
	}
	switch s := rel.r.Stable; {
	case s == nil && !cur.Removed:
		rc, err := pb.remove(ctx, scope, name, cur.Revision)
		if err != nil {
			return Change{}, Revision{}, err
		}
		c = rc
		c.Ended = true
	case s != nil && (cur.Removed || cur.Err != nil || cur.Record.Digest != s.Digest):
		h, err := pick(hist, scope, name, At{Store: s.Revision})
		if err != nil {
			return Change{}, Revision{}, fmt.Errorf("the release's stable revision: %w", err)
		}
		from = h
		rec := h.Record
		rec.Published = pb.now().UnixMilli()
		rec.Rev = cur.Rev + 1
		rev, err := pb.kv.Update(ctx, scope.Key(name), rec.encode(), cur.Revision)
		if casLost(err) {
			return Change{}, from, changedErr(fmt.Sprintf("skill %q in %s", name, scope), "skill")
		}
		if err != nil {
			return Change{}, from, fmt.Errorf("write %s: %w", scope.Key(name), err)
		}
		c = Change{Action: Updated, Name: name, Rev: rec.Rev, Revision: rev, Digest: rec.Digest, Ended: true}
	case s != nil:
		from = cur
	}
	if err := pb.endRelease(ctx, scope, name, rel.revision); err != nil {
		return c, from, err
	}
	return c, from, nil
}

// Pinned is one pin of a skill: the sessions it holds (Scope: global for
// every session, or a project) and the revision they get.
type Pinned struct {
	Scope skillstore.Scope
	Pin   PinState
}

// Pin holds the sessions of scope (global: every session of the tenant;
// project/<id>: that project's) at revision at of skill name, whatever
// its release or newest revision: the project's own skill when the
// project has one, else the global skill. A project's pin beats the
// tenant's. It refuses, writing nothing, a revision the history does
// not keep or that is a removal (ErrNotKept), and a pin changed since it
// was read (ErrChanged).
func (pb *Publisher) Pin(ctx context.Context, scope skillstore.Scope, name string, at At) (Pinned, error) {
	if err := catalog.CheckName(name); err != nil {
		return Pinned{}, err
	}
	of, skill := PinOfGlobal, skillstore.Global
	if scope != skillstore.Global {
		if h, err := pb.headOf(ctx, scope, name); err != nil {
			return Pinned{}, err
		} else if h.exists {
			of, skill = PinOfProject, scope
		}
	}
	hist, err := pb.History(ctx, skill, name)
	if err != nil {
		return Pinned{}, err
	}
	h, err := pick(hist, skill, name, at)
	if err != nil {
		return Pinned{}, err
	}
	key := PinKey(scope, name)
	last := uint64(0)
	if e, err := pb.kv.Get(ctx, key); err == nil {
		last = e.Revision()
	} else if !errors.Is(err, jetstream.ErrKeyNotFound) {
		return Pinned{}, fmt.Errorf("read %s: %w", key, err)
	}
	if pb.beforeWrite != nil {
		pb.beforeWrite()
	}
	ps := PinState{V: 1, Rev: h.Rev, Revision: h.Revision, Digest: h.Record.Digest, Of: of}
	if last == 0 {
		_, err = pb.kv.Create(ctx, key, encodeJSON(ps))
	} else {
		_, err = pb.kv.Update(ctx, key, encodeJSON(ps), last)
	}
	if casLost(err) {
		return Pinned{}, changedErr(fmt.Sprintf("pin of %q for %s", name, scope), "pin")
	}
	if err != nil {
		return Pinned{}, fmt.Errorf("write %s: %w", key, err)
	}
	return Pinned{Scope: scope, Pin: ps}, nil
}

// Unpin removes the pin of name for scope: its sessions get the release
// state's or newest revision again. A scope that does not pin it is an
// error wrapping ErrNotPinned.
func (pb *Publisher) Unpin(ctx context.Context, scope skillstore.Scope, name string) (Pinned, error) {
	if err := catalog.CheckName(name); err != nil {
		return Pinned{}, err
	}
	key := PinKey(scope, name)
	e, err := pb.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Pinned{}, fmt.Errorf("skill %q is %w for %s", name, ErrNotPinned, scope)
	}
	if err != nil {
		return Pinned{}, fmt.Errorf("read %s: %w", key, err)
	}
	ps, _ := DecodePin(scope, e.Value()) // a malformed pin is removed all the same
	err = pb.kv.Delete(ctx, key, jetstream.LastRevision(e.Revision()))
	if casLost(err) {
		return Pinned{}, changedErr(fmt.Sprintf("pin of %q for %s", name, scope), "pin")
	}
	if err != nil {
		return Pinned{}, fmt.Errorf("delete %s: %w", key, err)
	}
	return Pinned{Scope: scope, Pin: ps}, nil
}

// Status is what the store holds of a skill's release state: its newest
// revision, the release in progress (Channel stable when none) and every
// scope that pins it.
type Status struct {
	Scope   string  `json:"scope"`
	Name    string  `json:"name"`
	Head    *RevRef `json:"head"`    // the newest revision; nil when removed
	Channel string  `json:"channel"` // stable (no release), draft or canary
	Share   int     `json:"share"`   // of a canary, in basis points
	Stable  *RevRef `json:"stable"`  // what sessions outside a canary get
	// Candidate is the release's; HeldBack says it is not the newest
	// revision (a push interrupted between its two writes).
	Candidate *RevRef     `json:"candidate,omitempty"`
	HeldBack  bool        `json:"heldBack,omitempty"`
	By        string      `json:"by,omitempty"`
	At        int64       `json:"at,omitempty"`
	Pins      []PinStatus `json:"pins"`
	// Malformed says why a release or pin entry of the skill was not
	// read (written by hand): servers ignore it.
	Malformed []string `json:"malformed,omitempty"`
	// Trust is what the store's trust policy makes of the newest
	// revision; nil when the policy requires nothing and it is unsigned.
	Trust *TrustStatus `json:"trust,omitempty"`
}

// PinStatus is one scope pinning a skill.
type PinStatus struct {
	Scope  string `json:"scope"` // global (every session) or project/<id>
	Rev    uint64 `json:"rev"`
	Store  uint64 `json:"revision"`
	Digest string `json:"digest"`
}

// Status reads the release state and the pins of name in scope.
func (pb *Publisher) Status(ctx context.Context, scope skillstore.Scope, name string) (Status, error) {
	hist, err := pb.History(ctx, scope, name)
	if err != nil {
		return Status{}, err
	}
	st := Status{Scope: scope.String(), Name: name, Channel: ChannelStable, Pins: []PinStatus{}}
	cur := hist[len(hist)-1]
	if !cur.Removed && cur.Err == nil {
		st.Head = refOf(cur)
		st.Stable = st.Head
	}
	if st.Trust, err = pb.trustStatus(ctx, scope, name, hist); err != nil {
		st.Malformed = append(st.Malformed, err.Error())
	}
	rel, err := pb.readRelease(ctx, scope, name)
	if err != nil {
		st.Malformed = append(st.Malformed, err.Error())
	} else if rel.revision != 0 {
		st.Channel, st.Share, st.Stable, st.Candidate, st.By, st.At = rel.r.Channel, rel.r.Share, rel.r.Stable, rel.r.Candidate, rel.r.By, rel.r.At
		st.HeldBack = st.Head == nil || st.Head.Digest != rel.r.Candidate.Digest
		if !st.HeldBack {
			st.Candidate = st.Head
		}
	}
	filters := []string{PinKey(scope, name)}
	if scope == skillstore.Global {
		filters = append(filters, pinPrefix+"project.*."+name)
	}
	lister, err := pb.kv.ListKeysFiltered(ctx, filters...)
	if err != nil {
		return st, fmt.Errorf("pins of %q: %w", name, err)
	}
	var keys []string
	for k := range lister.Keys() {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		_, sc, _, _, err := controlKey(k)
		if err != nil {
			continue
		}
		e, err := pb.kv.Get(ctx, k)
		if err != nil {
			continue
		}
		ps, err := DecodePin(sc, e.Value())
		if err != nil {
			st.Malformed = append(st.Malformed, fmt.Sprintf("%s: %v", k, err))
			continue
		}
		if ps.skillScope(sc) != scope {
			continue
		}
		st.Pins = append(st.Pins, PinStatus{Scope: sc.String(), Rev: ps.Rev, Store: ps.Revision, Digest: ps.Digest})
	}
	return st, nil
}

// FormatShare writes a share in basis points as a percentage: "10%",
// "2.5%".
func FormatShare(bp int) string {
	s := fmt.Sprintf("%d.%02d", bp/100, abs(bp%100))
	if bp < 0 && bp > -100 {
		s = "-" + s
	}
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	return s + "%"
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}

func clipBy(by string) string {
	if len(by) > maxByLength {
		return by[:maxByLength]
	}
	return by
}

// dropBadRelease deletes a release entry that is not one skillstream
// writes, conditional on its revision: what a rollback of such a release
// does. The skill's revisions are left as they are.
func (pb *Publisher) dropBadRelease(ctx context.Context, scope skillstore.Scope, name string, hist []Revision) (Change, Revision, error) {
	e, err := pb.kv.Get(ctx, ReleaseKey(scope, name))
	if err != nil {
		return Change{}, Revision{}, fmt.Errorf("read %s: %w", ReleaseKey(scope, name), err)
	}
	cur := hist[len(hist)-1]
	if err := pb.endRelease(ctx, scope, name, e.Revision()); err != nil {
		return Change{}, Revision{}, err
	}
	return Change{Action: Unchanged, Name: name, Rev: cur.Rev, Revision: cur.Revision, Digest: cur.Record.Digest, Ended: true}, cur, nil
}
