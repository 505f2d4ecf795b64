package mcp

// OnWaiting makes s call f whenever a listing starts waiting for the
// registry's first complete snapshot. Call it before s serves anything.
func OnWaiting(s *Server, f func()) { s.waiting = f }
