package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// The listings a host may keep: the first answer to each is held for the
// registry's first complete snapshot.
var listings = map[string]bool{"tools/list": true, "resources/list": true, "skills/list": true}

// The notifications of a change to what is served.
const (
	toolsChanged     = "notifications/tools/list_changed"
	resourcesChanged = "notifications/resources/list_changed"
)

// sessions remembers, for every session that may be told of changes,
// what it was last shown: the skill tool's description and the served
// skills (resourcesKey). A session is followed from its
// notifications/initialized (a 2025-11-25 session, stdio) or for as long
// as its subscriptions/listen stream lasts (2026-07-28); any other session
// (a stateless request) is told nothing.
type sessions struct {
	mu      sync.Mutex
	views   map[*sdk.ServerSession]*view
	pruneAt int // prune closed sessions once views holds this many
}

// view is what one session was last shown. A session followed before the
// first complete snapshot was served is pending: it is taken to have
// been shown what first listings get (Server.first).
type view struct {
	pending   bool
	tool, res string
}

// follow starts following ss: what it was shown is what a listing would
// answer now.
func (s *Server) follow(ss *sdk.ServerSession) {
	s.served.RLock()
	defer s.served.RUnlock()
	v := &view{pending: true}
	if s.first.Load() != nil {
		st := s.st.Load()
		v = &view{tool: st.tool, res: st.res}
	}
	s.sessions.mu.Lock()
	defer s.sessions.mu.Unlock()
	if len(s.sessions.views) >= s.sessions.pruneAt {
		live := map[*sdk.ServerSession]bool{}
		for o := range s.sdk.Sessions() {
			live[o] = true
		}
		for o := range s.sessions.views {
			if !live[o] {
				delete(s.sessions.views, o)
			}
		}
		s.sessions.pruneAt = 2*len(s.sessions.views) + 16
	}
	s.sessions.views[ss] = v
}

// forget stops following ss.
func (s *Server) forget(ss *sdk.ServerSession) {
	s.sessions.mu.Lock()
	defer s.sessions.mu.Unlock()
	delete(s.sessions.views, ss)
}

// shown records that ss was answered a listing of method from the state
// served now (the caller holds s.served for reading).
func (s *Server) shown(ss *sdk.ServerSession, method string) {
	st := s.st.Load()
	s.sessions.mu.Lock()
	defer s.sessions.mu.Unlock()
	v := s.sessions.views[ss]
	if v == nil {
		return
	}
	if v.pending {
		f := s.first.Load()
		if f == nil { // the listing stopped waiting when its request ended
			f = st
		}
		v.pending, v.tool, v.res = false, f.tool, f.res
	}
	if method == "tools/list" {
		v.tool = st.tool
	} else {
		v.res = st.res
	}
}

// changed reports whether ss is to be told of a change of kind
// (toolsChanged or resourcesChanged): it is followed, and what it was
// last shown differs from what is served now. It then takes ss to know
// of the change.
func (s *Server) changed(ss *sdk.ServerSession, kind string) bool {
	s.served.RLock()
	defer s.served.RUnlock()
	st := s.st.Load()
	s.sessions.mu.Lock()
	defer s.sessions.mu.Unlock()
	v := s.sessions.views[ss]
	if v == nil {
		return false
	}
	if v.pending {
		f := s.first.Load()
		if f == nil {
			return false // nothing was shown yet: the first listing will be current
		}
		v.pending, v.tool, v.res = false, f.tool, f.res
	}
	mine, now := &v.res, st.res
	if kind == toolsChanged {
		mine, now = &v.tool, st.tool
	}
	if *mine == now {
		return false
	}
	*mine = now
	return true
}

// track holds a session's listings until the first complete snapshot is
// served (awaitFirst) and records what they showed; it follows a
// subscriptions/listen stream while it lasts.
func (s *Server) track(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		ss, _ := req.GetSession().(*sdk.ServerSession)
		switch {
		case listings[method]:
			s.awaitFirst(ctx, method)
			s.served.RLock()
			defer s.served.RUnlock()
			res, err := next(ctx, method, req)
			if err == nil && ss != nil {
				s.shown(ss, method)
			}
			return res, err
		case method == "subscriptions/listen" && ss != nil:
			s.follow(ss)
			defer s.forget(ss)
		}
		return next(ctx, method, req)
	}
}

// gate lets a list-changed notification through only to a session that
// is followed and was shown something else than what is served now: none
// before the client's notifications/initialized, none for a change that
// changed nothing a session saw (an event of the file watcher at start, a
// skill edited and edited back).
func (s *Server) gate(next sdk.MethodHandler) sdk.MethodHandler {
	return func(ctx context.Context, method string, req sdk.Request) (sdk.Result, error) {
		if method != toolsChanged && method != resourcesChanged {
			return next(ctx, method, req)
		}
		ss, _ := req.GetSession().(*sdk.ServerSession)
		if ss == nil || !s.changed(ss, method) {
			return nil, nil
		}
		return next(ctx, method, req)
	}
}

// awaitFirst waits until the registry's first complete snapshot is
// served, ctx ends, or ReadyTimeout passes. A host may keep the first
// tool description (and list) it gets for the whole session, so it must
// not get the empty one of a server still reading its skills. Once a wait
// has run out, no listing waits again: the server answers with what has
// resolved, and says so once at warn.
func (s *Server) awaitFirst(ctx context.Context, method string) {
	select {
	case <-s.whole:
		return
	default:
	}
	if s.gaveUp.Load() {
		return
	}
	if s.waiting != nil {
		s.waiting()
	}
	t := time.NewTimer(s.cfg.ReadyTimeout)
	defer t.Stop()
	select {
	case <-s.whole:
	case <-ctx.Done():
	case <-t.C:
		if !s.gaveUp.CompareAndSwap(false, true) {
			return
		}
		s.served.RLock()
		st := s.st.Load()
		s.first.CompareAndSwap(nil, st)
		s.served.RUnlock()
		s.log.Warn("answering MCP hosts before the registry's first complete snapshot", "method", method,
			"waited", s.cfg.ReadyTimeout.String(), "skills", len(st.skills))
	}
}

// resourcesKey identifies what is served to listings of skills and
// resources: every skill's name and digest (which covers its files, its
// frontmatter included).
func resourcesKey(skills []*entry) string {
	h := sha256.New()
	for _, e := range skills {
		h.Write([]byte(e.name))
		h.Write([]byte{0})
		h.Write([]byte(e.digest))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))
}
