package store

import (
	"context"
	"fmt"
	"sort"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/providers"
)

// controls is what the provider holds of the index's release and pin
// keys: each release with its stable revision, and each pin with its
// revision, read from the skill's kept history once, when the key
// changed (never per session or trigger).
type controls struct {
	rels map[string]map[string]relState // the skill's project id ("" global) -> name -> release
	pins map[string]map[string]pinState // the pinned project id ("" every session) -> name -> pin
	// untrusted holds, by skill key, the newest revision of each skill
	// the trust policy does not trust (see untrustedNote).
	untrusted map[string]untrustedNote
	// n counts the entries of rels and pins: bounded by the store's
	// MaxSkills, as its skills are (see applyControl).
	n int
}

func newControls() *controls {
	return &controls{rels: map[string]map[string]relState{}, pins: map[string]map[string]pinState{}, untrusted: map[string]untrustedNote{}}
}

// relState is a release in progress: its value and its stable revision,
// when it has one and it was read (hasStable).
type relState struct {
	r         ReleaseState
	stable    entry
	hasStable bool
}

// pinState is a pin whose revision was read.
type pinState struct {
	pin PinState
	e   entry
}

// ctlChange is one entry of a release or pin key, decoded.
type ctlChange struct {
	kind    string // "release" or "pin"
	scope   skillstore.Scope
	name    string
	keyErr  error // the key is not one of the layout
	valErr  error // the value is not one skillstream writes
	deleted bool
	rel     ReleaseState
	pin     PinState
	e       entry // the stable (of a release) or pinned revision, read
	hasE    bool
	readErr error       // why it could not be read
	pol     TrustPolicy // of the trust policy key
}

// decodeControl decodes an entry of a release or pin key; nil for any
// other key.
func decodeControl(key string, put bool, e jetstream.KeyValueEntry) *ctlChange {
	if key == TrustKey {
		c := &ctlChange{kind: "trust", deleted: !put}
		c.pol, c.valErr = policyOf(e)
		return c
	}
	kind, sc, name, ok, err := controlKey(key)
	if !ok {
		return nil
	}
	c := &ctlChange{kind: kind, scope: sc, name: name, keyErr: err, deleted: !put}
	if err != nil || !put {
		return c
	}
	switch kind {
	case "release":
		c.rel, c.valErr = DecodeRelease(e.Value())
	case "libpin":
	default:
		c.pin, c.valErr = DecodePin(sc, e.Value())
	}
	return c
}

// checkControl reads the revision a release (its stable) or a pin names,
// from the skill's kept history by store revision, checked as any record
// (its digest the one named, its object the skill's).
func (p *Provider) checkControl(ctx context.Context, c change, ctl *ctlChange) change {
	c.ctl = ctl
	if ctl.kind == "trust" {
		return c // the watch applies it (see loadPolicy)
	}
	if ctl.keyErr != nil {
		c.bad, c.err = true, ctl.keyErr
		return c
	}
	c.project, c.name = ctl.scope.ProjectID(), ctl.name
	if ctl.valErr != nil {
		c.keep, c.err = true, ctl.valErr
		return c
	}
	if ctl.deleted {
		return c
	}
	switch ctl.kind {
	case "release":
		if s := ctl.rel.Stable; s != nil {
			ctl.e, ctl.readErr = p.readAt(ctx, ctl.scope, ctl.name, *s)
			ctl.hasE = ctl.readErr == nil
		}
	case "pin":
		ref := RevRef{Rev: ctl.pin.Rev, Revision: ctl.pin.Revision, Digest: ctl.pin.Digest}
		ctl.e, ctl.readErr = p.readAt(ctx, ctl.pin.skillScope(ctl.scope), ctl.name, ref)
		ctl.hasE = ctl.readErr == nil
	}
	return c
}

// readAt reads the revision ref names of skill name in scope: the entry
// at its store revision, which must be a record of that digest whose
// object is the skill.
func (p *Provider) readAt(ctx context.Context, scope skillstore.Scope, name string, ref RevRef) (entry, error) {
	key := scope.Key(name)
	hctx, cancel := context.WithTimeout(ctx, stallProbe)
	defer cancel()
	e, err := p.kv.GetRevision(hctx, key, ref.Revision)
	if err != nil {
		return entry{}, fmt.Errorf("store revision %d of %s: %w", ref.Revision, key, err)
	}
	if e.Operation() != jetstream.KeyValuePut {
		return entry{}, fmt.Errorf("store revision %d of %s is a removal", ref.Revision, key)
	}
	rec, err := decodeRecord(name, e.Value())
	if err != nil {
		return entry{}, fmt.Errorf("store revision %d of %s: %w", ref.Revision, key, err)
	}
	if rec.Digest != ref.Digest {
		return entry{}, fmt.Errorf("store revision %d of %s has digest %s, not %s", ref.Revision, key, skillstore.Short(rec.Digest), skillstore.Short(ref.Digest))
	}
	if v := p.view(); v.enforced(untrusted(v, scope, name, rec)) {
		return entry{}, fmt.Errorf("store revision %d of %s: %w", ref.Revision, key, untrusted(v, scope, name, rec))
	}
	if err := p.verify(ctx, rec); err != nil {
		return entry{}, err
	}
	return entry{rec: rec, revision: ref.Revision, size: rec.summaryBytes()}, nil
}

// applyControl applies a checked release or pin entry to ctls and
// returns the warning to log, if any. A malformed value leaves what was
// known of the key as it was.
func (p *Provider) applyControl(ctls *controls, c change) func() {
	ctl := c.ctl
	if ctl.kind == "trust" {
		return nil
	}
	project := ctl.scope.ProjectID()
	if ctl.kind == "libpin" {
		return nil // a tenant's pin of a library skill: its library provider serves it
	}
	if c.keep {
		return func() {
			p.warn(warnMalformed, c.key, "skill index "+ctl.kind+" entry not written by skillstream (malformed): ignored, what was known of it stays; "+
				"write it again with skills release, promote, rollback, pin or unpin", "key", c.key, "revision", c.revision, "err", c.err)
		}
	}
	if ctl.kind == "release" {
		_, known := ctls.rels[project][ctl.name]
		if ctl.deleted {
			if known {
				delete(ctls.rels[project], ctl.name)
				ctls.n--
			}
			return nil
		}
		if !known && ctls.n >= p.cfg.MaxSkills {
			return p.controlsFull(c)
		}
		if !known {
			ctls.n++
		}
		if ctls.rels[project] == nil {
			ctls.rels[project] = map[string]relState{}
		}
		ctls.rels[project][ctl.name] = relState{r: ctl.rel, stable: ctl.e, hasStable: ctl.hasE}
		if ctl.readErr != nil {
			return func() {
				p.warn(warnMalformed, c.key, "skill release's stable revision cannot be read: only its canary's sessions get the skill until the release ends",
					"key", c.key, "revision", c.revision, "err", ctl.readErr)
			}
		}
		return nil
	}
	_, known := ctls.pins[project][ctl.name]
	if ctl.deleted || ctl.readErr != nil {
		if known {
			delete(ctls.pins[project], ctl.name)
			ctls.n--
		}
		if ctl.readErr != nil {
			return func() {
				p.warn(warnMalformed, c.key, "skill pin's revision cannot be read: the pin is ignored", "key", c.key, "revision", c.revision, "err", ctl.readErr)
			}
		}
		return nil
	}
	if !known && ctls.n >= p.cfg.MaxSkills {
		return p.controlsFull(c)
	}
	if !known {
		ctls.n++
	}
	if ctls.pins[project] == nil {
		ctls.pins[project] = map[string]pinState{}
	}
	ctls.pins[project][ctl.name] = pinState{pin: ctl.pin, e: ctl.e}
	return nil
}

// controlsFull is the warning for a release or pin entry left out because
// the store already holds MaxSkills of them: an index writer cannot grow
// what every member keeps in memory past the store's own bound.
func (p *Provider) controlsFull(c change) func() {
	return func() {
		p.warn(warnMalformed, c.key, "skill index "+c.ctl.kind+" entry ignored: the store already holds as many releases and pins as it may hold skills",
			"key", c.key, "revision", c.revision, "max", p.cfg.MaxSkills)
	}
}

// storePin returns the pin that holds skill name of the scope of project
// ("" global) for q's session: the session's project's own pin, else
// (for a global skill) the tenant's. p.mu must be held.
func (p *Provider) storePin(project, name string, q catalog.Query) (pinState, bool) {
	if p.cfg.Library && p.tpins != nil {
		if sp, ok := p.tpins[name]; ok {
			return sp, true
		}
	}
	if project != "" {
		sp, ok := p.ctl.pins[project][name]
		return sp, ok && sp.pin.Of == PinOfProject
	}
	if q.Project != "" && !p.cfg.Library {
		if sp, ok := p.ctl.pins[q.Project][name]; ok && sp.pin.Of == PinOfGlobal {
			return sp, true
		}
	}
	sp, ok := p.ctl.pins[""][name]
	return sp, ok
}

// choose returns the revision of skill name of the scope of project (""
// global) that q's session gets, and the channel that chose it: a pin
// (the session's project's, else the tenant's) beats everything; with a
// release in progress, a canary's candidate (the skill's newest revision,
// when it is the release's candidate) goes to the sessions whose cohort
// takes it (q.Canary), the stable revision to the others, and a newest
// revision that is not the candidate (a draft, or a write whose release
// entry never followed) to nobody; without, the newest revision is stable
// for every session. Eval's pins (Config.Pins) come first. p.mu must be
// held.
func (p *Provider) choose(project, name string, q catalog.Query) (entry, string, bool) {
	if pn, ok := p.pins[project][name]; ok {
		return pn.e, ChannelStable, !pn.removed
	}
	if sp, ok := p.storePin(project, name, q); ok {
		return sp.e, catalog.ChannelPin, true
	}
	head, hasHead := p.scopes[project][name]
	rs, ok := p.ctl.rels[project][name]
	if !ok {
		return head, ChannelStable, hasHead
	}
	if hasHead && rs.r.Channel == ChannelCanary && head.rec.Digest == rs.r.Candidate.Digest && catalog.TakesCandidate(q.Canary, name) {
		return head, ChannelCanary, true
	}
	if rs.hasStable {
		return rs.stable, ChannelStable, true
	}
	return entry{}, "", false
}

// plain reports whether the scope of project is listed for q as the index
// holds it: no release, no pin bears on it. p.mu must be held.
func (p *Provider) plain(project string, q catalog.Query) bool {
	if len(p.pins[project]) > 0 || len(p.ctl.rels[project]) > 0 || len(p.ctl.pins[project]) > 0 || len(p.tpins) > 0 {
		return false
	}
	return project != "" || q.Project == "" || p.cfg.Library || len(p.ctl.pins[q.Project]) == 0
}

// pinnedOnly returns the skill names a pin may list for the scope of
// project that the index does not hold (removed since they were pinned).
// p.mu must be held.
func (p *Provider) pinnedOnly(project string, q catalog.Query) map[string]struct{} {
	var out map[string]struct{}
	add := func(pins map[string]pinned, cpins map[string]pinState) {
		for name := range pins {
			if _, ok := p.scopes[project][name]; !ok {
				if out == nil {
					out = map[string]struct{}{}
				}
				out[name] = struct{}{}
			}
		}
		for name := range cpins {
			if _, ok := p.scopes[project][name]; !ok {
				if out == nil {
					out = map[string]struct{}{}
				}
				out[name] = struct{}{}
			}
		}
	}
	add(p.pins[project], p.ctl.pins[project])
	add(nil, p.tpins)
	if project == "" && q.Project != "" && !p.cfg.Library {
		add(nil, p.ctl.pins[q.Project])
	}
	return out
}

// Releases implements providers.Releaser: the canaries in progress of
// q's scopes whose candidate has landed (it is the skill's newest
// revision) and that no pin holds for q, by name.
// The slice is kept until the index changes and shared: callers must not
// modify it.
func (p *Provider) Releases(q catalog.Query) []catalog.Release {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.over != nil || p.ctl == nil {
		return nil
	}
	projects := []string{""}
	if q.Project != "" && !p.cfg.Library {
		projects = append(projects, q.Project)
	}
	key := projects[len(projects)-1]
	if out, ok := p.releases[key]; ok {
		return out
	}
	var out []catalog.Release
	for _, project := range projects {
		for name, rs := range p.ctl.rels[project] {
			if rs.r.Channel != ChannelCanary || rs.r.Share <= 0 {
				continue
			}
			head, ok := p.scopes[project][name]
			if !ok || head.rec.Digest != rs.r.Candidate.Digest {
				continue
			}
			if _, pinned := p.pins[project][name]; pinned {
				continue
			}
			if _, pinned := p.storePin(project, name, q); pinned {
				continue
			}
			out = append(out, catalog.NewRelease(name, rs.r.Candidate.Digest, rs.r.Share))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	if p.releases == nil {
		p.releases = map[string][]catalog.Release{}
	}
	if len(p.releases) < maxReleaseMemo {
		p.releases[key] = out
	}
	return out
}

// maxReleaseMemo bounds the projects whose releases a provider keeps
// between changes (Provider.releases).
const maxReleaseMemo = 1024

var _ providers.Releaser = (*Provider)(nil)
