package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/skillstore"
)

// Defaults of the options.
const (
	DefaultRetryInterval = 2 * time.Second
	DefaultMaxPending    = 4096
)

// Client is an agent worker's side of the wire protocol. It is safe for
// concurrent use: many sessions, many requests in flight at once, all
// answered through one inbox subscription.
type Client struct {
	nc       *nats.Conn
	js       jetstream.JetStream
	ownsConn bool
	layout   events.Layout // the session layout (WithLayout)

	prefix         string
	inboxPrefix    string // the connection's inbox prefix this client was asked to use; "" = any
	user, password string // the credentials Connect connects with (WithUserInfo)
	maxPending     int
	enc            events.Encoding
	retry          time.Duration
	maxAttempts    int
	materialize    Materializer
	objects        string                            // the skill store's object store, for the default materializer
	libraryObjects string                            // the shared library's object store (WithLibraryObjects)
	trusted        []string                          // publishers' keys a store skill must be signed by (WithTrustedKeys); nil: any
	minStore       atomic.Pointer[events.StoreToken] // the store every trigger asks for at least (RequireStore); nil: none

	sub  *nats.Subscription
	base string // reply inbox prefix, ending in "."

	mu      sync.Mutex
	waiting map[uint64]chan *nats.Msg
	closed  bool
	done    chan struct{}
	next    atomic.Uint64
	dropped atomic.Uint64 // messages on the inbox not accepted as an answer

	// testTriggerID, when set (tests only), is every trigger's id instead
	// of a random one, so that a test can take an attempt's Msg-Id first.
	testTriggerID string

	// dropAnswer, when set (tests only), is asked about every answer before
	// it is routed; true loses it as a network would.
	dropAnswer func(*nats.Msg) bool
	// ackGate, when set (tests only), holds every publication's
	// acknowledgement until it can receive from it: a late one.
	ackGate chan struct{}
}

// Materializer writes the files of the store skill a tool result carries
// (res.Value.Name, res.Value.Digest) into dir, the result's resource base
// directory on this host, before the result is handed to the model. It must
// be atomic (the directory appears complete or not at all) and idempotent
// (a directory already holding that digest is left as it is).
type Materializer func(ctx context.Context, res events.ToolResult, dir string) error

// Option configures a Client.
type Option func(*Client) error

// WithPrefix sets the subject prefix of the session stream (default "ev").
func WithPrefix(prefix string) Option {
	return func(c *Client) error {
		if err := events.ValidatePrefix(prefix); err != nil {
			return err
		}
		c.prefix = prefix
		return nil
	}
}

// WithLayout sets the session layout of the stream (default
// events.LayoutFlat). In events.LayoutOwner a session id is
// "<owner>.<sid>" (two tokens joined by a dot) in every payload and call
// of the client, and its events go to <prefix>.<owner>.<sid>.<kind>; the
// answers' session ids are checked in the same layout. The processors
// must use the same layout (serve --session-layout).
func WithLayout(l events.Layout) Option {
	return func(c *Client) error {
		if !l.Valid() {
			return fmt.Errorf("client: unknown session layout %v", l)
		}
		c.layout = l
		return nil
	}
}

// WithEncoding chooses the payload encoding of triggers (default
// events.Msgpack). The processor answers in the same encoding.
func WithEncoding(enc events.Encoding) Option {
	return func(c *Client) error {
		if enc != events.Msgpack && enc != events.JSON {
			return fmt.Errorf("client: unknown encoding %v", enc)
		}
		c.enc = enc
		return nil
	}
}

// WithRetryInterval sets how long a request waits for its answer before it
// publishes the trigger again as a new message (default 2s).
func WithRetryInterval(d time.Duration) Option {
	return func(c *Client) error {
		if d <= 0 {
			return fmt.Errorf("client: retry interval %v: want a positive duration", d)
		}
		c.retry = d
		return nil
	}
}

// WithMaxAttempts bounds how many times one request publishes its trigger;
// after the last attempt's retry interval the request fails with
// ErrTimeout. 0 (the default) means: until the context ends.
func WithMaxAttempts(n int) Option {
	return func(c *Client) error {
		if n < 0 {
			return fmt.Errorf("client: max attempts %d: must not be negative", n)
		}
		c.maxAttempts = n
		return nil
	}
}

// WithMaxPending bounds the trigger publications awaiting their JetStream
// acknowledgement (default 4096); more wait for room.
func WithMaxPending(n int) Option {
	return func(c *Client) error {
		if n < 1 {
			return fmt.Errorf("client: max pending %d: want at least 1", n)
		}
		c.maxPending = n
		return nil
	}
}

// WithInboxPrefix makes the client's connection create its inboxes (the
// reply inbox of its requests, JetStream's acknowledgements, the store
// reads of materialisation) under prefix instead of nats.go's "_INBOX", so
// that a NATS account can let this worker subscribe under that prefix
// only. Connect sets it on the connection it opens; New requires a
// connection opened with nats.CustomInboxPrefix(prefix). The prefix is a
// literal subject without wildcards, e.g. "_INBOX.worker-a".
func WithInboxPrefix(prefix string) Option {
	return func(c *Client) error {
		if !literalSubject(prefix) {
			return fmt.Errorf("client: inbox prefix %q: want a literal subject such as _INBOX.worker-a (no wildcards, no empty tokens)", prefix)
		}
		c.inboxPrefix = prefix
		return nil
	}
}

// WithUserInfo makes Connect connect as user with password (a server's
// users, such as a tenant's workers in cmd/skillstream/deploy/tenants.conf);
// New, which is given its connection, ignores it. Such a user may usually
// subscribe only under an inbox prefix of its own: give it with
// WithInboxPrefix ("_INBOX.<user>" in the shipped files).
func WithUserInfo(user, password string) Option {
	return func(c *Client) error {
		if user == "" {
			return errors.New("client: WithUserInfo: empty user")
		}
		c.user, c.password = user, password
		return nil
	}
}

// literalSubject reports whether s is a subject one can publish to, of
// at most 255 bytes (see events.LiteralSubject).
func literalSubject(s string) bool { return s != "" && len(s) <= 255 && events.LiteralSubject(s) }

// WithMaterializer sets the function that materialises store skills' files.
// CallSkill calls it when the call named a ResourceDir and the result is a
// store skill (provider "store" with a digest) whose resource base is a
// directory, before it returns the result. The default fetches the files
// from the skill store's object store on the client's own connection
// (WithSkillObjects names it) with skillstore.Materialize.
func WithMaterializer(m Materializer) Option {
	return func(c *Client) error {
		c.materialize = m
		return nil
	}
}

// WithTrustedKeys makes the client verify a store skill's signature before
// it writes the skill's files: the result must carry a signature
// (SkillValue.Signature) by one of keys (publishers' public keys, "N...",
// as skills keygen prints them) over the skill's scope, name, digest and
// summary digest, else CallSkill returns the result with an error
// matching ErrMaterialize and ErrUntrusted and writes nothing. A key
// that is not a publisher's is refused here. Without it any store skill's
// files are written (their digest is always checked).
func WithTrustedKeys(keys ...string) Option {
	return func(c *Client) error {
		for _, k := range keys {
			if !skillstore.ValidPublicKey(k) {
				return fmt.Errorf("client: trusted key %q is not a skill signing public key (N..., from skills keygen)", clip(k))
			}
		}
		c.trusted = append([]string(nil), keys...)
		return nil
	}
}

// checkTrusted verifies the signature r carries against the trusted keys
// (WithTrustedKeys); nil without trusted keys.
func (c *Client) checkTrusted(r events.ToolResult) error {
	if len(c.trusted) == 0 {
		return nil
	}
	v := r.Value
	sg := v.Signature
	if sg == nil {
		return fmt.Errorf("%w: %w", ErrUntrusted, skillstore.ErrUnsigned)
	}
	scope, err := skillstore.ParseScope(sg.Scope)
	if err != nil {
		return fmt.Errorf("%w: %w: scope %q", ErrUntrusted, skillstore.ErrBadSignature, clip(sg.Scope))
	}
	if !skillstore.ValidDigest(sg.Summary) {
		return fmt.Errorf("%w: %w: summary digest %q", ErrUntrusted, skillstore.ErrBadSignature, clip(sg.Summary))
	}
	s := &skillstore.Signature{Key: sg.Key, Alg: sg.Alg, Sig: sg.Sig}
	if err := skillstore.Trusted(s, scope, v.Name, v.Digest, sg.Summary, c.trusted); err != nil {
		return fmt.Errorf("%w: %w", ErrUntrusted, err)
	}
	return nil
}

// LibraryProvider is the provider name of a shared library's skills in a
// skill call's value, and DefaultLibraryObjects the library's object store
// unless WithLibraryObjects names another.
const (
	LibraryProvider       = "library"
	DefaultLibraryObjects = "LIBRARY"
)

// WithLibraryObjects names the shared library's object store, from which
// the default materializer reads a library skill's files (a multi-tenant
// deployment; default DefaultLibraryObjects).
func WithLibraryObjects(name string) Option {
	return func(c *Client) error {
		if name == "" {
			return errors.New("client: empty library object store name")
		}
		c.libraryObjects = name
		return nil
	}
}

// WithSkillObjects names the skill store's object store the default
// materializer reads (default skillstore.DefaultObjects, "SKILLS", as
// serve's --skill-store-objects).
func WithSkillObjects(name string) Option {
	return func(c *Client) error {
		if name == "" {
			return errors.New("client: empty skill object store name")
		}
		c.objects = name
		return nil
	}
}

// WithMinStoreRevision sets the least skill store revision every pre-step,
// skill call and skill search of the client asks for (see
// RequireStoreRevision).
func WithMinStoreRevision(rev uint64) Option {
	return func(c *Client) error {
		c.RequireStoreRevision(rev)
		return nil
	}
}

// WithStoreToken sets the skill store every pre-step, skill call and skill
// search of the client asks for at least (see RequireStore): token as
// "skills push" prints it, "<epoch>:<revision>" (its --json output's
// "token"), or a revision alone.
func WithStoreToken(token string) Option {
	return func(c *Client) error {
		tok, err := events.ParseStoreToken(token)
		if err != nil {
			return fmt.Errorf("client: %w", err)
		}
		c.RequireStore(tok)
		return nil
	}
}

// RequireStore sets the skill store the client's later pre-steps, skill
// calls and skill searches ask for at least: tok's revision
// (minStoreRevision) of the buckets of tok's epoch (minStoreEpoch), as
// "skills push" printed them. A processor whose view of the store is older
// catches up first; if it cannot within the trigger's deadline, the pre-step
// is answered incomplete and the call or search unavailable (all match
// ErrUnavailable), never decided on the older view. A processor whose
// store's buckets are of another epoch (recreated since the push) answers so
// at once, in the same way: push again and require the new token. Within one
// epoch the floor only rises; a token with an epoch replaces a floor of
// another epoch, or of none (revisions of two epochs do not compare), and a
// token without an epoch raises the revision and keeps the floor's epoch. A
// request's own MinStoreEpoch wins over the floor's; its MinStoreRevision
// may be higher.
func (c *Client) RequireStore(tok events.StoreToken) {
	for {
		cur := c.minStore.Load()
		next := tok
		if cur != nil && (tok.Epoch == "" || tok.Epoch == cur.Epoch) {
			if tok.Revision <= cur.Revision {
				return
			}
			next.Epoch = cur.Epoch
		}
		if c.minStore.CompareAndSwap(cur, &next) {
			return
		}
	}
}

// RequireStoreRevision raises the least skill store revision the client's
// later pre-steps, skill calls and searches ask for (minStoreRevision) to
// rev, of the epoch required already if any: RequireStore with a token without an
// epoch. Prefer RequireStore with the epoch "skills push" prints beside
// the revision: a revision of buckets since recreated is then answered at
// once rather than compared with revisions of the new buckets.
func (c *Client) RequireStoreRevision(rev uint64) {
	c.RequireStore(events.StoreToken{Revision: rev})
}

// StoreFloor is the least skill store the client's triggers ask for (see
// RequireStore); the zero token when none is required.
func (c *Client) StoreFloor() events.StoreToken {
	if cur := c.minStore.Load(); cur != nil {
		return *cur
	}
	return events.StoreToken{}
}

// storeDemand is what a trigger that asks for store epoch and revision rev
// asks for once the client's floor is added: the trigger's own epoch wins;
// within one epoch (or without one) the higher revision.
func (c *Client) storeDemand(epoch string, rev uint64) (string, uint64) {
	floor := c.minStore.Load()
	switch {
	case floor == nil:
		return epoch, rev
	case epoch == "":
		return floor.Epoch, max(rev, floor.Revision)
	case epoch == floor.Epoch || floor.Epoch == "":
		return epoch, max(rev, floor.Revision)
	}
	return epoch, rev
}

// storeMaterializer fetches a store skill's files by digest from the object
// store, with direct gets only (skillstore.Direct: the permissions a worker
// needs are two read-only request subjects), and writes them into dir
// (atomically, read-only, once per digest).
//
// A skill of a multi-tenant deployment's shared library (provider
// "library") is read from the library's object store (WithLibraryObjects,
// default "LIBRARY"), which the tenant's worker account imports beside its
// own.
func (c *Client) storeMaterializer(ctx context.Context, res events.ToolResult, dir string) error {
	name := c.objects
	if name == "" {
		name = skillstore.DefaultObjects
	}
	if res.Value != nil && res.Value.Provider == LibraryProvider {
		name = c.libraryObjects
		if name == "" {
			name = DefaultLibraryObjects
		}
	}
	r, err := skillstore.NewDirect(c.nc, name)
	if err != nil {
		return fmt.Errorf("skill object store %s: %w", name, err)
	}
	return skillstore.MaterializeFrom(ctx, r, res.Value.Digest, dir, skillstore.Limits{})
}

// New returns a client on an open connection. Close does not close nc.
func New(nc *nats.Conn, opts ...Option) (*Client, error) {
	if nc == nil {
		return nil, errors.New("client: no NATS connection")
	}
	c := &Client{
		nc: nc, prefix: events.DefaultPrefix, enc: events.Msgpack, retry: DefaultRetryInterval, maxPending: DefaultMaxPending,
		waiting: map[uint64]chan *nats.Msg{}, done: make(chan struct{}),
	}
	for _, o := range opts {
		if err := o(c); err != nil {
			return nil, err
		}
	}
	if c.inboxPrefix != "" && strings.TrimSuffix(nc.Opts.InboxPrefix, ".") != c.inboxPrefix {
		return nil, fmt.Errorf("client: inbox prefix %q asked for, but the connection's is %q: connect with nats.CustomInboxPrefix(%q)",
			c.inboxPrefix, nc.Opts.InboxPrefix, c.inboxPrefix)
	}
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncMaxPending(c.maxPending))
	if err != nil {
		return nil, fmt.Errorf("client: jetstream: %w", err)
	}
	c.js = js
	if c.materialize == nil {
		c.materialize = c.storeMaterializer
	}
	c.base = nc.NewInbox() + "."
	sub, err := nc.Subscribe(c.base+"*", c.route)
	if err != nil {
		return nil, fmt.Errorf("client: subscribe reply inbox: %w", err)
	}
	// Answers are small and awaited: never drop one for a slow consumer.
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		_ = sub.Unsubscribe()
		return nil, fmt.Errorf("client: reply inbox limits: %w", err)
	}
	c.sub = sub
	return c, nil
}

// Connect connects to the NATS server(s) at url and returns a client on
// that connection; Close closes it. With WithInboxPrefix, the connection
// creates its inboxes under that prefix.
func Connect(url string, opts ...Option) (*Client, error) {
	probe := &Client{}
	for _, o := range opts {
		if err := o(probe); err != nil {
			return nil, err
		}
	}
	nopts := []nats.Option{nats.Name("skillstream worker"), nats.MaxReconnects(-1)}
	if probe.inboxPrefix != "" {
		nopts = append(nopts, nats.CustomInboxPrefix(probe.inboxPrefix))
	}
	if probe.user != "" {
		nopts = append(nopts, nats.UserInfo(probe.user, probe.password))
	}
	nc, err := nats.Connect(url, nopts...)
	if err != nil {
		return nil, fmt.Errorf("client: connect to %s: %w", url, err)
	}
	c, err := New(nc, opts...)
	if err != nil {
		nc.Close()
		return nil, err
	}
	c.ownsConn = true
	return c, nil
}

// DroppedAnswers counts the messages that arrived on the client's reply
// inbox and were not accepted as an answer: undecodable, for another
// session, step or call, or naming a trigger sequence that none of the
// request's publications got (a forged or misdirected answer), or arriving
// when nobody waited. With a permission set that lets only processors
// publish to this worker's inboxes it stays 0 but for late duplicates.
func (c *Client) DroppedAnswers() uint64 { return c.dropped.Load() }

// Prefix returns the subject prefix of the session stream.
func (c *Client) Prefix() string { return c.prefix }

// Layout returns the session layout the client uses.
func (c *Client) Layout() events.Layout { return c.layout }

// Conn returns the client's NATS connection.
func (c *Client) Conn() *nats.Conn { return c.nc }

// Close ends the client: requests waiting for an answer return ErrClosed.
// The connection is closed only when Connect opened it.
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	close(c.done)
	c.mu.Unlock()
	err := c.sub.Unsubscribe()
	if c.ownsConn {
		c.nc.Close()
		err = nil
	}
	return err
}

// CallOption adjusts one request.
type CallOption func(*callOpts)

type callOpts struct {
	header   nats.Header
	attempts *int
}

// Header adds a header to every publication of the request's trigger (for
// example a tracing header).
func Header(key, value string) CallOption {
	return func(o *callOpts) {
		if o.header == nil {
			o.header = nats.Header{}
		}
		o.header.Add(key, value)
	}
}

// Attempts stores in *n how many times the request published its trigger.
func Attempts(n *int) CallOption {
	return func(o *callOpts) { o.attempts = n }
}

// PreStep appends ps to its session's log (fields v and deadlineMs are
// filled in when zero: the deadline from ctx) and returns the processor's
// Decision. ps.UserText carries the user's new messages, scanned for
// /<name> when the processor has user invocation on; the skills so invoked
// are in d.Invocations (see Invocations), store skills among them
// materialised under ps.ResourceDir as CallSkill does. A decision that is not a normal outcome comes back together
// with an error: rejected matches ErrRejected (and is a *RejectedError),
// expired matches ErrExpired, incomplete with an "unavailable" error
// matches ErrUnavailable, an appended catalog too large for the answer
// matches ErrTooLarge. appended, unchanged, empty and a plain incomplete
// return a nil error.
func (c *Client) PreStep(ctx context.Context, ps events.PreStep, opts ...CallOption) (events.Decision, error) {
	if ps.V == 0 {
		ps.V = events.Version
	}
	ps.DeadlineMs = deadlineOf(ctx, ps.DeadlineMs)
	ps.MinStoreEpoch, ps.MinStoreRevision = c.storeDemand(ps.MinStoreEpoch, ps.MinStoreRevision)
	if err := ps.ValidateIn(c.layout); err != nil {
		return events.Decision{}, fmt.Errorf("client: pre-step: %w", err)
	}
	d, err := request(ctx, c, events.KindPreStep, ps.Session, ps.Step, ps, opts, c.decodeDecision,
		func(d events.Decision) answerID {
			return answerID{session: d.Session, id: d.Step, seq: d.TriggerSeq, unread: d.Outcome == events.OutcomeRejected}
		})
	if err != nil {
		return events.Decision{}, err
	}
	if err := c.materializeInvocations(ctx, ps, d); err != nil { // invoke.go
		return d, err
	}
	return d, decisionError(d)
}

// CallSkill appends sc to its session's log (v and deadlineMs filled in as
// for PreStep) and returns the processor's ToolResult. Errors the model
// should see (invalid_name, unknown, not_model_invocable, provider,
// too_large) come
// back as a result with IsError and a nil error: hand r.Text to the model.
// A result answered without being appended comes back with an error too:
// bad_request matches ErrRejected, expired ErrExpired, unavailable
// ErrUnavailable. For a store skill with a resource directory, the
// Materializer runs first; its failure matches ErrMaterialize.
func (c *Client) CallSkill(ctx context.Context, sc events.SkillCall, opts ...CallOption) (events.ToolResult, error) {
	if sc.V == 0 {
		sc.V = events.Version
	}
	sc.DeadlineMs = deadlineOf(ctx, sc.DeadlineMs)
	sc.MinStoreEpoch, sc.MinStoreRevision = c.storeDemand(sc.MinStoreEpoch, sc.MinStoreRevision)
	if err := sc.ValidateIn(c.layout); err != nil {
		return events.ToolResult{}, fmt.Errorf("client: skill call: %w", err)
	}
	r, err := request(ctx, c, events.KindSkillCall, sc.Session, sc.Call, sc, opts, c.decodeToolResult, resultID)
	if err != nil {
		return events.ToolResult{}, err
	}
	if err := resultError(r); err != nil {
		return r, err
	}
	if err := c.materializeResult(ctx, sc, r); err != nil {
		return r, err
	}
	return r, nil
}

// decodeDecision and decodeToolResult decode answers with their session
// ids checked in the client's layout.
func (c *Client) decodeDecision(enc events.Encoding, b []byte) (events.Decision, error) {
	return events.DecodeDecisionIn(c.layout, enc, b)
}

func (c *Client) decodeToolResult(enc events.Encoding, b []byte) (events.ToolResult, error) {
	return events.DecodeToolResultIn(c.layout, enc, b)
}

// resultID identifies a ToolResult answering a skill call or search.
func resultID(r events.ToolResult) answerID {
	return answerID{session: r.Session, id: r.Call, seq: r.TriggerSeq,
		unread: r.IsError && r.Error != nil && r.Error.Code == events.CodeBadRequest}
}

// SearchSkills appends ss, a call of the skill_search tool, to its
// session's log (v and deadlineMs filled in as for PreStep, the store
// floor added as for CallSkill) and returns the processor's ToolResult,
// sent, retried and verified as CallSkill's is: a retry of the same call
// id is answered with the result already appended. Put ss.Args as the
// model gave them (its query string, its limit and offset numbers, nil
// for those it left out): the tool judges them, and invalid ones (a
// missing or empty query, a limit of 99) are answered with a result the
// model should see, IsError set, Text "Error: invalid search arguments:
// <what is wrong>", and a nil error (see IsSearchArgsError). So are a
// provider failure and no match at all (r.Text says there is none). A
// found page's typed value is r.Search (query, offset, total, results).
// Errors are CallSkill's: bad_request for a malformed search, or one sent
// to a processor that does not serve search, matches ErrRejected; expired
// ErrExpired; unavailable ErrUnavailable.
func (c *Client) SearchSkills(ctx context.Context, ss events.SkillSearch, opts ...CallOption) (events.ToolResult, error) {
	if ss.V == 0 {
		ss.V = events.Version
	}
	ss.DeadlineMs = deadlineOf(ctx, ss.DeadlineMs)
	ss.MinStoreEpoch, ss.MinStoreRevision = c.storeDemand(ss.MinStoreEpoch, ss.MinStoreRevision)
	if err := ss.ValidateIn(c.layout); err != nil {
		return events.ToolResult{}, fmt.Errorf("client: skill search: %w", err)
	}
	r, err := request(ctx, c, events.KindSkillSearch, ss.Session, ss.Call, ss, opts, c.decodeToolResult, resultID)
	if err != nil {
		return events.ToolResult{}, err
	}
	if IsSearchArgsError(r) {
		return r, nil
	}
	return r, toolResultError("skill search", r)
}

// searchArgsPrefix begins the message of a search's argument error, as
// the protocol writes it.
const searchArgsPrefix = "invalid search arguments: "

// IsSearchArgsError reports whether r answers a skill search whose
// arguments the tool refused (code bad_request, message "invalid search
// arguments: <what is wrong>"): a result for the model, appended to the
// session like any other, unlike the bad_request of a malformed trigger.
func IsSearchArgsError(r events.ToolResult) bool {
	return r.IsError && r.Error != nil && r.Error.Code == events.CodeBadRequest &&
		strings.HasPrefix(r.Error.Message, searchArgsPrefix)
}

// IsStoreSkill reports whether r is a store skill (of the skill store, or
// of a multi-tenant deployment's shared library) whose files belong in a
// resource directory on the worker's host.
func IsStoreSkill(r events.ToolResult) bool {
	v := r.Value
	return !r.IsError && v != nil && (v.Provider == StoreProvider || v.Provider == LibraryProvider) && v.Digest != "" &&
		v.ResourceBase != nil && v.ResourceBase.Kind == "directory" && v.ResourceBase.Path != ""
}

// StoreProvider is the provider name of skills served by the skill store.
const StoreProvider = "store"

// materializeResult writes a store skill's files where this client, not
// the answer, says they go: <the call's resourceDir>/<name>/<first 16 hex
// of the digest>, with the name one the store accepts (one path element)
// and the digest 64 lowercase hex digits. An answer naming another path is refused: it did
// not come from a processor serving this call.
func (c *Client) materializeResult(ctx context.Context, sc events.SkillCall, r events.ToolResult) error {
	if sc.ResourceDir == "" || !IsStoreSkill(r) {
		return nil
	}
	name, digest := r.Value.Name, r.Value.Digest
	if !skillstore.ValidName(name) {
		return fmt.Errorf("client: skill %q: %w: not a valid skill name", clip(name), ErrMaterialize)
	}
	if !skillstore.ValidDigest(digest) {
		return fmt.Errorf("client: skill %s: %w: digest %q is not 64 lowercase hex digits", name, ErrMaterialize, clip(digest))
	}
	dir := skillstore.ResourcePath(sc.ResourceDir, name, digest)
	if got := r.Value.ResourceBase.Path; got != dir {
		return fmt.Errorf("client: skill %s: %w: the answer names resource directory %q, not %q", name, ErrMaterialize, clip(got), dir)
	}
	if err := c.checkTrusted(r); err != nil {
		return fmt.Errorf("client: skill %q: %w: %w", name, ErrMaterialize, err)
	}
	if err := c.materialize(ctx, r, dir); err != nil {
		return fmt.Errorf("client: skill %q into %s: %w: %w", name, dir, ErrMaterialize, err)
	}
	return nil
}

// clip shortens a string of an answer for an error message.
func clip(s string) string {
	if len(s) <= 100 {
		return s
	}
	return s[:100] + "…(" + strconv.Itoa(len(s)) + " bytes)"
}

// Compact appends a context.compact event to its session's log (v filled
// in when zero) and returns its stream sequence. It has no answer: the
// JetStream acknowledgement is the confirmation.
func (c *Client) Compact(ctx context.Context, cp events.Compaction, opts ...CallOption) (uint64, error) {
	if cp.V == 0 {
		cp.V = events.Version
	}
	if err := cp.ValidateIn(c.layout); err != nil {
		return 0, fmt.Errorf("client: compaction: %w", err)
	}
	return c.Append(ctx, cp.Session, events.KindCompaction, cp, opts...)
}

// Append appends v, encoded in the client's encoding, as an event of kind
// to session sid's log and returns its stream sequence. Use it for the
// session's other events (messages, other tools' calls and results): the
// processor ignores kinds it does not know. Appending a trigger kind this
// way gets no answer.
func (c *Client) Append(ctx context.Context, sid string, kind events.Kind, v any, opts ...CallOption) (uint64, error) {
	if err := events.CheckSessionIn(c.layout, sid); err != nil {
		return 0, fmt.Errorf("client: %w", err)
	}
	if !kind.Valid() {
		return 0, fmt.Errorf("client: %w: kind %q", events.ErrBadSubject, kind)
	}
	if c.isClosed() {
		return 0, ErrClosed
	}
	var o callOpts
	for _, f := range opts {
		f(&o)
	}
	m, err := c.message(kind, sid, v, o.header)
	if err != nil {
		return 0, err
	}
	ack, err := c.js.PublishMsg(ctx, m)
	if err != nil {
		return 0, fmt.Errorf("client: append %s: %w", m.Subject, err)
	}
	return ack.Sequence, nil
}

// ToolDefinition asks a processor for the skill tool's definition (name,
// description, JSON Schema of its parameters), to register with the model.
func (c *Client) ToolDefinition(ctx context.Context) (events.ToolDefinition, error) {
	m := nats.NewMsg(events.ToolDefinitionSubject)
	m.Header.Set(events.HeaderContentType, c.enc.ContentType())
	r, err := c.nc.RequestMsgWithContext(ctx, m)
	if err != nil {
		return events.ToolDefinition{}, fmt.Errorf("client: tool definition: %w", err)
	}
	enc, err := events.EncodingOf(r.Header.Get(events.HeaderContentType))
	if err != nil {
		enc = events.JSON // a request without Content-Type is answered in JSON
	}
	d, err := events.DecodeToolDefinition(enc, r.Data)
	if err != nil {
		return d, fmt.Errorf("client: tool definition: %w", err)
	}
	return d, nil
}

// ToolDefinitions asks a processor for every tool it serves, in the order
// to register them with the model: the skill tool, and the skill_search
// tool when the processor serves search.
func (c *Client) ToolDefinitions(ctx context.Context) ([]events.ToolDefinition, error) {
	m := nats.NewMsg(events.ToolDefinitionsSubject)
	m.Header.Set(events.HeaderContentType, c.enc.ContentType())
	r, err := c.nc.RequestMsgWithContext(ctx, m)
	if err != nil {
		return nil, fmt.Errorf("client: tool definitions: %w", err)
	}
	enc, err := events.EncodingOf(r.Header.Get(events.HeaderContentType))
	if err != nil {
		enc = events.JSON // a request without Content-Type is answered in JSON
	}
	defs, err := events.DecodeToolDefinitions(enc, r.Data)
	if err != nil {
		return nil, fmt.Errorf("client: tool definitions: %w", err)
	}
	return defs, nil
}

func (c *Client) isClosed() bool {
	select {
	case <-c.done:
		return true
	default:
		return false
	}
}

// deadlineOf returns the trigger's deadline: the one already set, else the
// context's, in unix milliseconds (0 = none).
func deadlineOf(ctx context.Context, set int64) int64 {
	if set != 0 {
		return set
	}
	if d, ok := ctx.Deadline(); ok {
		return d.UnixMilli()
	}
	return 0
}

// message encodes v as a trigger of kind on session sid.
func (c *Client) message(kind events.Kind, sid string, v any, extra nats.Header) (*nats.Msg, error) {
	data, err := events.Encode(c.enc, v)
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	m := &nats.Msg{Subject: events.Subject(c.prefix, sid, kind), Header: make(nats.Header, len(extra)+3), Data: data}
	for k, vs := range extra {
		m.Header[k] = vs
	}
	m.Header.Set(events.HeaderContentType, c.enc.ContentType())
	return m, nil
}

// answerID is what identifies an answer: the session and step or call it
// names and the stream sequence of the trigger it answers. unread marks a
// refusal of a trigger the processor could not read (a rejected decision,
// a bad_request result), which may lack session and id.
type answerID struct {
	session, id string
	seq         uint64
	unread      bool
}

// maxHeld bounds the answers a request keeps while it waits for the
// acknowledgement that would tell whether they are its own.
const maxHeld = 8

// ack is the outcome of one publication of a request's trigger.
type ack struct {
	seq uint64
	err error
}

// request publishes a trigger and waits for its answer. Every attempt
// publishes a new message with the same Reply-Inbox: an answer to any
// attempt completes the request.
//
// Each attempt has its own Nats-Msg-Id, "<trigger id>-<attempt>", so that
// the stream's duplicate window does not swallow a retry; the trigger id
// is 128 random bits drawn once per request (triggerID), the same on its
// retries, and holds nothing else: JetStream quotes the stream's last
// Msg-Id to any publisher whose Nats-Expected-Last-Msg-Id does not match,
// so a Msg-Id must tell no session or step. Exactly once does not rest on
// these ids: the processor takes every attempt of a step or call as the
// same trigger (same session and step or call id in the payload) and
// answers with the output already appended, whichever attempt it reads.
// The ids being unpredictable, no other worker can take one first; if one
// is taken all the same (a duplicate acknowledgement), the next attempt is
// sent at once.
//
// An answer is accepted only when it decodes, names the request's session
// and step or call, and answers a trigger sequence that one of the
// request's publications was acknowledged with: only the processor that
// took one of them knows that sequence. An answer may arrive before its
// acknowledgement, so one that matches but names a sequence not (yet)
// acknowledged is held until the acknowledgements tell. Everything else on
// the inbox is dropped and counted (DroppedAnswers).
func request[T any](ctx context.Context, c *Client, kind events.Kind, sid, id string, v any, opts []CallOption,
	decode func(events.Encoding, []byte) (T, error), ident func(T) answerID) (T, error) {
	var zero T
	var o callOpts
	for _, f := range opts {
		f(&o)
	}
	m, err := c.message(kind, sid, v, o.header)
	if err != nil {
		return zero, err
	}
	token := c.next.Add(1)
	ch := make(chan *nats.Msg, maxHeld)
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return zero, ErrClosed
	}
	c.waiting[token] = ch
	c.mu.Unlock()
	defer c.forget(token)
	m.Header.Set(events.HeaderReplyInbox, c.base+strconv.FormatUint(token, 10))
	msgID := c.triggerID() + "-"

	// Each publication's acknowledgement is forwarded by a goroutine of
	// its own, which ends when the request does.
	acks := make(chan ack)
	stop := make(chan struct{})
	var wg sync.WaitGroup
	defer func() {
		close(stop)
		wg.Wait()
	}()
	acked := map[uint64]bool{}
	type heldAnswer struct {
		v   T
		seq uint64
	}
	var held []heldAnswer
	defer func() { c.dropped.Add(uint64(len(held))) }()

	timer := time.NewTimer(c.retry)
	defer timer.Stop()
	for attempt := 1; ; attempt++ {
		if o.attempts != nil {
			*o.attempts = attempt
		}
		if attempt > 1 {
			// A fresh message: the previous one's headers may still be read
			// by the publisher.
			m = &nats.Msg{Subject: m.Subject, Header: cloneHeader(m.Header), Data: m.Data}
		}
		m.Header.Set(events.HeaderMsgID, msgID+strconv.Itoa(attempt))
		fut, err := c.js.PublishMsgAsync(m)
		if err != nil {
			return zero, fmt.Errorf("client: append %s: %w", m.Subject, err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var a ack
			select {
			case pa := <-fut.Ok():
				if pa.Duplicate {
					// Not this publication: the Msg-Id was already taken
					// (it cannot be an earlier attempt's, each has its own).
					a.err = errMsgIDTaken
					break
				}
				a.seq = pa.Sequence
			case a.err = <-fut.Err():
			case <-stop:
				return
			}
			if c.ackGate != nil {
				select {
				case <-c.ackGate:
				case <-stop:
					return
				}
			}
			select {
			case acks <- a:
			case <-stop:
			}
		}()
		for waiting := true; waiting; {
			select {
			case r := <-ch:
				enc, err := events.EncodingOf(r.Header.Get(events.HeaderContentType))
				if err != nil {
					c.dropped.Add(1)
					continue
				}
				a, err := decode(enc, r.Data)
				if err != nil {
					c.dropped.Add(1)
					continue
				}
				got := ident(a)
				if !(got.session == sid && got.id == id) && !(got.unread && got.session == "" && got.id == "") {
					c.dropped.Add(1)
					continue
				}
				if acked[got.seq] {
					return a, nil
				}
				if len(held) == maxHeld {
					c.dropped.Add(1)
					continue
				}
				held = append(held, heldAnswer{v: a, seq: got.seq})
			case a := <-acks:
				if a.err != nil {
					if errors.Is(a.err, errMsgIDTaken) {
						timer.Reset(0) // publish again now, under the next attempt's id
						continue
					}
					if isTransient(a.err) {
						continue // the retry interval decides
					}
					return zero, fmt.Errorf("client: append %s: %w", m.Subject, a.err)
				}
				acked[a.seq] = true
				for i, h := range held {
					if h.seq == a.seq {
						held = append(held[:i], held[i+1:]...)
						return h.v, nil
					}
				}
			case <-timer.C:
				waiting = false
			case <-ctx.Done():
				return zero, fmt.Errorf("client: %s %s/%s: %w after %d %s: %w", kind, sid, id, ErrTimeout,
					attempt, plural(attempt, "attempt", "attempts"), ctx.Err())
			case <-c.done:
				return zero, ErrClosed
			}
		}
		if c.maxAttempts > 0 && attempt >= c.maxAttempts {
			return zero, fmt.Errorf("client: %s %s/%s: %w after %d %s of %v", kind, sid, id, ErrTimeout,
				attempt, plural(attempt, "attempt", "attempts"), c.retry)
		}
		timer.Reset(c.retry)
	}
}

// triggerID is a new trigger's id: 128 random bits in hex, unless a test
// fixes it (testTriggerID).
func (c *Client) triggerID() string {
	if c.testTriggerID != "" {
		return c.testTriggerID
	}
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// errMsgIDTaken reports a publication the stream took for a duplicate of
// another message: the request publishes again under a new Msg-Id.
var errMsgIDTaken = errors.New("Msg-Id already used in the stream")

// isTransient reports whether a failed publication may succeed when tried
// again later (no stream leader for a moment, a reconnect, an ack timeout).
func isTransient(err error) bool {
	return errors.Is(err, nats.ErrTimeout) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, jetstream.ErrNoStreamResponse) || errors.Is(err, nats.ErrNoResponders) ||
		errors.Is(err, jetstream.ErrAsyncPublishTimeout) || errors.Is(err, nats.ErrConnectionReconnecting) ||
		errors.Is(err, nats.ErrDisconnected)
}

func cloneHeader(h nats.Header) nats.Header {
	out := make(nats.Header, len(h))
	for k, v := range h {
		out[k] = v
	}
	return out
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// route hands a message on the inbox to the request waiting on its token,
// which decides whether it is the answer. Messages nobody waits for (a
// request already answered or given up), and messages beyond what a
// request holds unread, are dropped and counted.
func (c *Client) route(m *nats.Msg) {
	if c.dropAnswer != nil && c.dropAnswer(m) {
		return
	}
	token, err := strconv.ParseUint(strings.TrimPrefix(m.Subject, c.base), 10, 64)
	if err != nil {
		c.dropped.Add(1)
		return
	}
	c.mu.Lock()
	ch, ok := c.waiting[token]
	c.mu.Unlock()
	if !ok {
		c.dropped.Add(1)
		return
	}
	select {
	case ch <- m:
	default:
		c.dropped.Add(1)
	}
}

func (c *Client) forget(token uint64) {
	c.mu.Lock()
	delete(c.waiting, token)
	c.mu.Unlock()
}

// SkillTool is the entry of a tool view that makes a processor with tool
// owner id owner see its skill tool (a processor's default owner id is
// "skillstream"). Put it in PreStep.Tools while the model can call the tool.
func SkillTool(owner string) events.Tool {
	return events.Tool{Name: "skill", Owner: owner}
}

// SkillSearchTool is the entry of a tool view that makes a processor with
// tool owner id owner see its skill_search tool. A processor serving
// search offers it to a session whose view holds both SkillTool(owner) and
// SkillSearchTool(owner): its catalog may then list fewer skills and say
// that the rest can be found with skill_search.
func SkillSearchTool(owner string) events.Tool {
	return events.Tool{Name: "skill_search", Owner: owner}
}

// CatalogKeep is what a compaction keeps (Compaction.Keep) to keep the
// catalog the model sees after decision d: every record of its list when
// that list is made of several (Decision.CatalogSeqs: a full catalog and
// the change lists after it), else the one catalog (Decision.CatalogSeq);
// nil when none is visible. Keeping fewer makes the next pre-step send the
// whole list again.
func CatalogKeep(d events.Decision) []uint64 {
	switch {
	case len(d.CatalogSeqs) > 0:
		return slices.Clone(d.CatalogSeqs)
	case d.CatalogSeq != 0:
		return []uint64{d.CatalogSeq}
	}
	return nil
}
