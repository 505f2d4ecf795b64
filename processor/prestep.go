package processor

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/history"
)

// preStepKind handles agent.pre-step triggers: decide whether the
// session's catalog must change, append it if so, answer with the Decision.
type preStepKind struct{ p *Processor }

func (preStepKind) label() string { return "pre-step" }

func (k preStepKind) answer(ctx context.Context, t *trigger) (any, string, error) {
	p := k.p
	ps, err := events.DecodePreStepIn(p.cfg.Layout, t.enc, t.msg.Data())
	if err != nil {
		t.ref = usableID(ps.Step)
		return nil, "", p.reject(ctx, t, decodeReason(err), fmt.Errorf("decode pre-step: %w", err))
	}
	t.ref = ps.Step
	if ps.Session != t.sid {
		return nil, "", p.reject(ctx, t, reasonSessionMismatch, fmt.Errorf("%w: payload session %q, subject session %q", errSessionMismatch, ps.Session, t.sid))
	}
	if ps.Cwd, err = p.cwds.check(ps.Cwd); err != nil {
		return nil, "", p.reject(ctx, t, reasonCwd, err)
	}
	names, err := p.gestures(ps)
	if err != nil {
		return nil, "", p.reject(ctx, t, reasonUserText, err)
	}
	read := p.readInvocations(ctx, t, ps, names) // invoke.go
	defer read.wait()
	d, parts, err := p.decidePreStep(ctx, t, ps)
	if err != nil {
		return nil, "", err
	}
	if err := p.invoke(ctx, t, ps, names, read, &d); err != nil {
		return nil, "", err
	}
	if t.enc == events.Msgpack {
		// The reply carries the catalog's bytes as appended, if any, and
		// the current list as encoded once.
		if b, err := t.borrow(func(dst []byte) ([]byte, error) {
			return events.AppendDecisionList(dst, t.enc, d, parts.catalog, parts.currentList)
		}); err == nil {
			return preEncoded{v: d, msgpack: b}, d.Outcome, nil
		}
	}
	return d, d.Outcome, nil
}

// rejected: a "rejected" Decision; nothing is appended.
func (k preStepKind) rejected(_ context.Context, t *trigger, rej *rejection) (any, error) {
	d := k.p.decision(t, events.OutcomeRejected, nil)
	d.Error = &events.ErrorInfo{Code: events.CodeBadRequest, Message: rej.err.Error()}
	return d, nil
}

func (preStepKind) rejectOutcome() string { return events.OutcomeRejected }

// failed: outcome "incomplete" (the model keeps what it was shown), code
// "unavailable".
func (k preStepKind) failed(t *trigger, cause error) any {
	d := k.p.decision(t, events.OutcomeIncomplete, nil)
	d.Error = &events.ErrorInfo{Code: codeUnavailable, Message: cause.Error()}
	return d
}

// tooLarge: outcome "incomplete", code "too_large", saying which limit to
// lower.
func (k preStepKind) tooLarge(t *trigger, cause error) any {
	d := k.p.decision(t, events.OutcomeIncomplete, nil)
	d.Error = &events.ErrorInfo{Code: events.CodeTooLarge,
		Message: "the catalog is too large for one message (" + cause.Error() + "): lower the catalog size limit"}
	return d
}

// decision builds a reply to t.
func (p *Processor) decision(t *trigger, outcome string, cat *events.Catalog) events.Decision {
	return events.Decision{V: events.Version, Session: t.sid, Step: t.ref, TriggerSeq: t.seq, Outcome: outcome, Catalog: cat}
}

// decisionParts are parts of a Decision already encoded in msgpack, to
// go into the answer as they are (events.AppendDecisionList): the catalog
// this pre-step appended and the current list, each nil when the answer
// does not carry it.
type decisionParts struct {
	catalog, currentList []byte
}

// decidePreStep takes the skills once, then reads, decides and appends
// (appendAnswer) until the append holds against the session it read or
// nothing needs appending.
func (p *Processor) decidePreStep(ctx context.Context, t *trigger, ps events.PreStep) (d events.Decision, parts decisionParts, err error) {
	if p.expired(ps.DeadlineMs) {
		return p.decision(t, events.OutcomeExpired, nil), parts, nil
	}
	// Reads and the snapshot stop at the trigger's deadline; an append,
	// once started, runs to its result so that the answer tells the truth.
	dctx, cancel := withDeadline(ctx, ps.DeadlineMs)
	defer cancel()
	plan := &preStepPlan{p: p, t: t, ps: ps, q: p.cohort(t.sid, history.PreStepQuery(ps)), visible: history.Visible(ps.Tools, p.cfg.ToolOwner),
		opts: p.offered(ps.Tools)}
	plan.behind = p.awaitStore(dctx, "pre-step", ps.MinStoreEpoch, ps.MinStoreRevision)
	if plan.visible && plan.behind == nil {
		if err := plan.prepare(dctx); err != nil {
			d, err = expiredOr(plan, err)
			return d, parts, err
		}
	}
	// The memory this pre-step will hold is about its catalog's size: wait
	// for room (Config.InflightBytes).
	release, err := p.inflight.acquire(dctx, preStepBytes(plan.prepared))
	if err != nil {
		d, err = expiredOr(plan, p.deadlineOr(ps.DeadlineMs, fmt.Errorf("wait for in-flight memory: %w", err)))
		return d, parts, err
	}
	defer release()
	d, err = appendAnswer(p, ctx, dctx, t, events.KindCatalog, ps.DeadlineMs, plan)
	if err == nil {
		d.CatalogSeq = plan.catalogSeq(d.Outcome)
		parts.currentList = plan.currentList(&d)
		if plan.prepared != nil && d.Outcome != events.OutcomeExpired {
			d.Diagnostics = diagnostics(plan.prepared.Diagnostics)
		}
	}
	parts.catalog = plan.data
	return d, parts, err
}

// diagnostics are a view's diagnostics as a Decision carries them (the
// registry bounds their number and reasons; paths are cut here).
func diagnostics(ds []catalog.Diagnostic) []events.Diagnostic {
	if len(ds) == 0 {
		return nil
	}
	out := make([]events.Diagnostic, len(ds))
	for i, d := range ds {
		out[i] = events.Diagnostic{Path: truncate(d.Path, 1024), Reason: d.Reason}
	}
	return out
}

// catalogSeq is the sequence of the catalog the model sees after a
// decision with outcome: the one appended for the step (or found appended
// by an earlier attempt), else the visible one the decision keeps; 0 when
// none is visible or the trigger expired.
func (s *preStepPlan) catalogSeq(outcome string) uint64 {
	switch {
	case outcome == events.OutcomeExpired:
		return 0
	case s.answerSeq != 0:
		return s.answerSeq
	case outcome != events.OutcomeAppended && s.hist.Seen != nil:
		return s.hist.Seen.Seq
	}
	return 0
}

// preStepPlan is a pre-step's part in appendAnswer. Its answer already in
// the log is the newest catalog of ours when that answers this trigger or
// step; what it builds is history.Decide's decision on the skills taken
// and the session's catalog history, after the view rule (view.go) when it
// replaces a catalog of another digest.
type preStepPlan struct {
	p        *Processor
	t        *trigger
	ps       events.PreStep
	q        catalog.Query
	opts     catalog.Options // the catalog options, search offered or not by the pre-step's tools
	visible  bool            // our skill tool is in the pre-step's tools
	prepared *catalog.View   // the skills (taken again when the view rule caught up); nil when the tool is not visible
	caughtUp bool            // this pre-step waited for the store once (view.go)
	behind   error           // the store revision the pre-step asks for was not reached (fresh.go)
	checked  uint64          // the catalog the view rule last allowed to replace
	// Of a catalog listed by use (rank.go): whether prepared was ranked,
	// the view by name it was ranked from (nil: not ranked), the ranking
	// to record ("" for none).
	ranked  bool
	byName  *catalog.View
	ranking string

	// Of the current attempt: the catalog history existing read, which
	// build decides on; when that read began (the decide stage's latency);
	// the catalog build made.
	hist  history.State
	start time.Time
	cat   *events.Catalog
	data  []byte // cat's msgpack encoding, once appended
	// answerSeq is the sequence of the catalog answering this step, once
	// appended or found in the log.
	answerSeq uint64
	// Of change lists (chain.go): the view existing read, the decision
	// build made, the records of the list appended (nil unless a change
	// list), and the original of a duplicate append.
	view    view
	decided catalog.Decision
	seqs    []uint64
	dup     *events.Catalog
	// resend is set when the catalog build made sends the list the
	// session's newest catalog holds again (outbudget.go).
	resend bool
}

// prepare takes the skills for the pre-step's query.
func (s *preStepPlan) prepare(ctx context.Context) error {
	cv, err := history.Prepare(ctx, s.p.skills, s.q, s.opts)
	if err != nil {
		return s.p.deadlineOr(s.ps.DeadlineMs, fmt.Errorf("snapshot skills for %q: %w", truncate(s.ps.Cwd, 300), err))
	}
	s.prepared = &cv
	s.ranked, s.byName, s.ranking = false, nil, ""
	return nil
}

// preStepReads are the kinds a pre-step decides on: catalogs, compactions
// (which may mask one), and pre-steps (its own, to know the view is recent).
var preStepReads = []events.Kind{events.KindPreStep, events.KindCatalog, events.KindCompaction}

func (s *preStepPlan) reads() []events.Kind { return preStepReads }

// headRead reads the session through the head of its remembered catalog
// (head.go), when there is one to read.
func (s *preStepPlan) headRead(ctx context.Context) (view, bool) {
	p, sid := s.p, s.t.sid
	if p.headMin <= 0 {
		return view{}, false
	}
	m, ok := p.heads.usable(sid, s.t.seq, s.ps.Step)
	if !ok {
		return view{}, false
	}
	v, err := p.headView(ctx, sid, s.t.seq, m)
	switch {
	case err == nil:
		p.m.headReads.WithLabelValues(headHit).Inc()
		return v, true
	case errors.Is(err, errHeadStale):
		p.m.headReads.WithLabelValues(headStale).Inc()
		p.heads.fail(sid, m.cat.Seq)
	default:
		p.m.headReads.WithLabelValues(headUnsure).Inc()
		p.log.Debug("read catalog head", "session", sid, "err", err)
	}
	return view{}, false
}

func (s *preStepPlan) existing(ctx context.Context, v view) (events.Decision, bool, error) {
	p, t := s.p, s.t
	s.start = p.now()
	s.view = v
	hist, err := p.catalogHistory(ctx, t.sid, v)
	if err != nil {
		return events.Decision{}, false, p.deadlineOr(s.ps.DeadlineMs, fmt.Errorf("read catalog history of %s: %w", t.sid, err))
	}
	s.hist = hist
	if v.known == nil && p.headMin > 0 && hist.Newest != nil {
		if r := v.of(p.cfg.Prefix, t.sid, events.KindCatalog); r != nil && r.Seq == hist.Newest.Seq {
			p.learnHead(ctx, t.sid, hist.Newest)
		}
	}
	if !hist.Answers(t.seq, s.ps.Step) {
		return events.Decision{}, false, nil
	}
	cat, err := hist.Newest.DecodeIn(p.cfg.Layout)
	if err != nil {
		return events.Decision{}, true, fmt.Errorf("decode catalog %d: %w", hist.Newest.Seq, err)
	}
	s.answerSeq = hist.Newest.Seq
	return p.decision(t, events.OutcomeAppended, &cat), true, nil
}

func (s *preStepPlan) build(ctx context.Context) (built[events.Decision], error) {
	p, t, ps := s.p, s.t, &s.ps
	if s.behind != nil {
		// Never decided on an older view of the store: the model keeps
		// what it was shown, and the worker may ask again.
		dec := p.decision(t, events.OutcomeIncomplete, nil)
		dec.Error = &events.ErrorInfo{Code: codeUnavailable, Message: s.behind.Error()}
		return built[events.Decision]{answer: dec}, nil
	}
	if err := s.rank(ctx); err != nil {
		return built[events.Decision]{}, err
	}
	if err := s.current(ctx); err != nil {
		return built[events.Decision]{}, err
	}
	d := history.Decide(s.prepared, s.hist, s.opts)
	s.decided = d
	p.m.observe(stageDecide, p.now().Sub(s.start))
	reason := emptyReason(ps.Tools, p.cfg.ToolOwner, s.visible, d)
	if d.Outcome != catalog.OutcomeAppended {
		return s.without(string(d.Outcome), reason), nil
	}
	s.resend = resends(s.hist, d)
	if s.resend && !p.spent.catalogAllowed(t.sid, p.budgetNow()) {
		// The list the session had, sent again too often this minute
		// (outbudget.go): the model keeps what it sees.
		p.m.overBudget.WithLabelValues(budgetCatalogResends).Inc()
		return s.without(events.OutcomeIncomplete, events.ReasonOverBudget), nil
	}
	if ref := replacedCatalog(s.prepared, s.hist, d); ref != nil && ref.Seq != s.checked {
		// A replacement of a catalog with another digest: the one place
		// where members' views may disagree (view.go).
		switch p.checkView(ctx, t.sid, s.q, s.opts.SearchOffered, s.viewByName(), ref, &s.caughtUp) {
		case viewAgain:
			if err := s.prepare(ctx); err != nil {
				return built[events.Decision]{}, err
			}
			return built[events.Decision]{again: true}, nil
		case viewBehind:
			return s.without(events.OutcomeBehind, events.ReasonStoreRevisionAhead), nil
		case viewDiverged:
			return s.without(events.OutcomeDiverged, events.ReasonMemberSeesOtherSkills), nil
		case viewStoreDiverged:
			return s.without(events.OutcomeDiverged, events.ReasonMemberServesOtherStore), nil
		}
		s.checked = ref.Seq
	}
	var rev uint64
	var epoch string
	if s.prepared != nil {
		rev, epoch = s.prepared.Revision, s.prepared.Epoch
	}
	body, err := s.body(d, rev, epoch)
	if err != nil {
		return built[events.Decision]{}, fmt.Errorf("encode catalog: %w", err)
	}
	if d.Update != catalog.UpdateInitial && !p.spent.catalogBytesAllowed(t.sid, body.Size(), p.budgetNow()) {
		// Changes of the list (or re-sends) too large for the session's
		// budget this minute: the model keeps what it sees.
		p.m.overBudget.WithLabelValues(budgetCatalogBytes).Inc()
		return s.without(events.OutcomeIncomplete, events.ReasonOverBudget), nil
	}
	out := catalogOutput{body: body, session: t.sid, step: ps.Step, id: outputID(t.sid, ps.Step, events.KindCatalog)}
	cat := out.catalog()
	s.cat = &cat
	dec := p.decision(t, events.OutcomeAppended, &cat)
	dec.Reason = reason
	return built[events.Decision]{output: out, answer: dec}, nil
}

// without is a decision answered without appending anything.
func (s *preStepPlan) without(outcome, reason string) built[events.Decision] {
	dec := s.p.decision(s.t, outcome, nil)
	dec.Reason = reason
	return built[events.Decision]{answer: dec}
}

// appended remembers the catalog appended as recognised (memo.go), so the
// next pre-step of the session does not decode it. Its digest is the one
// decided: the catalog package guarantees that recognising a rendered
// catalog's text gives the digest of the view it was rendered from.
func (s *preStepPlan) appended(a appended) {
	p, t := s.p, s.t
	rc := recognition{ok: true, digest: s.cat.Source.Digest, step: s.cat.Step,
		changes: s.cat.Source.Update == events.UpdateChanges, base: s.cat.Source.Base}
	if v := s.cat.Source.View; v != nil {
		rc.view = *v
	}
	subject := events.Subject(p.cfg.Prefix, t.sid, events.KindCatalog)
	p.recognised.remember(a.seq, subject, a.data, rc)
	if s.resend {
		p.spent.resent(t.sid, p.budgetNow())
	}
	if s.cat.Source.Update != string(catalog.UpdateInitial) {
		p.spent.catalogSent(t.sid, len(a.data), p.budgetNow())
	}
	s.data, s.answerSeq = a.data, a.seq
	s.appendedChain(a)
	if a.head != 0 {
		p.heads.remember(t.sid, a.head, history.Catalog{
			Record: record{Seq: a.seq, Subject: subject, Header: history.Header{
				events.HeaderContentType:  {events.ContentTypeMsgpack},
				events.HeaderCausationSeq: {strconv.FormatUint(t.seq, 10)},
			}},
			Step: rc.step, Digest: rc.digest, View: rc.view, Changes: rc.changes, Base: rc.base,
		})
	}
}

func (s *preStepPlan) original(r record, enc events.Encoding) (events.Decision, error) {
	orig, err := events.DecodeCatalogIn(s.p.cfg.Layout, enc, r.Data)
	if err != nil {
		return events.Decision{}, fmt.Errorf("decode catalog %d: %w: %w", r.Seq, errForeignDuplicate, err)
	}
	if orig.Session != s.t.sid || orig.Step != s.ps.Step || orig.Source.Producer != s.p.cfg.ToolOwner {
		return events.Decision{}, fmt.Errorf("%w: catalog %d is of session %q, step %q, producer %q", errForeignDuplicate,
			r.Seq, truncate(orig.Session, 200), truncate(orig.Step, 200), truncate(orig.Source.Producer, 200))
	}
	s.answerSeq, s.dup = r.Seq, &orig
	return s.p.decision(s.t, events.OutcomeAppended, &orig), nil
}

func (s *preStepPlan) expired() events.Decision {
	return s.p.decision(s.t, events.OutcomeExpired, nil)
}

// emptyCatalogDigest is the digest of a catalog without entries.
var emptyCatalogDigest = catalog.Digest(nil)

// emptyReason says which rule left a decided view empty: the skill tool
// missing from the tool view, a same-named tool of another owner first in
// it, or no skills. It is "" when the view has entries or was not decided
// (incomplete).
func emptyReason(tools []events.Tool, owner string, visible bool, d catalog.Decision) string {
	if d.Outcome == catalog.OutcomeIncomplete {
		return ""
	}
	if !visible {
		for _, t := range tools {
			if t.Name == catalog.ToolName {
				return events.ReasonSkillToolOfOtherOwner
			}
		}
		return events.ReasonNoSkillTool
	}
	if d.Digest == emptyCatalogDigest {
		return events.ReasonNoSkills
	}
	return ""
}

// catalogOutput is a catalog to append: one session's step of a catalog
// whose shared part is encoded already.
type catalogOutput struct {
	body              *events.CatalogBody
	session, step, id string
}

func (o catalogOutput) catalog() events.Catalog { return o.body.Catalog(o.session, o.step, o.id) }

func (o catalogOutput) encodeMsgpack(dst []byte) ([]byte, error) {
	return o.body.AppendEncode(dst, o.session, o.step, o.id)
}

func (o catalogOutput) head() events.CatalogHead {
	src := o.catalog().Source
	c := history.Catalog{Step: o.step, Digest: src.Digest}
	if src.View != nil {
		c.View = *src.View
	}
	return catalogHead(o.session, c)
}

// catalogBodies keeps the shared part of the catalogs recently appended,
// encoded: every session given the same catalog gets the same text and
// source, so one encoding serves them all, and appending the catalog to a
// session costs the encoding of its few own fields.
type catalogBodies struct {
	cache *lru.Cache[catalogBodyKey, *catalogBodyEntry]
}

// catalogBodyEntry is a body encoded once: the sessions arriving together
// with a new catalog wait for the first one's encoding instead of each
// encoding it.
type catalogBodyEntry struct {
	once sync.Once
	body *events.CatalogBody
	err  error
}

// catalogBodyKey names a catalog's shared part: the digest covers the
// listed entries and the notice (so the counts left out), the update kind
// the text around them, the revision the source's view (producer and
// instance are the processor's).
type catalogBodyKey struct {
	digest   string
	update   catalog.Update
	revision uint64
	epoch    string
	ranking  string // the ranking recorded (catalogs listed by use)
	origins  string // the origins' key (catalog.Origins.Key): evidence differs, so does the body
	revoked  string // the names withheld as revoked, joined: evidence too
}

// catalogBodiesSize bounds the kept bodies: a processor appends one
// distinct catalog per skill view (working directory) and update kind at
// a time, and an organisation's members serve many projects at once. A
// body of a thousand skills is about 130 KB.
const catalogBodiesSize = 128

func newCatalogBodies() *catalogBodies {
	c, _ := lru.New[catalogBodyKey, *catalogBodyEntry](catalogBodiesSize)
	return &catalogBodies{cache: c}
}

// get returns the shared part of the catalog decided by d.
func (c *catalogBodies) get(d catalog.Decision, origins catalog.Origins, revoked []string, revision uint64, epoch, producer, instance string, opts *events.CatalogOptions) (*events.CatalogBody, error) {
	k := catalogBodyKey{digest: d.Digest, update: d.Update, revision: revision, epoch: epoch, origins: origins.Key(), revoked: strings.Join(revoked, "\x00")}
	if opts != nil {
		k.ranking = opts.Ranking
	}
	e, ok := c.cache.Get(k)
	if !ok {
		e = &catalogBodyEntry{}
		if prev, found, _ := c.cache.PeekOrAdd(k, e); found {
			e = prev // another session's, added meanwhile
		}
	}
	e.once.Do(func() {
		e.body, e.err = events.NewCatalogBody(d.Text, events.CatalogSource{
			Kind:     events.SourceKindCatalog,
			Producer: producer,
			Update:   string(d.Update),
			Entries:  wireEntries(d.Entries),
			Digest:   d.Digest,
			Omitted:  d.Omitted,
			Origins:  history.CatalogOrigins(d, origins),
			Revoked:  history.CatalogRevoked(d, revoked),
			View:     &events.View{Revision: revision, Instance: instance, Epoch: epoch},
			Options:  opts,
		})
	})
	if e.err != nil {
		c.cache.Remove(k) // not kept: the next one tries again
		return nil, e.err
	}
	return e.body, nil
}

// RecordedOptions are the options of cfg (after its defaults) that shape
// model text, and the catalog output budget that decides whether a
// catalog is appended, as a catalog record carries them (the session's
// recording then says what it was made under).
func RecordedOptions(cfg Config) *events.CatalogOptions {
	o := cfg.Catalog
	u := string(o.Updates)
	if u == "" {
		u = string(catalog.UpdatesFull)
	}
	return &events.CatalogOptions{DescriptionMax: o.DescriptionMaxLength, MaxLength: o.MaxLength, MaxSkillBytes: o.MaxSkillBytes,
		ListedMax: o.ListedMax, Search: o.SkillSearch, SearchBodies: o.SearchBodies, Updates: u, UserInvocation: o.UserInvocation,
		ResendsPerMinute: max(cfg.CatalogResends, 0), CatalogBytesPerMinute: max(cfg.CatalogBytes, 0), Rank: rankRecorded(o.Rank)}
}

// rankRecorded is the rank a record carries: "use", or "" for by name.
func rankRecorded(r catalog.Rank) string {
	if r == catalog.RankUse {
		return string(r)
	}
	return ""
}

// recordedOptions are the options this pre-step's catalog records: the
// processor's, with the ranking it was decided with.
func (s *preStepPlan) recordedOptions() *events.CatalogOptions {
	if s.ranking == "" {
		return s.p.recordedOptions
	}
	o := *s.p.recordedOptions
	o.Ranking = s.ranking
	return &o
}

func wireEntries(es []catalog.Entry) []events.Entry {
	out := make([]events.Entry, len(es))
	for i, e := range es {
		out[i] = events.Entry{Name: e.Name, Description: e.Description}
	}
	return out
}
