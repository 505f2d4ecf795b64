package replay

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/skillstream/skillstream/events"
)

// Replay as recorded serves a recorded invocation's skill from the
// record: the committed fixtures of a skill.invocation with the
// instructions twice (the form written before) and once (in the text only,
// as appended now) give the same skill, in either encoding.
func TestReplayReadsBothInvocationForms(t *testing.T) {
	for _, enc := range []events.Encoding{events.Msgpack, events.JSON} {
		ext := ".msgpack"
		if enc == events.JSON {
			ext = ".json"
		}
		served := func(name string) events.ToolResult {
			t.Helper()
			b, err := os.ReadFile(filepath.Join("..", "..", "events", "testdata", name+ext))
			if err != nil {
				t.Fatal(err)
			}
			e := Event{Seq: 7, Subject: "ev.sess-1.skill.invocation", Data: bytes.TrimSuffix(b, []byte("\n")),
				Headers: map[string][]string{events.HeaderContentType: {enc.ContentType()}}}
			sh := invokedAsRecorded(events.LayoutFlat, []Event{e}, 0)
			r, ok := sh.results["pdf-tools"]
			if !ok {
				t.Fatalf("%s%s: no skill served", name, ext)
			}
			return r
		}
		old, now := served("skillinvocation-twocopies"), served("skillinvocation")
		if !reflect.DeepEqual(old, now) {
			t.Fatalf("%v: the two forms serve differently:\n%+v\n%+v", enc, old, now)
		}
		if now.Value.Content != "# PDF tools\n\nUse pdftotext." {
			t.Fatalf("%v: content %q", enc, now.Value.Content)
		}
	}
}
