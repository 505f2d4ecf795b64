// Package events is the wire format of skillstream: the payload types of
// every session event, their subjects, and their msgpack and JSON codec. It
// is the only package that imports msgpack. It knows subjects and payloads,
// not acks, consumers or streams.
package events
