package replay

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/skillstream/skillstream/catalog"
)

// sampleRecording writes a small recording and returns its bytes and what
// went into it.
func sampleRecording(t testing.TB) ([]byte, []Item) {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter(&buf, Header{Session: "s-1", Prefix: "ev", Stream: "SESSIONS", Created: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Date(2025, 1, 2, 3, 0, 0, 123456789, time.UTC)
	recs := []Item{
		{Skills: &SkillSet{Cwd: "/work/p", Complete: true, Skills: []RecordedSkill{{Skill: catalog.Skill{
			Summary: catalog.Summary{Name: "a-skill", Description: "Does a.", Invocation: catalog.Invocation{ModelInvocable: true, UserInvocable: true}, Source: "project", Provider: "agentskills",
				ResourceBase: &catalog.ResourceBase{Kind: catalog.ResourceDirectory, Path: "/work/p/.agents/skills/a-skill"}},
			Content: "Body\nof a."}}}}},
		{Event: &Event{Seq: 3, Subject: "ev.s-1.agent.pre-step", Time: t0, Headers: map[string][]string{"Content-Type": {"application/json"}}, Data: []byte(`{"v":1}`)}},
		{Event: &Event{Seq: 4, Subject: "ev.s-1.catalog.append", Time: t0.Add(time.Millisecond), Headers: map[string][]string{"Causation-Seq": {"3"}, "Nats-Msg-Id": {"3:catalog.append"}}, Data: []byte{0x81, 0xa1, 'v', 0x01, 0x00, 0xff}}},
		{Event: &Event{Seq: 9, Subject: "ev.s-1.message.user", Time: t0.Add(time.Second), Data: []byte{}}},
	}
	for _, r := range recs {
		if r.Event != nil {
			err = w.Event(*r.Event)
		} else {
			err = w.Skills(*r.Skills)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), recs
}

func readAll(b []byte) (Header, []Item, error) {
	r, err := NewReader(bytes.NewReader(b))
	if err != nil {
		return Header{}, nil, err
	}
	var out []Item
	for {
		rec, err := r.Next()
		if err == io.EOF {
			return r.Header(), out, nil
		}
		if err != nil {
			return r.Header(), out, err
		}
		out = append(out, rec)
	}
}

func TestRecordingRoundTrip(t *testing.T) {
	b, want := sampleRecording(t)
	h, got, err := readAll(b)
	if err != nil {
		t.Fatal(err)
	}
	if h.Format != FormatName || h.Version != Version || h.Session != "s-1" || h.Prefix != "ev" || h.Stream != "SESSIONS" {
		t.Errorf("header = %+v", h)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("records differ:\n got %s\nwant %s", dump(got), dump(want))
	}
	first, _, _ := strings.Cut(string(b), "\n")
	if !strings.HasPrefix(first, `{"format":"skillstream-recording","version":1,`) {
		t.Errorf("header line = %s", first)
	}
}

func dump(rs []Item) string {
	var s strings.Builder
	for _, r := range rs {
		if r.Event != nil {
			fmt.Fprintf(&s, "%+v ", *r.Event)
		} else {
			fmt.Fprintf(&s, "%+v ", *r.Skills)
		}
	}
	return s.String()
}

// lineStart returns the byte offset where line n (1-based) starts.
func lineStart(b []byte, n int) int {
	off := 0
	for i := 1; i < n; i++ {
		off += bytes.IndexByte(b[off:], '\n') + 1
	}
	return off
}

func TestRecordingBadInput(t *testing.T) {
	good, _ := sampleRecording(t)
	lines := strings.SplitAfter(string(good), "\n")
	lines = lines[:len(lines)-1] // trailing ""
	join := func(ls ...string) []byte { return []byte(strings.Join(ls, "")) }
	replaceLine := func(n int, s string) []byte {
		ls := append([]string(nil), lines...)
		ls[n-1] = s
		return join(ls...)
	}
	cases := []struct {
		name    string
		in      []byte
		kind    error
		record  int
		offset  int
		problem string
	}{
		{"empty file", nil, ErrTruncated, 1, 0, "empty file"},
		{"not json", []byte("hello\n"), ErrCorrupt, 1, 0, "not a skillstream recording header"},
		{"other format", []byte(`{"format":"tar","version":1}` + "\n"), ErrCorrupt, 1, 0, `format is "tar"`},
		{"newer version", []byte(`{"format":"skillstream-recording","version":2,"session":{"new":"shape"}}` + "\n"), ErrUnsupportedVersion, 1, 0, "format version 2 is newer"},
		{"version zero", []byte(`{"format":"skillstream-recording","version":0}` + "\n"), ErrCorrupt, 1, 0, "version 0"},
		{"bad session", []byte(`{"format":"skillstream-recording","version":1,"session":"a.b","prefix":"ev"}` + "\n"), ErrCorrupt, 1, 0, `session "a.b"`},
		{"header only", join(lines[0]), ErrTruncated, 2, len(lines[0]), "without the end record"},
		{"cut mid line", good[:lineStart(good, 4)+10], ErrTruncated, 4, lineStart(good, 4), "without a newline"},
		{"cut at line end", join(lines[:4]...), ErrTruncated, 5, lineStart(good, 5), "file ends after 2 events"},
		{"garbage line", replaceLine(3, "{\"type\":\"event\",\"seq\":3,,}\n"), ErrCorrupt, 3, lineStart(good, 3), "invalid character"},
		{"unknown type", replaceLine(3, `{"type":"mystery"}`+"\n"), ErrCorrupt, 3, lineStart(good, 3), `unknown record type "mystery"`},
		{"no type", replaceLine(3, `{}`+"\n"), ErrCorrupt, 3, lineStart(good, 3), "without a type"},
		{"seq backwards", replaceLine(4, strings.Replace(lines[3], `"seq":4`, `"seq":2`, 1)), ErrCorrupt, 4, lineStart(good, 4), "sequence 2 is not after the previous one (3)"},
		{"foreign session", replaceLine(4, strings.Replace(lines[3], `ev.s-1.`, `ev.s-2.`, 1)), ErrCorrupt, 4, lineStart(good, 4), `not in session s-1`},
		{"bad base64", replaceLine(3, strings.Replace(lines[2], `"data":"`, `"data":"!!`, 1)), ErrCorrupt, 3, lineStart(good, 3), "illegal base64"},
		{"flipped payload", replaceLine(3, strings.Replace(lines[2], `"data":"eyJ2IjoxfQ=="`, `"data":"eyJ2IjoyfQ=="`, 1)), ErrCorrupt, 6, lineStart(good, 6), "checksum mismatch"},
		{"dropped line", join(lines[0], lines[1], lines[3], lines[4], lines[5]), ErrCorrupt, 5, lineStart(good, 6) - len(lines[2]), "end record counts 3 events, the file holds 2"},
		{"after end", join(append(append([]string(nil), lines...), "x\n")...), ErrCorrupt, 6, len(good), "data after the end record"},
		{"invalid skill name", replaceLine(2, strings.Replace(lines[1], `"name":"a-skill"`, `"name":"A skill"`, 1)), ErrCorrupt, 2, lineStart(good, 2), `invalid skill name "A skill"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if bytes.Equal(c.in, good) {
				t.Fatal("case did not change the input")
			}
			_, _, err := readAll(c.in)
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("err = %v, want a *FormatError", err)
			}
			if !errors.Is(err, c.kind) || fe.Record != c.record || fe.Offset != int64(c.offset) || !strings.Contains(err.Error(), c.problem) {
				t.Errorf("err = %v (record %d, offset %d); want %v at record %d, offset %d, mentioning %q", err, fe.Record, fe.Offset, c.kind, c.record, c.offset, c.problem)
			}
			if !strings.Contains(err.Error(), fmt.Sprintf("byte offset %d", c.offset)) {
				t.Errorf("message %q does not name the byte offset", err)
			}
		})
	}
}

func TestWriterRejectsBadEvents(t *testing.T) {
	w, err := NewWriter(io.Discard, Header{Session: "s"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Event(Event{Seq: 5, Subject: "ev.s.agent.pre-step"}); err != nil {
		t.Fatal(err)
	}
	if err := w.Event(Event{Seq: 5, Subject: "ev.s.agent.pre-step"}); err == nil {
		t.Error("repeated sequence accepted")
	}
	if err := w.Event(Event{Seq: 6, Subject: "ev.other.agent.pre-step"}); err == nil {
		t.Error("event of another session accepted")
	}
	if _, err := NewWriter(io.Discard, Header{Session: "a b"}); err == nil {
		t.Error("invalid session accepted")
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := w.Event(Event{Seq: 7, Subject: "ev.s.x"}); err == nil {
		t.Error("write after Close accepted")
	}
}

func FuzzReader(f *testing.F) {
	good, _ := sampleRecording(f)
	f.Add(good)
	f.Add(good[:len(good)/2])
	f.Add([]byte(`{"format":"skillstream-recording","version":1,"session":"s","prefix":"ev"}` + "\n" + `{"type":"end","events":0,"sha256":"x"}` + "\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		_, recs, err := readAll(b)
		if err != nil {
			var fe *FormatError
			if !errors.As(err, &fe) {
				t.Fatalf("error %v is not a *FormatError", err)
			}
			if fe.Offset < 0 || fe.Offset > int64(len(b)) {
				t.Fatalf("offset %d outside the input (%d bytes)", fe.Offset, len(b))
			}
			return
		}
		var last uint64
		for _, r := range recs {
			if (r.Event == nil) == (r.Skills == nil) {
				t.Fatal("record with neither or both parts")
			}
			if r.Event != nil {
				if r.Event.Seq <= last {
					t.Fatalf("sequence %d after %d accepted", r.Event.Seq, last)
				}
				last = r.Event.Seq
			}
		}
	})
}
