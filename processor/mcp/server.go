package mcp

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers"
)

// Extension is the identifier of the MCP Skills extension.
const Extension = "io.modelcontextprotocol/skills"

// Registry is what the server reads skills from: the registry the skill
// tool resolves (*providers.Registry implements it).
type Registry interface {
	Snapshot(ctx context.Context, q catalog.Query) (catalog.Snapshot, error)
	Resolve(ctx context.Context, name string, q catalog.Query) (catalog.Summary, error)
	Load(ctx context.Context, name string, q catalog.Query) (catalog.Skill, error)
	Files(ctx context.Context, name string, q catalog.Query, maxFiles int, maxBytes int64) ([]providers.File, error)
	Changes(q catalog.Query) (chans []<-chan struct{}, complete bool)
}

// Searcher is the search index the skill_search tool runs against (a
// *search.Index of package providers/search satisfies it): the index of
// the served registry, bound to a query as catalog.Search takes it.
type Searcher interface {
	Searcher(q catalog.Query) catalog.Searcher
}

// Defaults of Config.
const (
	DefaultPageSize   = 100
	DefaultPageBytes  = 1 << 20
	DefaultTTL        = 60 * time.Second
	DefaultResync     = 5 * time.Second
	DefaultCallTimeou = 30 * time.Second
	// DefaultReadyTimeout bounds how long a host's first listing waits
	// for the registry's first complete snapshot.
	DefaultReadyTimeout = 10 * time.Second
)

// Config configures a Server. Zero fields take the defaults.
type Config struct {
	// Query is whose skills are served: the working directory, store
	// project scope and resource directory a skill tool call would use.
	Query catalog.Query
	// Tenant is the tenant served ("" without tenants): with a session's
	// id it decides which release candidates the session's skill and
	// skill_search calls answer with, as the processor decides for its
	// sessions (catalog.Cohort).
	Tenant string
	// Options are the catalog options of the skill tool (description
	// length, catalog size, instruction size); the zero Options stand for
	// the catalog's defaults. With Options.SkillSearch on, the
	// skill_search tool is served beside the skill tool, and the catalog
	// in the skill tool's description is shortened for search (a host is
	// shown both tools: search is offered).
	Options catalog.Options
	// Ranker, with Options.Rank catalog.RankUse, gives the use of the
	// served skills (a projection.Uses satisfies it): the catalog in the
	// skill tool's description then keeps the most used skills, with
	// their descriptions, within its budget (catalog.DescribeToolRanked).
	// The ranking is taken when the description is made, that is when the
	// served skills change: use alone does not change what hosts were
	// shown. nil: by name.
	Ranker interface{ Ranking() catalog.Ranking }
	// Search is the index skill_search runs against, over the served
	// registry; needed when Options.SkillSearch is on, ignored otherwise.
	Search Searcher
	// Version is reported as the server's version.
	Version string
	// Logger gets the server's log lines (refusals at debug); nil logs
	// nothing.
	Logger *slog.Logger
	// Registerer gets the server's metrics; nil registers none.
	Registerer prometheus.Registerer
	// PageSize and PageBytes bound a skills/list page: at most PageSize
	// entries, and no more entries once PageBytes of them are on the page
	// (a page always holds one).
	PageSize  int
	PageBytes int
	// TTL is the freshness hint (ttlMs) of listings and reads.
	TTL time.Duration
	// Resync is how often the server looks at the registry again when a
	// provider cannot announce its changes.
	Resync time.Duration
	// CallTimeout bounds one request's work on the registry.
	CallTimeout time.Duration
	// ToolDescriptionMax is the budget of the skill tool's description,
	// catalog included, in UTF-16 code units (see catalog.DescribeTool): 0
	// takes catalog.DefaultToolDescriptionMax, a negative value means no
	// budget.
	ToolDescriptionMax int
	// ReadyTimeout bounds how long a listing (tools/list, resources/list,
	// skills/list) waits for the registry's first complete snapshot before
	// it is answered with what has resolved.
	ReadyTimeout time.Duration
}

// Server serves the skills of a registry to MCP hosts. Create it with New,
// keep it current with Run, and serve it with Handler (Streamable HTTP) or
// ServeStdio.
type Server struct {
	reg     Registry
	cfg     Config
	log     *slog.Logger
	sdk     *sdk.Server
	cur     cursors
	metrics *metrics
	cache   *fileCache

	st     atomic.Pointer[state]
	syncMu sync.Mutex      // one sync at a time
	logged map[string]bool // skills refused, by name+reason, logged once (under syncMu)
	// known holds, by name, the version each served skill's files were
	// read under, as its provider told it (under syncMu).
	known map[string]providers.Version
	ready chan struct{} // closed after the first sync
	once  sync.Once
	// described is set once the tool's description was made from a
	// complete snapshot (under syncMu).
	described bool

	// served is held for writing while the served state and the SDK's
	// registrations change together, and for reading while a listing is
	// answered or a notification judged, so both see one state.
	served    sync.RWMutex
	whole     chan struct{} // closed once a complete snapshot is served
	wholeOnce sync.Once
	first     atomic.Pointer[state] // what first listings got: the first complete state, or the one served when a wait gave up
	gaveUp    atomic.Bool           // a listing stopped waiting for the first complete snapshot
	sessions  sessions              // what each session was last shown
	waiting   func()                // test hook: a listing starts waiting for the first complete snapshot
}

// New returns a server of reg's skills for cfg.Query. It serves nothing
// until the first Sync (Run starts with one).
func New(reg Registry, cfg Config) (*Server, error) {
	if cfg.Options == (catalog.Options{}) {
		cfg.Options = catalog.Options{DescriptionMaxLength: catalog.DefaultDescriptionMaxLength,
			MaxLength: catalog.DefaultMaxLength, MaxSkillBytes: catalog.DefaultMaxSkillBytes}
	}
	if cfg.PageSize <= 0 {
		cfg.PageSize = DefaultPageSize
	}
	if cfg.PageBytes <= 0 {
		cfg.PageBytes = DefaultPageBytes
	}
	if cfg.TTL <= 0 {
		cfg.TTL = DefaultTTL
	}
	if cfg.Resync <= 0 {
		cfg.Resync = DefaultResync
	}
	if cfg.CallTimeout <= 0 {
		cfg.CallTimeout = DefaultCallTimeou
	}
	switch {
	case cfg.ToolDescriptionMax == 0:
		cfg.ToolDescriptionMax = catalog.DefaultToolDescriptionMax
	case cfg.ToolDescriptionMax < 0:
		cfg.ToolDescriptionMax = 0 // none, as catalog.DescribeTool takes it
	}
	if cfg.ReadyTimeout <= 0 {
		cfg.ReadyTimeout = DefaultReadyTimeout
	}
	if cfg.Options.SkillSearch && cfg.Search == nil {
		return nil, errors.New("skill search is on but no search index was given (Config.Search)")
	}
	// A host lists both tools: search is offered to it whenever it is on.
	cfg.Options.SearchOffered = cfg.Options.SkillSearch
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("cursor key: %w", err)
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	s := &Server{reg: reg, cfg: cfg, log: log, cur: cursors{key: key}, metrics: m,
		logged: map[string]bool{}, ready: make(chan struct{}), whole: make(chan struct{}),
		cache: newFileCache(DefaultFileCacheBytes)}
	s.sessions.views = map[*sdk.ServerSession]*view{}
	s.st.Store(&state{byName: map[string]*entry{}, tool: catalog.ToolDescription, res: resourcesKey(nil)})

	caps := &sdk.ServerCapabilities{
		Resources: &sdk.ResourceCapabilities{ListChanged: true},
		Tools:     &sdk.ToolCapabilities{ListChanged: true},
	}
	caps.AddExtension(Extension, map[string]any{"directoryRead": true})
	version := cfg.Version
	if version == "" {
		version = "dev"
	}
	instructions := "Skills served by skillstream. List them with skills/list (or resources/list), read their files with resources/read, or call the `skill` tool with a skill's name to load its instructions."
	if cfg.Options.SkillSearch {
		instructions += " The `skill_search` tool finds skills by what they do."
	}
	s.sdk = sdk.NewServer(&sdk.Implementation{Name: "skillstream", Version: version}, &sdk.ServerOptions{
		Capabilities: caps,
		Logger:       log,
		Instructions: instructions,
		// A session is told of changes once it is initialized (see
		// sessions.go).
		InitializedHandler: func(_ context.Context, req *sdk.InitializedRequest) { s.follow(req.Session) },
		SetCacheable: func(_ context.Context, _ sdk.Request, c *sdk.Cacheable) {
			if c.TTLMs == 0 {
				c.TTLMs = int(s.cfg.TTL / time.Millisecond)
			}
		},
	})
	s.sdk.AddReceivingMiddleware(s.observe, s.track, s.intercept)
	s.sdk.AddSendingMiddleware(s.gate)
	if err := sdk.AddReceivingCustomMethod(s.sdk, "skills/list", s.listSkills); err != nil {
		return nil, err
	}
	if err := sdk.AddReceivingCustomMethod(s.sdk, "skills/get", s.getSkill); err != nil {
		return nil, err
	}
	if err := sdk.AddReceivingCustomMethod(s.sdk, "resources/directory/read", s.readDirectory); err != nil {
		return nil, err
	}
	s.setTool(catalog.ToolDescription)
	if cfg.Options.SkillSearch {
		def := catalog.SearchToolDefinition()
		s.sdk.AddTool(&sdk.Tool{Name: def.Name, Description: def.Description, InputSchema: json.RawMessage(def.Parameters)}, s.callSearch)
	}
	return s, nil
}

// setTool registers the skill tool with description desc (replacing it,
// which tells sessions that the tool list changed).
func (s *Server) setTool(desc string) {
	def := catalog.ToolDefinition()
	s.sdk.AddTool(&sdk.Tool{Name: def.Name, Description: desc, InputSchema: json.RawMessage(def.Parameters)}, s.callTool)
}

// ServeStdio serves one host over r and w (a host that spawned the
// process: its stdin and stdout) until the host closes r or ctx ends.
func (s *Server) ServeStdio(ctx context.Context, r io.ReadCloser, w io.WriteCloser) error {
	err := s.sdk.Run(ctx, &sdk.IOTransport{Reader: r, Writer: w})
	if ctx.Err() != nil || errors.Is(err, io.EOF) {
		return nil
	}
	return err
}

// SDK returns the underlying MCP SDK server (for tests and embedding).
func (s *Server) SDK() *sdk.Server { return s.sdk }

// Ready is closed once the server has looked at the registry for the
// first time.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Complete is closed once the server serves a complete snapshot of the
// registry: from then on listings are answered without waiting.
func (s *Server) Complete() <-chan struct{} { return s.whole }

// invalidParams is the -32602 error of a request naming nothing served.
func invalidParams(format string, args ...any) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf(format, args...)}
}

// quote renders untrusted input for an error message: ASCII, quoted,
// clipped.
func quote(s string) string {
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return strconv.QuoteToASCII(s)
}

// encodeCursorless is for tests: a cursor this server never issued.
var _ = base64.RawURLEncoding
