// Package replay records a session's log to a portable file and replays the
// processor's decisions against it.
//
// # Recordings
//
// A recording is UTF-8 JSON lines. The first line is the header:
//
//	{"format":"skillstream-recording","version":1,"session":"s1","prefix":"ev","stream":"SESSIONS","created":"..."}
//
// Every later line is an object with a "type":
//
//	{"type":"event","seq":7,"subject":"ev.s1.agent.pre-step","time":"2025-01-02T03:04:05.123456789Z","headers":{"Content-Type":["application/json"]},"data":"<base64>"}
//	{"type":"skills","cwd":"/src/app","complete":true,"skills":[{"name":...,"description":...,"content":...}]}
//	{"type":"end","events":42,"sha256":"<hex>"}
//
// Events are the session's messages exactly as the stream holds them (stream
// sequence, subject, stored time, headers, payload bytes) in stream order,
// every kind included. A skills line, optional, is the registry's snapshot
// for one working directory together with each skill's body; it comes before
// the first trigger that uses that directory. The end line counts the events
// and holds the SHA-256 of every byte before it: a file without it is
// truncated, a file whose bytes do not match it is corrupt. Readers ignore
// fields they do not know; a change older readers could not ignore gets a
// new version, and a reader refuses a version newer than its own.
// Errors name the record (line) number and byte offset.
package replay
