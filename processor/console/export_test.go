package console

// SetMaxSessionEvents lowers the longest session the pages read, for a
// test; the returned func restores it.
func SetMaxSessionEvents(n uint64) (restore func()) {
	old := maxSessionEvents
	maxSessionEvents = n
	return func() { maxSessionEvents = old }
}
