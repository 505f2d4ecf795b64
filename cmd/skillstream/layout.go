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
