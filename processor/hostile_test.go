package processor

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

// hostileSize is about the largest payload a worker can append under the
// server's default maximum payload of 1 MiB, headers included.
const hostileSize = 1_000_000

// hostileTrigger is a trigger a hostile worker appends, pre-encoded: its
// id, at idAt, is rewritten in place for each publication, so that every
// copy is a new trigger and nothing encodes a megabyte while the CPU is
// counted.
type hostileTrigger struct {
	name string
	kind events.Kind
	data []byte
	idAt int
}

// idWidth is the width of the ids hostile triggers carry: "h" and digits.
const idWidth = 9

func hostileID(i int) string { return fmt.Sprintf("h%0*d", idWidth-1, i) }

// hostileTriggers are what the red team sent, of about size bytes each:
// in a skill name, in a pre-step's tools (a few long ones, or many small
// ones), in a cwd, in userText; and an honest pre-step and skill call to
// compare.
func hostileTriggers(tb testing.TB, cwd string, size int) []hostileTrigger {
	tb.Helper()
	id := hostileID(0)
	fill := func(n int) string { return strings.Repeat("a", n) }
	var longTools []events.Tool
	for range 15 {
		longTools = append(longTools, events.Tool{Name: fill(size / 16), Owner: "agent"})
	}
	var manyTools []events.Tool
	for i := 0; len(manyTools)*24 < size-200; i++ {
		manyTools = append(manyTools, events.Tool{Name: "t" + strconv.Itoa(i), Owner: "agent"})
	}
	var userText []string
	for range 4 {
		userText = append(userText, strings.Repeat("see /not-a-skill here ", (size-300)/4/22))
	}
	pre := func(ps events.PreStep) events.PreStep {
		ps.V, ps.Session, ps.Step = events.Version, "hostile", id
		ps.Tools = append(ps.Tools, ourTool()...)
		return ps
	}
	call := func(name, cwd string) events.SkillCall {
		return events.SkillCall{V: events.Version, Session: "hostile", Call: id, Cwd: cwd, Args: events.SkillArgs{Name: name}}
	}
	cases := []struct {
		name string
		kind events.Kind
		v    any
	}{
		{"honest-pre-step", events.KindPreStep, pre(events.PreStep{Cwd: cwd})},
		{"honest-skill-call", events.KindSkillCall, call("a-skill", cwd)},
		{"skill-name", events.KindSkillCall, call(fill(size-200), cwd)},
		{"long-tools", events.KindPreStep, pre(events.PreStep{Cwd: cwd, Tools: longTools})},
		{"many-tools", events.KindPreStep, pre(events.PreStep{Cwd: cwd, Tools: manyTools})},
		{"cwd", events.KindPreStep, pre(events.PreStep{Cwd: cwd + "/" + fill(size-300)})},
		{"user-text", events.KindPreStep, pre(events.PreStep{Cwd: cwd, UserText: userText})},
	}
	out := make([]hostileTrigger, len(cases))
	for i, c := range cases {
		data, err := events.Encode(events.Msgpack, c.v)
		if err != nil {
			tb.Fatalf("%s: %v", c.name, err)
		}
		at := bytes.Index(data, []byte(id))
		if at < 0 || bytes.Count(data, []byte(id)) != 1 {
			tb.Fatalf("%s: id not found once", c.name)
		}
		out[i] = hostileTrigger{name: c.name, kind: c.kind, data: data, idAt: at}
	}
	return out
}

// BenchmarkHostileTrigger measures the CPU time of the whole process
// (processor, worker and the in-process server: user and system time from
// getrusage, so a loaded machine does not inflate it) per trigger of each
// kind of hostileTriggers, from its publication to its answer, with user
// invocation on (userText is scanned): of about 1 MiB, and just under the
// trigger bound (the most a trigger can make the processor decode).
// stored-only publishes the same bytes under a kind the processor does not
// consume: what storing them costs without the processor. A trigger of the
// first kind stores about 1 MiB, so keep the count small; and run one kind
// at a time for figures the kinds run before it do not sway (the heap
// grows, the store's blocks fill):
//
//	go test -run XXX -bench HostileTrigger -benchtime 60x ./processor
//	go test -run XXX -bench HostileTrigger/user-text/976KiB -benchtime 60x ./processor
func BenchmarkHostileTrigger(b *testing.B) {
	e := newEnv(b)
	e.withoutFlaky()
	e.writeSkill("a-skill", "A skill.")
	e.waitSkills("a-skill")
	e.start(func(c *Config, _ *options) { c.Catalog = catalog.DefaultOptions(); c.Catalog.UserInvocation = true })
	w := e.worker()
	var triggers []hostileTrigger
	for _, size := range []int{hostileSize, DefaultMaxTriggerBytes} {
		for _, h := range hostileTriggers(b, e.cwd, size) {
			if strings.HasPrefix(h.name, "honest") && size != hostileSize {
				continue
			}
			if !strings.HasPrefix(h.name, "honest") {
				h.name += "/" + strconv.Itoa(size>>10) + "KiB"
			}
			triggers = append(triggers, h)
		}
	}
	for _, h := range triggers {
		for _, stored := range []bool{false, true} {
			name := h.name
			kind := h.kind
			if stored {
				name, kind = h.name+"/stored-only", events.Kind("message.user")
			}
			b.Run(name, func(b *testing.B) {
				data := bytes.Clone(h.data)
				i := 0
				before := cpuTime(b)
				for b.Loop() {
					i++
					copy(data[h.idAt:], hostileID(i))
					if stored {
						w.publish("hostile", kind, nil, data)
						continue
					}
					w.answer(w.publish("hostile", kind, nil, data))
				}
				b.ReportMetric(float64((cpuTime(b)-before).Microseconds())/float64(b.N), "cpu-µs/trigger")
				b.ReportMetric(float64(len(data)), "bytes/trigger")
			})
		}
	}
}

// hostileAnswer is what a trigger was answered: its code (bad_request for a
// rejection, else a skill tool error code or "" for a decision), the
// message, and the step or call id the answer names.
type hostileAnswer struct {
	code, message, id string
	seq               uint64
}

func (w *worker) hostileAnswer(kind events.Kind, p published) hostileAnswer {
	w.t.Helper()
	m := w.answer(p)
	if kind == events.KindSkillCall {
		var r events.ToolResult
		decodeAnswer(w.t, m, &r)
		a := hostileAnswer{id: r.Call, seq: r.TriggerSeq, message: r.Text}
		if r.Error != nil {
			a.code, a.message = r.Error.Code, r.Error.Message
		}
		return a
	}
	var d events.Decision
	decodeAnswer(w.t, m, &d)
	a := hostileAnswer{id: d.Step, seq: d.TriggerSeq, message: d.Outcome}
	if d.Outcome == events.OutcomeRejected && d.Error != nil {
		a.code, a.message = d.Error.Code, d.Error.Message
	}
	return a
}

// TestHostileTriggersRefused: every trigger of about 1 MiB a hostile
// worker sends (a skill name, long tools, many tools, a cwd, userText) is
// refused on its length, before it is decoded: answered bad_request naming
// the size and the bound, counted under too_large, terminated, and nothing
// is appended. Under the bound, a field past its own bound is refused the
// same way naming the field (reason field), and a skill name far longer
// than a skill's is answered invalid_name without carrying it back. An
// honest trigger after them is served. The CPU each took is logged (-v),
// never asserted.
func TestHostileTriggersRefused(t *testing.T) {
	e := newEnv(t)
	e.writeSkill("a-skill", "A skill.")
	e.waitSkills("a-skill")
	e.start(func(c *Config, _ *options) { c.Catalog = catalog.DefaultOptions(); c.Catalog.UserInvocation = true })
	w := e.worker()
	m := e.mustMetrics(t)
	const sid = "hostile"
	for _, h := range hostileTriggers(t, e.cwd, hostileSize) {
		if strings.HasPrefix(h.name, "honest") {
			continue
		}
		t.Run(h.name, func(t *testing.T) {
			before, cpu := counter(t, m.rejects.WithLabelValues(reasonTooLarge)), cpuTime(t)
			p := w.publish(sid, h.kind, nil, h.data)
			a := w.hostileAnswer(h.kind, p)
			t.Logf("%d bytes: %v CPU, answered %s %q", len(h.data), cpuTime(t)-cpu, a.code, a.message)
			want := fmt.Sprintf("payload too large: trigger payload of %d bytes, over the processor's limit of %d", len(h.data), DefaultMaxTriggerBytes)
			if a.code != events.CodeBadRequest || !strings.Contains(a.message, want) || a.seq != p.seq || a.id != "" {
				t.Errorf("answer %+v, want bad_request saying %q, no id", a, want)
			}
			if got := counter(t, m.rejects.WithLabelValues(reasonTooLarge)); got != before+1 {
				t.Errorf("rejects{too_large} = %v, want %v", got, before+1)
			}
		})
	}
	e.waitSettled()
	for _, k := range []events.Kind{events.KindCatalog, events.KindToolResult, events.KindInvocation} {
		if n := len(e.outputs(sid, k)); n != 0 {
			t.Errorf("%d %s appended for hostile triggers", n, k)
		}
	}

	// Within the bound, each field keeps its own.
	var tools []events.Tool
	for i := range events.MaxTools + 1 {
		tools = append(tools, events.Tool{Name: "t" + strconv.Itoa(i), Owner: "agent"})
	}
	before := counter(t, m.rejects.WithLabelValues(reasonField))
	for _, c := range []struct {
		name string
		ps   events.PreStep
		want string
	}{
		{"too many tools", events.PreStep{Tools: tools}, `field "tools": too many tools: 1025, limit 1024`},
		{"long tool name", events.PreStep{Tools: []events.Tool{{Name: strings.Repeat("t", 300), Owner: "agent"}}},
			`field "tools[0].name": too long: 300 bytes, limit 256`},
		{"long cwd", events.PreStep{Cwd: "/" + strings.Repeat("c", 5000), Tools: ourTool()}, `field "cwd": too long: 5001 bytes, limit 4095`},
	} {
		c.ps.V, c.ps.Session, c.ps.Step = events.Version, sid, c.name
		p := w.publish(sid, events.KindPreStep, c.ps, nil)
		if a := w.hostileAnswer(events.KindPreStep, p); a.code != events.CodeBadRequest || !strings.Contains(a.message, c.want) {
			t.Errorf("%s: answer %+v, want bad_request saying %q", c.name, a, c.want)
		}
	}
	if got := counter(t, m.rejects.WithLabelValues(reasonField)); got != before+3 {
		t.Errorf("rejects{field} = %v, want %v", got, before+3)
	}
	r := w.call(events.SkillCall{Session: sid, Call: "long-name", Cwd: e.cwd, Args: events.SkillArgs{Name: strings.Repeat("a", 60_000)}})
	if r.Error == nil || r.Error.Code != events.CodeInvalidName || len(r.Text) > 200 || !strings.Contains(r.Text, "(60000 bytes; a skill name has at most 64)") {
		t.Errorf("60 KB skill name: %.300q, want a short invalid_name", r.Text)
	}
	if n := len(e.outputs(sid, events.KindCatalog)); n != 0 {
		t.Errorf("%d catalogs appended for refused pre-steps", n)
	}
	d := w.preStep(events.PreStep{Session: sid, Step: "honest", Cwd: e.cwd, Tools: ourTool()})
	e.expect(d, events.OutcomeAppended, 1)
}

// TestTriggerBoundHoldsHonestTriggers: the default trigger bound holds a
// generous honest pre-step (300 tools whose names and owners take 60
// bytes, a long cwd and resourceDir, a user's message of 20 KB) with room
// to spare, and a skill call with every field at its own bound.
func TestTriggerBoundHoldsHonestTriggers(t *testing.T) {
	var tools []events.Tool
	for i := range 300 {
		tools = append(tools, events.Tool{Name: fmt.Sprintf("mcp__server_%02d__some_longer_tool_name_%04d", i%20, i), Owner: fmt.Sprintf("mcp:server-name-%02d", i%20)})
	}
	ps := events.PreStep{V: 1, Session: strings.Repeat("s", 128), Step: strings.Repeat("p", 256), Cwd: "/home/someone/src/" + strings.Repeat("d", 200),
		Tools: tools, ResourceDir: "/var/cache/agent/" + strings.Repeat("r", 200), Project: strings.Repeat("j", 128),
		UserText: []string{strings.Repeat("Please look at this log. ", 800)}, DeadlineMs: 1 << 42, MinStoreRevision: 1 << 40}
	sc := events.SkillCall{V: 1, Session: strings.Repeat("s", 128), Call: strings.Repeat("c", events.MaxIDLength),
		Cwd: "/" + strings.Repeat("d", events.MaxPathLength-1), ResourceDir: "/" + strings.Repeat("r", events.MaxResourceDirLength-1),
		Project: strings.Repeat("j", 128), Args: events.SkillArgs{Name: strings.Repeat("n", catalog.MaxNameLength)}, DeadlineMs: 1 << 42}
	for _, c := range []struct {
		name  string
		v     any
		under int
	}{{"pre-step", ps, 48 << 10}, {"skill call", sc, 6 << 10}} {
		for _, enc := range []events.Encoding{events.Msgpack, events.JSON} {
			b, err := events.Encode(enc, c.v)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s in %v: %d bytes", c.name, enc, len(b))
			if len(b) > c.under || len(b) > DefaultMaxTriggerBytes {
				t.Errorf("%s in %v takes %d bytes, want under %d", c.name, enc, len(b), c.under)
			}
		}
	}
}
