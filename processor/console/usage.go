package console

// UsageSources are what the usage pages read.
type UsageSources struct{}

// usagePages are the usage pages' routes.
func (s *Server) usagePages() []page { return nil }
