package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/processor/demo"
	"github.com/skillstream/skillstream/providers"
)

func (a *app) demoCommand() (*command, runFunc) {
	var keep, userInvocation, skillSearch bool
	var updates string
	var listedMax int
	cmd := newCommand("demo", "skillstream demo [--keep] [--user-invocation] [--skill-search]", `
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
the user also invokes a skill by writing /<name> in a message. With
--skill-search, the agent's tool view holds the skill_search tool too and the
model searches the skills by what they do.`[1:], `
  skillstream demo
  skillstream demo --keep     # look at the skills and the JetStream store afterwards`[1:])
	cmd.group("Flags")
	cmd.localBool(&keep, "keep", false, "keep the temporary folder (skills and JetStream store) and print where it is")
	cmd.localBool(&userInvocation, "user-invocation", false, "run the processor with user invocation on, and show a user's /name")
	cmd.cfgString(&updates, "catalog-updates", string(catalog.UpdatesFull), "how the processor shows a changed catalog, by `mode`: full or changes (the added skill is then a change list)")
	cmd.cfgBool(&skillSearch, "skill-search", false, "run the processor with skill search on: the tool view holds skill_search, and the model searches")
	cmd.cfgInt(&listedMax, "catalog-listed-max", 0, "with --skill-search, list at most this many skills in the catalog; 0 for no count limit")
	return cmd, func(ctx context.Context, args []string) error {
		if len(args) > 0 {
			return usagef("demo takes no arguments, got %q", args[0])
		}
		if catalog.CheckUpdates(catalog.Updates(updates)) != nil {
			return usagef("--catalog-updates %q: must be %s or %s", updates, catalog.UpdatesFull, catalog.UpdatesChanges)
		}
		if catalog.CheckListedMax(listedMax) != nil {
			return usagef("--catalog-listed-max %d: must be 0 (no limit) or more", listedMax)
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
		log := slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
		opts := catalog.DefaultOptions()
		opts.UserInvocation, opts.Updates, opts.SkillSearch, opts.ListedMax = userInvocation, catalog.Updates(updates), skillSearch, listedMax
		return demo.Run(ctx, a.stdout, dir, opts, log, func() (*providers.Registry, error) {
			cfg := Config{UserSkillsDir: "", NoBundled: true} // the demo project's skills only
			return cfg.registry(log, true)
		})
	}
}
