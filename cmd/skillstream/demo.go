package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor"
	"github.com/skillstream/skillstream/processor/embedded"
	"github.com/skillstream/skillstream/providers"
)

// demoTimeout bounds each wait of the demo.
const demoTimeout = 15 * time.Second

// demoSkills are the skills the demo writes into its project.
var demoSkills = map[string]string{
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

func (a *app) demoCommand() (*command, runFunc) {
	var keep, userInvocation bool
	cmd := newCommand("demo", "skillstream demo [--keep] [--user-invocation]", `
Play an agent session end to end and print what the model sees at each step.

Everything runs inside this process, in a temporary folder: an embedded NATS
server with JetStream (no TCP port), the processor, a small project with two
skills, and a worker that speaks the wire protocol like an agent runtime
would: it appends agent.pre-step and tool.call.skill events to the session
log with a Reply-Inbox header and waits for the answers. Along the way a skill
is added, the context is compacted and every skill is removed, to show the
replacement catalog, its re-establishment after compaction and the tombstone.
The output is the same on every run apart from the temporary paths. The
folder is removed at the end unless --keep is given. With --user-invocation,
the user also invokes a skill by writing /<name> in a message.`[1:], `
  skillstream demo
  skillstream demo --keep     # look at the skills and the JetStream store afterwards`[1:])
	cmd.group("Flags")
	cmd.localBool(&keep, "keep", false, "keep the temporary folder (skills and JetStream store) and print where it is")
	cmd.localBool(&userInvocation, "user-invocation", false, "run the processor with user invocation on, and show a user's /name")
	return cmd, func(ctx context.Context, args []string) error {
		if len(args) > 0 {
			return usagef("demo takes no arguments, got %q", args[0])
		}
		ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
		defer stop()
		dir, err := os.MkdirTemp("", "skillstream-demo-")
		if err != nil {
			return err
		}
		if keep {
			defer fmt.Fprintf(a.stdout, "\nKept %s\n", dir)
		} else {
			defer os.RemoveAll(dir)
		}
		return runDemo(ctx, a.stdout, a.stderr, dir, userInvocation)
	}
}

// demo holds what the demo session needs.
type demo struct {
	out     io.Writer
	skills  string // the project's skills folder
	cwd     string // the project, the session's working directory
	reg     *providers.Registry
	w       *worker
	st      jetstream.Stream
	step    int
	section int
	// userText is the user's new message for the next pre-step.
	userText []string
}

func runDemo(ctx context.Context, out, errOut io.Writer, dir string, userInvocation bool) (err error) {
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

	log := slog.New(slog.NewTextHandler(errOut, &slog.HandlerOptions{Level: slog.LevelWarn}))
	cfg := Config{UserSkillsDir: "", NoBundled: true}
	if d.reg, err = cfg.registry(log, true); err != nil {
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

	pcfg := processor.Config{}.WithDefaults()
	pcfg.Catalog.UserInvocation = userInvocation
	p, err := processor.New(nc, d.reg, pcfg, processor.WithLogger(log))
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

	if d.w, err = newWorker(nc, pcfg.Prefix, "demo", pcfg.ToolOwner); err != nil {
		return err
	}
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
			if !userInvocation {
				return nil
			}
			d.heading("The user invokes skills by name")
			d.userText = []string{"/commit-message for these changes, and /code-review please"}
			d.printf("user: %q\n", d.userText[0])
			return d.preStep(ctx)
		},
		func(ctx context.Context) error {
			d.heading("A skill is added on disk: a replacement catalog")
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
			seq, err := d.w.compact(ctx, retain)
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
		sctx, cancel := context.WithTimeout(ctx, demoTimeout)
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
	return os.WriteFile(p, []byte(demoSkills[name]+"\n"), 0o644)
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
	d.printf("worker: agent.pre-step %s (tools: read_file, skill), waiting on its Reply-Inbox\n", step)
	dec, err := d.w.preStep(ctx, step, d.cwd, d.userText...)
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
		kind := c.Source.Update + " catalog"
		if len(c.Source.Entries) == 0 {
			kind = "tombstone"
		}
		d.printf("processor: %s, %s with %d %s\n", dec.Outcome, kind, len(c.Source.Entries), plural(len(c.Source.Entries), "skill", "skills"))
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
	r, err := d.w.call(ctx, id, d.cwd, name)
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

// printLog prints the session's durable log, as a worker rebuilding the
// model's context would read it.
func (d *demo) printLog(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, demoTimeout)
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
			if r.IsError {
				return fmt.Sprintf("%s: error %s", r.Call, r.Error.Code)
			}
			return fmt.Sprintf("%s: %s", r.Call, r.Value.Name)
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
