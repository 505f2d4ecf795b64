package console

import (
	"net/http"
	"strings"
	"sync"
)

// Tenant is one console of a Mux: the tenant's name (its consoles are
// served under /<name>/; "" for the only console of a Mux, served at /)
// and how to make it. Make is called when the console is first asked
// for; it reports ready false while the tenant's sources are not there
// yet (its processor has not started), and is asked again on the next
// request. A console made is kept.
type Tenant struct {
	Name string
	Make func() (s *Server, ready bool, err error)
	// Serving, when set, says whether the tenant is served now: a
	// console made is not answered while it is not (its sources closed).
	Serving func() bool
}

// Mux serves the consoles of several tenants on one listener, each under
// its own path, or one console at the root. A console knows its tenant's
// sources only, and signs its cookies with a secret of its own under its
// own path: a session of one tenant's console is nothing to another's.
type Mux struct {
	mu      sync.RWMutex
	tenants map[string]*muxEntry
	single  *muxEntry
}

type muxEntry struct {
	t  Tenant
	mu sync.Mutex
	s  *Server
}

// NewMux serves ts: one Tenant named "" is served at /, tenants with
// names each under /<name>/.
func NewMux(ts []Tenant) *Mux {
	m := &Mux{tenants: map[string]*muxEntry{}}
	for _, t := range ts {
		m.Set(t)
	}
	return m
}

// Set serves t's console, in place of the one t's name had (whose
// sign-ins end with it): a tenant added, or changed, at run time.
func (m *Mux) Set(t Tenant) {
	e := &muxEntry{t: t}
	m.mu.Lock()
	defer m.mu.Unlock()
	if t.Name == "" {
		m.single = e
		return
	}
	m.tenants[t.Name] = e
}

// Remove stops serving the console of tenant name (dropped at run time).
func (m *Mux) Remove(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.tenants, name)
}

// get returns the entry's console, making it when its sources are ready.
func (e *muxEntry) get() (*Server, bool, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.s != nil {
		return e.s, true, nil
	}
	s, ready, err := e.t.Make()
	if err != nil || !ready {
		return nil, false, err
	}
	e.s = s
	return s, true, nil
}

func (m *Mux) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	m.mu.RLock()
	e := m.single
	m.mu.RUnlock()
	if e == nil {
		name, rest, slash := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		m.mu.RLock()
		e = m.tenants[name]
		m.mu.RUnlock()
		switch {
		case e == nil:
			// Which tenants exist is not told: a console's path is its
			// tenant's, given to its people.
			plain(w, http.StatusNotFound, "console: nothing here: a tenant's console is at /<tenant>/")
			return
		case !slash && rest == "":
			http.Redirect(w, r, "/"+name+"/", http.StatusSeeOther)
			return
		}
	}
	if e.t.Serving != nil && !e.t.Serving() {
		w.Header().Set("Retry-After", "5")
		plain(w, http.StatusServiceUnavailable, "console"+forTenant(e.t.Name)+": not served now: the processor has not started or was stopped")
		return
	}
	s, ready, err := e.get()
	switch {
	case err != nil:
		plain(w, http.StatusInternalServerError, "console"+forTenant(e.t.Name)+": "+err.Error())
	case !ready:
		w.Header().Set("Retry-After", "5")
		plain(w, http.StatusServiceUnavailable, "console"+forTenant(e.t.Name)+": not served yet: the processor has not started")
	default:
		s.ServeHTTP(w, r)
	}
}

func forTenant(name string) string {
	if name == "" {
		return ""
	}
	return " of tenant " + name
}

// plain answers a short text with the console's headers.
func plain(w http.ResponseWriter, status int, msg string) {
	h := w.Header()
	h.Set("Content-Security-Policy", "default-src 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Cache-Control", "no-store")
	http.Error(w, msg, status)
}
