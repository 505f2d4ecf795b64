package replay

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/events"
)

// TestRecordingOwnerLayout: a recording of an owner-layout session says
// its layout in the header ("layout":"owner"; a flat one says nothing, as
// before), reads back with it, and takes only events of that session's
// subjects <prefix>.<owner>.<sid>.<kind>.
func TestRecordingOwnerLayout(t *testing.T) {
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{Session: "a1.s7", Prefix: "ev", Layout: events.LayoutOwner})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Event(Event{Seq: 3, Subject: "ev.a1.s7.agent.pre-step", Data: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	for _, subj := range []string{"ev.a2.s7.agent.pre-step", "ev.a1.agent.pre-step", "ev.s7.agent.pre-step"} {
		if err := w.Event(Event{Seq: 4, Subject: subj}); err == nil {
			t.Errorf("an event on %s accepted", subj)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(buf.String(), "\n")
	if !strings.Contains(first, `"session":"a1.s7","prefix":"ev","layout":"owner"`) {
		t.Errorf("header line = %s", first)
	}
	h, items, err := readAll(buf.Bytes())
	if err != nil || h.Layout != events.LayoutOwner || len(items) != 1 || items[0].Event.Subject != "ev.a1.s7.agent.pre-step" {
		t.Fatalf("read back %+v, %d items, %v", h, len(items), err)
	}

	flat, _ := sampleRecording(t)
	if first, _, _ := strings.Cut(string(flat), "\n"); strings.Contains(first, "layout") {
		t.Errorf("a flat recording names its layout: %s", first)
	}

	// The wrong layout for the id, in either direction, and an unknown one.
	for _, h := range []Header{{Session: "a1.s7"}, {Session: "s7", Layout: events.LayoutOwner}} {
		if _, err := NewWriter(io.Discard, h); !errors.Is(err, events.ErrBadSession) {
			t.Errorf("NewWriter(%+v) = %v", h, err)
		}
	}
	for _, header := range []string{
		`{"format":"skillstream-recording","version":1,"session":"a1.s7","prefix":"ev"}`,
		`{"format":"skillstream-recording","version":1,"session":"s7","prefix":"ev","layout":"owner"}`,
		`{"format":"skillstream-recording","version":1,"session":"a1.s7","prefix":"ev","layout":"tenant"}`,
	} {
		_, err := NewReader(strings.NewReader(header + "\n"))
		if !errors.Is(err, ErrCorrupt) {
			t.Errorf("header %s: %v", header, err)
		}
	}
}
