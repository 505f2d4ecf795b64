// Package operator runs a real NATS server in operator mode for tests:
// an operator, accounts and users made as JWTs with the NATS jwt and nkeys
// libraries (what nsc makes in production), users' credentials files, and
// a full account resolver in a temporary folder to which accounts can be
// pushed while the server runs, as `nsc push` does.
//
// Tenants (tenants.go) builds skillstream's tenant layout on it: the
// permissions, exports and imports of the shipped deploy/tenants.conf,
// expressed as account and user JWTs.
package operator

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nkeys"
)

// Operator is a NATS operator: it signs accounts. Its system account (SYS)
// is made with it.
type Operator struct {
	t   testing.TB
	key nkeys.KeyPair
	pub string
	dir string // credentials files
	// Sys is the system account; SysUser the credentials of a user of it
	// (who may push accounts).
	Sys     *Account
	SysUser string
}

// Account is an account the operator signs, with its claims to edit
// before it is started or pushed.
type Account struct {
	Name   string
	Claims *jwt.AccountClaims
	key    nkeys.KeyPair
	op     *Operator
}

// New makes an operator and its system account.
func New(t testing.TB) *Operator {
	t.Helper()
	key, err := nkeys.CreateOperator()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := key.PublicKey()
	o := &Operator{t: t, key: key, pub: pub, dir: t.TempDir()}
	o.Sys = o.NewAccount("SYS")
	o.SysUser = o.Sys.User("sys", jwt.Permissions{})
	return o
}

// JWT is the operator's JWT, self-signed, naming its system account.
func (o *Operator) JWT() string {
	o.t.Helper()
	c := jwt.NewOperatorClaims(o.pub)
	c.Name = "skillstream-test"
	c.SystemAccount = o.Sys.Public()
	s, err := c.Encode(o.key)
	if err != nil {
		o.t.Fatalf("operator: encode: %v", err)
	}
	return s
}

// NewAccount makes an account (not yet known to any server: Start or
// Push it).
func (o *Operator) NewAccount(name string) *Account {
	o.t.Helper()
	key, err := nkeys.CreateAccount()
	if err != nil {
		o.t.Fatal(err)
	}
	pub, _ := key.PublicKey()
	c := jwt.NewAccountClaims(pub)
	c.Name = name
	return &Account{Name: name, Claims: c, key: key, op: o}
}

// Public is the account's public key: the server's name for it.
func (a *Account) Public() string { return a.Claims.Subject }

// JWT is the account's claims signed by the operator.
func (a *Account) JWT() string {
	a.op.t.Helper()
	s, err := a.Claims.Encode(a.op.key)
	if err != nil {
		a.op.t.Fatalf("account %s: encode: %v", a.Name, err)
	}
	return s
}

// User makes a user of the account with perms and writes its credentials
// file (JWT and seed, as `nsc generate creds` does); it returns the path.
func (a *Account) User(name string, perms jwt.Permissions) string {
	t := a.op.t
	t.Helper()
	key, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	pub, _ := key.PublicKey()
	c := jwt.NewUserClaims(pub)
	c.Name = name
	c.Permissions = perms
	tok, err := c.Encode(a.key)
	if err != nil {
		t.Fatalf("user %s: encode: %v", name, err)
	}
	seed, _ := key.Seed()
	creds, err := jwt.FormatUserConfig(tok, seed)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(a.op.dir, a.Name+"-"+name+".creds")
	if err := os.WriteFile(path, creds, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Export exports subject of kind (jwt.Service or jwt.Stream) privately:
// only accounts holding an activation of a (Import) may import it, as
// the accounts list of an export in a server configuration file.
func (a *Account) Export(kind jwt.ExportType, subjects ...string) {
	for _, s := range subjects {
		a.Claims.Exports.Add(&jwt.Export{Name: s, Subject: jwt.Subject(s), Type: kind, TokenReq: true})
	}
}

// Import imports subjects of kind from the account from, with an
// activation for each signed by from (`nsc generate activation`).
func (a *Account) Import(from *Account, kind jwt.ExportType, subjects ...string) {
	t := a.op.t
	t.Helper()
	for _, s := range subjects {
		act := jwt.NewActivationClaims(a.Public())
		act.Name = s
		act.ImportSubject = jwt.Subject(s)
		act.ImportType = kind
		tok, err := act.Encode(from.key)
		if err != nil {
			t.Fatalf("activation of %s for %s: %v", s, a.Name, err)
		}
		a.Claims.Imports.Add(&jwt.Import{Name: s, Subject: jwt.Subject(s), Account: from.Public(), Token: tok, Type: kind})
	}
}

// Server is a server in operator mode, listening on a loopback port.
type Server struct {
	*server.Server
	op *Operator
}

// Start runs a server in operator mode trusting o, with JetStream and a
// full resolver in a temporary folder holding accounts (and the system
// account) from the start: the configuration `nsc generate config
// --nats-resolver` writes. It stops at the end of the test.
func (o *Operator) Start(accounts ...*Account) *Server {
	t := o.t
	t.Helper()
	dir := t.TempDir()
	preload := fmt.Sprintf("  %s: %s\n", o.Sys.Public(), o.Sys.JWT())
	for _, a := range accounts {
		preload += fmt.Sprintf("  %s: %s\n", a.Public(), a.JWT())
	}
	conf := fmt.Sprintf(`
server_name: operator-test
listen: 127.0.0.1:-1
operator: %s
system_account: %s
jetstream { store_dir: %q }
resolver: { type: full, dir: %q, allow_delete: false, interval: "2m", timeout: "5s" }
resolver_preload: {
%s}
`, o.JWT(), o.Sys.Public(), filepath.Join(dir, "js"), filepath.Join(dir, "jwt"), preload)
	path := filepath.Join(dir, "server.conf")
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		t.Fatal(err)
	}
	opts, err := server.ProcessConfigFile(path)
	if err != nil {
		t.Fatalf("operator server configuration: %v", err)
	}
	opts.NoLog, opts.NoSigs = true, true
	opts.Port = server.RANDOM_PORT
	// Storage accounted against this, not against the free disk: the
	// session streams reserve their byte limits.
	opts.JetStreamMaxStore = server.JetStreamMaxStoreDefault
	srv, err := server.NewServer(opts)
	if err != nil {
		t.Fatalf("operator server: %v", err)
	}
	srv.Start()
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	if !srv.ReadyForConnections(30 * time.Second) {
		t.Fatal("operator server not ready")
	}
	return &Server{Server: srv, op: o}
}

// URL is the server's client URL.
func (s *Server) URL() string { return s.ClientURL() }

// Push sends a's JWT to the server's resolver as a system user, as `nsc
// push` does ($SYS.REQ.CLAIMS.UPDATE): a new account is known from then
// on, an updated one is updated on the servers that hold it.
func (s *Server) Push(a *Account) error {
	nc, err := nats.Connect(s.URL(), nats.UserCredentials(s.op.SysUser))
	if err != nil {
		return fmt.Errorf("push %s: connect as the system user: %w", a.Name, err)
	}
	defer nc.Close()
	m, err := nc.Request("$SYS.REQ.CLAIMS.UPDATE", []byte(a.JWT()), 10*time.Second)
	if err != nil {
		return fmt.Errorf("push %s: %w", a.Name, err)
	}
	var r struct {
		Data *struct {
			Code int `json:"code"`
		} `json:"data"`
		Error *struct {
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(m.Data, &r); err != nil {
		return fmt.Errorf("push %s: read the answer %q: %w", a.Name, m.Data, err)
	}
	if r.Error != nil || r.Data == nil || r.Data.Code != 200 {
		return fmt.Errorf("push %s: refused: %s", a.Name, m.Data)
	}
	return nil
}
