package processor

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
)

// writeBody writes a skill whose instructions are body.
func (e *env) writeBody(name, body string) {
	e.t.Helper()
	dir := filepath.Join(e.skillDir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		e.t.Fatal(err)
	}
	doc := "---\nname: " + name + "\ndescription: A large skill.\n---\n" + body
	if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(doc), 0o644); err != nil {
		e.t.Fatal(err)
	}
}

// bodyOf returns n bytes of instructions.
func bodyOf(n int) string {
	return strings.Repeat("Follow this step. ", n/18+1)[:n]
}

// contentOf extracts a success result's content from its text, as a client
// does when value.content is left out.
func contentOf(t testing.TB, text string) string {
	t.Helper()
	const open, end = "<skill_instructions>\n", "\n</skill_instructions>\n</skill_content>"
	i := strings.Index(text, open)
	if i < 0 || !strings.HasSuffix(text, end) {
		t.Fatalf("not a skill_content text: %.200q", text)
	}
	return text[i+len(open) : len(text)-len(end)]
}

// TestLargeSkillTruncated: a 2 MiB SKILL.md is loaded, cut to the default
// instruction size limit with the notice, appended and answered at once —
// no retry, no dead letter.
func TestLargeSkillTruncated(t *testing.T) {
	e := newEnv(t)
	e.withoutFlaky()
	body := bodyOf(2 << 20)
	e.writeBody("big-skill", body)
	e.waitSkills("big-skill")
	p := e.start()
	w := e.worker()
	r := w.call(events.SkillCall{Session: "big", Call: "c1", Cwd: e.cwd, Args: events.SkillArgs{Name: "big-skill"}})
	if r.IsError || r.Value == nil {
		t.Fatalf("result: %+v", r.Error)
	}
	want := body[:262144] + "\n\n[Skill instructions truncated: the first 262144 of 2097152 bytes are shown.]"
	if got := contentOf(t, r.Text); got != want {
		t.Errorf("text shows %d bytes ending %q", len(got), got[max(0, len(got)-90):])
	}
	if r.Value.Content != want {
		t.Errorf("value.content of %d bytes, want the content as shown (it fits twice)", len(r.Value.Content))
	}
	if tr := r.Value.Truncated; tr == nil || tr.Kept != 262144 || tr.Total != 2<<20 {
		t.Errorf("truncated = %+v", tr)
	}
	if n := len(e.outputs("big", events.KindToolResult)); n != 1 {
		t.Errorf("%d results stored, want 1", n)
	}
	if n := counter(t, p.m.transient.WithLabelValues("skill-call")) + counter(t, p.m.deadLetters.WithLabelValues("skill-call")); n != 0 {
		t.Errorf("%v transient failures or dead letters", n)
	}
}

// TestContentLeftOutWhenTooLarge: when carrying the instructions twice
// would not fit in one message, value.content is left out and the text
// still holds them.
func TestContentLeftOutWhenTooLarge(t *testing.T) {
	e := newEnv(t)
	e.withoutFlaky()
	body := bodyOf(700_000)
	e.writeBody("big-skill", body)
	e.waitSkills("big-skill")
	e.start(func(c *Config, _ *options) {
		c.Catalog = catalog.DefaultOptions()
		c.Catalog.MaxSkillBytes = 800_000
	})
	w := e.worker()
	r := w.call(events.SkillCall{Session: "big", Call: "c1", Cwd: e.cwd, Args: events.SkillArgs{Name: "big-skill"}})
	if r.IsError || r.Value == nil {
		t.Fatalf("result: %+v", r.Error)
	}
	if r.Value.Content != "" || r.Value.Truncated != nil {
		t.Errorf("value.content of %d bytes (truncated %+v), want it left out", len(r.Value.Content), r.Value.Truncated)
	}
	if got := contentOf(t, r.Text); got != body {
		t.Errorf("text shows %d bytes, want the whole body of %d", len(got), len(body))
	}
	stored := e.outputs("big", events.KindToolResult)
	if len(stored) != 1 || len(stored[0].Data) > events.MaxPayloadSize {
		t.Fatalf("%d results stored", len(stored))
	}
}

// TestStartRefusesLimits: a size limit that would let an output exceed the
// server's or the stream's largest message is refused at start, with the
// numbers, by Run and by Prepare alike.
func TestStartRefusesLimits(t *testing.T) {
	start := func(e *env, opts catalog.Options, prepare bool) error {
		nc := e.srv.Connect()
		p, err := New(nc, e.registry, Config{Catalog: opts}, WithLogger(quietLogger()))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
		defer cancel()
		if prepare {
			if err := p.Prepare(ctx); err != nil {
				return err
			}
		}
		done := make(chan error, 1)
		go func() { done <- p.Run(ctx) }()
		select {
		case err := <-done:
			return err
		case <-p.Ready():
			cancel()
			return <-done
		}
	}
	run := func(e *env, opts catalog.Options) error {
		t.Helper()
		err := start(e, opts, false)
		if perr := start(e, opts, true); fmt.Sprint(perr) != fmt.Sprint(err) {
			t.Errorf("Prepare then Run: %v; Run alone: %v", perr, err)
		}
		return err
	}
	with := func(f func(*catalog.Options)) catalog.Options {
		o := catalog.DefaultOptions()
		f(&o)
		return o
	}

	e := newEnv(t)
	err := run(e, with(func(o *catalog.Options) { o.MaxSkillBytes = 2 << 20 }))
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "max skill bytes 2097152") || !strings.Contains(err.Error(), "1048576") {
		t.Errorf("2 MiB of instructions: %v", err)
	}
	err = run(e, with(func(o *catalog.Options) { o.MaxLength = 200_000 }))
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "catalog max length 200000") {
		t.Errorf("catalog of 200000 code points: %v", err)
	}
	if err := run(e, with(func(o *catalog.Options) { o.MaxLength, o.MaxSkillBytes = 0, 0 })); err != nil {
		t.Errorf("no limits: %v", err)
	}

	// A stream that takes smaller messages lowers the bound.
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cfg := Config{}.WithDefaults().streamConfig()
	cfg.MaxMsgSize = 256 << 10
	if _, err := e.js.UpdateStream(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	err = run(e, catalog.DefaultOptions())
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "stream's max message size 262144") {
		t.Errorf("stream of 256 KiB messages: %v", err)
	}
	if err := run(e, with(func(o *catalog.Options) { o.MaxLength, o.MaxSkillBytes = 10_000, 200_000 })); err != nil {
		t.Errorf("200000 bytes in a stream of 256 KiB messages: %v", err)
	}

	// So does the server's maximum payload.
	small := newEnv(t, natstest.WithMaxPayload(128<<10))
	err = run(small, catalog.DefaultOptions())
	if !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "server's max payload 131072") {
		t.Errorf("server of 128 KiB payloads: %v", err)
	}
}

// TestCatalogTooLargeIsPermanent: with no catalog size limit, a catalog
// over the stream's largest message is answered at once with a too_large
// error and terminated — never retried as if transient.
func TestCatalogTooLargeIsPermanent(t *testing.T) {
	e := manySkills(t)
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	p := e.start(func(c *Config, _ *options) {
		c.Catalog = catalog.DefaultOptions()
		c.Catalog.MaxLength = 0
		c.Catalog.MaxSkillBytes = 32 << 10
	})
	w := e.worker()
	d := w.preStep(events.PreStep{Session: "many", Step: "1", Cwd: e.cwd, Tools: ourTool()})
	if d.Outcome != events.OutcomeIncomplete || d.Error == nil || d.Error.Code != events.CodeTooLarge {
		t.Fatalf("decision %+v, want incomplete with a too_large error", d)
	}
	if !strings.Contains(d.Error.Message, "65536") {
		t.Errorf("error %q does not give the limit", d.Error.Message)
	}
	if n := len(e.outputs("many", events.KindCatalog)); n != 0 {
		t.Errorf("%d catalogs appended", n)
	}
	if n := counter(t, p.m.transient.WithLabelValues("pre-step")); n != 0 {
		t.Errorf("%v transient failures: the condition was retried", n)
	}
	if n := counter(t, p.m.tooLarge.WithLabelValues("pre-step")); n != 1 {
		t.Errorf("too large counter %v, want 1", n)
	}
	cons, err := e.js.Consumer(ctx, DefaultStream, DefaultConsumer)
	if err != nil {
		t.Fatal(err)
	}
	poll(t, func() error {
		info, err := cons.Info(ctx)
		if err != nil {
			return err
		}
		if info.NumAckPending != 0 || info.NumRedelivered != 0 {
			return fmt.Errorf("%d pending, %d redelivered", info.NumAckPending, info.NumRedelivered)
		}
		return nil
	})
}

// TestCatalogShortenedToFit: the same skills under a catalog size limit
// give a shortened catalog, appended.
func TestCatalogShortenedToFit(t *testing.T) {
	e := manySkills(t)
	e.start(func(c *Config, _ *options) {
		c.Consumer = "bounded"
		c.Catalog = catalog.DefaultOptions()
		c.Catalog.MaxLength = 3000
		c.Catalog.MaxSkillBytes = 32 << 10
	})
	w := e.worker()
	d := w.preStep(events.PreStep{Session: "many2", Step: "1", Cwd: e.cwd, Tools: ourTool()})
	if d.Outcome != events.OutcomeAppended || d.Catalog == nil || len(d.Catalog.Source.Entries)+d.Catalog.Source.Omitted != 150 {
		t.Fatalf("decision %+v, want a shortened catalog appended", d)
	}
	if !strings.Contains(d.Catalog.Text, "(Shortened to fit the catalog size limit: ") {
		t.Error("no notice in the shortened catalog")
	}
	if dg, ok := catalog.Recognize(d.Catalog.Text); !ok || dg != d.Catalog.Source.Digest {
		t.Errorf("Recognize = %q, %v; want the source digest %q", dg, ok, d.Catalog.Source.Digest)
	}
	// The next pre-step recognises it: unchanged.
	if d := w.preStep(events.PreStep{Session: "many2", Step: "2", Cwd: e.cwd, Tools: ourTool()}); d.Outcome != events.OutcomeUnchanged {
		t.Errorf("second pre-step %s, want unchanged", d.Outcome)
	}
}

func TestShrinkReply(t *testing.T) {
	cause := errors.New("too big")
	r := events.ToolResult{V: 1, Session: "s", Call: "c", Text: "t", Value: &events.SkillValue{Name: "a", Content: "body"}}
	v, ok := shrinkReply(r, cause)
	if got := v.(events.ToolResult); !ok || got.Value.Content != "" || got.Text != "t" || r.Value.Content != "body" {
		t.Fatalf("first shrink: %+v, %v", v, ok)
	}
	v, ok = shrinkReply(v, cause)
	if got := v.(events.ToolResult); !ok || !got.IsError || got.Error.Code != events.CodeTooLarge {
		t.Fatalf("second shrink: %+v", v)
	}
	if _, ok := shrinkReply(v, cause); ok {
		t.Error("a too_large error shrank again")
	}
	d := events.Decision{V: 1, Outcome: events.OutcomeAppended, Catalog: &events.Catalog{Text: "x"}}
	v, ok = shrinkReply(d, cause)
	if got := v.(events.Decision); !ok || got.Catalog != nil || got.Error.Code != events.CodeTooLarge || got.Outcome != events.OutcomeAppended {
		t.Fatalf("decision shrink: %+v", v)
	}
}

// smallStream creates the session stream before the processor does, with
// a largest message of 64 KiB, so that outputs can outgrow it.
func (e *env) smallStream() {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	cfg := Config{}.WithDefaults().streamConfig()
	cfg.MaxMsgSize = 64 << 10
	if _, err := e.js.CreateStream(ctx, cfg); err != nil {
		e.t.Fatal(err)
	}
}

// manySkills is an env with 150 skills whose whole catalog is over the
// stream's largest message of 64 KiB.
func manySkills(t *testing.T) *env {
	e := newEnv(t)
	e.withoutFlaky()
	e.smallStream()
	var names []string
	for i := range 150 {
		name := fmt.Sprintf("skill-%03d", i)
		e.writeSkill(name, strings.Repeat("Describe the skill at length. ", 16))
		names = append(names, name)
	}
	e.waitSkills(names...)
	return e
}
