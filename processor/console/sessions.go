package console

// SessionSources are what the sessions pages read.
type SessionSources struct{}

// sessionPages are the sessions pages' routes.
func (s *Server) sessionPages() []page { return nil }
