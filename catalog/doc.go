// Package catalog is the pure core of skillstream: it turns a snapshot of
// skills into the exact text the model reads, decides at each pre-step
// whether that text must be appended to the session, and executes the
// model-facing skill tool. It imports only the standard library and does no
// I/O: no NATS, no clock, no goroutines. Same inputs, same bytes.
//
// TODO: manual.
package catalog
