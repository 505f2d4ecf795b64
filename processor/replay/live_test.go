package replay

import (
	"bytes"
	"context"
	"errors"
	"os"
	"reflect"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/processor"
)

// Live replays a session from the stream exactly as Run replays its
// recording: the same steps, in the same order, with the same verdicts.
func TestLiveMatchesRecording(t *testing.T) {
	srv := natstest.Start(t)
	project := copyProject(t)
	playLifecycle(t, srv, project, "live-1")

	var rec bytes.Buffer
	if err := Record(context.Background(), srv.JS, processor.DefaultStream, events.DefaultPrefix, "live-1", &rec); err != nil {
		t.Fatal(err)
	}
	opts := Options{ToolOwner: processor.DefaultToolOwner, Catalog: catalog.DefaultOptions(), Skills: newRegistry(t)}
	want, wantSum := replayBytes(t, rec.Bytes(), opts)

	var got []Step
	opts.Emit = func(s Step) error { got = append(got, s); return nil }
	sum, err := Live(context.Background(), srv.JS, processor.DefaultStream, events.DefaultPrefix, "live-1", opts)
	if err != nil {
		t.Fatal(err)
	}
	if sum != wantSum || sum.Triggers == 0 {
		t.Fatalf("live summary %+v, recording's %+v", sum, wantSum)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("live steps differ from the recording's:\n%s\nwant:\n%s", outcomes(got), outcomes(want))
	}

	_, err = Live(context.Background(), srv.JS, processor.DefaultStream, events.DefaultPrefix, "nobody", opts)
	if !errors.Is(err, ErrEmptySession) {
		t.Fatalf("unknown session: err %v, want ErrEmptySession", err)
	}
}

// Verify accepts a whole recording and refuses one cut short or altered,
// as a FormatError.
func TestVerify(t *testing.T) {
	rec, err := os.ReadFile(goldenRecording)
	if err != nil {
		t.Fatal(err)
	}
	if err := Verify(bytes.NewReader(rec)); err != nil {
		t.Fatalf("golden recording: %v", err)
	}
	lines := bytes.SplitAfter(rec, []byte("\n"))
	altered := bytes.Replace(rec, []byte(`10.945808641Z`), []byte(`10.945808642Z`), 1) // only the checksum tells
	if bytes.Equal(altered, rec) {
		t.Fatal("the golden recording has no such time to alter")
	}
	for name, bad := range map[string][]byte{
		"truncated": bytes.Join(lines[:len(lines)-2], nil),
		"altered":   altered,
		"garbage":   []byte("\x00\xffnot a recording\n"),
		"empty":     nil,
	} {
		var fe *FormatError
		if err := Verify(bytes.NewReader(bad)); !errors.As(err, &fe) {
			t.Errorf("%s: err %v, want a FormatError", name, err)
		}
	}
}
