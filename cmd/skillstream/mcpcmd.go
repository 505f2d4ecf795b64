package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"strings"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
	mcpserver "github.com/skillstream/skillstream/processor/mcp"
	"github.com/skillstream/skillstream/processor/supervise"
	"github.com/skillstream/skillstream/providers/search"
)

// MCPConfig is serve's share of the configuration for MCP hosts.
type MCPConfig struct {
	Listen         string   // Streamable HTTP address; "" = off
	TokenFile      string   // file holding the bearer token
	AllowedOrigins []string // browser origins allowed besides loopback ones
	Cwd            string   // working directory whose project skills are served
	Project        string   // skill store project scope served
	// ToolDescriptionMax bounds the skill tool's description, catalog
	// included, in UTF-16 code units; 0 = none (serve and mcp).
	ToolDescriptionMax int
}

// mcpFlags registers serve's MCP flags.
func (c *Config) mcpFlags(cmd *command) {
	cmd.group("MCP hosts")
	cmd.cfgString(&c.MCP.Listen, "mcp-listen", "", "serve the skills to MCP hosts (Streamable HTTP at /mcp) on this `address` (off when empty; a non-loopback address needs --mcp-token-file)")
	cmd.cfgString(&c.MCP.TokenFile, "mcp-token-file", "", "`file` holding the bearer token MCP hosts must send (Authorization: Bearer)")
	cmd.cfgList(&c.MCP.AllowedOrigins, "mcp-allowed-origin", "browser `origin` (scheme://host[:port]) allowed to call the MCP endpoint besides loopback ones; repeatable")
	cmd.cfgString(&c.MCP.Cwd, "mcp-cwd", "", "working `dir` whose project skills MCP hosts are served (default: none, only the other sources)")
	cmd.cfgString(&c.MCP.Project, "mcp-project", "", "skill store project `id` whose scope MCP hosts are served (default: the global scope only)")
	c.mcpToolFlags(cmd)
}

// mcpToolFlags registers what MCP hosts are shown of the skill tool: serve
// and mcp take it.
func (c *Config) mcpToolFlags(cmd *command) {
	cmd.cfgInt(&c.MCP.ToolDescriptionMax, "mcp-tool-description-max", catalog.DefaultToolDescriptionMax,
		"bound on the skill tool's description MCP hosts get, catalog included, in UTF-16 code units (Claude Code keeps 2048 and cuts the rest): over it the catalog is shortened as --catalog-max-length shortens it; 0 for none, else at least 1024")
}

// validateMCPTool checks mcpToolFlags' settings.
func (c *Config) validateMCPTool() error {
	if catalog.CheckToolDescriptionMax(c.MCP.ToolDescriptionMax) != nil {
		return usagef("--mcp-tool-description-max %d: must be 0 or at least %d", c.MCP.ToolDescriptionMax, catalog.MinToolDescriptionMax)
	}
	return nil
}

// toolDescriptionMax is the flag's value as mcpserver.Config takes it.
func (c *Config) toolDescriptionMax() int {
	if c.MCP.ToolDescriptionMax == 0 {
		return -1 // none
	}
	return c.MCP.ToolDescriptionMax
}

// validateMCP checks serve's MCP settings and reads the token.
func (c *Config) validateMCP() (token string, err error) {
	m := &c.MCP
	if err := c.validateMCPTool(); err != nil {
		return "", err
	}
	if m.Listen == "" {
		return "", nil
	}
	if err := checkAddr("--mcp-listen", m.Listen); err != nil {
		return "", err
	}
	if m.TokenFile != "" {
		if c.Tenants != "" {
			return "", usagef("--mcp-token-file is not used with --tenants: each tenant's hosts send the token its mcp_token_env names")
		}
		if token, err = readToken("--mcp-token-file", m.TokenFile); err != nil {
			return "", err
		}
	}
	if token == "" && !mcpserver.Loopback(m.Listen) {
		return "", usagef("--mcp-listen %s is not a loopback address: MCP hosts on other machines could read every skill, so a bearer token is required; give --mcp-token-file", m.Listen)
	}
	for _, o := range m.AllowedOrigins {
		if !strings.HasPrefix(o, "http://") && !strings.HasPrefix(o, "https://") {
			return "", usagef("--mcp-allowed-origin %q: must be scheme://host[:port]", o)
		}
	}
	if m.Project != "" {
		if _, err := skillstore.Project(m.Project); err != nil {
			return "", usagef("--mcp-project: %v", err)
		}
	}
	if m.Cwd != "" {
		if m.Cwd, err = resolveCwd(m.Cwd); err != nil {
			return "", err
		}
	}
	return token, nil
}

// readToken reads the bearer token file path of flag: one line,
// surrounding space ignored.
func readToken(flag, path string) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", usagef("%s: %v", flag, err)
	}
	if !fi.Mode().IsRegular() || fi.Size() > 4096 {
		return "", usagef("%s %s: must be a regular file of at most 4096 bytes", flag, path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return "", usagef("%s: %v", flag, err)
	}
	tok := strings.TrimSpace(string(data))
	if tok == "" || strings.ContainsAny(tok, " \t\r\n") {
		return "", usagef("%s %s: must hold one token (no spaces), got %d bytes", flag, path, len(data))
	}
	return tok, nil
}

// mcpHTTP is the MCP front door serve runs beside the processor.
type mcpHTTP struct {
	srv   *mcpserver.Server
	ln    net.Listener
	token string
	cfg   mcpserver.HTTPConfig
	// tenants, with --tenants: one server per tenant, told apart by
	// their hosts' bearer tokens (srv is then nil).
	tenants []mcpserver.Tenant
}

// startMCPUnits creates serve's MCP front door for its processors: the
// one registry without tenants; with them, each tenant's registry behind
// that tenant's bearer token (mcp_token_env in the tenants file). It is
// made before the processors start: a unit's registry reaches it once
// that unit's start built it (until then its hosts are told that the
// tenant is not served yet).
func (c *Config) startMCPUnits(units []*servedUnit, token string, log *slog.Logger, metrics *prometheus.Registry, version string) (*mcpHTTP, error) {
	if units[0].tenant == "" {
		return c.startMCP(units[0].late, c.mcpSearch(units[0].late), units[0], token, log, metrics, version)
	}
	if token != "" {
		return nil, usagef("--mcp-token-file is not used with --tenants: each tenant's hosts use the token its mcp_token_env names")
	}
	var tenants []mcpserver.Tenant
	for _, u := range units {
		if u.mcpToken == "" {
			return nil, usagef("--mcp-listen with --tenants: tenant %s has no mcp_token_env in %s (each tenant's hosts need a token of their own)", u.tenant, c.Tenants)
		}
		cfg := c.mcpConfig(c.mcpSearch(u.late), log.With("tenant", u.tenant), prometheus.WrapRegistererWith(prometheus.Labels{"tenant": u.tenant}, metrics), version)
		cfg.Ranker = u
		cfg.Tenant = u.tenant
		srv, err := mcpserver.New(u.late, cfg)
		if err != nil {
			return nil, fmt.Errorf("mcp for tenant %s: %w", u.tenant, err)
		}
		tenants = append(tenants, mcpserver.Tenant{Name: u.tenant, Token: u.mcpToken, Server: srv})
	}
	ln, err := net.Listen("tcp", c.MCP.Listen)
	if err != nil {
		return nil, fmt.Errorf("mcp listener: %w", err)
	}
	return &mcpHTTP{ln: ln, tenants: tenants, cfg: mcpserver.HTTPConfig{AllowedOrigins: c.MCP.AllowedOrigins, Registerer: metrics}}, nil
}

// mcpSearch is the search index MCP hosts search: the unit's, with
// --skill-search.
func (c *Config) mcpSearch(l *supervise.Late) mcpserver.Searcher {
	if !c.SkillSearch {
		return nil
	}
	return l
}

// mcpConfig is the MCP server configuration of serve's front door.
func (c *Config) mcpConfig(index mcpserver.Searcher, log *slog.Logger, metrics prometheus.Registerer, version string) mcpserver.Config {
	cfg := mcpserver.Config{
		Query:              catalog.Query{Cwd: c.MCP.Cwd, Project: c.MCP.Project},
		Options:            c.catalogOptions(),
		ToolDescriptionMax: c.toolDescriptionMax(),
		Version:            version,
		Logger:             log.With("component", "mcp"),
		Registerer:         metrics,
	}
	if index != nil {
		cfg.Search = index
	}
	return cfg
}

// startMCP creates the MCP server for serve and binds its listener. index
// is the processor's search index (nil without --skill-search): hosts
// search the same one.
func (c *Config) startMCP(reg mcpserver.Registry, index mcpserver.Searcher, u *servedUnit, token string, log *slog.Logger, metrics prometheus.Registerer, version string) (*mcpHTTP, error) {
	cfg := c.mcpConfig(index, log, metrics, version)
	if u != nil {
		cfg.Ranker = u // the unit's use ranking (--catalog-rank use)
	}
	srv, err := mcpserver.New(reg, cfg)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", c.MCP.Listen)
	if err != nil {
		return nil, fmt.Errorf("mcp listener: %w", err)
	}
	return &mcpHTTP{srv: srv, ln: ln, token: token,
		cfg: mcpserver.HTTPConfig{Token: token, AllowedOrigins: c.MCP.AllowedOrigins}}, nil
}

// run serves until ctx ends: the registry follower and the HTTP endpoint.
func (m *mcpHTTP) run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if m.srv == nil {
		var wg sync.WaitGroup
		for _, t := range m.tenants {
			wg.Go(func() { _ = t.Server.Run(ctx) })
		}
		err := mcpserver.ServeTenants(ctx, m.ln, m.tenants, m.cfg)
		cancel()
		wg.Wait()
		return err
	}
	synced := make(chan error, 1)
	go func() { synced <- m.srv.Run(ctx) }()
	err := m.srv.Serve(ctx, m.ln, m.cfg)
	cancel()
	<-synced
	return err
}

func (a *app) mcpCommand() (*command, runFunc) {
	var p preview
	cmd := newCommand("mcp", "skillstream mcp [--cwd DIR] [flags]", (`
Serve skills to an MCP host over stdio: the host spawns this command and
speaks MCP on its stdin and stdout. The host sees the skills a ` + "`load`" + ` run in
DIR (the current directory by default) would see, project skills included,
through the MCP Skills extension (skills/list, skills/get, resources/read,
resources/directory/read) and, for hosts without it, the skill tool
(tools/list, tools/call). Changes to the skill folders (and to the skill
store, when one answers) reach the host as list-changed notifications.

Nothing but MCP is written to stdout; logs go to stderr. The skill store is
read when a NATS server answers (--nats-url, or a local serve on --listen);
without one the folders and bundled skills are served.

It takes the same skills flags and SKILLSTREAM_* variables as serve.`)[1:], `
  skillstream mcp
  skillstream mcp --cwd ~/src/app --skills-dir /srv/team-skills
  host configuration: {"command": "skillstream", "args": ["mcp", "--cwd", "/home/me/src/app"]}`[1:])
	p.flags(cmd, "")
	cmd.cfgString(&p.c.LogLevel, "log-level", "warn", "log `level` on stderr: debug, info, warn or error")
	cmd.group("MCP hosts")
	p.c.mcpToolFlags(cmd)
	return cmd, func(ctx context.Context, args []string) error {
		if len(args) > 0 {
			return usagef("mcp takes no arguments, got %q", args[0])
		}
		if err := p.c.validateMCPTool(); err != nil {
			return err
		}
		p.watch = true
		reg, dir, err := p.open(ctx, a, cmd.name)
		if err != nil {
			return err
		}
		defer reg.Close()
		log := p.c.newLogger(a.stderr)
		cfg := mcpserver.Config{
			Query:              p.query(dir),
			Options:            p.c.catalogOptions(),
			ToolDescriptionMax: p.c.toolDescriptionMax(),
			Version:            thisBuild().version,
			Logger:             log.With("component", "mcp"),
		}
		if p.c.SkillSearch {
			ix := search.New(reg.Registry, p.c.searchOptions())
			defer ix.Close()
			cfg.Search = ix
		}
		srv, err := mcpserver.New(reg, cfg)
		if err != nil {
			return err
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		synced := make(chan error, 1)
		go func() { synced <- srv.Run(ctx) }()
		defer func() { cancel(); <-synced }()
		in, out := a.stdio()
		return srv.ServeStdio(ctx, in, out)
	}
}

// stdio returns the streams `mcp` speaks on: the process's stdin, and
// stdout (the app's stdout, so tests can read it).
func (a *app) stdio() (io.ReadCloser, io.WriteCloser) {
	in := a.stdin
	if in == nil {
		in = os.Stdin
	}
	return io.NopCloser(in), nopWriteCloser{a.stdout}
}

type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
