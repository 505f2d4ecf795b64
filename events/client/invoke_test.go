package client

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor"
)

// A worker passes the user's new message; the decision gives the
// invocations to append after the catalog, and the names ignored.
func TestPreStepUserInvocation(t *testing.T) {
	w := newWorld(t)
	w.configure = func(c *processor.Config) {
		c.Catalog = catalog.DefaultOptions()
		c.Catalog.UserInvocation = true
	}
	w.startProcessor()
	c := w.client()
	ctx := timeout(t)
	ps := events.PreStep{Session: "inv", Step: "1", Cwd: w.cwd, Tools: tools(), UserText: []string{"/a-skill then /nope please"}}
	d, err := c.PreStep(ctx, ps)
	if err != nil {
		t.Fatal(err)
	}
	if d.Catalog == nil || !strings.Contains(d.Catalog.Text, "A user may also invoke a skill directly") {
		t.Fatalf("decision %+v without a catalog carrying the user invocation line", d)
	}
	invs, ignored := Invocations(d)
	if len(invs) != 1 || invs[0].Name != "a-skill" || !strings.Contains(invs[0].Text, "Do the thing.") || invs[0].Value.Content != "Do the thing." {
		t.Fatalf("invocations %+v", invs)
	}
	if want := []events.Ignored{{Name: "nope", Reason: events.IgnoredUnknown}}; !reflect.DeepEqual(ignored, want) {
		t.Fatalf("ignored %+v, want %+v", ignored, want)
	}
	// A retry is answered with the same invocations, nothing appended.
	again, err := c.PreStep(ctx, ps)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again.Invocations, d.Invocations) {
		t.Fatalf("retry: %+v", again.Invocations)
	}
	if n := len(w.stored("inv", events.KindInvocation)); n != 1 {
		t.Fatalf("%d invocations stored, want 1", n)
	}
}

// Invocations reads an invocation with the instructions twice (as records
// were written before) and once (in its text only, as they are appended
// now) alike: the committed wire fixtures of both forms give the same
// Invocation.
func TestInvocationsReadBothForms(t *testing.T) {
	read := func(name string) Invocation {
		t.Helper()
		b, err := os.ReadFile(filepath.Join("..", "testdata", name+".msgpack"))
		if err != nil {
			t.Fatal(err)
		}
		inv, err := events.DecodeSkillInvocation(events.Msgpack, b)
		if err != nil {
			t.Fatal(err)
		}
		got, _ := Invocations(events.Decision{Invocations: []events.SkillInvocation{inv}})
		return got[0]
	}
	old, now := read("skillinvocation-twocopies"), read("skillinvocation")
	if !reflect.DeepEqual(old, now) {
		t.Fatalf("the two forms read differently:\n%+v\n%+v", old, now)
	}
	if now.Value.Content != "# PDF tools\n\nUse pdftotext." || !strings.Contains(now.Text, "<skill_instructions>\n# PDF tools") {
		t.Fatalf("invocation %+v", now)
	}
}
