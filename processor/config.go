package processor

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/history"
)

// Skills is what the processor needs from the skill registry; a
// *providers.Registry satisfies it. It is history.Skills: replay decides
// against the same interface.
type Skills = history.Skills

// Preparer is optionally implemented by a Skills (a *providers.Registry
// does): see history.Preparer.
type Preparer = history.Preparer

// Defaults of Config.
const (
	DefaultStream          = "SESSIONS"
	DefaultConsumer        = "skillstream"
	DefaultToolOwner       = "skillstream"
	DefaultDuplicateWindow = 2 * time.Minute
	DefaultWorkers         = 256
	DefaultAckWait         = 30 * time.Second
	DefaultMaxDeliver      = 5
	DefaultNakDelay        = time.Second
	DefaultAppendRetries   = 8
	DefaultRequestTimeout  = 5 * time.Second
	DefaultInflightBytes   = 16 << 20
	DefaultCatchUpWait     = 2 * time.Second
	DefaultViewTimeout     = 500 * time.Millisecond
	DefaultPullStallAfter  = 5 * time.Second
)

// Defaults of the output budget per session (Config.CatalogResends,
// Config.CatalogBytes, Config.InvocationBytes; see outbudget.go).
//
// An honest session re-sends its catalog only after a compaction that did
// not keep it (the clients keep it), and compacts when its context is
// full: minutes apart at the busiest. Six a minute (one every ten seconds
// once six are spent) is many times that, while a compact-and-step loop
// is held to six catalogs a minute instead of one per step.
//
// Every catalog after a session's first is a change of its list (or a
// re-send): the skills changed, the tool was shown or hidden, the working
// directory moved. A catalog under the default size limit is at most about
// 100 KB; 4 MiB a minute is forty of those, where an honest session sees a
// change of its skills now and then.
//
// A user invokes a skill by typing /name, a few times a minute at most;
// an invocation record is about the skill's instructions (256 KiB at most
// under the default instruction size limit). 4 MiB a minute is sixteen of
// the largest, or hundreds of usual ones.
const (
	DefaultCatalogResends  = 6
	DefaultCatalogBytes    = 4 << 20
	DefaultInvocationBytes = 4 << 20
)

// Defaults of the stream's limits (Config.MaxAge, MaxBytes, MaxMsgSize)
// and of the trigger bound (Config.MaxTriggerBytes).
//
// Sessions are read by their newest events: a month of them is more than
// any agent session lasts, and keeps a month of logs for export, replay
// and usage. 10 GiB holds some millions of pre-steps with their catalogs
// and bounds what one worker can make the server store (a hostile worker
// grew an unbounded stream by 1.6 GB in minutes); oldest messages make
// room for new ones. 1 MiB is the largest payload the processor decodes
// or writes, and the NATS server's default maximum payload; it also bounds
// what the triggers pulled ahead of the workers hold. A trigger needs far
// less than any of that (see DefaultMaxTriggerBytes).
const (
	DefaultMaxAge     = 30 * 24 * time.Hour
	DefaultMaxBytes   = 10 << 30
	DefaultMaxMsgSize = events.MaxPayloadSize
	// DefaultMaxTriggerBytes bounds a trigger's payload. A pre-step of 300
	// tools whose names and owners take 60 bytes, a cwd, a resourceDir and
	// a user's message of 20 KB is about 45 KB; skill calls are under 6 KB
	// (every field at its own bound). Decoding and checking a payload
	// costs CPU in proportion to its bytes, so a trigger over this is
	// refused before it is decoded.
	DefaultMaxTriggerBytes = 64 << 10
)

// NoLimit, as Config.MaxAge, MaxBytes or MaxMsgSize, asks for a stream
// without that limit.
const NoLimit = -1

// MinTriggerBytes is the smallest Config.MaxTriggerBytes: less would
// refuse honest triggers (a cwd alone may take 4 KiB) and is most likely a
// unit mistaken.
const MinTriggerBytes = 1 << 10

// MinDuplicateWindow is the shortest duplicate window the protocol allows:
// output Msg-Ids must outlive a worker's retry.
const MinDuplicateWindow = 2 * time.Minute

// ErrInvalidConfig is wrapped by every Config.Validate error.
var ErrInvalidConfig = errors.New("invalid processor config")

// Config configures a Processor. The zero value of every field means its
// default; call WithDefaults to see them.
type Config struct {
	// Stream is the JetStream stream holding every session (default SESSIONS).
	Stream string
	// Prefix is the first subject token of session events (default "ev").
	Prefix string
	// Layout is the session subject layout (default events.LayoutFlat):
	// in events.LayoutOwner a session id is "<owner>.<sid>", its events
	// live on <prefix>.<owner>.<sid>.<kind> and the consumer is filtered
	// to <prefix>.*.*.<trigger kind>. Every member of the group must use
	// the same layout.
	Layout events.Layout
	// Consumer is the durable pull consumer shared by every processor
	// instance (default "skillstream").
	Consumer string
	// ToolOwner is this processor's tool owner id: the owner of the skill
	// tool in agents' tool views and the producer of its catalogs.
	ToolOwner string
	// Catalog holds the rendering options (zero value: catalog defaults).
	Catalog catalog.Options
	// Tenant names the tenant this processor serves ("" for a serve
	// without tenants). With the session id it places each session in or
	// out of every release's canary (history.InCohort), so it must be the
	// same on every member serving the tenant.
	Tenant string
	// Instance names this member of the consumer group in the catalogs it
	// appends (source.view.instance) and on the subject where it tells
	// other members which skills it sees (events.ViewSubject). One NATS
	// subject token (events.ValidInstance), unique in the group; New
	// derives one from the host name and a random suffix when empty.
	Instance string
	// CatchUpWait bounds how long a pre-step waits for this member's skill
	// store to apply the revision a session's visible catalog reflects,
	// within the trigger's deadline (default 2s). Past it, the pre-step is
	// answered "behind" without appending.
	CatchUpWait time.Duration
	// ViewTimeout bounds the request asking another member which skills it
	// sees, within the trigger's deadline (default 500ms). A member that
	// does not answer in time counts as gone.
	ViewTimeout time.Duration

	// Replicas of the stream when it is created (default 1).
	Replicas int
	// MaxAge, MaxBytes and MaxMsgSize bound the stream: how long it keeps
	// a message, how many bytes it holds (the oldest messages are
	// discarded to make room for new ones, whatever session they belong
	// to) and the largest message it takes, headers included. Zero means
	// the default (DefaultMaxAge, DefaultMaxBytes, DefaultMaxMsgSize) on
	// a stream the processor creates, and leaves an existing stream's
	// limit as it is; NoLimit means none. Any other value is applied to
	// an existing stream too, when it differs: set one to change a stream
	// created before, or by someone else.
	MaxAge     time.Duration
	MaxBytes   int64
	MaxMsgSize int32
	// DuplicateWindow of the stream, at least two minutes (default).
	DuplicateWindow time.Duration

	// Workers bounds the triggers handled at once by this instance (and
	// the messages pulled ahead of them). Handling a trigger mostly waits
	// on NATS round trips, so a closed-loop load of many sessions needs
	// many (default 256: in bench, 50 skills, 1,000 sessions, 32 workers
	// gave 6,750 pre-steps/s, 256 gave 8,400/s). Goroutines are cheap,
	// but each trigger in flight holds its session's newest catalog and,
	// when it appends, the encoded new one: memory grows with the triggers
	// in flight times the catalog's size (bench's processor peaked at 36
	// MiB with 32 and 72 MiB with 256 workers for 50 skills, 121 and 378
	// MiB for 1,000 skills), which InflightBytes bounds.
	Workers int
	// MaxTriggerRate bounds the triggers this instance starts per second
	// (0, the default: no bound). Serving several tenants, each tenant's
	// processor has its own: a tenant flooding triggers is held to it, its
	// excess waiting in its own stream, and cannot take the CPU the other
	// tenants need.
	MaxTriggerRate float64
	// InflightBytes bounds the memory the pre-steps in flight hold, as
	// estimated from the size of their catalogs (default 16 MiB). With
	// small catalogs Workers is the bound (50 skills: about 40 KiB a
	// pre-step); with large ones this is: at 1,000 skills a pre-step is
	// counted as about 0.6 MiB, so about 27 run at once, which is all two
	// cores keep busy with (bench: 1,100-1,160 pre-steps/s and a peak RSS
	// of 138-172 MiB, against 540-1,010/s and 387-746 MiB unbounded at 256
	// workers). A pre-step larger than the whole bound runs alone.
	InflightBytes int64
	// AckWait is how long the server waits for an ack before redelivering.
	// Slow work sends progress heartbeats every AckWait/3.
	AckWait time.Duration
	// MaxDeliver is how many times a trigger is delivered at most; a trigger
	// that still fails transiently at its last delivery is dead-lettered.
	MaxDeliver int
	// NakDelay is the first redelivery delay after a transient failure; it
	// doubles with every delivery, capped at AckWait.
	NakDelay time.Duration
	// AppendRetries bounds re-read and re-decide rounds after optimistic
	// concurrency conflicts on one delivery.
	AppendRetries int
	// RequestTimeout bounds each read of and append to the stream.
	RequestTimeout time.Duration
	// PullStallAfter is how long the pull loop goes on with pull requests
	// that fail or that the server leaves unanswered (no trigger, no
	// heartbeat, no end) before it looks the consumer up again, creating
	// it again when it is gone and provisioning is on (default 5s, at
	// least 1s). See pull in consume.go.
	PullStallAfter time.Duration

	// MaxTriggerBytes bounds the payload of a trigger the processor
	// handles (default DefaultMaxTriggerBytes, at least MinTriggerBytes,
	// at most events.MaxPayloadSize). A larger trigger is rejected (reason
	// too_large) on its length alone, before anything decodes it, and
	// nothing is appended for it.
	MaxTriggerBytes int

	// ReplyPrefixes are the subjects answers may be published under: a
	// trigger's Reply-Inbox must lie below one of them (default _INBOX,
	// nats.go's inboxes; a trailing dot is optional). The session stream's
	// subjects, subjects starting with '$' and the service's own subjects
	// are refused whatever the prefixes say. A trigger with any other
	// Reply-Inbox is rejected (reason inbox) and answered nowhere.
	ReplyPrefixes []string

	// AnyOwnerInbox, in the owner layout, lets a trigger's Reply-Inbox be
	// anywhere under a reply prefix. Off (the default), the owner layout
	// answers a trigger of session "<owner>.<sid>" only on an inbox under
	// <reply prefix>.<owner>. (for example _INBOX.a1.>), the inboxes the
	// owner's worker subscribes to in a deployment that binds owners to
	// workers: a worker then cannot have the processor answer into
	// another worker's inbox. Other inboxes are rejected (reason inbox) and
	// answered nowhere. No effect in the flat layout.
	AnyOwnerInbox bool

	// InboxPrefix is the inbox prefix of the processor's NATS connection
	// (nats.CustomInboxPrefix), under which its own inboxes lie: the
	// consumer's deliveries, its reads of the stream, its requests. Empty:
	// whatever the connection uses; New checks that a set prefix is the
	// connection's. With a prefix of its own, answers are never published
	// under it, and no reply prefix may overlap it, so a worker can neither
	// subscribe to those inboxes (given the permissions of the deployment)
	// nor name one as its Reply-Inbox.
	InboxPrefix string

	// CwdRoots, when set, confine the working directories triggers may
	// name: a trigger whose cleaned cwd (and the same with its symbolic
	// links resolved) is not one of these absolute folders or below one is
	// rejected (reason cwd). A relative cwd is rejected whether or not
	// roots are set; an absent cwd means no project skills and is fine.
	CwdRoots []string

	// SkillLabelLimit bounds how many distinct skills get series of
	// their own in the per-skill metrics (skill_loads_total,
	// skill_invocations_total); later ones are counted as "_other", and
	// names that resolve to no skill as "_unknown" (default
	// DefaultSkillLabelLimit).
	SkillLabelLimit int

	// CatalogResends bounds the full catalogs a session is sent again per
	// minute, by this member: catalogs with the list the session's newest
	// catalog already holds, re-sent because a compaction masked it
	// (default DefaultCatalogResends; NoLimit: no bound). Over it the
	// pre-step is answered "incomplete" with reason over_budget and
	// nothing is appended; the model keeps what it was shown.
	CatalogResends int
	// CatalogBytes bounds the bytes of the catalogs appended per session
	// per minute after the session's first, by this member: every change
	// of its list and every re-send (default DefaultCatalogBytes; NoLimit:
	// no bound). Over it the pre-step is answered "incomplete" with reason
	// over_budget and nothing is appended; the model keeps what it was
	// shown, and a later step sends the change.
	CatalogBytes int64
	// InvocationBytes bounds the bytes of skill.invocation records
	// appended per session per minute, by this member (default
	// DefaultInvocationBytes; NoLimit: no bound). An invocation over it is
	// not appended and is listed as ignored with reason over_budget.
	InvocationBytes int64

	// NoProvision leaves stream and consumer to the infrastructure: the
	// processor checks they exist and fails at start naming what is missing.
	NoProvision bool
}

// WithDefaults returns c with every zero field set to its default, but
// for the stream's limits (MaxAge, MaxBytes, MaxMsgSize), whose zero value
// has a meaning of its own: see streamLimits.
func (c Config) WithDefaults() Config {
	if c.Stream == "" {
		c.Stream = DefaultStream
	}
	if c.Prefix == "" {
		c.Prefix = events.DefaultPrefix
	}
	if c.Consumer == "" {
		c.Consumer = DefaultConsumer
	}
	if c.ToolOwner == "" {
		c.ToolOwner = DefaultToolOwner
	}
	if c.Catalog == (catalog.Options{}) {
		c.Catalog = catalog.DefaultOptions()
	}
	if c.Replicas == 0 {
		c.Replicas = 1
	}
	if c.DuplicateWindow == 0 {
		c.DuplicateWindow = DefaultDuplicateWindow
	}
	if c.Workers == 0 {
		c.Workers = DefaultWorkers
	}
	if c.InflightBytes == 0 {
		c.InflightBytes = DefaultInflightBytes
	}
	if c.AckWait == 0 {
		c.AckWait = DefaultAckWait
	}
	if c.MaxDeliver == 0 {
		c.MaxDeliver = DefaultMaxDeliver
	}
	if c.NakDelay == 0 {
		c.NakDelay = DefaultNakDelay
	}
	if c.AppendRetries == 0 {
		c.AppendRetries = DefaultAppendRetries
	}
	if c.RequestTimeout == 0 {
		c.RequestTimeout = DefaultRequestTimeout
	}
	if c.CatchUpWait == 0 {
		c.CatchUpWait = DefaultCatchUpWait
	}
	if c.SkillLabelLimit == 0 {
		c.SkillLabelLimit = DefaultSkillLabelLimit
	}
	if c.ViewTimeout == 0 {
		c.ViewTimeout = DefaultViewTimeout
	}
	if c.PullStallAfter == 0 {
		c.PullStallAfter = DefaultPullStallAfter
	}
	if c.MaxTriggerBytes == 0 {
		c.MaxTriggerBytes = DefaultMaxTriggerBytes
	}
	if c.CatalogResends == 0 {
		c.CatalogResends = DefaultCatalogResends
	}
	if c.CatalogBytes == 0 {
		c.CatalogBytes = DefaultCatalogBytes
	}
	if c.InvocationBytes == 0 {
		c.InvocationBytes = DefaultInvocationBytes
	}
	c.InboxPrefix = normalPrefix(c.InboxPrefix)
	if len(c.ReplyPrefixes) == 0 {
		c.ReplyPrefixes = []string{DefaultReplyPrefix}
	} else {
		ps := make([]string, len(c.ReplyPrefixes))
		for i, p := range c.ReplyPrefixes {
			ps[i] = normalPrefix(p)
		}
		c.ReplyPrefixes = ps
	}
	return c
}

// Validate reports the first problem of a defaulted config.
func (c Config) Validate() error {
	bad := func(format string, a ...any) error {
		return fmt.Errorf("%w: %s", ErrInvalidConfig, fmt.Sprintf(format, a...))
	}
	switch {
	case !validName(c.Stream):
		return bad("stream name %q: want letters, digits, '-' or '_'", c.Stream)
	case events.ValidatePrefix(c.Prefix) != nil:
		return bad("subject prefix: %v", events.ValidatePrefix(c.Prefix))
	case !c.Layout.Valid():
		return bad("session layout %v: want flat or owner", c.Layout)
	case !validName(c.Consumer):
		return bad("consumer name %q: want letters, digits, '-' or '_'", c.Consumer)
	case c.ToolOwner == "":
		return bad("tool owner is empty")
	case c.Replicas < 1 || c.Replicas > 5:
		return bad("replicas %d: want 1 to 5", c.Replicas)
	case c.MaxAge < 0 && c.MaxAge != NoLimit:
		return bad("max age %v is negative (NoLimit is %d)", c.MaxAge, NoLimit)
	case c.MaxBytes < 0 && c.MaxBytes != NoLimit:
		return bad("max bytes %d is negative (NoLimit is %d)", c.MaxBytes, NoLimit)
	case c.MaxMsgSize < 0 && c.MaxMsgSize != NoLimit:
		return bad("max message size %d is negative (NoLimit is %d)", c.MaxMsgSize, NoLimit)
	case c.DuplicateWindow < MinDuplicateWindow:
		return bad("duplicate window %v: want at least %v", c.DuplicateWindow, MinDuplicateWindow)
	case c.streamLimits().age > 0 && c.DuplicateWindow > c.streamLimits().age:
		return bad("duplicate window %v exceeds max age %v", c.DuplicateWindow, c.streamLimits().age)
	case c.streamLimits().msgSize > 0 && c.streamLimits().bytes > 0 && int64(c.streamLimits().msgSize) > c.streamLimits().bytes:
		return bad("max message size %d exceeds max bytes %d", c.streamLimits().msgSize, c.streamLimits().bytes)
	case c.MaxTriggerBytes < MinTriggerBytes || c.MaxTriggerBytes > events.MaxPayloadSize:
		return bad("max trigger bytes %d: want %d to %d", c.MaxTriggerBytes, MinTriggerBytes, events.MaxPayloadSize)
	case c.Workers < 1:
		return bad("workers %d: want at least 1", c.Workers)
	case c.CatalogResends < 0 && c.CatalogResends != NoLimit:
		return bad("catalog resends %d per session per minute is negative (NoLimit is %d)", c.CatalogResends, NoLimit)
	case c.CatalogBytes < 0 && c.CatalogBytes != NoLimit:
		return bad("catalog bytes %d per session per minute is negative (NoLimit is %d)", c.CatalogBytes, NoLimit)
	case c.InvocationBytes < 0 && c.InvocationBytes != NoLimit:
		return bad("invocation bytes %d per session per minute is negative (NoLimit is %d)", c.InvocationBytes, NoLimit)
	case c.MaxTriggerRate < 0 || math.IsNaN(c.MaxTriggerRate) || math.IsInf(c.MaxTriggerRate, 0):
		return bad("max trigger rate %v: want a number of triggers per second, or 0 for no bound", c.MaxTriggerRate)
	case c.SkillLabelLimit < 1:
		return bad("skill label limit %d: want at least 1", c.SkillLabelLimit)
	case c.InflightBytes < 1:
		return bad("in-flight bytes %d: want at least 1", c.InflightBytes)
	case c.AckWait < 100*time.Millisecond:
		return bad("ack wait %v: want at least 100ms", c.AckWait)
	case c.MaxDeliver < 1:
		return bad("max deliver %d: want at least 1", c.MaxDeliver)
	case c.NakDelay <= 0:
		return bad("nak delay %v: want a positive duration", c.NakDelay)
	case c.PullStallAfter < pullExpiry:
		return bad("pull stall bound %v: want at least %v", c.PullStallAfter, pullExpiry)
	case c.AppendRetries < 1:
		return bad("append retries %d: want at least 1", c.AppendRetries)
	case c.RequestTimeout <= 0:
		return bad("request timeout %v: want a positive duration", c.RequestTimeout)
	case c.Instance != "" && !events.ValidInstance(c.Instance):
		return bad("instance %q: want 1 to %d letters, digits, '-' or '_'", c.Instance, events.MaxInstanceLength)
	case c.CatchUpWait < 0:
		return bad("catch-up wait %v is negative", c.CatchUpWait)
	case c.ViewTimeout <= 0:
		return bad("view timeout %v: want a positive duration", c.ViewTimeout)
	}
	for _, d := range c.CwdRoots {
		if !filepath.IsAbs(d) {
			return bad("cwd root %q: want an absolute path", d)
		}
	}
	if err := c.validateReplyPrefixes(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if err := c.validateInboxPrefix(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if err := c.Catalog.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
	}
	if c.MaxMsgSize > 0 {
		// Refused before the stream is made so: Prepare checks the
		// server's maximum payload and an existing stream's the same way.
		return checkLimits(c.Catalog, newMessageLimit(0, c.MaxMsgSize))
	}
	return nil
}

// validName reports whether s is a usable stream or consumer name.
func validName(s string) bool {
	if s == "" || len(s) > 255 {
		return false
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
		default:
			return false
		}
	}
	return true
}

// Option adjusts a Processor beyond its Config.
type Option func(*options)

type options struct {
	search     Searcher
	ranker     Ranker
	version    string
	logger     *slog.Logger
	registerer prometheus.Registerer
	hooks      hooks
	onReady    func()
	// headMin, in tests: catalogs of this many bytes get a head (0:
	// catalogHeadMin; negative: none).
	headMin int
}

// hooks let tests interrupt the flow at points a crash could hit.
type hooks struct {
	// beforeAppend runs before each append attempt, with the attempt number;
	// an error fails the append (a transient failure).
	beforeAppend func(sid string, attempt int) error
	// afterAppend runs after a successful append; an error simulates a
	// crash: the trigger is left unacknowledged and unanswered.
	afterAppend func(sid string, seq uint64) error
	// take, when set, decides whether this member handles a delivery; one
	// it refuses is handed back at once for another member.
	take func(msg jetstream.Msg) bool
	// budgetNow, when set, is the output budget's clock (outbudget.go).
	budgetNow func() time.Time
	// ranked, when set, runs each time a pre-step ranks a snapshot by use
	// (rank.go), not when it finds the view ranked already.
	ranked func()
}

// WithSearcher gives the processor the search index its skill_search tool
// runs against (see Searcher): needed when Config.Catalog.SkillSearch is on,
// ignored otherwise.
func WithSearcher(s Searcher) Option {
	return func(o *options) { o.search = s }
}

// Ranker gives the current use of the tenant's skills, for catalogs
// listed by use (catalog.RankUse): a projection.Uses satisfies it. Ranking
// is called at a pre-step and must not block (it returns what it read in
// the background); nil means no use known.
type Ranker interface {
	Ranking() catalog.Ranking
}

// VersionedRanker is a Ranker that says when its ranking changed: the
// version changes whenever the ranking may have (a projection.Uses's
// reads). With one, and skills that keep values with their snapshots (a
// providers.Registry), the processor ranks a snapshot once per version
// and session list, so a pre-step whose skills and use are unchanged
// costs about what one listed by name does.
type VersionedRanker interface {
	Ranker
	VersionedRanking() (catalog.Ranking, uint64)
}

// WithRanker gives the processor the use ranking its catalogs list by when
// Config.Catalog.Rank is catalog.RankUse; without one they list by name.
func WithRanker(r Ranker) Option {
	return func(o *options) { o.ranker = r }
}

// WithVersion sets the version of the running binary, reported by the
// micro service (default: none, reported as 0.0.0-devel).
func WithVersion(v string) Option {
	return func(o *options) { o.version = v }
}

// WithOnReady has Run call f once it serves (see Run), right after Ready
// is closed and before Run logs anything more: serve announces itself
// there, so that its announcement is its first line about serving.
func WithOnReady(f func()) Option {
	return func(o *options) { o.onReady = f }
}

// WithLogger sets the logger (default: slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}

// WithRegisterer registers the processor's metrics on r (default: a private
// registry, so nothing is exported).
func WithRegisterer(r prometheus.Registerer) Option {
	return func(o *options) { o.registerer = r }
}
