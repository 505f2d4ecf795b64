package console

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/partition"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/store"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed assets
var assetFS embed.FS

// Role is what a signed-in person may do.
type Role int

const (
	RoleNone     Role = iota
	RoleViewer        // read every page
	RoleOperator      // and act: roll back, release, promote, pin
)

func (r Role) String() string {
	switch r {
	case RoleViewer:
		return "viewer"
	case RoleOperator:
		return "operator"
	}
	return "none"
}

// Config is one tenant's console.
type Config struct {
	// Tenant names the tenant shown ("" without tenants).
	Tenant string
	// Base is the path the console is served under: "/" alone, "/acme/"
	// for tenant acme in serve's console. It starts and ends with "/".
	Base string
	// ViewerToken and OperatorToken are the secrets people sign in with;
	// at least one is required. A token signs in with its role.
	ViewerToken, OperatorToken string
	// Hosts are the Host header values (host[:port]) the console answers
	// besides loopback ones: the names people reach it by.
	Hosts []string
	// Sources are what the pages read and act on.
	Sources Sources
	// Secure marks cookies Secure (the console is reached over TLS).
	Secure bool
	Log    *slog.Logger
	Now    func() time.Time
	// Audit hears every action an operator takes (after it succeeded or
	// failed), as the CLI's audit does; nil: logged only.
	Audit func(Action)
}

// Action is one operator action, for the audit.
type Action struct {
	Tenant, Role, Remote string
	What                 string // "rollback report to 3", ...
	Err                  error
}

// Sources are what the pages read and act on: one tenant's, opened by
// the command that serves the console with the tenant's administrator
// credentials (serve: the tenant's own connection). A nil source leaves
// its part of the pages empty, saying why.
type Sources struct {
	// JS is the tenant's account: its sessions stream, store buckets and
	// usage bucket.
	JS jetstream.JetStream
	// Store is the tenant's skill store (reads, and the operators'
	// actions); nil without one.
	Store *store.Publisher
	// Library is the shared library's store, read only; nil without one.
	Library *store.Publisher
	// Registry is what the tenant's sessions are offered (folders, store,
	// library), as the processor lists it.
	Registry *providers.Registry
	// Stream is the sessions stream (SESSIONS), Layout its subject layout.
	Stream string
	Layout events.Layout
	// UsageBucket is the usage projection's bucket ("" without one).
	UsageBucket string
	// AuditConn asks the audit service who wrote what (nil: not shown).
	AuditConn *nats.Conn
	// Skills, Usage, Sessions and Fleet are each page group's own.
	Skills   SkillSources
	Usage    UsageSources
	Sessions SessionSources
	Fleet    FleetSources
	// Prefix is the sessions stream's subject prefix ("": the default),
	// which the usage projection and the session readers need.
	Prefix string
	// Place, when set, is where a session is kept: its stream and
	// subject prefix (with partitioned sessions, its partition's,
	// computed from the id alone); nil: Stream and Prefix.
	Place func(sid string) (stream, prefix string)
	// Partitions, when set, are every partition's stream and prefix:
	// the sessions pages list recent sessions, and count live ones, over
	// all of them; nil: Stream and Prefix alone.
	Partitions []partition.Place
}

// Server is one tenant's console: an http.Handler.
type Server struct {
	cfg    Config
	secret []byte // signs cookies and CSRF tokens; random per process
	tmpl   map[string]*template.Template
	mux    *http.ServeMux
	log    *slog.Logger
}

// Bounds of what a request may bring.
const (
	maxBody     = 64 << 10
	maxQuery    = 4 << 10
	sessionLife = 12 * time.Hour
)

// New makes the console of cfg.
func New(cfg Config) (*Server, error) {
	if err := CheckTokens(cfg.ViewerToken, cfg.OperatorToken); err != nil {
		return nil, err
	}
	if cfg.Base == "" {
		cfg.Base = "/"
	}
	if !strings.HasPrefix(cfg.Base, "/") || !strings.HasSuffix(cfg.Base, "/") {
		return nil, fmt.Errorf("console: base %q must start and end with /", cfg.Base)
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	s := &Server{cfg: cfg, secret: make([]byte, 32), mux: http.NewServeMux(), log: cfg.Log}
	if _, err := rand.Read(s.secret); err != nil {
		return nil, err
	}
	if err := s.parseTemplates(); err != nil {
		return nil, err
	}
	s.routes()
	return s, nil
}

// page is a route: its pattern below Base, the least role it needs, and
// its handler.
type page struct {
	method, path string
	role         Role
	h            func(http.ResponseWriter, *http.Request) error
}

func (s *Server) routes() {
	assets, _ := fs.Sub(assetFS, "assets")
	files := http.StripPrefix(s.cfg.Base+"assets/", http.FileServerFS(assets))
	s.mux.Handle("GET "+s.cfg.Base+"assets/", files)
	s.mux.HandleFunc("GET "+s.cfg.Base+"login", s.loginForm)
	s.mux.HandleFunc("POST "+s.cfg.Base+"login", s.login)
	s.mux.HandleFunc("POST "+s.cfg.Base+"logout", s.logout)
	var pages []page
	pages = append(pages, s.skillPages()...)
	pages = append(pages, s.usagePages()...)
	pages = append(pages, s.sessionPages()...)
	pages = append(pages, s.fleetPages()...)
	for _, p := range pages {
		s.mux.Handle(p.method+" "+s.cfg.Base+p.path, s.guard(p))
	}
	// The console's root is the skills page.
	if !hasRoot(pages) {
		s.mux.HandleFunc("GET "+s.cfg.Base+"{$}", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, s.cfg.Base+"skills", http.StatusSeeOther)
		})
	}
}

func hasRoot(ps []page) bool {
	for _, p := range ps {
		if p.path == "{$}" {
			return true
		}
	}
	return false
}

// ServeHTTP checks what every request must pass (its Host, its size),
// sets the security headers, and routes it.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
	if !s.hostAllowed(r.Host) {
		http.Error(w, "console: unknown Host "+strconv.Quote(r.Host)+": reach the console by a name it was started with", http.StatusMisdirectedRequest)
		return
	}
	if len(r.URL.RawQuery) > maxQuery {
		http.Error(w, "console: query too long", http.StatusRequestURITooLong)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	s.mux.ServeHTTP(w, r)
}

func (s *Server) hostAllowed(host string) bool {
	if loopback(host) {
		return true
	}
	for _, h := range s.cfg.Hosts {
		if strings.EqualFold(h, host) {
			return true
		}
	}
	return false
}

// loopback reports whether host (with or without a port) names the
// loopback interface.
func loopback(host string) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.TrimPrefix(host, "["), "]")
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// guard runs p for a signed-in person of at least p's role; a POST must
// also come from the console's own origin and carry its CSRF token.
func (s *Server) guard(p page) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sess, ok := s.session(r)
		if !ok {
			if r.Method == http.MethodGet {
				http.Redirect(w, r, s.cfg.Base+"login?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return
			}
			s.fail(w, r, http.StatusUnauthorized, errors.New("sign in first"))
			return
		}
		if sess.role < p.role {
			s.fail(w, r, http.StatusForbidden, fmt.Errorf("the %s role may not do this: it needs the %s role", sess.role, p.role))
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if err := s.checkPost(r, sess); err != nil {
				s.fail(w, r, http.StatusForbidden, err)
				return
			}
		}
		r = r.WithContext(withSession(r.Context(), sess))
		if err := p.h(w, r); err != nil {
			status := http.StatusInternalServerError
			var he *httpError
			if errors.As(err, &he) {
				status = he.status
			}
			s.fail(w, r, status, err)
		}
	})
}

// httpError is an error with the status it answers.
type httpError struct {
	status int
	err    error
}

func (e *httpError) Error() string { return e.err.Error() }
func (e *httpError) Unwrap() error { return e.err }

// NotFound and BadRequest are errors a page returns for what it was
// asked.
func NotFound(format string, args ...any) error {
	return &httpError{http.StatusNotFound, fmt.Errorf(format, args...)}
}
func BadRequest(format string, args ...any) error {
	return &httpError{http.StatusBadRequest, fmt.Errorf(format, args...)}
}

// checkPost refuses a state-changing request from another origin or
// without the session's CSRF token.
func (s *Server) checkPost(r *http.Request, sess session) error {
	origin := r.Header.Get("Origin")
	if origin == "" {
		origin = r.Header.Get("Referer")
	}
	if origin == "" {
		return errors.New("a form without Origin or Referer: refused (send it from the console's own page)")
	}
	u, err := url.Parse(origin)
	if err != nil || !strings.EqualFold(u.Host, r.Host) {
		return fmt.Errorf("a form from %q, not this console: refused", origin)
	}
	if err := r.ParseForm(); err != nil {
		return fmt.Errorf("form: %v", err)
	}
	want := s.csrf(sess)
	got := r.PostForm.Get("csrf")
	if got == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		return errors.New("the form's CSRF token is missing or wrong: reload the page and try again")
	}
	return nil
}

// A session is a signed cookie: role, expiry and a random id.
type session struct {
	role    Role
	expires time.Time
	id      string
}

func (s *Server) cookieName() string { return "skillstream_console" }

func (s *Server) sign(v string) string {
	m := hmac.New(sha256.New, s.secret)
	m.Write([]byte(v))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

func (s *Server) session(r *http.Request) (session, bool) {
	c, err := r.Cookie(s.cookieName())
	if err != nil || len(c.Value) > 512 {
		return session{}, false
	}
	v, mac, ok := strings.Cut(c.Value, "~")
	if !ok || subtle.ConstantTimeCompare([]byte(mac), []byte(s.sign(v))) != 1 {
		return session{}, false
	}
	parts := strings.Split(v, ".")
	if len(parts) != 3 {
		return session{}, false
	}
	role, err1 := strconv.Atoi(parts[0])
	exp, err2 := strconv.ParseInt(parts[1], 10, 64)
	if err1 != nil || err2 != nil || role < int(RoleViewer) || role > int(RoleOperator) {
		return session{}, false
	}
	sess := session{role: Role(role), expires: time.Unix(exp, 0), id: parts[2]}
	if s.cfg.Now().After(sess.expires) {
		return session{}, false
	}
	return sess, true
}

func (s *Server) csrf(sess session) string { return s.sign("csrf." + sess.id) }

func (s *Server) loginForm(w http.ResponseWriter, r *http.Request) {
	s.render(w, r, http.StatusOK, "login.html", map[string]any{"Next": safeNext(s.cfg.Base, r.URL.Query().Get("next"))})
}

// safeNext keeps a post-login redirect within the console.
func safeNext(base, next string) string {
	if !strings.HasPrefix(next, base) || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return base
	}
	return next
}

func (s *Server) login(w http.ResponseWriter, r *http.Request) {
	// A login form comes from the console's own page too.
	if o := r.Header.Get("Origin"); o != "" {
		if u, err := url.Parse(o); err != nil || !strings.EqualFold(u.Host, r.Host) {
			s.fail(w, r, http.StatusForbidden, fmt.Errorf("a sign-in from %q, not this console: refused", o))
			return
		}
	}
	if err := r.ParseForm(); err != nil {
		s.fail(w, r, http.StatusBadRequest, err)
		return
	}
	tok := r.PostForm.Get("token")
	role := RoleNone
	if s.cfg.OperatorToken != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.OperatorToken)) == 1 {
		role = RoleOperator
	} else if s.cfg.ViewerToken != "" && subtle.ConstantTimeCompare([]byte(tok), []byte(s.cfg.ViewerToken)) == 1 {
		role = RoleViewer
	}
	if role == RoleNone {
		s.log.Warn("console: a sign-in with a wrong token", "tenant", s.cfg.Tenant, "remote", r.RemoteAddr)
		time.Sleep(200 * time.Millisecond) // no quick guessing
		s.render(w, r, http.StatusUnauthorized, "login.html", map[string]any{"Next": safeNext(s.cfg.Base, r.PostForm.Get("next")), "Error": "That token is not this console's."})
		return
	}
	var id [16]byte
	_, _ = rand.Read(id[:])
	exp := s.cfg.Now().Add(sessionLife)
	v := fmt.Sprintf("%d.%d.%s", role, exp.Unix(), hex.EncodeToString(id[:]))
	http.SetCookie(w, &http.Cookie{Name: s.cookieName(), Value: v + "~" + s.sign(v), Path: s.cfg.Base, HttpOnly: true,
		Secure: s.cfg.Secure, SameSite: http.SameSiteStrictMode, Expires: exp})
	http.Redirect(w, r, safeNext(s.cfg.Base, r.PostForm.Get("next")), http.StatusSeeOther)
}

func (s *Server) logout(w http.ResponseWriter, r *http.Request) {
	sess, ok := s.session(r)
	if ok {
		if err := s.checkPost(r, sess); err != nil {
			s.fail(w, r, http.StatusForbidden, err)
			return
		}
	}
	http.SetCookie(w, &http.Cookie{Name: s.cookieName(), Value: "", Path: s.cfg.Base, MaxAge: -1, HttpOnly: true, SameSite: http.SameSiteStrictMode})
	http.Redirect(w, r, s.cfg.Base+"login", http.StatusSeeOther)
}

// audit reports an operator's action.
func (s *Server) audit(r *http.Request, what string, err error) {
	sess, _ := sessionOf(r.Context())
	a := Action{Tenant: s.cfg.Tenant, Role: sess.role.String(), Remote: r.RemoteAddr, What: what, Err: err}
	if err != nil {
		s.log.Warn("console action failed", "tenant", a.Tenant, "role", a.Role, "remote", a.Remote, "action", what, "err", err)
	} else {
		s.log.Info("console action", "tenant", a.Tenant, "role", a.Role, "remote", a.Remote, "action", what)
	}
	if s.cfg.Audit != nil {
		s.cfg.Audit(a)
	}
}
