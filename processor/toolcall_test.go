package processor

import (
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/events"
)

// scrub replaces the test's temporary skill directory in text so golden
// files do not depend on it.
func (e *env) scrub(text string) string {
	text = strings.ReplaceAll(text, e.skillDir, "<skills>")
	if real, err := filepath.EvalSymlinks(e.skillDir); err == nil {
		text = strings.ReplaceAll(text, real, "<skills>")
	}
	return text
}

func TestSkillCalls(t *testing.T) {
	e := newEnv(t)
	e.writeSkill("a-skill", "A skill.")
	e.writeSkill("user-only-skill", "Only for users.", "disable-model-invocation: true")
	e.waitSkills("a-skill", "user-only-skill")
	e.flaky.offer.Store(true)
	e.start()
	w := e.worker()
	const sid = "calls"
	n := 0
	call := func(name string) events.ToolResult {
		n++
		id := "c" + string(rune('0'+n))
		r := w.call(events.SkillCall{Session: sid, Call: id, Cwd: e.cwd, Args: events.SkillArgs{Name: name}})
		if r.Call != id || r.Session != sid {
			t.Fatalf("result for %s/%s, want %s/%s", r.Session, r.Call, sid, id)
		}
		// Every result is in the session log exactly as returned.
		stored := e.outputs(sid, events.KindToolResult)
		if len(stored) != n {
			t.Fatalf("%d results stored after %d calls", len(stored), n)
		}
		got, err := events.DecodeToolResult(events.Msgpack, stored[n-1].Data)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, r) {
			t.Fatalf("stored result differs from the reply:\n%+v\n%+v", got, r)
		}
		return r
	}

	r := call("a-skill")
	if r.IsError || r.Value == nil || r.Value.Name != "a-skill" || r.Value.ResourceBase == nil || r.Value.ResourceBase.Kind != "directory" {
		t.Fatalf("success result: %+v", r)
	}
	golden(t, "toolcall/success.txt", e.scrub(r.Text))

	cases := []struct {
		name, code, text string
	}{
		{"Bad Name", events.CodeInvalidName, `Error: invalid skill name "Bad Name"`},
		{"missing-skill", events.CodeUnknown, `Error: skill "missing-skill" is unknown or no longer available`},
		{"user-only-skill", events.CodeNotModelInvocable, `Error: skill "user-only-skill" is not available for model invocation`},
	}
	for _, c := range cases {
		r := call(c.name)
		if !r.IsError || r.Error == nil || r.Error.Code != c.code || r.Text != c.text || r.Value != nil {
			t.Errorf("%s: got %+v, want code %s text %q", c.name, r, c.code, c.text)
		}
	}

	// A provider failure reaches the model as "Error: <provider message>".
	r = call("flaky-skill")
	if r.IsError || r.Value.Provider != "flaky" {
		t.Fatalf("flaky-skill while healthy: %+v", r)
	}
	golden(t, "toolcall/opaque.txt", r.Text)
	e.flaky.loadBroken.Store(true)
	r = call("flaky-skill")
	if !r.IsError || r.Error.Code != events.CodeProvider || !strings.HasPrefix(r.Text, "Error: ") || !strings.Contains(r.Text, flakyMessage) {
		t.Fatalf("provider failure: %+v", r)
	}
	if r.Text != "Error: "+r.Error.Message {
		t.Fatalf("provider failure text %q, message %q", r.Text, r.Error.Message)
	}
	if got := counter(t, e.mustMetrics(t).providerErrs); got != 1 {
		t.Fatalf("provider error counter %v, want 1", got)
	}
}

func TestJSONRequestsAnsweredInJSON(t *testing.T) {
	e := newEnv(t)
	e.writeSkill("a-skill", "A skill.")
	e.waitSkills("a-skill")
	e.start()
	w := e.worker()
	w.enc = events.JSON
	const sid = "json"

	p := w.publish(sid, events.KindSkillCall, events.SkillCall{V: 1, Session: sid, Call: "c1", Cwd: e.cwd, Args: events.SkillArgs{Name: "a-skill"}}, nil)
	m := w.answer(p)
	if ct := m.Header.Get(events.HeaderContentType); ct != events.ContentTypeJSON {
		t.Fatalf("reply Content-Type %q", ct)
	}
	r, err := events.DecodeToolResult(events.JSON, m.Data)
	if err != nil {
		t.Fatalf("reply is not JSON: %v\n%s", err, m.Data)
	}
	if r.IsError || r.Value.Name != "a-skill" {
		t.Fatalf("result %+v", r)
	}

	p = w.publish(sid, events.KindPreStep, events.PreStep{V: 1, Session: sid, Step: "1", Cwd: e.cwd, Tools: ourTool()}, nil)
	m = w.answer(p)
	if ct := m.Header.Get(events.HeaderContentType); ct != events.ContentTypeJSON {
		t.Fatalf("reply Content-Type %q", ct)
	}
	d, err := events.DecodeDecision(events.JSON, m.Data)
	if err != nil {
		t.Fatalf("reply is not JSON: %v\n%s", err, m.Data)
	}
	if d.Outcome != events.OutcomeAppended {
		t.Fatalf("decision %+v", d)
	}
	// Outputs are stored as msgpack whatever the request's encoding.
	if ct := e.outputs(sid, events.KindCatalog)[0].Header.Get(events.HeaderContentType); ct != events.ContentTypeMsgpack {
		t.Fatalf("stored catalog Content-Type %q", ct)
	}
}

func TestExpiredSkillCall(t *testing.T) {
	e := newEnv(t)
	e.writeSkill("a-skill", "A skill.")
	e.waitSkills("a-skill")
	e.start()
	w := e.worker()
	r := w.call(events.SkillCall{Session: "late", Call: "c1", Cwd: e.cwd, Args: events.SkillArgs{Name: "a-skill"}, DeadlineMs: 1})
	if !r.IsError || r.Error == nil || r.Error.Code != events.CodeExpired {
		t.Fatalf("expired call: %+v", r)
	}
	if got := e.outputs("late", events.KindToolResult); len(got) != 0 {
		t.Fatalf("%d results appended for an expired call", len(got))
	}
}
