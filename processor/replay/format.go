package replay

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

// FormatName is the value of the "format" field of a recording's first line.
const FormatName = "skillstream-recording"

// Version is the recording format version this package writes, and the
// newest it reads.
const Version = 1

// MaxLine bounds one line of a recording. An event line holds at most one
// payload (events.MaxPayloadSize, base64-encoded) plus headers; a skills line
// holds the summaries and bodies of one working directory's skills.
const MaxLine = 64 << 20

// Errors a Reader reports, wrapped in a *FormatError that names where the
// problem is.
var (
	// ErrCorrupt: a line is not what the format says it must be.
	ErrCorrupt = errors.New("corrupt recording")
	// ErrTruncated: the file ends before the end record.
	ErrTruncated = errors.New("truncated recording")
	// ErrUnsupportedVersion: the recording was written by a newer
	// skillstream, in a format version this one does not know.
	ErrUnsupportedVersion = errors.New("unsupported recording version")
)

// FormatError locates a problem in a recording. Record counts lines from 1
// (the header is record 1); Offset is the byte offset where that line
// starts.
type FormatError struct {
	Record  int
	Offset  int64
	Problem string
	Err     error // ErrCorrupt, ErrTruncated or ErrUnsupportedVersion
}

func (e *FormatError) Error() string {
	return fmt.Sprintf("%v: record %d (byte offset %d): %s", e.Err, e.Record, e.Offset, e.Problem)
}

func (e *FormatError) Unwrap() error { return e.Err }

// Header is the first line of a recording.
type Header struct {
	Format  string `json:"format"`
	Version int    `json:"version"`
	// Session is the session id every event belongs to.
	Session string `json:"session"`
	// Prefix is the subject prefix of the stream the session was read from;
	// event subjects are <Prefix>.<Session>.<kind>.
	Prefix string `json:"prefix"`
	// Layout is the session layout of the stream: absent for the flat
	// layout, "owner" for the owner layout, whose session ids are
	// "<owner>.<sid>".
	Layout events.Layout `json:"layout,omitempty"`
	// Stream is the JetStream stream the session was read from
	// (informational).
	Stream string `json:"stream,omitempty"`
	// Created is when the recording was written (informational; replay
	// output never depends on it).
	Created time.Time `json:"created,omitzero"`
	// Options are the options that shaped the session's model text, as
	// its newest catalog record carries them: absent when it has none (a
	// session recorded by an older processor, or never given a catalog).
	Options *events.CatalogOptions `json:"options,omitempty"`
}

// Event is one message of the session log, as stored in the stream.
type Event struct {
	Seq     uint64              `json:"seq"`
	Subject string              `json:"subject"`
	Time    time.Time           `json:"time"`
	Headers map[string][]string `json:"headers,omitempty"`
	Data    []byte              `json:"data"`
}

// Header returns the first value of header key, or "".
func (e Event) Header(key string) string {
	if v := e.Headers[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

// SkillSet is the skills one working directory saw when the recording was
// made: every skill of the registry snapshot for Cwd (model-invocable or
// not) with its body, so that a replay can run against them instead of the
// skills on disk.
type SkillSet struct {
	Cwd      string          `json:"cwd"`
	Complete bool            `json:"complete"`
	Skills   []RecordedSkill `json:"skills"`
}

// RecordedSkill is a skill of a SkillSet. LoadError is set, and Content
// empty, when loading its body failed at recording time.
type RecordedSkill struct {
	catalog.Skill
	LoadError string `json:"loadError,omitempty"`
}

// Item is one line after the header: exactly one of Event and Skills is
// set.
type Item struct {
	Event  *Event
	Skills *SkillSet
}

// Record types, the "type" field of every line after the header.
const (
	typeEvent  = "event"
	typeSkills = "skills"
	typeEnd    = "end"
)

// line is the wire shape of a line after the header.
type line struct {
	Type string `json:"type"`

	// type "event"
	Seq     uint64              `json:"seq,omitempty"`
	Subject string              `json:"subject,omitempty"`
	Time    *time.Time          `json:"time,omitempty"`
	Headers map[string][]string `json:"headers,omitempty"`
	Data    *[]byte             `json:"data,omitempty"`

	// type "skills"
	Cwd      *string         `json:"cwd,omitempty"`
	Complete bool            `json:"complete,omitempty"`
	Skills   []RecordedSkill `json:"skills,omitempty"`

	// type "end"
	Events *int   `json:"events,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
}

// Writer writes a recording: NewWriter writes the header, Event and Skills
// write one line each, and Close writes the end record that lets a reader
// tell a complete file from a truncated one. Nothing is buffered beyond one
// line.
type Writer struct {
	w      *bufio.Writer
	sum    hash.Hash
	events int
	last   uint64
	prefix string
	layout events.Layout
	sid    string
	closed bool
	err    error
}

// NewWriter writes h (Format and Version are filled in) as the first line of
// a recording on w.
func NewWriter(w io.Writer, h Header) (*Writer, error) {
	if err := events.CheckSessionIn(h.Layout, h.Session); err != nil {
		return nil, fmt.Errorf("new recording: %w", err)
	}
	if h.Prefix == "" {
		h.Prefix = events.DefaultPrefix
	}
	h.Format, h.Version = FormatName, Version
	rw := &Writer{w: bufio.NewWriterSize(w, 64<<10), sum: sha256.New(), prefix: h.Prefix, layout: h.Layout, sid: h.Session}
	if err := rw.writeJSON(h); err != nil {
		return nil, err
	}
	return rw, nil
}

// Event appends one event. Events must belong to the header's session and
// come in increasing stream sequence.
func (w *Writer) Event(e Event) error {
	if err := w.usable(); err != nil {
		return err
	}
	if e.Seq <= w.last {
		return fmt.Errorf("write event %d: sequence not after %d", e.Seq, w.last)
	}
	if sid, _, err := events.ParseSubjectIn(w.layout, w.prefix, e.Subject); err != nil || sid != w.sid {
		return fmt.Errorf("write event %d: subject %q is not in session %s", e.Seq, e.Subject, w.sid)
	}
	data := e.Data
	if data == nil {
		data = []byte{}
	}
	t := e.Time.UTC()
	if err := w.writeJSON(line{Type: typeEvent, Seq: e.Seq, Subject: e.Subject, Time: &t, Headers: e.Headers, Data: &data}); err != nil {
		return err
	}
	w.last = e.Seq
	w.events++
	return nil
}

// Skills appends a skills snapshot for one working directory. A reader
// sees it in order with the events, so a writer puts it before the first
// trigger that uses its Cwd.
func (w *Writer) Skills(s SkillSet) error {
	if err := w.usable(); err != nil {
		return err
	}
	cwd := s.Cwd
	skills := s.Skills
	if skills == nil {
		skills = []RecordedSkill{}
	}
	return w.writeJSON(line{Type: typeSkills, Cwd: &cwd, Complete: s.Complete, Skills: skills})
}

// Close writes the end record (event count and SHA-256 of every byte before
// it) and flushes. It does not close the underlying writer.
func (w *Writer) Close() error {
	if err := w.usable(); err != nil {
		return err
	}
	n := w.events
	end := line{Type: typeEnd, Events: &n, SHA256: hex.EncodeToString(w.sum.Sum(nil))}
	if err := w.writeJSON(end); err != nil {
		return err
	}
	w.closed = true
	if err := w.w.Flush(); err != nil {
		w.err = fmt.Errorf("write recording: %w", err)
		return w.err
	}
	return nil
}

func (w *Writer) usable() error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return errors.New("write recording: writer closed")
	}
	return nil
}

func (w *Writer) writeJSON(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		w.err = fmt.Errorf("write recording: %w", err)
		return w.err
	}
	b = append(b, '\n')
	w.sum.Write(b)
	if _, err := w.w.Write(b); err != nil {
		w.err = fmt.Errorf("write recording: %w", err)
		return w.err
	}
	return nil
}

// Reader reads a recording line by line; memory is bounded by the longest
// line (MaxLine), not by the file.
type Reader struct {
	r      *bufio.Reader
	sum    hash.Hash
	h      Header
	offset int64 // where the next line starts
	record int   // number of the last line read
	events int
	last   uint64
	done   bool
	err    error
	buf    []byte
}

// NewReader reads and checks the header of the recording on r.
func NewReader(r io.Reader) (*Reader, error) {
	rr := &Reader{r: bufio.NewReaderSize(r, 64<<10), sum: sha256.New()}
	b, start, err := rr.line()
	if err != nil {
		return nil, err
	}
	if len(b) == 0 {
		return nil, rr.fail(start, ErrTruncated, "empty file, expected the header line")
	}
	// Format and version first, alone: a newer version may change the
	// other fields, and must be reported as newer, not as corrupt.
	var id struct {
		Format  string `json:"format"`
		Version int    `json:"version"`
	}
	if err := json.Unmarshal(b, &id); err != nil {
		return nil, rr.fail(start, ErrCorrupt, "header is not a skillstream recording header: "+jsonProblem(err))
	}
	switch {
	case id.Format != FormatName:
		return nil, rr.fail(start, ErrCorrupt, fmt.Sprintf("format is %q, want %q (not a skillstream recording)", id.Format, FormatName))
	case id.Version > Version:
		return nil, rr.fail(start, ErrUnsupportedVersion, fmt.Sprintf("format version %d is newer than the newest this skillstream reads (%d); use a newer skillstream", id.Version, Version))
	case id.Version < 1:
		return nil, rr.fail(start, ErrCorrupt, fmt.Sprintf("format version %d is not a valid version", id.Version))
	}
	var h Header
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, rr.fail(start, ErrCorrupt, "bad header: "+jsonProblem(err))
	}
	switch {
	case !events.ValidSessionIn(h.Layout, h.Session):
		return nil, rr.fail(start, ErrCorrupt, fmt.Sprintf("session %q is not a valid session id of the %v layout", h.Session, h.Layout))
	case h.Prefix == "":
		return nil, rr.fail(start, ErrCorrupt, "prefix is missing")
	}
	rr.h = h
	return rr, nil
}

// Header returns the recording's header.
func (r *Reader) Header() Header { return r.h }

// Next returns the next record. After the end record it verifies the event
// count and checksum and returns io.EOF. Any problem is a *FormatError; it
// is returned again by every later call.
func (r *Reader) Next() (Item, error) {
	if r.err != nil {
		return Item{}, r.err
	}
	if r.done {
		return Item{}, io.EOF
	}
	sum := r.sum.Sum(nil) // checksum of everything before this line
	b, start, err := r.line()
	if err != nil {
		return Item{}, err
	}
	if len(b) == 0 {
		return Item{}, r.fail(start, ErrTruncated, fmt.Sprintf("file ends after %d events without the end record", r.events))
	}
	var l line
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&l); err != nil {
		return Item{}, r.fail(start, ErrCorrupt, "not a valid record: "+jsonProblem(err))
	}
	if dec.More() {
		return Item{}, r.fail(start, ErrCorrupt, "extra data after the record")
	}
	switch l.Type {
	case typeEvent:
		e, problem := r.event(l)
		if problem != "" {
			return Item{}, r.fail(start, ErrCorrupt, problem)
		}
		r.events++
		r.last = e.Seq
		return Item{Event: &e}, nil
	case typeSkills:
		if l.Cwd == nil {
			return Item{}, r.fail(start, ErrCorrupt, "skills record without cwd")
		}
		for _, s := range l.Skills {
			if !catalog.ValidName(s.Name) {
				return Item{}, r.fail(start, ErrCorrupt, fmt.Sprintf("skills record holds invalid skill name %q", s.Name))
			}
		}
		return Item{Skills: &SkillSet{Cwd: *l.Cwd, Complete: l.Complete, Skills: l.Skills}}, nil
	case typeEnd:
		switch {
		case l.Events == nil || l.SHA256 == "":
			return Item{}, r.fail(start, ErrCorrupt, "end record without event count or checksum")
		case *l.Events != r.events:
			return Item{}, r.fail(start, ErrCorrupt, fmt.Sprintf("end record counts %d events, the file holds %d", *l.Events, r.events))
		case l.SHA256 != hex.EncodeToString(sum):
			return Item{}, r.fail(start, ErrCorrupt, "checksum mismatch: the bytes before the end record were altered")
		}
		rest, err := r.r.Peek(1)
		if len(rest) > 0 {
			return Item{}, r.fail(r.offset, ErrCorrupt, "data after the end record")
		}
		if err != nil && err != io.EOF {
			return Item{}, r.fail(r.offset, ErrCorrupt, "read: "+err.Error())
		}
		r.done = true
		return Item{}, io.EOF
	case "":
		return Item{}, r.fail(start, ErrCorrupt, "record without a type")
	default:
		return Item{}, r.fail(start, ErrCorrupt, fmt.Sprintf("unknown record type %q", l.Type))
	}
}

func (r *Reader) event(l line) (Event, string) {
	switch {
	case l.Seq == 0:
		return Event{}, "event without a stream sequence"
	case l.Seq <= r.last:
		return Event{}, fmt.Sprintf("event sequence %d is not after the previous one (%d)", l.Seq, r.last)
	case l.Time == nil:
		return Event{}, fmt.Sprintf("event %d without a time", l.Seq)
	case l.Data == nil:
		return Event{}, fmt.Sprintf("event %d without data", l.Seq)
	}
	sid, _, err := events.ParseSubjectIn(r.h.Layout, r.h.Prefix, l.Subject)
	if err != nil || sid != r.h.Session {
		return Event{}, fmt.Sprintf("event %d: subject %q is not in session %s", l.Seq, l.Subject, r.h.Session)
	}
	return Event{Seq: l.Seq, Subject: l.Subject, Time: *l.Time, Headers: l.Headers, Data: *l.Data}, ""
}

// line returns the next line without its newline (empty at end of file) and
// the offset where it starts. A last line without a newline is truncated.
func (r *Reader) line() ([]byte, int64, error) {
	start := r.offset
	r.record++
	r.buf = r.buf[:0]
	for {
		chunk, err := r.r.ReadSlice('\n')
		r.buf = append(r.buf, chunk...)
		if len(r.buf) > MaxLine {
			return nil, start, r.fail(start, ErrCorrupt, fmt.Sprintf("line longer than %d bytes", MaxLine))
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err == io.EOF {
			if len(r.buf) > 0 {
				return nil, start, r.fail(start, ErrTruncated, fmt.Sprintf("last line (%d bytes) ends without a newline", len(r.buf)))
			}
			return nil, start, nil
		}
		if err != nil {
			return nil, start, r.fail(start, ErrCorrupt, "read: "+err.Error())
		}
		break
	}
	r.offset += int64(len(r.buf))
	r.sum.Write(r.buf)
	return r.buf[:len(r.buf)-1], start, nil
}

func (r *Reader) fail(offset int64, kind error, problem string) error {
	r.err = &FormatError{Record: r.record, Offset: offset, Problem: problem, Err: kind}
	return r.err
}

// jsonProblem shortens a JSON decoding error to what went wrong.
func jsonProblem(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("%v (at byte %d of the line)", se, se.Offset)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("field %q: %v", te.Field, te)
	}
	if errors.Is(err, io.EOF) {
		return "empty line"
	}
	return err.Error()
}
