// Package demo plays one agent session end to end through the wire
// protocol and prints what the model sees at each step: the worked
// example behind `skillstream demo`. Everything runs in one process: an
// embedded NATS server without a TCP port, the processor over the
// caller's registry, and a worker client standing in for the agent
// runtime.
package demo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
	"github.com/skillstream/skillstream/processor"
	"github.com/skillstream/skillstream/processor/embedded"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/search"
)

// Timeout bounds each wait of the demo.
const Timeout = 15 * time.Second

// skills are the skills the demo writes into its project.
var skills = map[string]string{
	"commit-message": `---
name: commit-message
description: Write a commit message for the staged changes, in the repository's own style.
---
# Commit message

1. Run ` + "`git diff --staged`" + ` and read the whole change.
2. Summarise it in an imperative subject line of at most 50 characters.
3. Explain the why in the body, wrapped at 72 columns.`,
	"code-review": `---
name: code-review
description: Review a change for correctness, tests and clarity before it is merged.
user-invocable: false
---
# Code review

Read the change twice: once for what it does, once for what it breaks.`,
	"release-notes": `---
name: release-notes
description: Draft release notes from the merged changes since the last tag.
---
# Release notes

List user-visible changes first; group the rest under "Internal".`,
}

// demo holds what the demo session needs.
type demo struct {
	out     io.Writer
	skills  string // the project's skills folder
	cwd     string // the project, the session's working directory
	reg     *providers.Registry
	w       *Worker
	st      jetstream.Stream
	step    int
	section int
	// userText is the user's new message for the next pre-step.
	userText []string
}

// Run plays the session in dir, which it fills with a project and the
// server's store, and prints the transcript on out. newRegistry builds the
// registry the processor serves: it must find the project's skill folder
// (.agents/skills) and watch it. log is for warnings. opts are the
// processor's catalog options (the zero value: the defaults), with what
// they show: with UserInvocation the user invokes a skill; with Updates
// catalog.UpdatesChanges the added skill is shown as a change list; with
// SkillSearch the agent's tool view holds the skill_search tool and the
// model searches the skills (ListedMax then caps the catalog). The caller
// removes dir.
func Run(ctx context.Context, out io.Writer, dir string, opts catalog.Options, log *slog.Logger, newRegistry func() (*providers.Registry, error)) (err error) {
	userInvocation, updates := opts.UserInvocation, opts.Updates
	d := &demo{out: out, cwd: filepath.Join(dir, "project")}
	d.skills = filepath.Join(d.cwd, ".agents", "skills")
	if err := os.MkdirAll(filepath.Join(d.cwd, ".git"), 0o755); err != nil {
		return err
	}
	for _, name := range []string{"code-review", "commit-message"} {
		if err := d.writeSkill(name); err != nil {
			return err
		}
	}

	if d.reg, err = newRegistry(); err != nil {
		return err
	}
	defer d.reg.Close()

	srv, err := embedded.Start(embedded.Options{Name: "skillstream-demo", StoreDir: filepath.Join(dir, "data")}, log)
	if err != nil {
		return err
	}
	defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
	nc, err := embedded.Connect(srv, "skillstream demo")
	if err != nil {
		return err
	}
	defer nc.Close()

	pcfg := processor.Config{Catalog: opts}.WithDefaults()
	popts := []processor.Option{processor.WithLogger(log)}
	if opts.SkillSearch {
		ix := search.New(d.reg, search.Options{})
		defer ix.Close()
		popts = append(popts, processor.WithSearcher(ix))
	}
	p, err := processor.New(nc, d.reg, pcfg, popts...)
	if err != nil {
		return err
	}
	pctx, pcancel := context.WithCancel(context.WithoutCancel(ctx))
	pdone := make(chan error, 1)
	go func() { pdone <- p.Run(pctx) }()
	defer func() {
		pcancel()
		if perr := <-pdone; perr != nil && err == nil {
			err = fmt.Errorf("processor: %w", perr)
		}
	}()

	if d.w, err = NewWorker(nc, pcfg.Prefix, "demo", pcfg.ToolOwner); err != nil {
		return err
	}
	d.w.SearchTool = opts.SkillSearch
	defer d.w.Close()

	d.printf("skillstream demo: one agent session, played through the wire protocol\n")
	d.printf("\nIn this process: an embedded NATS server with JetStream (no TCP port), the\n")
	d.printf("processor, and a worker standing in for the agent runtime. The session is\n")
	d.printf("%q; its working directory is a project whose skills folder holds two skills:\n", "demo")
	d.printf("\n    %s\n", d.cwd)
	d.printf("    ├── .agents/skills/code-review/SKILL.md      (user-invocable: false)\n")
	d.printf("    └── .agents/skills/commit-message/SKILL.md\n")

	// The stream appears when the processor has provisioned it.
	js, err := jetstream.New(nc)
	if err != nil {
		return fmt.Errorf("jetstream context: %w", err)
	}
	if err := poll(ctx, func() error {
		d.st, err = js.Stream(ctx, pcfg.Stream)
		return err
	}); err != nil {
		return fmt.Errorf("wait for stream %s: %w", pcfg.Stream, err)
	}

	steps := []func(context.Context) error{
		func(ctx context.Context) error {
			d.heading("The agent's first step: the catalog appears")
			return d.preStep(ctx)
		},
		func(ctx context.Context) error {
			d.heading("The next step, nothing changed: nothing is appended")
			d.printf("The earlier catalog is still in the model's context, so the prompt prefix\n(and the model's KV cache) stays as it was.\n")
			return d.preStep(ctx)
		},
		func(ctx context.Context) error {
			d.heading("The model loads a skill")
			return d.call(ctx, "commit-message")
		},
		func(ctx context.Context) error {
			d.heading("The model asks for a skill that does not exist")
			return d.call(ctx, "deploy")
		},
		func(ctx context.Context) error {
			if !opts.SkillSearch {
				return nil
			}
			d.heading("The model searches the skills by what they do")
			return d.search(ctx, "describe my changes for the commit")
		},
		func(ctx context.Context) error {
			if !userInvocation {
				return nil
			}
			d.heading("The user invokes skills by name")
			d.userText = []string{"/commit-message for these changes, and /code-review please"}
			d.printf("user: %q\n", d.userText[0])
			return d.preStep(ctx)
		},
		func(ctx context.Context) error {
			if updates == catalog.UpdatesChanges {
				d.heading("A skill is added on disk: a change list names it")
			} else {
				d.heading("A skill is added on disk: a replacement catalog")
			}
			d.printf("Written: .agents/skills/release-notes/SKILL.md\n")
			if err := d.writeSkill("release-notes"); err != nil {
				return err
			}
			if err := d.waitFor(ctx, "code-review", "commit-message", "release-notes"); err != nil {
				return err
			}
			return d.preStep(ctx)
		},
		func(ctx context.Context) error {
			d.heading("The worker compacts the context: the catalog is re-established")
			info, err := d.st.Info(ctx)
			if err != nil {
				return err
			}
			retain := info.State.LastSeq + 1
			seq, err := d.w.Compact(ctx, retain)
			if err != nil {
				return err
			}
			d.printf("worker: context.compact at seq %d, retainFrom %d: every earlier event,\n", seq, retain)
			d.printf("        the catalogs included, is gone from the model's view.\n")
			return d.preStep(ctx)
		},
		func(ctx context.Context) error {
			d.heading("Every skill is removed: the tombstone")
			if err := os.RemoveAll(d.skills); err != nil {
				return err
			}
			d.printf("Removed: .agents/skills\n")
			if err := d.waitFor(ctx); err != nil {
				return err
			}
			return d.preStep(ctx)
		},
	}
	for _, step := range steps {
		sctx, cancel := context.WithTimeout(ctx, Timeout)
		err := step(sctx)
		cancel()
		if err != nil {
			return err
		}
	}
	return d.printLog(ctx)
}

func (d *demo) printf(format string, args ...any) { fmt.Fprintf(d.out, format, args...) }

func (d *demo) heading(title string) {
	d.section++
	d.printf("\n== %d. %s\n\n", d.section, title)
}

// model prints text as the model reads it, indented and marked.
func (d *demo) model(text string) {
	for _, line := range strings.Split(text, "\n") {
		if line == "" {
			d.printf("    |\n")
			continue
		}
		d.printf("    | %s\n", line)
	}
}

func (d *demo) writeSkill(name string) error {
	p := filepath.Join(d.skills, name, "SKILL.md")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	return os.WriteFile(p, []byte(skills[name]+"\n"), 0o644)
}

// waitFor waits until the registry sees exactly names in the project, so
// that the next pre-step observes the change on disk.
func (d *demo) waitFor(ctx context.Context, names ...string) error {
	return poll(ctx, func() error {
		snap, err := d.reg.Snapshot(ctx, catalog.At(d.cwd))
		if err != nil {
			return err
		}
		var got []string
		for _, s := range snap.Skills {
			got = append(got, s.Name)
		}
		if !snap.Complete || !slices.Equal(got, names) {
			return fmt.Errorf("skills seen: %q, want %q", got, names)
		}
		return nil
	})
}

func (d *demo) preStep(ctx context.Context) error {
	d.step++
	step := fmt.Sprint(d.step)
	tools := "read_file, skill"
	if d.w.SearchTool {
		tools += ", skill_search"
	}
	d.printf("worker: agent.pre-step %s (tools: %s), waiting on its Reply-Inbox\n", step, tools)
	dec, err := d.w.PreStep(ctx, step, d.cwd, d.userText...)
	d.userText = nil
	if err != nil {
		return err
	}
	if dec.Error != nil {
		return fmt.Errorf("pre-step %s: %s: %s", step, dec.Outcome, dec.Error.Message)
	}
	switch {
	case dec.Catalog != nil:
		c := dec.Catalog
		kind, n := c.Source.Update+" catalog", len(c.Source.Entries)
		if n == 0 {
			kind = "tombstone"
		}
		if c.Source.Update == events.UpdateChanges {
			ch := len(c.Source.Changes)
			d.printf("processor: %s, change list naming %d %s (the list now has %d)\n", dec.Outcome, ch, plural(ch, "skill", "skills"), c.Source.Count)
		} else {
			d.printf("processor: %s, %s with %d %s\n", dec.Outcome, kind, n, plural(n, "skill", "skills"))
		}
		d.printf("\nThe model sees a new user message:\n\n")
		d.model(c.Text)
	default:
		d.printf("processor: %s\n", dec.Outcome)
	}
	for _, inv := range dec.Invocations {
		d.printf("processor: skill.invocation /%s\n", inv.Name)
		d.printf("\nThe model sees a new user message:\n\n")
		d.model(inv.Text)
	}
	for _, ig := range dec.Ignored {
		d.printf("processor: /%s invokes nothing (%s): it stays prose\n", ig.Name, ig.Reason)
	}
	return nil
}

func (d *demo) call(ctx context.Context, name string) error {
	id := "call-" + name
	d.printf("model: skill(name=%q)\n", name)
	d.printf("worker: tool.call.skill %s, waiting on its Reply-Inbox\n", id)
	r, err := d.w.Call(ctx, id, d.cwd, name)
	if err != nil {
		return err
	}
	if r.IsError {
		d.printf("processor: tool.result, error %s\n", r.Error.Code)
	} else {
		d.printf("processor: tool.result from provider %q\n", r.Value.Provider)
	}
	d.printf("\nThe model sees the tool result:\n\n")
	d.model(r.Text)
	return nil
}

func (d *demo) search(ctx context.Context, query string) error {
	id := "search-1"
	d.printf("model: skill_search(query=%q)\n", query)
	d.printf("worker: tool.call.skill_search %s, waiting on its Reply-Inbox\n", id)
	r, err := d.w.Search(ctx, id, d.cwd, query)
	if err != nil {
		return err
	}
	switch {
	case r.IsError:
		d.printf("processor: tool.result, error %s\n", r.Error.Code)
	default:
		d.printf("processor: tool.result, %d of %d %s shown\n", len(r.Search.Results), r.Search.Total, plural(r.Search.Total, "match", "matches"))
	}
	d.printf("\nThe model sees the tool result:\n\n")
	d.model(r.Text)
	return nil
}

// printLog prints the session's durable log, as a worker rebuilding the
// model's context would read it.
func (d *demo) printLog(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, Timeout)
	defer cancel()
	d.heading("The session log in JetStream")
	info, err := d.st.Info(ctx)
	if err != nil {
		return err
	}
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq; seq++ {
		m, err := d.st.GetMsg(ctx, seq)
		if err != nil {
			return fmt.Errorf("read seq %d: %w", seq, err)
		}
		_, kind, err := events.ParseSubject(d.w.c.Prefix(), m.Subject)
		if err != nil {
			return err
		}
		d.printf("  %3d  %-22s %s\n", seq, kind, describeEvent(kind, m.Data))
	}
	d.printf("\nEach trigger got exactly one answer; nothing is ever rewritten. Run\n")
	d.printf("`skillstream serve` and point your agent workers at it to do this for real.\n")
	return nil
}

// describeEvent summarises a stored event in a few words.
func describeEvent(kind events.Kind, data []byte) string {
	switch kind {
	case events.KindPreStep:
		if p, err := events.DecodePreStep(events.Msgpack, data); err == nil {
			return "step " + p.Step
		}
	case events.KindSkillCall:
		if c, err := events.DecodeSkillCall(events.Msgpack, data); err == nil {
			return fmt.Sprintf("%s: skill(name=%q)", c.Call, c.Args.Name)
		}
	case events.KindCompaction:
		if c, err := events.DecodeCompaction(events.Msgpack, data); err == nil {
			return fmt.Sprintf("retainFrom %d", c.RetainFrom)
		}
	case events.KindCatalog:
		if c, err := events.DecodeCatalog(events.Msgpack, data); err == nil {
			var names []string
			for _, e := range c.Source.Entries {
				names = append(names, e.Name)
			}
			return fmt.Sprintf("step %s: %s [%s]", c.Step, c.Source.Update, strings.Join(names, ", "))
		}
	case events.KindToolResult:
		if r, err := events.DecodeToolResult(events.Msgpack, data); err == nil {
			switch {
			case r.IsError && r.Error != nil:
				return fmt.Sprintf("%s: error %s", r.Call, r.Error.Code)
			case r.Search != nil:
				return fmt.Sprintf("%s: %d of %d matches of %q", r.Call, len(r.Search.Results), r.Search.Total, r.Search.Query)
			case r.Value != nil:
				return fmt.Sprintf("%s: %s", r.Call, r.Value.Name)
			}
		}
	case events.KindSkillSearch:
		if s, err := events.DecodeSkillSearch(events.Msgpack, data); err == nil {
			return fmt.Sprintf("%s: skill_search(query=%q)", s.Call, s.Args.QueryText())
		}
	case events.KindInvocation:
		if inv, err := events.DecodeSkillInvocation(events.Msgpack, data); err == nil {
			return fmt.Sprintf("step %s: /%s", inv.Step, inv.Name)
		}
	case events.KindCatalogHead:
		if h, err := events.DecodeCatalogHead(events.Msgpack, data); err == nil {
			return "head of step " + h.Step + "'s catalog"
		}
	}
	return "(not decoded)"
}

// poll calls f until it succeeds or ctx ends.
func poll(ctx context.Context, f func() error) error {
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		err := f()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(err, ctx.Err())
		case <-tick.C:
		}
	}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// Worker plays one agent session with the worker client, its tool view
// holding the processor's skill tool: the demo's agent, and the one the
// command's tests drive a running serve with.
type Worker struct {
	c       *client.Client
	session string
	owner   string // tool owner whose skill tool is in the tool view
	// SearchTool puts the owner's skill_search tool in the tool view too.
	SearchTool bool
}

// NewWorker starts a client on nc for session, with the skill tool of
// owner in its tool view. Close ends it (nc stays open).
func NewWorker(nc *nats.Conn, prefix, session, owner string) (*Worker, error) {
	c, err := client.New(nc, client.WithPrefix(prefix))
	if err != nil {
		return nil, fmt.Errorf("worker client: %w", err)
	}
	return &Worker{c: c, session: session, owner: owner}, nil
}

// Close ends the worker's client.
func (w *Worker) Close() error { return w.c.Close() }

// PreStep appends an agent.pre-step with the skill tool visible and returns
// the processor's Decision.
func (w *Worker) PreStep(ctx context.Context, step, cwd string, userText ...string) (events.Decision, error) {
	tools := []events.Tool{{Name: "read_file", Owner: "agent"}, client.SkillTool(w.owner)}
	if w.SearchTool {
		tools = append(tools, client.SkillSearchTool(w.owner))
	}
	return w.c.PreStep(ctx, events.PreStep{Session: w.session, Step: step, Cwd: cwd, Tools: tools, UserText: userText})
}

// Search appends a tool.call.skill_search and returns the processor's
// ToolResult (an argument error is a result too).
func (w *Worker) Search(ctx context.Context, id, cwd, query string) (events.ToolResult, error) {
	return w.c.SearchSkills(ctx, events.SkillSearch{Session: w.session, Call: id, Cwd: cwd, Args: events.SearchArgs{Query: query}})
}

// Call appends a tool.call.skill and returns the processor's ToolResult.
func (w *Worker) Call(ctx context.Context, id, cwd, name string) (events.ToolResult, error) {
	return w.c.CallSkill(ctx, events.SkillCall{Session: w.session, Call: id, Cwd: cwd, Args: events.SkillArgs{Name: name}})
}

// Compact appends a context.compact keeping only events from retainFrom on
// visible to the model, and returns its sequence.
func (w *Worker) Compact(ctx context.Context, retainFrom uint64) (uint64, error) {
	return w.c.Compact(ctx, events.Compaction{Session: w.session, RetainFrom: retainFrom})
}

// Append appends v as an event of kind (one the processor ignores, such
// as a message) and returns its sequence.
func (w *Worker) Append(ctx context.Context, kind events.Kind, v any) (uint64, error) {
	return w.c.Append(ctx, w.session, kind, v)
}
