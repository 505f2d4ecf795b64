package store

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/providers"
)

// TrustKey is the index key of the store's trust policy (a TrustPolicy,
// JSON): which publishers' keys are trusted and what the provider
// requires of a revision. It is not a skill's key: readers of skills skip
// it as a key outside the layout.
const TrustKey = "trust.policy"

// The values of TrustPolicy.Require.
const (
	RequireOff    = "off"    // every revision offered, signed or not (no key)
	RequireWarn   = "warn"   // every revision offered; one not trusted is reported
	RequireSigned = "signed" // only trusted revisions offered
)

// The values of TrustPolicy.Library.
const (
	LibraryIgnore = "ignore" // the library's keys are not trusted (default)
	LibraryTrust  = "trust"  // the keys the library's own policy names are trusted for its skills
)

// MaxTrustKeys bounds the keys of a policy.
const MaxTrustKeys = 64

// MaxRevoked bounds each list of a policy's revocations (keys, digests).
const MaxRevoked = 128

// maxPolicyBytes bounds a policy value.
const maxPolicyBytes = 32 << 10

// ErrRevoked reports a revision whose digest, or whose signing key, the
// store's policy revokes: never offered, whatever the policy requires.
var ErrRevoked = errors.New("revoked")

// ErrBadPolicy reports a trust policy value that is not one skillstream
// writes.
var ErrBadPolicy = errors.New("malformed trust policy")

// TrustPolicy is the value of TrustKey. Require is RequireOff, RequireWarn
// or RequireSigned; Keys the trusted publishers' public keys
// (skillstore.ValidPublicKey). Library, in a tenant's store, says whether
// the keys named by the library's own policy are trusted for the
// library's skills (LibraryTrust) or not (LibraryIgnore, or empty); in
// the library's store it is not used. A store without the key requires
// nothing (RequireOff).
//
// Revoked lists the publishers' keys and the digests revoked: a revision
// whose digest is revoked, or signed by a revoked key, is never offered,
// whatever Require says (the skill's newest revision not revoked, and
// trusted under RequireSigned, is offered in its place, or none).
type TrustPolicy struct {
	V       int      `json:"v"`
	Require string   `json:"require"`
	Keys    []string `json:"keys"`
	Library string   `json:"library,omitempty"`
	Revoked *Revoked `json:"revoked,omitempty"`
}

// Revoked is what a trust policy revokes: at most MaxRevoked publishers'
// public keys and MaxRevoked digests, each sorted and unique.
type Revoked struct {
	Keys    []string `json:"keys,omitempty"`
	Digests []string `json:"digests,omitempty"`
}

// RevokedKeys is the keys p revokes (nil: none).
func (t TrustPolicy) RevokedKeys() []string {
	if t.Revoked == nil {
		return nil
	}
	return t.Revoked.Keys
}

// RevokedDigests is the digests p revokes (nil: none).
func (t TrustPolicy) RevokedDigests() []string {
	if t.Revoked == nil {
		return nil
	}
	return t.Revoked.Digests
}

// DecodePolicy decodes and checks a trust policy value: at most 32 KiB of
// JSON of version 1, a known requirement, at most MaxTrustKeys keys, each
// a publisher's public key, a known library choice, and at most
// MaxRevoked revoked keys and digests, each valid.
func DecodePolicy(data []byte) (TrustPolicy, error) {
	if len(data) > maxPolicyBytes {
		return TrustPolicy{}, fmt.Errorf("%w: %d bytes, over %d", ErrBadPolicy, len(data), maxPolicyBytes)
	}
	var t TrustPolicy
	if err := json.Unmarshal(data, &t); err != nil {
		return TrustPolicy{}, fmt.Errorf("%w: %v", ErrBadPolicy, err)
	}
	if err := t.check(); err != nil {
		return TrustPolicy{}, err
	}
	return t, nil
}

func (t TrustPolicy) check() error {
	switch {
	case t.V != 1:
		return fmt.Errorf("%w: version %d, want 1", ErrBadPolicy, t.V)
	case t.Require != RequireOff && t.Require != RequireWarn && t.Require != RequireSigned:
		return fmt.Errorf("%w: require %q, want off, warn or signed", ErrBadPolicy, clip(t.Require))
	case len(t.Keys) > MaxTrustKeys:
		return fmt.Errorf("%w: %d keys, over %d", ErrBadPolicy, len(t.Keys), MaxTrustKeys)
	case t.Library != "" && t.Library != LibraryIgnore && t.Library != LibraryTrust:
		return fmt.Errorf("%w: library %q, want trust or ignore", ErrBadPolicy, clip(t.Library))
	}
	for _, k := range append(slices.Clone(t.Keys), t.RevokedKeys()...) {
		if !skillstore.ValidPublicKey(k) {
			if strings.HasPrefix(k, "S") {
				return fmt.Errorf("%w: a key that looks like a seed (not shown): a policy names public keys (N...), never seeds", ErrBadPolicy)
			}
			return fmt.Errorf("%w: key %q is not a skill signing key (skills keygen makes one)", ErrBadPolicy, clip(k))
		}
	}
	if r := t.Revoked; r != nil {
		if len(r.Keys) > MaxRevoked || len(r.Digests) > MaxRevoked {
			return fmt.Errorf("%w: %d revoked keys and %d revoked digests, over %d of either", ErrBadPolicy, len(r.Keys), len(r.Digests), MaxRevoked)
		}
		for _, d := range r.Digests {
			if !skillstore.ValidDigest(d) {
				return fmt.Errorf("%w: revoked digest %q is not a digest (64 lowercase hex digits)", ErrBadPolicy, clip(d))
			}
		}
	}
	return nil
}

// defaultPolicy is the policy of a store without a trust key.
func defaultPolicy() TrustPolicy { return TrustPolicy{V: 1, Require: RequireOff, Keys: []string{}} }

// SummaryDigest is the digest of what the index shows of a revision
// without its files (what a catalog lists): the lowercase hex SHA-256 of
// its description, whenToUse and invocation flags. A revision's signature
// covers it (skillstore.Statement), so a record's text cannot be changed
// under a signature.
func SummaryDigest(r Record) string {
	h := sha256.New()
	fmt.Fprintf(h, "description %d\x00%s\x00whenToUse %d\x00%s\x00model %t\x00user %t\x00",
		len(r.Description), r.Description, len(r.WhenToUse), r.WhenToUse, r.Invocation.ModelInvocable, r.Invocation.UserInvocable)
	return hex.EncodeToString(h.Sum(nil))
}

// SignRecord signs r as skill r.Name of scope.
func SignRecord(kp nkeys.KeyPair, scope skillstore.Scope, r Record) (*skillstore.Signature, error) {
	s, err := skillstore.Sign(kp, scope, r.Name, r.Digest, SummaryDigest(r))
	if err != nil {
		return nil, err
	}
	return &s, nil
}

// VerifyRecord verifies r's signature as the record of skill name in
// scope (the key it was read under).
func VerifyRecord(scope skillstore.Scope, name string, r Record) error {
	return skillstore.Verify(r.Signature, scope, name, r.Digest, SummaryDigest(r))
}

// trustView is the policy a provider enforces: its requirement and the
// keys it trusts.
type trustView struct {
	require string
	keys    []string
	revKeys []string // revoked keys, sorted
	revDigs []string // revoked digests, sorted
}

func (v trustView) equal(o trustView) bool {
	return v.require == o.require && slices.Equal(v.keys, o.keys) &&
		slices.Equal(v.revKeys, o.revKeys) && slices.Equal(v.revDigs, o.revDigs)
}

// enforced says whether a revision judged err under v is not offered:
// a revoked one never is; one not trusted only under RequireSigned.
func (v trustView) enforced(err error) bool {
	return err != nil && (v.require == RequireSigned || errors.Is(err, ErrRevoked))
}

// sortedUnion is the sorted, unique union of lists.
func sortedUnion(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// view is the policy the provider enforces: its store's own; for a
// library with a tenant's store (Config.Tenant), the stricter of the two
// requirements, the tenant's keys, and the library's own keys when the
// tenant trusts the library.
func (p *Provider) view() trustView {
	own := *p.policy.Load()
	if p.cfg.Library && p.cfg.Tenant != nil {
		ten := *p.cfg.Tenant.policy.Load()
		v := trustView{require: stricter(own.Require, ten.Require), keys: slices.Clone(ten.Keys)}
		if ten.Library == LibraryTrust {
			v.keys = append(v.keys, own.Keys...)
		}
		// What either store revokes is revoked.
		return trustView{require: v.require, keys: sortedUnion(v.keys),
			revKeys: sortedUnion(own.RevokedKeys(), ten.RevokedKeys()),
			revDigs: sortedUnion(own.RevokedDigests(), ten.RevokedDigests())}
	}
	return trustView{require: own.Require, keys: sortedUnion(own.Keys),
		revKeys: sortedUnion(own.RevokedKeys()), revDigs: sortedUnion(own.RevokedDigests())}
}

func stricter(a, b string) string {
	rank := map[string]int{RequireOff: 0, RequireWarn: 1, RequireSigned: 2}
	if rank[b] > rank[a] {
		return b
	}
	return a
}

// untrusted says why rec, read under the key of skill name in scope, is
// not trusted under v; nil when it is, or when v requires nothing and
// revokes neither its digest nor its key. A revocation wraps ErrRevoked.
func untrusted(v trustView, scope skillstore.Scope, name string, rec Record) error {
	if _, ok := slices.BinarySearch(v.revDigs, rec.Digest); ok {
		return fmt.Errorf("%w digest %s", ErrRevoked, skillstore.Short(rec.Digest))
	}
	if s := rec.Signature; s != nil {
		if _, ok := slices.BinarySearch(v.revKeys, s.Key); ok {
			return fmt.Errorf("%w key %s", ErrRevoked, s.Key)
		}
	}
	if v.require == RequireOff || v.require == "" {
		return nil
	}
	return skillstore.Trusted(rec.Signature, scope, name, rec.Digest, SummaryDigest(rec), v.keys)
}

// Policy is the trust policy the provider enforces now (its store's own
// policy; see TrustPolicy).
func (p *Provider) Policy() TrustPolicy {
	t := *p.policy.Load()
	t.Keys = slices.Clone(t.Keys)
	if r := t.Revoked; r != nil {
		t.Revoked = &Revoked{Keys: slices.Clone(r.Keys), Digests: slices.Clone(r.Digests)}
	}
	return t
}

// setPolicy installs t as the store's policy and reports whether what
// the provider enforces changed; followers (library providers reading
// this store's policy) are asked to check again.
func (p *Provider) setPolicy(t TrustPolicy) bool {
	before := p.view()
	p.policy.Store(&t)
	p.tmu.Lock()
	fs := slices.Clone(p.followers)
	p.tmu.Unlock()
	for _, f := range fs {
		f.retrustNow()
	}
	return !before.equal(p.view())
}

// retrustNow asks the watch to load the index again if what the provider
// enforces changed (a tenant's policy a library follows).
func (p *Provider) retrustNow() {
	select {
	case p.retrust <- struct{}{}:
	default:
	}
}

// addFollower registers f to be told of this store's policy changes.
func (p *Provider) addFollower(f *Provider) {
	p.tmu.Lock()
	p.followers = append(p.followers, f)
	p.tmu.Unlock()
}

// removeFollower forgets f (closed).
func (p *Provider) removeFollower(f *Provider) {
	p.tmu.Lock()
	p.followers = slices.DeleteFunc(p.followers, func(x *Provider) bool { return x == f })
	p.tmu.Unlock()
}

// errRetrust ends a watch so that the index is loaded again under a
// changed trust policy: every revision is judged again.
var errRetrust = errors.New("skill store trust policy changed: loading the index again")

// policyFromHistory returns the newest valid policy the index's history
// keeps of TrustKey (a malformed value at a fresh load falls back to it),
// and whether there is one.
func (p *Provider) policyFromHistory(ctx context.Context) (TrustPolicy, bool) {
	hctx, cancel := context.WithTimeout(ctx, stallProbe)
	defer cancel()
	hist, err := p.kv.History(hctx, TrustKey)
	if err != nil {
		return TrustPolicy{}, false
	}
	for i := len(hist) - 1; i >= 0; i-- {
		h := hist[i]
		if h.Operation() != jetstream.KeyValuePut {
			return defaultPolicy(), true
		}
		if t, err := DecodePolicy(h.Value()); err == nil {
			return t, true
		}
	}
	return TrustPolicy{}, false
}

// policyOf returns the policy an entry of TrustKey sets, and the error of
// a value that is not one skillstream writes.
func policyOf(e jetstream.KeyValueEntry) (TrustPolicy, error) {
	if e.Operation() != jetstream.KeyValuePut {
		return defaultPolicy(), nil
	}
	return DecodePolicy(e.Value())
}

// ReadPolicy reads the store's trust policy and its revision (0: the
// store has none, and requires nothing).
func (pb *Publisher) ReadPolicy(ctx context.Context) (TrustPolicy, uint64, error) {
	e, err := pb.kv.Get(ctx, TrustKey)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return defaultPolicy(), 0, nil
	}
	if err != nil {
		return TrustPolicy{}, 0, fmt.Errorf("read %s: %w", TrustKey, err)
	}
	t, err := DecodePolicy(e.Value())
	if err != nil {
		return TrustPolicy{}, e.Revision(), fmt.Errorf("%s (revision %d): %w; write it again with skills trust require", TrustKey, e.Revision(), err)
	}
	return t, e.Revision(), nil
}

// ChangePolicy reads the store's trust policy, applies change to it and
// writes it back, conditional on the revision read (a lost race is an
// error wrapping ErrChanged, the store unchanged). A policy that does not
// decode is replaced when change sets it whole (force).
func (pb *Publisher) ChangePolicy(ctx context.Context, change func(*TrustPolicy) error) (TrustPolicy, uint64, error) {
	t, last, err := pb.ReadPolicy(ctx)
	if err != nil {
		if last == 0 {
			return TrustPolicy{}, 0, err
		}
		t = defaultPolicy() // malformed: written again from scratch
	}
	if err := change(&t); err != nil {
		return TrustPolicy{}, 0, err
	}
	slices.Sort(t.Keys)
	t.Keys = slices.Compact(t.Keys)
	if t.Keys == nil {
		t.Keys = []string{}
	}
	if r := t.Revoked; r != nil {
		r.Keys, r.Digests = sortedUnion(r.Keys), sortedUnion(r.Digests)
		if len(r.Keys) == 0 && len(r.Digests) == 0 {
			t.Revoked = nil
		}
	}
	if err := t.check(); err != nil {
		return TrustPolicy{}, 0, err
	}
	rev, err := pb.kv.Update(ctx, TrustKey, encodeJSON(t), last)
	if casLost(err) {
		return TrustPolicy{}, 0, changedErr("the trust policy", TrustKey)
	}
	if err != nil {
		return TrustPolicy{}, 0, fmt.Errorf("write %s: %w", TrustKey, err)
	}
	return t, rev, nil
}

// ParseRequire checks a requirement given on a command line.
func ParseRequire(s string) (string, error) {
	switch s {
	case RequireOff, RequireWarn, RequireSigned:
		return s, nil
	}
	return "", fmt.Errorf("require %q: want off, warn or signed", s)
}

// CheckKey checks a public key given on a command line.
func CheckKey(k string) error {
	if skillstore.ValidPublicKey(k) {
		return nil
	}
	if strings.HasPrefix(k, "S") {
		return errors.New("that looks like a seed: give the public key (N..., printed by skills keygen), never the seed")
	}
	return fmt.Errorf("%q is not a skill signing public key (N..., printed by skills keygen)", clip(k))
}

// untrustedNote is what the provider knows of a skill whose newest
// revision the policy does not trust: that revision, the requirement it
// was judged under, the trusted revision offered in its place (0: none;
// under RequireWarn the untrusted one itself is offered) and why.
type untrustedNote struct {
	revision uint64
	require  string
	kept     uint64
	err      error
	revoked  bool // err is a revocation: not offered whatever require says
}

// warnTrust reports a revision the policy does not trust (rate limited
// per key, counted as "untrusted").
func (p *Provider) warnTrust(c change) {
	args := []any{"key", c.key, "revision", c.untrRev, "require", c.require, "err", c.trust}
	switch {
	case errors.Is(c.trust, ErrRevoked) && c.kept != 0:
		p.warn(warnRevoked, c.key, "skill revision revoked by the store's trust policy: not offered; its newest revision not revoked stays offered",
			append(args, "kept_revision", c.kept)...)
	case errors.Is(c.trust, ErrRevoked):
		p.warn(warnRevoked, c.key, "skill revision revoked by the store's trust policy: not offered, and no earlier revision to offer: the skill is not offered",
			args...)
	case c.require != RequireSigned:
		p.warn(warnUntrusted, c.key, "skill revision not trusted by the store's trust policy: offered (the policy only warns)", args...)
	case c.kept != 0:
		p.warn(warnUntrusted, c.key, "skill revision not trusted by the store's trust policy: not offered; its newest trusted revision stays offered",
			append(args, "kept_revision", c.kept)...)
	default:
		p.warn(warnUntrusted, c.key, "skill revision not trusted by the store's trust policy: not offered, and no earlier trusted revision: the skill is not offered",
			args...)
	}
}

// Untrusted is one skill whose newest revision the store's trust policy
// does not trust.
type Untrusted struct {
	Key      string // its index key
	Revision uint64 // the store revision not trusted
	Require  string // the requirement in force
	Kept     uint64 // the trusted revision offered instead; 0: none (or, under warn, the untrusted one is)
	Reason   string
	Revoked  bool // the revision's digest or key is revoked: not offered, whatever Require says
}

// Untrusted lists the skills whose newest revision the trust policy does
// not trust, by key.
func (p *Provider) Untrusted() []Untrusted {
	p.mu.Lock()
	out := make([]Untrusted, 0, len(p.ctl.untrusted))
	for k, n := range p.ctl.untrusted {
		out = append(out, Untrusted{Key: k, Revision: n.revision, Require: n.require, Kept: n.kept, Reason: n.err.Error(), Revoked: n.revoked})
	}
	p.mu.Unlock()
	slices.SortFunc(out, func(a, b Untrusted) int { return strings.Compare(a.Key, b.Key) })
	return out
}

// maxTrustDiagnostics bounds the diagnostics of skills not trusted; one
// more counts the others.
const maxTrustDiagnostics = 100

// trustDiagnostics is one diagnostic per skill the policy does not trust
// (for operators: it names the store's bucket and the key), at most
// maxTrustDiagnostics and a count of the others.
func (p *Provider) trustDiagnostics(src string) []providers.Diagnostic {
	var out []providers.Diagnostic
	all := p.Untrusted()
	more := len(all) - maxTrustDiagnostics
	if more > 0 {
		all = all[:maxTrustDiagnostics]
	}
	for _, u := range all {
		what := "offered (the trust policy only warns)"
		enforced := u.Require == RequireSigned || u.Revoked
		switch {
		case enforced && u.Kept != 0:
			what = fmt.Sprintf("not offered; store revision %d stays offered", u.Kept)
		case u.Revoked:
			what = "not offered, and no earlier revision to offer"
		case enforced:
			what = "not offered, and no earlier trusted revision"
		}
		reason := fmt.Sprintf("store revision %d not trusted: %s; %s", u.Revision, u.Reason, what)
		if u.Revoked {
			reason = fmt.Sprintf("store revision %d %s (whatever require says); %s", u.Revision, u.Reason, what)
		}
		out = append(out, providers.Diagnostic{Source: src, Path: p.Store() + " " + u.Key, Reason: reason})
	}
	if more > 0 {
		out = append(out, providers.Diagnostic{Source: src, Path: p.Store(), Reason: fmt.Sprintf("%d more skills not trusted (skills status NAME says why)", more)})
	}
	return out
}

// loadPolicy installs the policy a fresh watch delivered (the store's
// default without one). A value that is not one skillstream writes falls
// back to the newest valid one the history keeps, else the policy in
// force stays; either way it is reported.
func (p *Provider) loadPolicy(ctx context.Context, pl *pendingLoad) {
	t := defaultPolicy()
	for _, d := range pl.entries {
		if d.ctl == nil || d.ctl.kind != "trust" {
			continue
		}
		t = d.ctl.pol
		if d.ctl.valErr != nil {
			prev, ok := p.policyFromHistory(ctx)
			if !ok {
				prev = *p.policy.Load()
			}
			t = prev
			p.warnAt(slog.LevelError, warnMalformed, TrustKey, "skill store trust policy not written by skillstream (malformed): the last valid one stays in force; "+
				"write it again with skills trust", "key", TrustKey, "revision", d.revision, "require", t.Require, "err", d.ctl.valErr)
		}
	}
	p.setPolicy(t)
}

// TrustStatus is what the store's trust policy makes of a skill's newest
// revision (Status.Trust): the requirement in force, the key that signed
// it (empty: unsigned), whether it is trusted and why not, and under
// RequireSigned the revision offered in its place (nil: none).
type TrustStatus struct {
	Require string  `json:"require"`
	Key     string  `json:"key,omitempty"`
	Trusted bool    `json:"trusted"`
	Revoked bool    `json:"revoked,omitempty"` // its digest or key is revoked: not offered, whatever require says
	Reason  string  `json:"reason,omitempty"`
	Offered *RevRef `json:"offered,omitempty"`
}

// trustStatus judges the newest revision of hist (a skill's history in
// scope) under the store's policy; nil when the policy requires nothing
// and the revision is unsigned (nothing to say).
func (pb *Publisher) trustStatus(ctx context.Context, scope skillstore.Scope, name string, hist []Revision) (*TrustStatus, error) {
	pol, _, err := pb.ReadPolicy(ctx)
	if err != nil {
		return nil, err
	}
	cur := hist[len(hist)-1]
	if cur.Removed || cur.Err != nil {
		return nil, nil
	}
	v := trustView{require: RequireWarn, keys: sortedUnion(pol.Keys),
		revKeys: sortedUnion(pol.RevokedKeys()), revDigs: sortedUnion(pol.RevokedDigests())}
	cerr := untrusted(v, scope, name, cur.Record)
	revoked := errors.Is(cerr, ErrRevoked)
	if pol.Require == RequireOff && cur.Record.Signature == nil && !revoked {
		return nil, nil
	}
	ts := &TrustStatus{Require: pol.Require, Trusted: true, Revoked: revoked}
	if s := cur.Record.Signature; s != nil {
		ts.Key = clip(s.Key)
	}
	if cerr != nil {
		ts.Trusted, ts.Reason = false, cerr.Error()
	}
	if (pol.Require != RequireSigned && !revoked) || ts.Trusted {
		return ts, nil
	}
	// What is offered instead: the newest earlier revision not revoked
	// (and, under signed, trusted).
	if pol.Require != RequireSigned {
		v.require = RequireOff
	}
	for i := len(hist) - 2; i >= 0; i-- {
		h := hist[i]
		if h.Removed {
			break
		}
		if h.Err == nil && untrusted(v, scope, name, h.Record) == nil {
			ts.Offered = refOf(h)
			break
		}
	}
	return ts, nil
}

// Revoked implements providers.Revoker: the skills of q's scopes (the
// library's, for a library) not offered because the revision they would
// offer is revoked and no earlier one can be, sorted.
func (p *Provider) Revoked(q catalog.Query) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ctl == nil {
		return nil
	}
	var out []string
	for key, n := range p.ctl.untrusted {
		if !n.revoked || n.kept != 0 {
			continue
		}
		sc, name, err := parseKey(key)
		if err != nil || (sc.ProjectID() != "" && sc.ProjectID() != q.Project) {
			continue
		}
		out = append(out, name)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
