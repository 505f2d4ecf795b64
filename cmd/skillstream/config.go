package main

import (
	"github.com/nats-io/nats.go/jetstream"
	"log/slog"
	"math"
	"net"
	"path/filepath"
	"strings"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/processor"
	"github.com/skillstream/skillstream/processor/supervise"
	"github.com/skillstream/skillstream/providers/agentskills"
	"github.com/skillstream/skillstream/providers/store"
)

// Config is the one configuration of the skillstream binary. Every command
// fills the part it uses from the same flags and SKILLSTREAM_* environment
// variables, so that `catalog` and `load` preview byte for byte what `serve`
// sends to the model: one configuration for every surface.
type Config struct {
	// Skill sources and model text: serve, catalog, load.
	SkillsDirs           []string // custom roots (--skills-dir)
	UserSkillsDir        string   // user root; "" disables it (--user-skills-dir)
	ProjectSkillsSubdirs []string // extra project subfolders besides .agents/skills
	NoBundled            bool
	NoFollowSymlinks     bool
	MaxWatchesPerDir     int // file watches one skills folder may take (--max-watches-per-skills-dir)
	WatchedProjects      int // project roots watched at once (--watched-projects)
	DescriptionMaxLength int
	CatalogMaxLength     int    // code points between the catalog's tags; 0 = none
	MaxSkillBytes        int    // bytes of instructions in a tool result; 0 = none
	UserInvocation       bool   // /<name> in a user's message loads that skill (--user-invocation)
	CatalogUpdates       string // how a changed catalog reaches the model: full or changes (--catalog-updates)
	CatalogRank          string // which skills a shortened catalog keeps: name or use (--catalog-rank)
	SkillSearch          bool   // serve the skill_search tool; offered catalogs list fewer skills (--skill-search)
	CatalogListedMax     int    // entries an offered catalog lists at most; 0 = no count limit (--catalog-listed-max)
	SearchBodies         bool   // the search index holds the skills' bodies too (--search-bodies)
	ToolOwner            string

	// Skill store: serve, catalog, load, replay, skills.
	NoSkillStore      bool
	SkillStoreBucket  string
	SkillStoreObjects string
	SkillStoreHistory int

	// NATS: either an embedded server or an existing cluster.
	Listen       string // embedded server client address
	Data         string // embedded server JetStream store
	ServerName   string
	NATSURL      string // when set, no embedded server
	NATSUser     string
	NATSPassword string
	NATSToken    string
	NATSNKey     string // nkey seed file
	NATSCreds    string // credentials (JWT + seed) file
	NATSTLSCA    string
	NATSTLSCert  string
	NATSTLSKey   string

	// Stream and consumer group.
	Stream          string
	Prefix          string
	SessionLayout   string // flat or owner (--session-layout)
	Partitions      int    // session streams (--partitions; 0 or 1: one)
	Consumer        string
	Instance        string
	Replicas        int
	MaxAge          limit[time.Duration] // 0: none
	MaxBytes        limit[int64]         // 0: none
	MaxMsgSize      limit[int64]         // 0: none
	DuplicateWindow time.Duration
	Workers         int
	MaxTriggerRate  int // triggers per second; 0: no bound
	AckWait         time.Duration
	MaxDeliver      int
	CatchUpWait     time.Duration
	NoProvision     bool

	// Usage projection (usageproj.go): serve keeps it, usage reads it.
	UsageBucket       string
	UsageProjection   bool // on by default (serve's flag)
	NoUsageProjection bool

	// Learned search terms (searchlearn.go): serve's.
	SearchLearn       bool
	SearchLearnWindow time.Duration
	SearchLearnSince  string
	searchLearnFrom   time.Time // the instant reading starts (validated)

	// What workers may make serve do.
	MaxTriggerBytes int64
	CatalogResends  int   // per session per minute; 0: no bound
	CatalogBytes    int64 // per session per minute; 0: no bound
	InvocationBytes int64 // per session per minute; 0: no bound
	ReplyPrefixes   []string
	AnyOwnerInbox   bool // --any-owner-inbox
	CwdRoots        []string
	InboxPrefix     string // serve's own connection's inboxes

	// MCP hosts: serve (see MCPConfig).
	MCP MCPConfig
	// The operator console: console, and serve with --console-listen.
	Console ConsoleConfig

	// Operations.
	MetricsListen    string
	MetricsTokenFile string // bearer token /metrics and /readyz require; "" = none
	LogFormat        string
	LogLevel         string
	// StartRetryMin and StartRetryMax bound the wait before a processor
	// (a tenant's) whose start failed is started again (serve).
	StartRetryMin, StartRetryMax time.Duration
	// StartTimeout bounds each start of a processor (serve).
	StartTimeout time.Duration

	// MetricsSkillLimit bounds the skill label values of the per-skill metrics.
	MetricsSkillLimit int

	// storeWarned, when set, counts the skill store's warnings (serve's
	// metric); storeWarnedFor gives a tenant's (serve with tenants). Not
	// flags.
	storeWarned    func(kind string)
	storeWarnedFor func(tenant string) func(kind string)

	// Tenants (tenants.go): the tenants file, and the tenant a command
	// other than serve acts for.
	Tenants string
	Tenant  string
	// tenantAuth, set by useTenant, replaces the --nats-* credentials;
	// serveTenants marks serve, which serves every tenant of the file.
	tenantAuth  *tenantAuth
	libraryAuth *tenantAuth // the file's library, when acting for a tenant
	tenantsFile *tenantsFile
	// onAsyncError, when set, also hears the connection's asynchronous
	// errors (skills: the server's refusals).
	onAsyncError func(error) (reported bool)
	serveTenants bool
	// library, when set, is the shared library's store: the registry
	// offers it below the tenant's own store (serve with --tenants).
	library *libraryStore
	// pins shows skills of the store at given revisions (eval's
	// --skill-revision).
	pins []store.Pin
}

// libraryStore is where the shared library is read.
type libraryStore struct {
	js              jetstream.JetStream
	bucket, objects string
}

// Defaults shown in --help and used when nothing is configured.
const (
	// defaultStartTimeout bounds a processor's start as the skill store's
	// opening was bounded before starts were retried.
	defaultStartTimeout = 30 * time.Second
	defaultListen       = "127.0.0.1:4222"
	defaultData         = "skillstream-data"
	defaultServerName   = "skillstream"
	defaultToolOwner    = "skillstream"
	defaultUserSkills   = "~/.agents/skills"
)

// skillFlags registers the flags that decide which skills exist and how the
// model sees them. serve, catalog and load all call it: one configuration,
// every surface.
func (c *Config) skillFlags(cmd *command) {
	cmd.group("Skills")
	cmd.cfgList(&c.SkillsDirs, "skills-dir", "custom skills root, ranked after project roots and before the user root; repeatable")
	cmd.cfgString(&c.UserSkillsDir, "user-skills-dir", defaultUserSkills, "user skills `dir`; empty disables it")
	cmd.cfgList(&c.ProjectSkillsSubdirs, "project-skills-subdir",
		"extra skills folder inside the project root, after .agents/skills (e.g. .claude/skills); repeatable")
	cmd.cfgBool(&c.NoBundled, "no-bundled", false, "leave out the bundled starter skills")
	cmd.cfgBool(&c.NoFollowSymlinks, "no-follow-symlinks", false, "skip symbolic links inside skills folders, and skills folders that are links, instead of following them")
	cmd.cfgInt(&c.MaxWatchesPerDir, "max-watches-per-skills-dir", agentskills.DefaultMaxWatchesPerFolder,
		"file watches one skills folder may take for its skill folders; a larger folder is re-checked every 5s instead")
	cmd.cfgInt(&c.WatchedProjects, "watched-projects", agentskills.DefaultMaxProjects,
		"project roots watched at once, the least recently used dropped past it; a member serving more projects at once than this prepares their catalogs again at every step: set it above the projects your workers use")
	cmd.cfgInt(&c.DescriptionMaxLength, "catalog-description-max-length", catalog.DefaultDescriptionMaxLength,
		"cap on each catalog description, in code points; at least 3")
	cmd.cfgInt(&c.CatalogMaxLength, "catalog-max-length", catalog.DefaultMaxLength,
		"bound on the catalog's list, in code points: over it, descriptions and then skills give way, lowest precedence first, and a notice says so; 0 for none, else at least 200")
	cmd.cfgInt(&c.MaxSkillBytes, "max-skill-bytes", catalog.DefaultMaxSkillBytes,
		"bound on the skill instructions a tool result shows, in bytes: a longer body is cut with a notice; 0 for none, else at least 1024")
	cmd.cfgBool(&c.UserInvocation, "user-invocation", false,
		"let a user invoke a skill by writing /<name> in a message (a pre-step's userText): its instructions are appended after the step's catalog, and every catalog ends with one more line saying so")
	cmd.cfgString(&c.CatalogUpdates, "catalog-updates", string(catalog.UpdatesFull),
		"how a session's changed catalog reaches the model, by `mode`: full appends the whole list again; changes appends only the skills added, changed or removed when they are few (at most 64, and half of the list), the whole list otherwise")
	cmd.cfgBool(&c.SkillSearch, "skill-search", false,
		"serve the skill_search tool beside the skill tool: a session whose tool view holds both lists fewer skills, whole, and is told that skill_search finds the rest")
	cmd.cfgInt(&c.CatalogListedMax, "catalog-listed-max", 0,
		"with --skill-search, list at most this many skills in a session offered search, lowest precedence left out first; 0 for no count limit (--catalog-max-length still applies)")
	cmd.cfgBool(&c.SearchBodies, "search-bodies", false,
		"with --skill-search, the search index holds each skill's body too (its first 4 KiB, at a low weight), read once whenever the skills change, never per search; changes rankings, so off by default")
	cmd.cfgString(&c.CatalogRank, "catalog-rank", string(catalog.RankName),
		"which skills a catalog that cannot list every skill with its description keeps, by `rank`: name (the last names give way first) or use (the skills the tenant loaded least over the last 7 days give way first, read from the usage projection; with --skill-search the listed max then counts skills with a description, and further names fill the size limit)")
	cmd.cfgString(&c.ToolOwner, "tool-owner", defaultToolOwner, "owner `id` of our skill tool in the agent's tool view; also the catalog producer")
}

// storeFlags registers the skill store settings.
func (c *Config) storeFlags(cmd *command) {
	cmd.group("Skill store")
	cmd.cfgBool(&c.NoSkillStore, "no-skill-store", false, "leave out the skill store (skills published with \"skillstream skills push\")")
	cmd.cfgString(&c.SkillStoreBucket, "skill-store-bucket", skillstore.DefaultBucket, "key-value `bucket` of the skill store's index")
	cmd.cfgString(&c.SkillStoreObjects, "skill-store-objects", skillstore.DefaultObjects, "object store `bucket` of the skill store's files")
	cmd.cfgInt(&c.SkillStoreHistory, "skill-store-history", store.DefaultHistory,
		"revisions of each skill the index keeps, 1 to 64; set when the index is created")
}

// storeConfig is the skill store's configuration.
func (c *Config) storeConfig() store.Config {
	return store.Config{Bucket: c.SkillStoreBucket, Objects: c.SkillStoreObjects, Replicas: c.Replicas, History: c.SkillStoreHistory,
		OnWarning: c.storeWarned}
}

// validateStore checks the skill store settings.
func (c *Config) validateStore() error {
	if c.NoSkillStore {
		return nil
	}
	for _, b := range []struct{ flag, v string }{{"--skill-store-bucket", c.SkillStoreBucket}, {"--skill-store-objects", c.SkillStoreObjects}} {
		if !validBucket(b.v) {
			return usagef("%s %q: must be letters, digits, '-' or '_'", b.flag, b.v)
		}
	}
	if c.SkillStoreHistory < 1 || c.SkillStoreHistory > store.MaxHistory {
		return usagef("--skill-store-history %d: must be between 1 and %d", c.SkillStoreHistory, store.MaxHistory)
	}
	return nil
}

func validBucket(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_') {
			return false
		}
	}
	return true
}

// natsFlags registers how to reach NATS.
func (c *Config) natsFlags(cmd *command) {
	cmd.group("NATS (embedded server by default)")
	cmd.cfgString(&c.Listen, "listen", defaultListen, "client `address` of the embedded NATS server")
	cmd.cfgString(&c.Data, "data", defaultData, "JetStream store `directory` of the embedded server")
	cmd.cfgString(&c.ServerName, "server-name", defaultServerName, "`name` of the embedded server")
	cmd.cfgString(&c.NATSURL, "nats-url", "", "connect to this NATS cluster (comma-separated `urls`) instead of embedding a server")
	cmd.cfgString(&c.NATSUser, "nats-user", "", "`user` name for --nats-url")
	cmd.cfgString(&c.NATSPassword, "nats-password", "", "`password` for --nats-url")
	cmd.cfgString(&c.NATSToken, "nats-token", "", "authentication `token` for --nats-url")
	cmd.cfgString(&c.NATSNKey, "nats-nkey", "", "nkey seed `file` for --nats-url")
	cmd.cfgString(&c.NATSCreds, "nats-creds", "", "credentials `file` (JWT and seed) for --nats-url")
	cmd.cfgString(&c.NATSTLSCA, "nats-tls-ca", "", "CA certificate `file` to verify the NATS servers")
	cmd.cfgString(&c.NATSTLSCert, "nats-tls-cert", "", "client certificate `file` (with --nats-tls-key)")
	cmd.cfgString(&c.NATSTLSKey, "nats-tls-key", "", "client key `file` (with --nats-tls-cert)")
	cmd.cfgString(&c.Tenants, "tenants", "", "tenants `file`: serve serves every tenant it lists, each in its own NATS account (with --nats-url; see the manual's Tenants)")
	cmd.cfgString(&c.Tenant, "tenant", "", "act for the tenant of --tenants called `name`, with its credentials (\""+libraryTenant+"\": the shared library's)")
}

// streamFlags registers the stream, consumer group and processing settings.
func (c *Config) streamFlags(cmd *command) {
	d := processorDefaults()
	cmd.group("Stream and consumer group")
	cmd.cfgString(&c.Stream, "stream", d.Stream, "JetStream stream `name` holding the session logs")
	cmd.cfgString(&c.Prefix, "prefix", d.Prefix, "subject `prefix`: sessions live under <prefix>.<session>.<kind>")
	cmd.cfgString(&c.Consumer, "consumer", d.Consumer, "durable consumer `name` shared by every instance (the consumer group)")
	cmd.cfgString(&c.Instance, "instance", "", "this instance's `id` in the consumer group, unique in it: named in the catalogs it appends and in view divergence reports (default: host name and a random suffix)")
	cmd.cfgInt(&c.Replicas, "replicas", d.Replicas, "stream replicas; set when serve provisions the stream")
	cmd.cfgDurationLimit(&c.MaxAge, "max-age", processor.DefaultMaxAge,
		"drop session events older than this `duration`; 0 for no age limit; applied to an existing stream when given, else only to a stream serve creates")
	cmd.cfgBytesLimit(&c.MaxBytes, "max-bytes", processor.DefaultMaxBytes,
		"bound the session stream to this `size` (64MiB, 10GiB), dropping the oldest events of any session first; 0 for none; applied to an existing stream when given, else only to a stream serve creates")
	cmd.cfgBytesLimit(&c.MaxMsgSize, "max-msg-size", processor.DefaultMaxMsgSize,
		"largest message the session stream takes, as a `size`, headers included; 0 for none; applied to an existing stream when given, else only to a stream serve creates")
	cmd.cfgDuration(&c.DuplicateWindow, "duplicate-window", d.DuplicateWindow, "stream duplicate window, at least 2m; a shorter one is raised when serve provisions the stream")
	cmd.cfgInt(&c.Workers, "workers", d.Workers, "triggers processed concurrently by this instance (pre-steps of large catalogs are further bounded by the memory they hold)")
	cmd.cfgInt(&c.MaxTriggerRate, "max-trigger-rate", 0, "triggers this instance starts per second at most, the excess waiting in the stream (0: no bound; with --tenants, per tenant)")
	cmd.cfgDuration(&c.AckWait, "ack-wait", d.AckWait, "redeliver a trigger not acknowledged within this time")
	cmd.cfgInt(&c.MaxDeliver, "max-deliver", d.MaxDeliver, "give up on a trigger after this many deliveries")
	cmd.cfgDuration(&c.CatchUpWait, "catch-up-wait", d.CatchUpWait, "wait at most this long for the skill store revision a trigger names (minStoreRevision) or a session's catalog reflects, within the trigger's deadline, before answering incomplete / unavailable / behind")
	cmd.cfgBool(&c.NoProvision, "no-provision", false, "never create or update the stream and consumer; fail if they are missing")
}

// securityFlags registers the bounds on what a worker's triggers can make
// the processor do: where it answers and which folders it reads.
func (c *Config) securityFlags(cmd *command) {
	cmd.group("Untrusted workers")
	cmd.cfgBytes(&c.MaxTriggerBytes, "max-trigger-bytes", processor.DefaultMaxTriggerBytes,
		"refuse a pre-step or skill call whose payload is larger than this `size`, before decoding it; 1KiB to 1MiB")
	cmd.cfgInt(&c.CatalogResends, "catalog-resends", processor.DefaultCatalogResends,
		"full catalogs a session may be sent again per minute after a compaction masked its catalog, by each instance; over it the pre-step appends nothing and is answered incomplete, reason over_budget (0: no bound)")
	cmd.cfgBytes(&c.CatalogBytes, "catalog-bytes", processor.DefaultCatalogBytes,
		"`size` of the catalogs a session may have appended per minute after its first (changes of its list and re-sends), by each instance; over it the pre-step appends nothing and is answered incomplete, reason over_budget (0: no bound)")
	cmd.cfgBytes(&c.InvocationBytes, "invocation-bytes", processor.DefaultInvocationBytes,
		"`size` of the skill.invocation records (/name) a session may have appended per minute, by each instance; over it a name is ignored, reason over_budget (0: no bound)")
	cmd.cfgList(&c.ReplyPrefixes, "reply-prefix",
		"answer only on Reply-Inbox `subject`s under this prefix (default _INBOX.); the session stream, $-subjects and skillstream.* are always refused; repeatable")
	cmd.cfgBool(&c.AnyOwnerInbox, "any-owner-inbox", false,
		"in the owner session layout, answer on any inbox under a reply prefix; by default a trigger of session <owner>.<id> is answered only under <reply prefix>.<owner>. (its owner's inboxes)")
	cmd.cfgString(&c.InboxPrefix, "inbox-prefix", processor.DefaultInboxPrefix,
		"create the processor's own inboxes (deliveries, stream reads, requests) under this `subject`; keep it apart from the workers' inbox prefixes and grant no worker a subscription to it")
	cmd.cfgList(&c.CwdRoots, "cwd-root",
		"accept only triggers whose cwd lies under this absolute folder (default: any absolute cwd); repeatable")
}

// opsFlags registers logging and metrics.
func (c *Config) opsFlags(cmd *command, metrics bool) {
	cmd.group("Operations")
	if metrics {
		cmd.cfgString(&c.MetricsListen, "metrics-listen", "", "serve /metrics, /healthz and /readyz on this `address` (off when empty)")
		cmd.cfgString(&c.MetricsTokenFile, "metrics-token-file", "", "`file` holding a bearer token that /metrics and /readyz then require (Authorization: Bearer); /healthz stays open")
		cmd.cfgInt(&c.MetricsSkillLimit, "metrics-skill-limit", processorDefaults().SkillLabelLimit, "at most `n` distinct skill names get series of their own in skill_loads_total and skill_invocations_total; later ones count as _other")
		cmd.cfgDuration(&c.StartRetryMin, "start-retry-min", supervise.DefaultBackoffMin, "first wait before a processor (a tenant's) whose start failed is started again; it doubles after each failure")
		cmd.cfgDuration(&c.StartRetryMax, "start-retry-max", supervise.DefaultBackoffMax, "longest wait before a processor whose start failed is started again")
		cmd.cfgDuration(&c.StartTimeout, "start-timeout", defaultStartTimeout, "bound on each start of a processor (opening its skill store, preparing its stream and consumer); one not done by then is retried")
	}
	cmd.cfgString(&c.LogFormat, "log-format", "text", "log `format`: text or json")
	cmd.cfgString(&c.LogLevel, "log-level", "info", "log `level`: debug, info, warn or error")
}

// catalogOptions is the model text's share of the configuration.
func (c *Config) catalogOptions() catalog.Options {
	return catalog.Options{
		DescriptionMaxLength: c.DescriptionMaxLength,
		MaxLength:            c.CatalogMaxLength,
		MaxSkillBytes:        c.MaxSkillBytes,
		UserInvocation:       c.UserInvocation,
		Updates:              catalog.Updates(c.CatalogUpdates),
		SkillSearch:          c.SkillSearch,
		SearchBodies:         c.SearchBodies,
		ListedMax:            c.CatalogListedMax,
		Rank:                 c.catalogRank(),
	}
}

// catalogRank is the rank of the catalog options: "" for name, so that
// options by name are the options as they always were.
func (c *Config) catalogRank() catalog.Rank {
	if c.CatalogRank == string(catalog.RankUse) {
		return catalog.RankUse
	}
	return ""
}

// validateSkills checks the part of the configuration every skills command
// uses.
func (c *Config) validateSkills() error {
	opts := catalog.Options{DescriptionMaxLength: c.DescriptionMaxLength}
	if err := opts.Validate(); err != nil {
		return usagef("--catalog-description-max-length %d: must be an integer greater than or equal to %d", c.DescriptionMaxLength, catalog.MinDescriptionMaxLength)
	}
	if catalog.CheckMaxLength(c.CatalogMaxLength) != nil {
		return usagef("--catalog-max-length %d: must be 0 or at least %d", c.CatalogMaxLength, catalog.MinMaxLength)
	}
	if catalog.CheckMaxSkillBytes(c.MaxSkillBytes) != nil {
		return usagef("--max-skill-bytes %d: must be 0 or at least %d", c.MaxSkillBytes, catalog.MinMaxSkillBytes)
	}
	if catalog.CheckListedMax(c.CatalogListedMax) != nil {
		return usagef("--catalog-listed-max %d: must be 0 (no limit) or more", c.CatalogListedMax)
	}
	if catalog.CheckUpdates(catalog.Updates(c.CatalogUpdates)) != nil {
		return usagef("--catalog-updates %q: must be %s or %s", c.CatalogUpdates, catalog.UpdatesFull, catalog.UpdatesChanges)
	}
	if catalog.CheckRank(catalog.Rank(c.CatalogRank)) != nil || c.CatalogRank == "" {
		return usagef("--catalog-rank %q: must be %s or %s", c.CatalogRank, catalog.RankName, catalog.RankUse)
	}
	if strings.TrimSpace(c.ToolOwner) == "" {
		return usagef("--tool-owner must not be empty")
	}
	if c.MaxWatchesPerDir < 1 {
		return usagef("--max-watches-per-skills-dir %d: must be at least 1", c.MaxWatchesPerDir)
	}
	if c.WatchedProjects < 1 {
		return usagef("--watched-projects %d: must be at least 1", c.WatchedProjects)
	}
	for _, d := range c.SkillsDirs {
		if d == "" {
			return usagef("--skills-dir must not be empty")
		}
	}
	for _, d := range c.CwdRoots {
		if d == "" || !filepath.IsAbs(d) {
			return usagef("--cwd-root %q: must be an absolute folder", d)
		}
	}
	for _, d := range c.ProjectSkillsSubdirs {
		if d == "" || filepath.IsAbs(d) {
			return usagef("--project-skills-subdir %q: must be a relative path inside the project", d)
		}
		clean := filepath.Clean(d)
		if clean == ".." || strings.HasPrefix(clean, ".."+string(filepath.Separator)) {
			return usagef("--project-skills-subdir %q: must stay inside the project", d)
		}
	}
	return nil
}

// validateLog checks the logging settings.
func (c *Config) validateLog() error {
	switch c.LogFormat {
	case "text", "json":
	default:
		return usagef("--log-format %q: must be text or json", c.LogFormat)
	}
	if _, err := parseLevel(c.LogLevel); err != nil {
		return err
	}
	return nil
}

// validateServe checks everything serve needs, in the order an operator
// would fix it.
// validateStart checks serve's own start flags (which only serve
// registers: bench validates the rest of serve's configuration too).
func (c *Config) validateStart() error {
	if c.StartRetryMin <= 0 || c.StartRetryMax < c.StartRetryMin {
		return usagef("--start-retry-min %v, --start-retry-max %v: want a positive minimum and a maximum at least as long", c.StartRetryMin, c.StartRetryMax)
	}
	if c.StartTimeout < time.Second {
		return usagef("--start-timeout %v: want at least 1s", c.StartTimeout)
	}
	return nil
}

func (c *Config) validateServe() error {
	if err := c.validateSkills(); err != nil {
		return err
	}
	if err := c.validateLog(); err != nil {
		return err
	}
	if err := c.validateNATS(); err != nil {
		return err
	}
	if err := c.validateStore(); err != nil {
		return err
	}
	if c.MetricsListen != "" {
		if err := checkAddr("--metrics-listen", c.MetricsListen); err != nil {
			return err
		}
	}
	if err := c.validateLimits(); err != nil {
		return err
	}
	if err := c.validateLayout(); err != nil {
		return err
	}
	if c.Instance != "" && !events.ValidInstance(c.Instance) {
		return usagef("--instance %q: must be 1 to %d letters, digits, '-' or '_'", c.Instance, events.MaxInstanceLength)
	}
	if err := c.validatePartitions(); err != nil {
		return err
	}
	if err := c.processorConfig().Validate(); err != nil {
		return usageError{msg: err.Error()}
	}
	return nil
}

// validateLimits checks the stream's limits and the trigger bound, naming
// their flags (the processor checks how they fit together).
func (c *Config) validateLimits() error {
	if c.MaxAge.V < 0 {
		return usagef("--max-age %v: must not be negative (0 for no age limit)", c.MaxAge.V)
	}
	if c.MaxMsgSize.V > math.MaxInt32 {
		return usagef("--max-msg-size %s: must be at most %d bytes", formatBytes(c.MaxMsgSize.V), math.MaxInt32)
	}
	if n := c.MaxTriggerBytes; n != 0 && (n < processor.MinTriggerBytes || n > events.MaxPayloadSize) { // 0: not a flag of this command
		return usagef("--max-trigger-bytes %s: must be between %s and %s", formatBytes(n),
			formatBytes(processor.MinTriggerBytes), formatBytes(events.MaxPayloadSize))
	}
	return nil
}

// checkAddr checks a host:port listen address.
func checkAddr(flagName, addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("%s %q: want host:port (%v)", flagName, addr, err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil {
		return usagef("%s %q: bad port", flagName, addr)
	}
	return nil
}

// parseLevel maps --log-level to a slog level.
func parseLevel(s string) (slog.Level, error) {
	switch strings.ToLower(s) {
	case "debug":
		return slog.LevelDebug, nil
	case "info":
		return slog.LevelInfo, nil
	case "warn", "warning":
		return slog.LevelWarn, nil
	case "error":
		return slog.LevelError, nil
	}
	return 0, usagef("--log-level %q: must be debug, info, warn or error", s)
}

// newLogger builds the process logger from the configuration.
func (c *Config) newLogger(w interface{ Write([]byte) (int, error) }) *slog.Logger {
	level, _ := parseLevel(c.LogLevel)
	opts := &slog.HandlerOptions{Level: level}
	if c.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}
