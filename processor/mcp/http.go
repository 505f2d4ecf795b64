package mcp

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/client_golang/prometheus"
)

// Path is where the Streamable HTTP endpoint is served.
const Path = "/mcp"

// Defaults of HTTPConfig.
const (
	DefaultMaxBodyBytes   = 1 << 20
	DefaultMaxHeaderBytes = 16 << 10
	DefaultSessionTimeout = 30 * time.Minute
	DefaultMaxSessions    = 1000
	DefaultBodyTimeout    = 10 * time.Second
	DefaultWriteTimeout   = 30 * time.Second
	// DefaultMaxConns leaves room for an event stream and a request
	// connection of every session DefaultMaxSessions allows.
	DefaultMaxConns = 2 * DefaultMaxSessions
	// DefaultMaxUnauthenticatedPerAddr bounds the connections of one
	// address that no request has authenticated yet: an honest client's
	// are so only until its first request's headers are in.
	DefaultMaxUnauthenticatedPerAddr = 32
	// DefaultMaxUnauthenticated bounds them in all.
	DefaultMaxUnauthenticated = DefaultMaxConns
)

// Timeouts of Serve's server. A request's headers must arrive within
// headerTimeout of its first byte being awaited: a client without a valid
// token holds a connection no longer than that, since a refused request
// closes its connection at once. A refused request's body gets
// refusedGrace to arrive whole (a client that sent it at once gets a
// clean close); a slower one is cut off unread.
const (
	headerTimeout = 5 * time.Second
	refusedGrace  = 500 * time.Millisecond
)

// HTTPConfig configures the Streamable HTTP endpoint.
type HTTPConfig struct {
	// Token, when not empty, is the bearer token every request must carry
	// (Authorization: Bearer <token>); others get 401.
	Token string
	// AllowedOrigins are origins ("https://host[:port]") a browser may
	// send requests from, besides loopback ones (http or https on
	// localhost, 127.0.0.1 or [::1], any port). A request with any other
	// Origin header gets 403; one without Origin (not from a browser) is
	// not judged by it.
	AllowedOrigins []string
	// MaxBodyBytes bounds a request body (413 beyond).
	MaxBodyBytes int64
	// BodyTimeout bounds the time an accepted request's body takes to
	// arrive, from the end of its headers (default DefaultBodyTimeout):
	// a slower body is refused with 400 and its connection closed.
	BodyTimeout time.Duration
	// WriteTimeout bounds how long one write of a response may wait for
	// the client to read (default DefaultWriteTimeout): an event stream
	// whose client stops reading is closed then, as is its connection,
	// instead of holding them (and the notifications waiting behind its
	// write) for ever. Each write of at most 64 KiB gets it anew, so a
	// stream that stays open without events, or a large answer read
	// steadily, is not cut.
	WriteTimeout time.Duration
	// MaxConns bounds the authenticated connections Serve keeps open at
	// once (default DefaultMaxConns): a connection takes a slot once a
	// request on it passes the token and origin checks, and keeps it until
	// it closes; a request beyond waits for one (at most 30 s, then 503).
	MaxConns int
	// MaxUnauthenticatedPerAddr bounds the connections of one remote
	// address (an IPv4 address, an IPv6 /64) that Serve holds before any
	// of their requests authenticated (default
	// DefaultMaxUnauthenticatedPerAddr); MaxUnauthenticated bounds them in
	// all (default DefaultMaxUnauthenticated). A connection beyond either
	// is closed as soon as it is accepted.
	MaxUnauthenticatedPerAddr int
	MaxUnauthenticated        int
	// HeaderTimeout is how long a request's headers may take to arrive
	// (default headerTimeout): what a silent connection may hold.
	HeaderTimeout time.Duration
	// Registerer gets the listener's metrics (connections refused and
	// open); Serve defaults it to the server's Config.Registerer.
	Registerer prometheus.Registerer
	// SessionTimeout closes sessions idle for that long.
	SessionTimeout time.Duration
	// MaxSessions bounds the open sessions: an initialize beyond gets 503.
	MaxSessions int
}

// Handler returns the HTTP handler of the Streamable HTTP endpoint at
// Path. Requests of the stateless revision (2026-07-28: per-request
// metadata, no initialize) go to the SDK's stateless handler; an
// initialize and every request of its session (Mcp-Session-Id) to the
// stateful one, whose sessions receive list-changed notifications.
func (s *Server) Handler(cfg HTTPConfig) http.Handler {
	if cfg.MaxBodyBytes <= 0 {
		cfg.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if cfg.SessionTimeout <= 0 {
		cfg.SessionTimeout = DefaultSessionTimeout
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = DefaultMaxSessions
	}
	if cfg.BodyTimeout <= 0 {
		cfg.BodyTimeout = DefaultBodyTimeout
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = DefaultWriteTimeout
	}
	get := func(*http.Request) *sdk.Server { return s.sdk }
	h := &front{
		s:         s,
		cfg:       cfg,
		allowed:   map[string]bool{},
		stateful:  sdk.NewStreamableHTTPHandler(get, &sdk.StreamableHTTPOptions{Logger: s.log, MaxRequestBodyBytes: cfg.MaxBodyBytes, SessionTimeout: cfg.SessionTimeout}),
		stateless: sdk.NewStreamableHTTPHandler(get, &sdk.StreamableHTTPOptions{Stateless: true, Logger: s.log, MaxRequestBodyBytes: cfg.MaxBodyBytes, PropagateRequestCancellation: true}),
	}
	if cfg.Token != "" {
		sum := sha256.Sum256([]byte(cfg.Token))
		h.token = sum[:]
	}
	for _, o := range cfg.AllowedOrigins {
		h.allowed[strings.ToLower(strings.TrimSuffix(o, "/"))] = true
	}
	h.mux = http.NewServeMux()
	h.mux.HandleFunc(Path, h.serveMCP)
	return h
}

// front is the endpoint's front door: every request, whatever its path,
// passes its checks (origin, token, then a connection slot) before it is
// routed, so a client without the token learns nothing of the paths and
// holds no slot.
type front struct {
	s                   *Server
	cfg                 HTTPConfig
	token               []byte // SHA-256 of the token; nil: none required
	allowed             map[string]bool
	stateful, stateless http.Handler
	mux                 *http.ServeMux // Path; 404 elsewhere
}

func (h *front) refuse(w http.ResponseWriter, r *http.Request, status int, reason, msg string) {
	if rec, ok := w.(*recorder); ok {
		rec.ours = true
	}
	h.s.metrics.refused.WithLabelValues(reason).Inc()
	h.s.log.Debug("mcp http request refused", "reason", reason, "status", status, "remote", r.RemoteAddr,
		"origin", quote(r.Header.Get("Origin")), "host", quote(r.Host))
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", `Bearer realm="skillstream"`)
	}
	// A refused request's connection is closed once the answer is sent,
	// without reading what is left of its body: net/http would otherwise
	// read up to 256 KiB of it, for as long as the server's read timeout
	// allows, to keep the connection for another request. "Connection:
	// close" skips that read before the answer; the read deadline bounds
	// the one that closing the body makes after it.
	w.Header().Set("Connection", "close")
	http.Error(w, msg, status)
	_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(refusedGrace))
}

func (h *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// Every write has a deadline (see recorder): a connection's last one
	// would otherwise stay in force for its next request, and the server
	// has no write timeout of its own (event streams last).
	rc := http.NewResponseController(w)
	_ = rc.SetWriteDeadline(time.Now().Add(h.cfg.WriteTimeout))
	if o := r.Header.Get("Origin"); o != "" && !h.originAllowed(o) {
		h.refuse(w, r, http.StatusForbidden, "origin", "Forbidden: origin not allowed")
		return
	}
	if h.token != nil && !h.authorized(r.Header.Get("Authorization")) {
		h.refuse(w, r, http.StatusUnauthorized, "token", "Unauthorized: a valid bearer token is required")
		return
	}
	if err := admit(r); err != nil {
		if errors.Is(err, errNoSlot) {
			h.refuse(w, r, http.StatusServiceUnavailable, "connections", "too many open connections; try again later")
		}
		return // else the client or the server went away
	}
	h.mux.ServeHTTP(w, r)
}

// serveMCP serves a request to Path that passed the front door.
func (h *front) serveMCP(w http.ResponseWriter, r *http.Request) {
	rc := http.NewResponseController(w)
	if r.ContentLength > h.cfg.MaxBodyBytes {
		h.refuse(w, r, http.StatusRequestEntityTooLarge, "body", fmt.Sprintf("request body exceeds %d bytes", h.cfg.MaxBodyBytes))
		return
	}
	if r.Body != nil && r.Body != http.NoBody {
		// The body has its own deadline, shorter than the server's read
		// timeout. (Not on requests without a body: the server is
		// already waiting for the client's next bytes, and a deadline
		// would end that wait and the request with it.)
		_ = http.NewResponseController(w).SetReadDeadline(time.Now().Add(h.cfg.BodyTimeout))
	}
	w = &recorder{ResponseWriter: w, rc: rc, timeout: h.cfg.WriteTimeout}
	defer h.refused(w.(*recorder), r)
	// What the server writes once the handler returns (the rest of a
	// buffered response) gets a deadline of its own.
	defer func() { _ = rc.SetWriteDeadline(time.Now().Add(h.cfg.WriteTimeout)) }()
	if r.Header.Get("Mcp-Session-Id") != "" || r.Method != http.MethodPost {
		h.stateful.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, h.cfg.MaxBodyBytes))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			h.refuse(w, r, http.StatusRequestEntityTooLarge, "body", fmt.Sprintf("request body exceeds %d bytes", mbe.Limit))
			return
		}
		h.refuse(w, r, http.StatusBadRequest, "body", "cannot read request body")
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var m struct {
		Method string `json:"method"`
	}
	if json.Unmarshal(body, &m) == nil && m.Method == "initialize" {
		if h.sessions() >= h.cfg.MaxSessions {
			h.refuse(w, r, http.StatusServiceUnavailable, "sessions", "too many open sessions; try again later")
			return
		}
		h.stateful.ServeHTTP(w, r)
		return
	}
	h.stateless.ServeHTTP(w, r)
}

// refused counts and logs a request the SDK refused at the HTTP level
// (a foreign Host, an unknown session, a bad content type or version).
func (h *front) refused(rec *recorder, r *http.Request) {
	if rec.status < 400 || rec.ours {
		return
	}
	h.s.metrics.refused.WithLabelValues("protocol").Inc()
	h.s.log.Debug("mcp http request refused", "reason", "protocol", "status", rec.status, "remote", r.RemoteAddr,
		"host", quote(r.Host), "method", r.Method)
}

// recorder remembers the status of a response, and gives each write the
// write timeout anew: a write blocked by a client that stopped reading
// fails at the deadline, which ends the request (and its event stream)
// and closes the connection. Flushes pass through: event streams need
// them.
type recorder struct {
	http.ResponseWriter
	rc      *http.ResponseController // of the ResponseWriter
	timeout time.Duration
	status  int
	ours    bool // refused by front itself (already counted)
}

// writeChunk is the most one write sends under one deadline.
const writeChunk = 64 << 10

func (rw *recorder) WriteHeader(code int) {
	if rw.status == 0 {
		rw.status = code
	}
	rw.ResponseWriter.WriteHeader(code)
}

func (rw *recorder) Write(b []byte) (int, error) {
	if rw.status == 0 {
		rw.status = http.StatusOK
	}
	n := 0
	for {
		chunk := b[n:min(len(b), n+writeChunk)]
		_ = rw.rc.SetWriteDeadline(time.Now().Add(rw.timeout))
		m, err := rw.ResponseWriter.Write(chunk)
		n += m
		if err != nil || n == len(b) {
			return n, err
		}
	}
}

func (rw *recorder) Flush() {
	_ = rw.rc.SetWriteDeadline(time.Now().Add(rw.timeout))
	if f, ok := rw.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (rw *recorder) Unwrap() http.ResponseWriter { return rw.ResponseWriter }

// sessions counts the open sessions.
func (h *front) sessions() int {
	n := 0
	for range h.s.sdk.Sessions() {
		n++
	}
	return n
}

// authorized compares the bearer token in constant time (of the token's
// digest, so the length of the token leaks nothing either).
func (h *front) authorized(header string) bool {
	tok, ok := strings.CutPrefix(header, "Bearer ")
	if !ok {
		return false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	return subtle.ConstantTimeCompare(sum[:], h.token) == 1
}

// originAllowed reports whether a browser origin may call the server:
// a loopback origin, or one configured.
func (h *front) originAllowed(origin string) bool {
	o := strings.ToLower(origin)
	if h.allowed[o] {
		return true
	}
	u, err := url.Parse(o)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Path != "" || u.User != nil {
		return false
	}
	return Loopback(u.Host)
}

// Loopback reports whether host (with or without a port) names the
// loopback interface: localhost, 127.0.0.0/8 or ::1.
func Loopback(host string) bool {
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

// ErrTokenRequired reports a non-loopback listen address without a token.
var ErrTokenRequired = errors.New("a bearer token is required to serve MCP on a non-loopback address")

// Serve serves Handler(cfg) on ln until ctx ends, with bounded headers,
// timeouts for slow clients and at most cfg.MaxConns connections at once,
// then shuts down (waiting at most 5 s for requests in flight).
func (s *Server) Serve(ctx context.Context, ln net.Listener, cfg HTTPConfig) error {
	if cfg.Token == "" && !Loopback(ln.Addr().String()) {
		return fmt.Errorf("%w (listening on %s)", ErrTokenRequired, ln.Addr())
	}
	if cfg.Registerer == nil {
		cfg.Registerer = s.cfg.Registerer
	}
	return serveHandler(ctx, ln, s.Handler(cfg), cfg)
}

// Tenant is one tenant's MCP server and the bearer token its hosts use.
type Tenant struct {
	Name   string
	Token  string
	Server *Server
}

// ServeTenants serves several tenants' MCP servers on one listener, as
// Serve serves one: a request goes to the server whose token it carries
// (each token maps to exactly one tenant; tokens must be distinct and not
// empty), and a request with no or an unknown token is refused (401) as
// by Serve.
func ServeTenants(ctx context.Context, ln net.Listener, tenants []Tenant, cfg HTTPConfig) error {
	if len(tenants) == 0 {
		return errors.New("mcp: no tenants to serve")
	}
	handlers := make([]http.Handler, len(tenants))
	seen := map[string]string{}
	for i, t := range tenants {
		if t.Token == "" {
			return fmt.Errorf("mcp: tenant %q has no bearer token: each tenant's hosts are told apart by theirs", t.Name)
		}
		if other, ok := seen[t.Token]; ok {
			return fmt.Errorf("mcp: tenants %q and %q have the same bearer token", other, t.Name)
		}
		seen[t.Token] = t.Name
		tc := cfg
		tc.Token = t.Token
		handlers[i] = t.Server.Handler(tc)
	}
	route := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		pick := handlers[0] // refuses a token not its own as Serve does
		for i, t := range tenants {
			if subtle.ConstantTimeCompare([]byte(tok), []byte(t.Token)) == 1 {
				pick = handlers[i]
			}
		}
		pick.ServeHTTP(w, r)
	})
	return serveHandler(ctx, ln, route, cfg)
}

// serveHandler serves h on ln until ctx ends (see Serve).
func serveHandler(ctx context.Context, ln net.Listener, h http.Handler, cfg HTTPConfig) error {
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	if cfg.MaxUnauthenticatedPerAddr <= 0 {
		cfg.MaxUnauthenticatedPerAddr = DefaultMaxUnauthenticatedPerAddr
	}
	if cfg.MaxUnauthenticated <= 0 {
		cfg.MaxUnauthenticated = DefaultMaxUnauthenticated
	}
	if cfg.HeaderTimeout <= 0 {
		cfg.HeaderTimeout = headerTimeout
	}
	m, err := newConnMetrics(cfg.Registerer)
	if err != nil {
		return fmt.Errorf("mcp listener metrics: %w", err)
	}
	ln = newGate(ln, cfg, m)
	hs := &http.Server{
		Handler:           h,
		ConnContext:       func(ctx context.Context, c net.Conn) context.Context { return context.WithValue(ctx, connKey{}, c) },
		ReadHeaderTimeout: cfg.HeaderTimeout,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    DefaultMaxHeaderBytes,
		ErrorLog:          nil,
	}
	done := make(chan error, 1)
	go func() { done <- hs.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		hs.Close()
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
