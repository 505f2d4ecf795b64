package processor

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/micro"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/history"
	"github.com/skillstream/skillstream/providers"
)

// The view rule (package documentation, "One view per session"): a
// replacement of a catalog with another digest is checked against the
// view that catalog was decided on (its store revision and instance).

// DefaultInstance derives an instance id for this process: the host name
// (characters outside a subject token replaced) and a random suffix, so
// that two processes on one host differ.
func DefaultInstance() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "skillstream"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return events.InstanceToken(host, events.MaxInstanceLength-9) + "-" + hex.EncodeToString(b[:])
}

// catchUpper is implemented by skills that follow an ordered log (a
// *providers.Registry with the skill store): CatchUp waits until the
// snapshots reflect revision rev at least.
type catchUpper interface {
	CatchUp(ctx context.Context, rev uint64) error
}

// viewVerdict is what comparing views decided about a replacement.
type viewVerdict int

const (
	viewReplace       viewVerdict = iota // append the replacement
	viewAgain                            // caught up: take a fresh snapshot and decide again
	viewBehind                           // could not catch up: append nothing
	viewDiverged                         // another member sees other skills: append nothing
	viewStoreDiverged                    // another member serves another store: append nothing
)

// Results of view checks (the view_checks_total label).
const (
	checkOwn      = "own"       // the visible catalog is ours: a change on our side
	checkOlder    = "older"     // it reflects an older store revision
	checkCaughtUp = "caught_up" // it reflected a newer one; we caught up
	checkBehind   = "behind"    // it reflected a newer one; we could not catch up
	checkAgrees   = "agrees"    // its producer now sees what we see
	checkGone     = "gone"      // its producer did not answer
	checkUnsure   = "unsure"    // its producer could not tell (incomplete snapshot, error)
	checkLagging  = "lagging"   // its producer is at an older revision than we are
	checkDiverged = "diverged"  // its producer still sees other skills

	checkReloaded     = "reloaded"         // it is of another store epoch, the current one: we loaded it
	checkOldEpoch     = "old_epoch"        // it is of a store epoch no longer current
	checkStoreDiffers = "store_differs"    // its producer serves another store configuration
	checkUnknownRev   = "unknown_revision" // it names a revision the store's bucket never reached
)

var viewCheckResults = []string{checkOwn, checkOlder, checkCaughtUp, checkBehind, checkAgrees, checkGone,
	checkUnsure, checkLagging, checkDiverged, checkReloaded, checkOldEpoch, checkStoreDiffers, checkUnknownRev}

// storeIdentity is implemented by skills that serve a skill store whose
// buckets can be recreated (a *providers.Registry): Store names the
// store's buckets ("" without a store); Refresh checks their identity now
// and loads them again when they were recreated, returning the epoch then
// current.
type storeIdentity interface {
	Store() string
	Refresh(ctx context.Context) (string, error)
}

// store is the name of this member's skill store, "" without one.
func (p *Processor) store() string {
	if id, ok := p.skills.(storeIdentity); ok {
		return id.Store()
	}
	return ""
}

// replyStore is the store configuration a view reply states, and whether
// it states one (members that predate the field do not).
func replyStore(r events.ViewReply) (string, bool) {
	return r.Store, r.Store != "" || r.NoStore
}

// replacedCatalog returns the catalog a decision would replace when the
// view rule must be consulted: a replacement decided on the skills (not on
// a hidden tool), of a catalog whose digest differs from ours. It is nil
// otherwise.
func replacedCatalog(prepared *catalog.View, st history.State, d catalog.Decision) *history.Catalog {
	if prepared == nil || d.Outcome != catalog.OutcomeAppended || (d.Update != catalog.UpdateReplacement && d.Update != catalog.UpdateChanges) {
		return nil
	}
	ref := st.Seen
	if ref == nil {
		ref = st.Newest // masked by compaction: about to be re-established
	}
	if ref == nil || ref.Digest == d.Digest {
		return nil
	}
	return ref
}

// viewOf is the view a catalog records (remembered when it was
// recognised); a catalog without one (written before views were recorded)
// counts as revision 0 of no known instance.
func viewOf(c *history.Catalog) events.View { return c.View }

// checkView compares our view (ours, for q, search offered or not) with
// the one the catalog ref was decided on; see the rule above. caughtUp is
// set once this pre-step caught up, so that it does not wait twice.
func (p *Processor) checkView(ctx context.Context, sid string, q catalog.Query, offered bool, ours *catalog.View, ref *history.Catalog, caughtUp *bool) viewVerdict {
	theirs := viewOf(ref)
	if theirs.Epoch != ours.Epoch {
		return p.checkEpoch(ctx, sid, q, ours, theirs, caughtUp)
	}
	switch {
	case theirs.Revision > ours.Revision:
		return p.catchUp(ctx, sid, theirs.Revision, caughtUp)
	case theirs.Revision < ours.Revision:
		p.m.viewChecks.WithLabelValues(checkOlder).Inc()
		return viewReplace
	case theirs.Instance == "" || theirs.Instance == p.cfg.Instance:
		p.m.viewChecks.WithLabelValues(checkOwn).Inc()
		return viewReplace
	}
	key := divergenceKey{peer: theirs.Instance, cwd: q.Cwd, project: q.Project}
	r, err := p.askView(ctx, theirs.Instance, sid, q, offered)
	switch {
	case errors.Is(err, nats.ErrNoResponders) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
		p.m.viewChecks.WithLabelValues(checkGone).Inc()
		p.divergences.resolve(key, "the other member does not answer")
		return viewReplace
	case err != nil || !r.Complete:
		p.m.viewChecks.WithLabelValues(checkUnsure).Inc()
		p.log.Debug("view request", "instance", theirs.Instance, "err", err, "reply_error", r.Error)
		return viewReplace
	case r.Epoch != ours.Epoch:
		// It moved to other buckets since (or we did): its revisions do
		// not compare with ours.
		if p.refreshEpoch(ctx, ours, caughtUp) {
			return viewAgain
		}
		return p.epochPeer(sid, q, ours, theirs, r)
	case r.Revision > ours.Revision:
		// The other member moved on since: catch up with it.
		return p.catchUp(ctx, sid, r.Revision, caughtUp)
	case r.Revision < ours.Revision:
		p.m.viewChecks.WithLabelValues(checkLagging).Inc()
		return viewReplace
	case r.Digest == ours.Digest:
		p.m.viewChecks.WithLabelValues(checkAgrees).Inc()
		p.divergences.resolve(key, "the other member now sees the same skills")
		return viewReplace
	}
	p.m.viewChecks.WithLabelValues(checkDiverged).Inc()
	p.divergences.report(Divergence{
		Instance: p.cfg.Instance, Digest: ours.Digest,
		Peer: theirs.Instance, PeerDigest: r.Digest,
		Cwd: q.Cwd, Project: q.Project, Search: offered, Revision: ours.Revision, Session: sid, Since: p.now(),
	})
	return viewDiverged
}

// checkEpoch decides about a catalog decided on another store epoch than
// ours (buckets recreated, or another store configuration): when the
// buckets' current epoch is not ours, we load it and decide again; else
// the catalog's producer is asked for its store configuration, and a
// catalog of our store's old epoch is replaced, one of another store
// configuration is not (diverged).
func (p *Processor) checkEpoch(ctx context.Context, sid string, q catalog.Query, ours *catalog.View, theirs events.View, caughtUp *bool) viewVerdict {
	if p.refreshEpoch(ctx, ours, caughtUp) {
		return viewAgain
	}
	if theirs.Instance == "" || theirs.Instance == p.cfg.Instance {
		p.m.viewChecks.WithLabelValues(checkOldEpoch).Inc()
		return viewReplace
	}
	r, err := p.askView(ctx, theirs.Instance, sid, q, false)
	key := divergenceKey{peer: theirs.Instance, store: true}
	switch {
	case errors.Is(err, nats.ErrNoResponders) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
		p.m.viewChecks.WithLabelValues(checkGone).Inc()
		p.divergences.resolve(key, "the other member does not answer")
		return viewReplace
	case err != nil:
		p.m.viewChecks.WithLabelValues(checkUnsure).Inc()
		p.log.Debug("view request", "instance", theirs.Instance, "err", err)
		return viewReplace
	}
	return p.epochPeer(sid, q, ours, theirs, r)
}

// epochPeer decides, from the answer r of the member that produced a
// catalog of another epoch than ours (which is current), whether it
// serves the same store as we do (then the catalog is of that store's old
// epoch: replaced) or another configuration (diverged: the session keeps
// its catalog, and the divergence is reported).
func (p *Processor) epochPeer(sid string, q catalog.Query, ours *catalog.View, theirs events.View, r events.ViewReply) viewVerdict {
	key := divergenceKey{peer: theirs.Instance, store: true}
	peerStore, known := replyStore(r)
	switch {
	case !known:
		p.m.viewChecks.WithLabelValues(checkUnsure).Inc()
		return viewReplace
	case peerStore == p.store():
		p.m.viewChecks.WithLabelValues(checkOldEpoch).Inc()
		p.divergences.resolve(key, "the other member now serves the same skill store")
		return viewReplace
	}
	p.m.viewChecks.WithLabelValues(checkStoreDiffers).Inc()
	p.divergences.report(Divergence{
		Instance: p.cfg.Instance, Digest: ours.Digest, Peer: theirs.Instance, PeerDigest: r.Digest,
		Cwd: q.Cwd, Project: q.Project, Revision: ours.Revision, Session: sid, Since: p.now(),
		StoreDiffers: true, Store: p.store(), PeerStore: peerStore,
	})
	return viewStoreDiverged
}

// refreshEpoch checks, once per pre-step and within CatchUpWait, whether
// our store's buckets are still those of ours.Epoch; when they were
// recreated it loads the new ones and reports true (take the skills again
// and decide again).
func (p *Processor) refreshEpoch(ctx context.Context, ours *catalog.View, caughtUp *bool) bool {
	id, ok := p.skills.(storeIdentity)
	if *caughtUp || !ok || id.Store() == "" || p.cfg.CatchUpWait == 0 {
		return false
	}
	cctx, cancel := context.WithTimeout(ctx, p.cfg.CatchUpWait)
	defer cancel()
	epoch, err := id.Refresh(cctx)
	if err != nil || epoch == ours.Epoch {
		return false
	}
	*caughtUp = true
	p.m.viewChecks.WithLabelValues(checkReloaded).Inc()
	return true
}

// catchUp waits until our skills reflect rev, within ctx and CatchUpWait.
func (p *Processor) catchUp(ctx context.Context, sid string, rev uint64, caughtUp *bool) viewVerdict {
	cu, ok := p.skills.(catchUpper)
	if *caughtUp || !ok || p.cfg.CatchUpWait == 0 {
		p.m.viewChecks.WithLabelValues(checkBehind).Inc()
		return viewBehind
	}
	*caughtUp = true
	cctx, cancel := context.WithTimeout(ctx, p.cfg.CatchUpWait)
	defer cancel()
	if err := cu.CatchUp(cctx, rev); err != nil {
		if errors.Is(err, providers.ErrUnknownRevision) {
			// The catalog's revision is of buckets since replaced (a
			// restore from a backup): replaced, as an older view.
			p.m.viewChecks.WithLabelValues(checkUnknownRev).Inc()
			p.log.Warn("session's catalog names a skill store revision the bucket never reached (buckets restored?); replacing it",
				"session", sid, "revision", rev, "err", err)
			return viewReplace
		}
		p.m.viewChecks.WithLabelValues(checkBehind).Inc()
		p.log.Warn("session's catalog reflects a newer skill store revision; could not catch up in time, appending nothing",
			"session", sid, "revision", rev, "err", err)
		return viewBehind
	}
	p.m.viewChecks.WithLabelValues(checkCaughtUp).Inc()
	return viewAgain
}

// askView asks instance which catalog it sees for q (for a session
// offered search, when offered), within ctx and ViewTimeout.
func (p *Processor) askView(ctx context.Context, instance, sid string, q catalog.Query, offered bool) (events.ViewReply, error) {
	rctx, cancel := context.WithTimeout(ctx, p.cfg.ViewTimeout)
	defer cancel()
	req := events.ViewRequest{V: events.Version, Cwd: q.Cwd, Project: q.Project, ResourceDir: q.ResourceDir, Search: offered}
	if q.Canary != "" {
		// Asked for the session: the other member places it in its own
		// releases' canaries, as we placed it in ours.
		req.Session = sid
	}
	return askView(rctx, p.nc, instance, req)
}

// AskView asks the processor instance which catalog it would decide for q
// now (see ViewRequest in package events), within ctx. Members ask each
// other before replacing a catalog; operators' tools ask to compare what a
// command sees with what the serving members see.
func AskView(ctx context.Context, nc *nats.Conn, instance string, q catalog.Query) (events.ViewReply, error) {
	return askView(ctx, nc, instance, events.ViewRequest{V: events.Version, Cwd: q.Cwd, Project: q.Project, ResourceDir: q.ResourceDir})
}

// askView is AskView for the request req.
func askView(ctx context.Context, nc *nats.Conn, instance string, req events.ViewRequest) (events.ViewReply, error) {
	body, err := events.Encode(events.JSON, req)
	if err != nil {
		return events.ViewReply{}, fmt.Errorf("encode view request: %w", err)
	}
	m, err := nc.RequestMsgWithContext(ctx, &nats.Msg{
		Subject: events.ViewSubject(instance),
		Header:  nats.Header{events.HeaderContentType: []string{events.ContentTypeJSON}},
		Data:    body,
	})
	if err != nil {
		return events.ViewReply{}, fmt.Errorf("ask %s for its view: %w", instance, err)
	}
	r, err := events.DecodeViewReply(events.JSON, m.Data)
	if err != nil {
		return events.ViewReply{}, fmt.Errorf("view reply of %s: %w", instance, err)
	}
	if r.Instance != instance {
		return events.ViewReply{}, fmt.Errorf("view reply of %s: answered by %s", instance, r.Instance)
	}
	return r, nil
}

// maxViewAnswers bounds the view requests answered at once; more are
// refused (the asker then replaces as if we were gone).
const maxViewAnswers = 16

// serveView answers view requests on events.ViewSubject(our instance):
// which catalog we would decide for the request's query now. The request
// is held to a trigger's rules (cwd checked as a trigger's, project and
// resourceDir validated), so it makes the processor read nothing a trigger
// could not.
func (p *Processor) serveView(svc micro.Service) error {
	slots := make(chan struct{}, maxViewAnswers)
	return svc.AddEndpoint("view", micro.HandlerFunc(func(req micro.Request) {
		if !p.requestReply(req.Reply(), true) {
			return
		}
		select {
		case slots <- struct{}{}:
		default:
			p.respondView(req, events.ViewReply{Error: "busy"})
			return
		}
		go func() {
			defer func() { <-slots }()
			p.respondView(req, p.answerView(req.Data(), req.Headers().Get(events.HeaderContentType)))
		}()
	}), micro.WithEndpointSubject(events.ViewSubject(p.cfg.Instance)))
}

// answerView computes the reply to one view request.
func (p *Processor) answerView(data []byte, contentType string) events.ViewReply {
	enc, err := events.EncodingOf(contentType)
	if err != nil {
		return events.ViewReply{Error: err.Error()}
	}
	req, err := events.DecodeViewRequest(enc, data)
	if err != nil {
		return events.ViewReply{Error: "bad view request: " + err.Error()}
	}
	cwd, err := p.cwds.check(req.Cwd)
	if err != nil {
		return events.ViewReply{Error: err.Error()}
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.cfg.ViewTimeout)
	defer cancel()
	opts := p.cfg.Catalog
	opts.SearchOffered = req.Search // counts only with search on (catalog.Options.SkillSearch)
	q := catalog.Query{Cwd: cwd, Project: req.Project, ResourceDir: req.ResourceDir}
	if req.Session != "" {
		q = p.cohort(req.Session, q) // the revisions that session takes
	}
	v, err := history.Prepare(ctx, p.skills, q, opts)
	if err != nil {
		return events.ViewReply{Error: err.Error()}
	}
	return events.ViewReply{Complete: v.Complete, Digest: v.Digest, Revision: v.Revision, Epoch: v.Epoch}
}

func (p *Processor) respondView(req micro.Request, r events.ViewReply) {
	r.V, r.Instance = events.Version, p.cfg.Instance
	r.Store = p.store()
	r.NoStore = r.Store == ""
	body, err := events.Encode(events.JSON, r)
	if err == nil {
		err = req.Respond(body, micro.WithHeaders(micro.Headers{events.HeaderContentType: []string{events.ContentTypeJSON}}))
	}
	if err != nil {
		p.log.Warn("answer view request", "err", err)
	}
}

// Divergence is one unresolved disagreement between this member and
// another about the skills of one query: at the same store revision, the
// two see catalogs with different digests; or (StoreDiffers) the other
// member serves another skill store configuration (another bucket, or a
// store where this member has none, or the reverse).
type Divergence struct {
	// StoreDiffers: the members' store configurations differ; Store and
	// PeerStore name them ("" for none).
	StoreDiffers     bool
	Store, PeerStore string
	// Instance and Digest: this member and the digest it sees.
	Instance, Digest string
	// Peer and PeerDigest: the other member and the digest it sees.
	Peer, PeerDigest string
	// Cwd and Project: the query they disagree about; Search: for a
	// session offered skill search (its catalog is shortened for it).
	Cwd, Project string
	Search       bool
	// Revision is the store revision both views reflect (0 without one).
	Revision uint64
	// Session is the session where it was found (logged; String, which
	// /readyz shows, leaves it out: a session id lets whoever holds it
	// write to the session).
	Session string
	// Since is when it was found.
	Since time.Time
}

// String describes d on one line (the /readyz body), without the session
// it was found in: the error logged when it was found names that.
func (d Divergence) String() string {
	if d.StoreDiffers {
		found := "found in a session named in this member's log"
		if d.Session == "" {
			found = "found by asking the members"
		}
		return fmt.Sprintf("store divergence: this member %s serves skill store %s, member %s serves %s (since %s, %s)",
			d.Instance, storeName(d.Store), d.Peer, storeName(d.PeerStore), d.Since.UTC().Format(time.RFC3339), found)
	}
	return fmt.Sprintf("view divergence: this member %s sees catalog %s, member %s sees %s, for cwd %q project %q (store revision %d, since %s, found in a session named in this member's log)",
		d.Instance, short(d.Digest), d.Peer, short(d.PeerDigest), d.Cwd, d.Project, d.Revision, d.Since.UTC().Format(time.RFC3339))
}

func storeName(s string) string {
	if s == "" {
		return "none"
	}
	return strconv.Quote(s)
}

func short(digest string) string {
	if len(digest) > 12 {
		return digest[:12]
	}
	return digest
}

// divergenceKey is the cause of a divergence: which member, about which
// query; or, for a store divergence, which member.
type divergenceKey struct {
	peer, cwd, project string
	store              bool
}

func keyOf(d Divergence) divergenceKey {
	if d.StoreDiffers {
		return divergenceKey{peer: d.Peer, store: true}
	}
	return divergenceKey{peer: d.Peer, cwd: d.Cwd, project: d.Project}
}

// divergences holds the unresolved divergences this member found.
type divergences struct {
	gauge prometheus.Gauge
	log   func(msg string, args ...any)
	info  func(msg string, args ...any)

	mu sync.Mutex
	m  map[divergenceKey]Divergence
}

func newDivergences(p *Processor) *divergences {
	return &divergences{gauge: p.m.divergence, log: p.log.Error, info: p.log.Info, m: make(map[divergenceKey]Divergence)}
}

// report records d, logging it when its cause is new (or the digests
// changed since it was recorded).
func (ds *divergences) report(d Divergence) {
	k := keyOf(d)
	ds.mu.Lock()
	old, known := ds.m[k]
	same := known && old.Digest == d.Digest && old.PeerDigest == d.PeerDigest
	if d.StoreDiffers {
		same = known && old.Store == d.Store && old.PeerStore == d.PeerStore
	}
	if same {
		ds.mu.Unlock()
		return
	}
	if known {
		d.Since = old.Since
	}
	ds.m[k] = d
	if len(ds.m) == 1 && !known {
		ds.gauge.Add(1) // Add, not Set: processors sharing a registry each count once
	}
	ds.mu.Unlock()
	if d.StoreDiffers {
		ds.log("members serve different skill store configurations: not replacing catalogs decided under the other one; give every member of the group the same skill store options",
			"instance", d.Instance, "store", storeName(d.Store), "other_instance", d.Peer, "other_store", storeName(d.PeerStore), "session", d.Session)
		return
	}
	ds.log("members see different skills for one query: not replacing the session's catalog; make their skill folders equal or serve these skills from the skill store",
		"instance", d.Instance, "digest", d.Digest, "other_instance", d.Peer, "other_digest", d.PeerDigest,
		"cwd", d.Cwd, "project", d.Project, "store_revision", d.Revision, "session", d.Session)
}

// resolve forgets the divergence with key k, if any.
func (ds *divergences) resolve(k divergenceKey, why string) {
	ds.mu.Lock()
	d, ok := ds.m[k]
	if ok {
		delete(ds.m, k)
		if len(ds.m) == 0 {
			ds.gauge.Add(-1)
		}
	}
	ds.mu.Unlock()
	if ok {
		ds.info("view divergence resolved: "+why, "instance", d.Instance, "other_instance", d.Peer,
			"cwd", d.Cwd, "project", d.Project, "lasted", time.Since(d.Since).Round(time.Millisecond))
	}
}

// list returns the unresolved divergences, oldest first.
func (ds *divergences) list() []Divergence {
	ds.mu.Lock()
	out := make([]Divergence, 0, len(ds.m))
	for _, d := range ds.m {
		out = append(out, d)
	}
	ds.mu.Unlock()
	slices.SortFunc(out, func(a, b Divergence) int {
		if c := a.Since.Compare(b.Since); c != 0 {
			return c
		}
		return strings.Compare(a.Peer+a.Cwd+a.Project, b.Peer+b.Cwd+b.Project)
	})
	return out
}

// clear forgets every divergence (the processor stopped).
func (ds *divergences) clear() {
	ds.mu.Lock()
	if len(ds.m) > 0 {
		ds.gauge.Add(-1)
	}
	ds.m = make(map[divergenceKey]Divergence)
	ds.mu.Unlock()
}

// Divergences returns the view divergences this member found and that are
// not resolved yet, oldest first.
func (p *Processor) Divergences() []Divergence { return p.divergences.list() }

// divergenceRecheck is how often unresolved divergences are asked again.
const divergenceRecheck = 10 * time.Second

// recheckDivergences asks again, every period until ctx ends, about each
// unresolved divergence: it is resolved when the other member is gone or
// now sees what we see, and reported anew when either side changed.
func (p *Processor) recheckDivergences(ctx context.Context, period time.Duration) {
	tick := time.NewTicker(period)
	defer tick.Stop()
	p.surveyStores(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		for _, d := range p.divergences.list() {
			p.recheck(ctx, d)
		}
		p.surveyStores(ctx)
	}
}

// surveyStores asks the members of our consumer group (the micro service's
// INFO, within ViewTimeout) which skill store they serve (their "store"
// metadata: the store's name, empty for none; members that do not say are
// left out) and reports a store divergence for each whose store differs
// from ours, without waiting for a session they share. Divergences it
// reports are resolved as the others: the member gone, or serving our
// store.
func (p *Processor) surveyStores(ctx context.Context) {
	subject, err := micro.ControlSubject(micro.InfoVerb, ServiceName, "")
	if err != nil {
		return
	}
	inbox := p.nc.NewRespInbox()
	sub, err := p.nc.SubscribeSync(inbox)
	if err != nil {
		return
	}
	defer sub.Unsubscribe()
	if err := p.nc.PublishRequest(subject, inbox, nil); err != nil {
		return
	}
	wctx, cancel := context.WithTimeout(ctx, p.cfg.ViewTimeout)
	defer cancel()
	ours := p.store()
	for {
		m, err := sub.NextMsgWithContext(wctx)
		if err != nil {
			return // the wait is over
		}
		var info micro.Info
		if json.Unmarshal(m.Data, &info) != nil {
			continue
		}
		md := info.Metadata
		peer := md["instance"]
		theirs, says := md["store"]
		if !says || !events.ValidInstance(peer) || peer == p.cfg.Instance ||
			md["stream"] != p.cfg.Stream || md["consumer"] != p.cfg.Consumer || md["prefix"] != p.cfg.Prefix {
			continue
		}
		key := divergenceKey{peer: peer, store: true}
		if theirs == ours {
			p.divergences.resolve(key, "the other member now serves the same skill store")
			continue
		}
		p.divergences.report(Divergence{Instance: p.cfg.Instance, Peer: peer, StoreDiffers: true,
			Store: ours, PeerStore: clipStore(theirs), Since: p.now()})
	}
}

// clipStore bounds a store name read from another member's metadata.
func clipStore(s string) string {
	if len(s) > 512 {
		return s[:512] + "..."
	}
	return s
}

func (p *Processor) recheck(ctx context.Context, d Divergence) {
	key := keyOf(d)
	if d.StoreDiffers {
		p.recheckStore(ctx, key, d)
		return
	}
	q := p.cohort(d.Session, catalog.Query{Cwd: d.Cwd, Project: d.Project})
	rctx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
	defer cancel()
	opts := p.cfg.Catalog
	opts.SearchOffered = d.Search
	ours, err := history.Prepare(rctx, p.skills, q, opts)
	if err != nil || !ours.Complete {
		return
	}
	r, err := p.askView(rctx, d.Peer, d.Session, q, d.Search)
	switch {
	case errors.Is(err, nats.ErrNoResponders) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
		p.divergences.resolve(key, "the other member does not answer")
	case err != nil || !r.Complete || r.Revision != ours.Revision || r.Epoch != ours.Epoch:
		// cannot tell now
	case r.Digest == ours.Digest:
		p.divergences.resolve(key, "the members now see the same skills")
	default:
		d.Digest, d.PeerDigest, d.Revision = ours.Digest, r.Digest, ours.Revision
		p.divergences.report(d)
	}
}

// recheckStore asks the other member of a store divergence for its store
// configuration again: gone or now the same as ours, it is resolved.
func (p *Processor) recheckStore(ctx context.Context, key divergenceKey, d Divergence) {
	rctx, cancel := context.WithTimeout(ctx, p.cfg.RequestTimeout)
	defer cancel()
	r, err := p.askView(rctx, d.Peer, "", catalog.Query{}, false)
	switch {
	case errors.Is(err, nats.ErrNoResponders) || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout):
		p.divergences.resolve(key, "the other member does not answer")
	case err != nil:
	default:
		if st, known := replyStore(r); known && st == p.store() {
			p.divergences.resolve(key, "the other member now serves the same skill store")
		}
	}
}
