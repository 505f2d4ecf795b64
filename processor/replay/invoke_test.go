package replay

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/processor"
)

// A session with user invocations, played through the real processor with
// user invocation on: replay reproduces the invocations, as recorded too;
// a changed skill body shows as a diff of the invocation's text.
func TestReplayInvocations(t *testing.T) {
	srv := natstest.Start(t)
	project := copyProject(t)
	opts := catalog.DefaultOptions()
	opts.UserInvocation = true
	runProcessor(t, srv, processor.Config{Catalog: opts})
	const sid = "inv-1"
	w := &worker{t: t, nc: srv.Conn, js: srv.JS, sid: sid, cwd: filepath.Join(project, "src")}
	if err := os.MkdirAll(w.cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	waitStream(t, srv.JS, processor.DefaultStream)
	tools := []events.Tool{{Name: "skill", Owner: processor.DefaultToolOwner}}
	pre := func(step string, text ...string) events.Decision {
		b := w.ask(events.KindPreStep, events.Msgpack, events.PreStep{V: 1, Session: sid, Step: step, Cwd: w.cwd, Tools: tools, UserText: text})
		d, err := events.DecodeDecision(events.Msgpack, b)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	if d := pre("1", "/b-skill please"); d.Outcome != events.OutcomeAppended || len(d.Invocations) != 1 {
		t.Fatalf("step 1: %+v", d)
	}
	if d := pre("2", "now /a-skill and /nope"); d.Outcome != events.OutcomeUnchanged || len(d.Invocations) != 1 {
		t.Fatalf("step 2: %+v", d)
	}
	if !w.call("call-1", "b-skill") {
		t.Fatal("call-1 failed")
	}
	pre("3")

	var rec bytes.Buffer
	if err := Record(context.Background(), srv.JS, processor.DefaultStream, events.DefaultPrefix, sid, &rec); err != nil {
		t.Fatal(err)
	}
	ropts := Options{ToolOwner: processor.DefaultToolOwner, Catalog: opts, Skills: newRegistry(t)}
	steps, sum := replayBytes(t, rec.Bytes(), ropts)
	if sum.Differ != 0 || sum.Triggers != 4 {
		t.Fatalf("replay of the unchanged session: %+v\n%s", sum, outcomes(steps))
	}
	invoked := func(o Outcome) []string {
		var out []string
		for _, i := range o.Invocations {
			out = append(out, i.Name)
		}
		return out
	}
	if got := invoked(steps[0].Recorded); !reflect.DeepEqual(got, []string{"b-skill"}) || !reflect.DeepEqual(invoked(steps[0].Replayed), got) {
		t.Errorf("step 1 invocations recorded %v, replayed %v", got, invoked(steps[0].Replayed))
	}
	if got := steps[1].Recorded.String(); got != "unchanged + /a-skill" {
		t.Errorf("step 2 recorded %q", got)
	}

	asRec := Options{ToolOwner: processor.DefaultToolOwner, Catalog: opts, AsRecorded: true}
	if steps, sum := replayBytes(t, rec.Bytes(), asRec); sum.Differ != 0 || len(steps[1].Replayed.Invocations) != 1 {
		t.Fatalf("replay as recorded: %+v\n%s", sum, outcomes(steps))
	}

	hist := Options{ToolOwner: processor.DefaultToolOwner, HistoryOnly: true}
	if steps, _ := replayBytes(t, rec.Bytes(), hist); !reflect.DeepEqual(invoked(steps[1].Recorded), []string{"a-skill"}) {
		t.Errorf("history of step 2: %+v", steps[1].Recorded)
	}

	// Replaying without the option: no invocation would be appended.
	off := Options{ToolOwner: processor.DefaultToolOwner, Catalog: catalog.DefaultOptions(), Skills: newRegistry(t)}
	if _, sum := replayBytes(t, rec.Bytes(), off); sum.Differ != 2 {
		t.Errorf("replay with user invocation off: %+v, want steps 1 and 2 to differ", sum)
	}

	// A body changed on disk: the invocation of a-skill differs, nothing else.
	path := filepath.Join(project, ".agents/skills/a-skill/SKILL.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, append(b, []byte("\nOne more rule.\n")...), 0o644); err != nil {
		t.Fatal(err)
	}
	steps, sum = replayBytes(t, rec.Bytes(), Options{ToolOwner: processor.DefaultToolOwner, Catalog: opts, Skills: newRegistry(t)})
	if sum.Differ != 1 || !steps[1].Differs {
		t.Fatalf("after a body change: %+v\n%s", sum, outcomes(steps))
	}
	if d := steps[1].Diff; !strings.HasPrefix(d, "--- recorded invocations\n+++ replayed invocations\n") || !strings.Contains(d, "+One more rule.") {
		t.Errorf("diff of step 2:\n%s", d)
	}
}
