package console

// FleetSources are what the fleet pages read.
type FleetSources struct{}

// fleetPages are the fleet pages' routes.
func (s *Server) fleetPages() []page { return nil }
