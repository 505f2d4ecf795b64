package main

import "github.com/skillstream/skillstream/events"

// layoutFlag registers --session-layout in the current group: serve's and
// the session readers' (export, replay, history, usage). Every member of a
// consumer group and every command reading its stream must be given the
// same layout.
func (c *Config) layoutFlag(cmd *command) {
	cmd.cfgString(&c.SessionLayout, "session-layout", events.LayoutFlat.String(),
		"session subject `layout`: flat, <prefix>.<session>.<kind>; or owner, <prefix>.<owner>.<session>.<kind> with session ids <owner>.<session>, so that NATS permissions can bind sessions to their workers; the same for every member and command of one stream")
}

// partitionsFlag registers --partitions: serve's and the session
// readers', each once it finds a session's stream by sessionPlace.
func (c *Config) partitionsFlag(cmd *command) {
	cmd.cfgInt(&c.Partitions, "partitions", 0,
		"spread the sessions over `N` streams (<stream>-0 ... <stream>-N-1, subjects <prefix>p.<k>.<session>.<kind>, mapped by the NATS server's partition() of the session; 0: one stream); the same for every member and command of one deployment")
}

// sessionPlace is where session sid is kept: its stream and subject
// prefix (the partition's with --partitions, computed from the id alone).
func (c *Config) sessionPlace(sid string) (stream, prefix string) {
	if c.Partitions < 2 {
		return c.Stream, c.Prefix
	}
	k := events.PartitionOf(c.layout(), sid, c.Partitions)
	return events.PartitionStream(c.Stream, k), events.PartitionPrefix(c.Prefix, k)
}

// layout is --session-layout (flat when it is not a layout: validated
// first by validateLayout).
func (c *Config) layout() events.Layout {
	l, _ := events.ParseLayout(c.SessionLayout)
	return l
}

// validateLayout checks --session-layout.
func (c *Config) validateLayout() error {
	if _, err := events.ParseLayout(c.SessionLayout); err != nil {
		return usagef("--session-layout %q: must be flat or owner", c.SessionLayout)
	}
	if err := events.CheckPartitions(c.Partitions); err != nil {
		return usagef("--%v", err)
	}
	return nil
}

// checkSession validates --session: required, and a session id of
// --session-layout.
func (c *Config) checkSession(sid string) error {
	if err := c.validateLayout(); err != nil {
		return err
	}
	if sid == "" {
		return usagef("--session is required")
	}
	if err := events.CheckSessionIn(c.layout(), sid); err != nil {
		return usagef("--session: %v", err)
	}
	return nil
}
