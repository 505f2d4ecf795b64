package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"go.yaml.in/yaml/v3"

	"github.com/skillstream/skillstream/processor"
)

// Tenants. One serve (and every member of its group) serves several
// tenants, each a NATS account of its own: the tenant's SESSIONS stream and
// skill store live in its account, and the processor reaches them over one
// connection per tenant, with that tenant's credentials. The tenant of a
// trigger is therefore the account the server delivered it in: nothing a
// worker writes can name another tenant. An optional shared library, an
// operator-curated skill store in an account of its own, is read over one
// more connection and offered to every tenant below the tenant's own store.
//
// The tenants file (--tenants FILE) names them:
//
//	library:                       # optional
//	  user: library-reader
//	  password_env: SKILLSTREAM_LIBRARY_PASSWORD
//	  bucket: LIBRARY              # index bucket (default LIBRARY); objects likewise
//	audit:                         # optional
//	  user: auditor
//	  password_env: SKILLSTREAM_AUDITOR_PASSWORD
//	tenants:
//	  - name: acme
//	    user: skillstream
//	    password_env: ACME_PROCESSOR_PASSWORD
//	    mcp_token_env: ACME_MCP_TOKEN   # bearer token of acme's MCP hosts (serve --mcp-listen)
//	    console_token_env: ACME_CONSOLE_TOKEN                   # acme's console viewers (serve --console-listen)
//	    console_operator_token_env: ACME_CONSOLE_OPERATOR_TOKEN # and its operators
//	  - name: globex
//	    creds: /etc/skillstream/globex.creds
//
// Credentials are given as for --nats-url: user and password (the password
// read from the environment variable password_env, never written in the
// file), token_env, nkey (a seed file) or creds (a JWT credentials file).

// tenantsFile is the --tenants file.
type tenantsFile struct {
	Library *tenantAuth `yaml:"library"`
	// Audit is the audit service's account (optional): serve connects to
	// it and records who writes each tenant's store and the library
	// (providers/store/audit).
	Audit   *tenantAuth   `yaml:"audit"`
	Tenants []tenantEntry `yaml:"tenants"`
	path    string
}

// tenantAuth is how to connect as one tenant (or as the library reader).
type tenantAuth struct {
	User        string `yaml:"user"`
	PasswordEnv string `yaml:"password_env"`
	TokenEnv    string `yaml:"token_env"`
	NKey        string `yaml:"nkey"`
	Creds       string `yaml:"creds"`
	// The library's buckets (library only): index and objects.
	Bucket  string `yaml:"bucket"`
	Objects string `yaml:"objects"`
}

// tenantEntry is one tenant.
type tenantEntry struct {
	Name        string `yaml:"name"`
	tenantAuth  `yaml:",inline"`
	MCPTokenEnv string `yaml:"mcp_token_env"`
	// ConsoleTokenEnv and ConsoleOperatorTokenEnv name the variables
	// holding the tokens people sign in to the tenant's operator console
	// with (serve --console-listen), as viewers and as operators.
	ConsoleTokenEnv         string `yaml:"console_token_env"`
	ConsoleOperatorTokenEnv string `yaml:"console_operator_token_env"`
	// MaxBytes bounds the tenant's SESSIONS stream ("2GiB"; default
	// serve's --max-bytes): it must fit the account's JetStream limit.
	MaxBytes string `yaml:"max_bytes"`
	// Workers is how many triggers of the tenant are handled at once
	// (default serve's --workers): each tenant has workers of its own.
	Workers int `yaml:"workers"`
	// MaxTriggerRate bounds the tenant's triggers started per second by
	// each member (default serve's --max-trigger-rate): a tenant flooding
	// its sessions waits on its own stream, not on the others' CPU.
	MaxTriggerRate int `yaml:"max_trigger_rate"`
	maxBytes       int64
}

// libraryTenant is the name --tenant takes for the library's credentials
// (skills push to the library, for one); no tenant may be called so.
const libraryTenant = "library"

// defaultLibraryBucket names the library's index bucket and object store
// when the file does not: not the tenants' SKILLS, so that a worker's
// account can import direct reads of both object stores side by side.
const defaultLibraryBucket = "LIBRARY"

var tenantNameRE = regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,31}$`)

// loadTenants reads and checks the tenants file at path: every tenant
// named once, with a valid name and exactly one way to authenticate whose
// secret is there (the environment variable set, the file readable).
func loadTenants(path string) (*tenantsFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, usagef("--tenants: %v", err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(b))
	dec.KnownFields(true)
	var f tenantsFile
	if err := dec.Decode(&f); err != nil {
		return nil, usagef("--tenants %s: %v", path, err)
	}
	f.path = path
	if len(f.Tenants) == 0 {
		return nil, usagef("--tenants %s: no tenants listed (want a list under \"tenants:\")", path)
	}
	seen := map[string]bool{}
	for i, t := range f.Tenants {
		switch {
		case t.Name == "":
			return nil, usagef("--tenants %s: tenant %d has no name", path, i+1)
		case !tenantNameRE.MatchString(t.Name):
			return nil, usagef("--tenants %s: tenant name %q: want 1 to 32 lowercase letters, digits, '-' or '_', starting with a letter or digit", path, t.Name)
		case t.Name == libraryTenant:
			return nil, usagef("--tenants %s: a tenant may not be called %q (that name means the shared library's credentials)", path, libraryTenant)
		case seen[t.Name]:
			return nil, usagef("--tenants %s: tenant %q is listed twice", path, t.Name)
		case t.Bucket != "" || t.Objects != "":
			return nil, usagef("--tenants %s: tenant %q: bucket and objects are the library's settings (a tenant's store is named by --skill-store)", path, t.Name)
		}
		seen[t.Name] = true
		if t.MaxBytes != "" {
			n, err := parseBytes(t.MaxBytes)
			if err != nil || n <= 0 {
				return nil, usagef("--tenants %s: tenant %q: max_bytes %q: want a size such as 2GiB", path, t.Name, t.MaxBytes)
			}
			f.Tenants[i].maxBytes = n
		}
		if t.MaxTriggerRate < 0 {
			return nil, usagef("--tenants %s: tenant %q: max_trigger_rate %d: want triggers per second (or none for serve's --max-trigger-rate)", path, t.Name, t.MaxTriggerRate)
		}
		if t.Workers < 0 {
			return nil, usagef("--tenants %s: tenant %q: workers %d: want at least 1 (or none for serve's --workers)", path, t.Name, t.Workers)
		}
		if err := t.check(); err != nil {
			return nil, usagef("--tenants %s: tenant %q: %v", path, t.Name, err)
		}
	}
	if f.Library != nil {
		if err := f.Library.check(); err != nil {
			return nil, usagef("--tenants %s: library: %v", path, err)
		}
		if f.Library.Bucket == "" {
			f.Library.Bucket = defaultLibraryBucket
		}
		if f.Library.Objects == "" {
			f.Library.Objects = f.Library.Bucket
		}
	}
	if f.Audit != nil {
		if err := f.Audit.check(); err != nil {
			return nil, usagef("--tenants %s: audit: %v", path, err)
		}
		if f.Audit.Bucket != "" || f.Audit.Objects != "" {
			return nil, usagef("--tenants %s: audit: bucket and objects are the library's settings", path)
		}
	}
	return &f, nil
}

// auditTenant names the audit account's credentials among the secrets.
const auditTenant = "(audit)" // never a tenant's name (see tenantNameRE)

// secretsNeeded says which secrets of a tenants file a command needs:
// serve every tenant's and the library's (and, with --mcp-listen, every
// tenant's MCP token), a command acting for one tenant that tenant's only.
type secretsNeeded struct {
	tenants []string // names; libraryTenant for the library
	mcp     bool
	console bool // the console tokens (serve --console-listen)
}

// checkSecrets reports, all at once, every environment variable of f that
// need names and that is not set, and every credentials file that cannot
// be read, each with what it is for.
func (f *tenantsFile) checkSecrets(need secretsNeeded) error {
	var missing, unreadable []string
	add := func(who string, a tenantAuth) {
		for _, v := range []struct{ key, name string }{{"password_env", a.PasswordEnv}, {"token_env", a.TokenEnv}} {
			if v.name != "" && os.Getenv(v.name) == "" {
				missing = append(missing, fmt.Sprintf("%s (%s's %s)", v.name, who, v.key))
			}
		}
		for _, file := range []string{a.NKey, a.Creds} {
			if file == "" {
				continue
			}
			if _, err := os.ReadFile(file); err != nil {
				unreadable = append(unreadable, fmt.Sprintf("%s's credentials: %v", who, err))
			}
		}
	}
	for _, name := range need.tenants {
		if name == libraryTenant {
			if f.Library != nil {
				add("the library", *f.Library)
			}
			continue
		}
		if name == auditTenant {
			if f.Audit != nil {
				add("the audit service", *f.Audit)
			}
			continue
		}
		for _, t := range f.Tenants {
			if t.Name != name {
				continue
			}
			add("tenant "+t.Name, t.tenantAuth)
			if need.mcp && t.MCPTokenEnv != "" && os.Getenv(t.MCPTokenEnv) == "" {
				missing = append(missing, fmt.Sprintf("%s (tenant %s's mcp_token_env, for --mcp-listen)", t.MCPTokenEnv, t.Name))
			}
			for _, v := range []struct{ key, name string }{{"console_token_env", t.ConsoleTokenEnv}, {"console_operator_token_env", t.ConsoleOperatorTokenEnv}} {
				if need.console && v.name != "" && os.Getenv(v.name) == "" {
					missing = append(missing, fmt.Sprintf("%s (tenant %s's %s, for --console-listen)", v.name, t.Name, v.key))
				}
			}
		}
	}
	var msgs []string
	if len(missing) > 0 {
		msgs = append(msgs, fmt.Sprintf("not set in the environment: %s; set each to the secret of its user in the NATS server's configuration (skillstream tenants init writes every variable of the shipped files to one env file)", strings.Join(missing, ", ")))
	}
	msgs = append(msgs, unreadable...)
	if len(msgs) > 0 {
		return inputf("--tenants %s: %s", f.path, strings.Join(msgs, "; "))
	}
	return nil
}

// everyone is what serve needs: every tenant, and the library.
func (f *tenantsFile) everyone(mcp bool) secretsNeeded {
	return secretsNeeded{tenants: append(f.names(), libraryTenant, auditTenant), mcp: mcp}
}

// check reports credentials that are missing or given twice; the secrets
// they name are checked by checkSecrets, for the tenants a command needs.
func (a tenantAuth) check() error {
	n := 0
	for _, set := range []bool{a.User != "", a.TokenEnv != "", a.NKey != "", a.Creds != ""} {
		if set {
			n++
		}
	}
	switch {
	case n == 0:
		return errors.New("no credentials: give user and password_env, token_env, nkey or creds")
	case n > 1:
		return errors.New("more than one kind of credentials: give one of user, token_env, nkey, creds")
	case a.User != "" && a.PasswordEnv == "":
		return fmt.Errorf("user %q without password_env (the environment variable holding its password)", a.User)
	case a.PasswordEnv != "" && a.User == "":
		return errors.New("password_env without user")
	}
	return nil
}

// find returns the credentials of tenant name ("library": the library's).
func (f *tenantsFile) find(name string) (tenantAuth, bool) {
	if name == libraryTenant {
		if f.Library == nil {
			return tenantAuth{}, false
		}
		return *f.Library, true
	}
	for _, t := range f.Tenants {
		if t.Name == name {
			return t.tenantAuth, true
		}
	}
	return tenantAuth{}, false
}

// names lists the tenants, for messages.
func (f *tenantsFile) names() []string {
	out := make([]string, len(f.Tenants))
	for i, t := range f.Tenants {
		out[i] = t.Name
	}
	return out
}

// options are the connection options of these credentials.
func (a tenantAuth) options() ([]nats.Option, error) {
	switch {
	case a.User != "":
		return []nats.Option{nats.UserInfo(a.User, os.Getenv(a.PasswordEnv))}, nil
	case a.TokenEnv != "":
		return []nats.Option{nats.Token(os.Getenv(a.TokenEnv))}, nil
	case a.NKey != "":
		o, err := nats.NkeyOptionFromSeed(a.NKey)
		if err != nil {
			return nil, fmt.Errorf("read nkey %s: %w", a.NKey, err)
		}
		return []nats.Option{o}, nil
	}
	return []nats.Option{nats.UserCredentials(a.Creds)}, nil
}

// useTenant makes c connect as tenant name of the tenants file: its
// credentials replace the --nats-* ones, and for the library its buckets
// become the skill store's. Commands other than serve act for one tenant.
func (c *Config) useTenant() error {
	if c.Tenants == "" {
		if c.Tenant != "" {
			return usagef("--tenant %s needs --tenants FILE (the file that names the tenants and their credentials)", c.Tenant)
		}
		return nil
	}
	f, err := loadTenants(c.Tenants)
	if err != nil {
		return err
	}
	if c.Tenant == "" {
		return usagef("--tenants %s: name the tenant to act for with --tenant (one of %v, or %s)", c.Tenants, f.names(), libraryTenant)
	}
	auth, ok := f.find(c.Tenant)
	if !ok {
		return usagef("--tenant %s: not in %s (tenants: %v)", c.Tenant, c.Tenants, f.names())
	}
	// Only the secrets of the tenant acted for: an administrator's file
	// may list the others without their passwords being set.
	if err := f.checkSecrets(secretsNeeded{tenants: []string{c.Tenant}}); err != nil {
		return err
	}
	c.tenantsFile = f
	c.tenantAuth = &auth
	// A tenant's processor user and the library's reader may subscribe to
	// skillstream's own inboxes only (see deploy/tenants.conf): the
	// command's requests take their answers there.
	if c.InboxPrefix == "" {
		c.InboxPrefix = processor.DefaultInboxPrefix
	}
	if c.Tenant == libraryTenant {
		c.SkillStoreBucket, c.SkillStoreObjects = auth.Bucket, auth.Objects
	} else if f.Library != nil {
		lib := *f.Library
		c.libraryAuth = &lib
	}
	return nil
}

// dialLibrary connects to the shared library when c acts for a tenant of
// a file that has one (useTenant), and has the registry offer it below the
// tenant's store, as serve does; otherwise it does nothing.
func (c *Config) dialLibrary(stderr io.Writer) (func(), error) {
	if c.libraryAuth == nil {
		return func() {}, nil
	}
	if err := c.tenantsFile.checkSecrets(secretsNeeded{tenants: []string{libraryTenant}}); err != nil {
		return nil, err
	}
	nc, err := c.connectTenant(c.newLogger(stderr), libraryTenant, *c.libraryAuth)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("library: jetstream context: %w", err)
	}
	c.library = &libraryStore{js: js, bucket: c.libraryAuth.Bucket, objects: c.libraryAuth.Objects}
	return nc.Close, nil
}

// connectTenant connects to the cluster with a's credentials and the
// other connection settings of c.
func (c *Config) connectTenant(log *slog.Logger, name string, a tenantAuth) (*nats.Conn, error) {
	opts, err := c.connectOptions(log)
	if err != nil {
		return nil, err
	}
	creds, err := a.options()
	if err != nil {
		return nil, fmt.Errorf("tenant %s: %w", name, err)
	}
	opts = append(opts, creds...)
	opts = append(opts, nats.Name("skillstream "+c.ToolOwner+" tenant "+name))
	nc, err := nats.Connect(c.NATSURL, opts...)
	if err != nil {
		return nil, fmt.Errorf("tenant %s: connect to %s: %w", name, c.NATSURL, err)
	}
	return nc, nil
}

// accountOf asks the server which account nc's user belongs to.
func accountOf(ctx context.Context, nc *nats.Conn) (string, error) {
	m, err := nc.RequestWithContext(ctx, "$SYS.REQ.USER.INFO", nil)
	if err != nil {
		return "", fmt.Errorf("ask the server which account these credentials belong to ($SYS.REQ.USER.INFO; the user must be allowed to publish there): %w", err)
	}
	var r struct {
		Data *struct {
			Account string `json:"account"`
		} `json:"data"`
		Error *struct {
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &r); err != nil {
		return "", fmt.Errorf("read the server's user info: %w", err)
	}
	if r.Error != nil || r.Data == nil || r.Data.Account == "" {
		return "", fmt.Errorf("the server gave no account for these credentials: %s", m.Data)
	}
	return r.Data.Account, nil
}

// tenantConn is one tenant's connection, checked.
type tenantConn struct {
	name     string
	nc       *nats.Conn
	js       jetstream.JetStream
	account  string
	mcpToken string
	// The tenant's console tokens (viewer, operator), with --console-listen.
	consoleToken, consoleOperatorToken string
	maxBytes                           int64 // 0: serve's
	workers                            int   // 0: serve's
	rate                               int   // 0: serve's
}

// connectTenants connects to every tenant of f and to the library, and
// checks what serve needs before anything is created: each connects, each
// is in an account of its own (no two tenants, and not the library, in one
// account), and each account has JetStream. On an error every connection
// made is closed and the error names the tenant and why.
func (c *Config) connectTenants(ctx context.Context, log *slog.Logger, f *tenantsFile) (tenants []tenantConn, library *tenantConn, err error) {
	defer func() {
		if err != nil {
			for _, t := range tenants {
				t.nc.Close()
			}
			if library != nil {
				library.nc.Close()
			}
			tenants, library = nil, nil
		}
	}()
	byAccount := map[string]string{}
	open := func(name string, a tenantAuth) (tenantConn, error) {
		nc, err := c.connectTenant(log, name, a)
		if err != nil {
			return tenantConn{}, err
		}
		t := tenantConn{name: name, nc: nc}
		actx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		if t.account, err = accountOf(actx, nc); err != nil {
			nc.Close()
			return tenantConn{}, fmt.Errorf("tenant %s: %w", name, err)
		}
		if other, ok := byAccount[t.account]; ok {
			nc.Close()
			return tenantConn{}, fmt.Errorf("tenants %s and %s are both in account %s: each tenant needs an account of its own (its sessions and skills are kept there)", other, name, t.account)
		}
		byAccount[t.account] = name
		if t.js, err = jetstream.New(nc); err == nil {
			_, err = t.js.AccountInfo(actx)
		}
		if err != nil {
			nc.Close()
			if errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) || errors.Is(err, jetstream.ErrJetStreamNotEnabled) {
				return tenantConn{}, fmt.Errorf("tenant %s: account %s has no JetStream: enable it for the account (its sessions and skill store live there)", name, t.account)
			}
			return tenantConn{}, fmt.Errorf("tenant %s: JetStream of account %s: %w", name, t.account, err)
		}
		return t, nil
	}
	if f.Library != nil {
		l, err := open(libraryTenant, *f.Library)
		if err != nil {
			return nil, nil, err
		}
		library = &l
	}
	for _, e := range f.Tenants {
		t, err := open(e.Name, e.tenantAuth)
		if err != nil {
			return tenants, library, err
		}
		if e.MCPTokenEnv != "" {
			t.mcpToken = os.Getenv(e.MCPTokenEnv)
		}
		t.consoleToken, t.consoleOperatorToken = os.Getenv(e.ConsoleTokenEnv), os.Getenv(e.ConsoleOperatorTokenEnv)
		t.maxBytes, t.workers, t.rate = e.maxBytes, e.Workers, e.MaxTriggerRate
		tenants = append(tenants, t)
	}
	return tenants, library, nil
}

// connectAudit connects to the audit service's account of f: an account
// of its own (no tenant's, not the library's), with JetStream, where the
// audit streams are kept.
func (c *Config) connectAudit(ctx context.Context, log *slog.Logger, f *tenantsFile, tenants []tenantConn, lib *tenantConn) (*tenantConn, error) {
	nc, err := c.connectTenant(log, "audit", *f.Audit)
	if err != nil {
		return nil, err
	}
	actx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	t := &tenantConn{name: auditTenant, nc: nc}
	if t.account, err = accountOf(actx, nc); err != nil {
		nc.Close()
		return nil, fmt.Errorf("audit: %w", err)
	}
	others := tenants
	if lib != nil {
		others = append(slices.Clip(others), *lib)
	}
	for _, o := range others {
		if o.account == t.account {
			nc.Close()
			return nil, fmt.Errorf("audit: the audit service's account %s is also %s's: it needs an account of its own, which no tenant can write", t.account, o.name)
		}
	}
	if t.js, err = jetstream.New(nc); err == nil {
		_, err = t.js.AccountInfo(actx)
	}
	if err != nil {
		nc.Close()
		return nil, fmt.Errorf("audit: JetStream of account %s (the audit records are kept there): %w", t.account, err)
	}
	return t, nil
}

// natsUserName is the user c connects as, when it is named (a tenant's
// user, or --nats-user); "" otherwise.
func (c *Config) natsUserName() string {
	if c.tenantAuth != nil {
		return c.tenantAuth.User
	}
	return c.NATSUser
}
