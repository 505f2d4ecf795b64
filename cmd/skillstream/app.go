package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/skillstream/skillstream/catalog"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1 // the command ran and found a failure (tool error, lint error, runtime error)
	exitUsage   = 2 // bad command line, configuration or input
)

// errReported is returned by a command that already printed why it failed
// and wants exit status 1 without another message. Wrap it to say in a few
// words what failed, for --json (reportedf).
var errReported = errors.New("failed (the reasons are on stderr)")

// reportedf is errReported with a summary of what failed.
func reportedf(format string, args ...any) error {
	return fmt.Errorf("%s: %w", fmt.Sprintf(format, args...), errReported)
}

// app is one invocation of the program: where it writes, where it reads its
// environment.
type app struct {
	stdin          io.Reader // nil: os.Stdin
	stdout, stderr io.Writer
	lookupEnv      func(string) (string, bool)
	jsonErrors     bool  // the command runs with --json: errors are printed as JSON too
	jsonWritten    int64 // bytes the command wrote to stdout, with jsonErrors
}

// countingWriter counts what goes through it.
type countingWriter struct {
	w io.Writer
	n *int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	*c.n += int64(n)
	return n, err
}

// runFunc runs a parsed command with its positional arguments.
type runFunc func(ctx context.Context, args []string) error

// subcommand describes one entry of the command table.
type subcommand struct {
	name    string
	summary string
	build   func(a *app) (*command, runFunc)
}

// commands is the command table, in the order `skillstream help` lists it.
func commands() []subcommand {
	return []subcommand{
		{"serve", "run the processor (embedded NATS server by default)", (*app).serveCommand},
		{"demo", "play an agent session end to end and print what the model sees", (*app).demoCommand},
		{"catalog", "print the catalog a model would receive for a working directory", (*app).catalogCommand},
		{"load", "print the skill tool's result for a skill name", (*app).loadCommand},
		{"validate", "lint skill folders and files", (*app).validateCommand},
		{"skills", "publish skills to the fleet's skill store, list, inspect and fetch them", (*app).skillsCommand},
		{"export", "write a session's log to a recording file", (*app).exportCommand},
		{"replay", "re-run the decisions of a recorded session and diff them", (*app).replayCommand},
		{"eval", "judge a change to skills or options on recorded sessions, for CI", (*app).evalCommand},
		{"usage", "report which skills were loaded, invoked, failed and never used", (*app).usageCommand},
		{"history", "show the catalog the model saw at each step of a session", (*app).historyCommand},
		{"mcp", "serve the skills to an MCP host over stdio", (*app).mcpCommand},
		{"console", "serve the operator console: skills, usage, sessions and fleet in a browser", (*app).consoleCommand},
		{"bench", "measure throughput and latency under load, next to a same-run baseline", (*app).benchCommand},
		{"tenants", "write the passwords of a tenant deployment to one env file", (*app).tenantsCommand},
		{"nats-server", "run a NATS server from a configuration file (the embedded nats-server)", (*app).natsServerCommand},
		{"version", "print the version", (*app).versionCommand},
	}
}

// Main runs the program with args (without the program name) and returns
// its exit status. It is the whole program: main only adds os.Exit, so tests
// run exactly what operators run. Cancelling ctx stops a running command as
// SIGINT or SIGTERM would.
func Main(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	a := &app{stdout: stdout, stderr: stderr, lookupEnv: os.LookupEnv}
	return a.main(ctx, args)
}

func (a *app) main(ctx context.Context, args []string) int {
	if len(args) == 0 {
		a.usage(a.stderr)
		return exitUsage
	}
	name, rest := args[0], args[1:]
	switch name {
	case "-h", "-help", "--help", "help":
		if len(rest) > 0 && name == "help" {
			for _, sc := range commands() {
				if sc.name == rest[0] {
					cmd, _ := sc.build(a)
					cmd.usage(a.stdout)
					return exitOK
				}
			}
			fmt.Fprintf(a.stderr, "skillstream: unknown command %q\n\n", rest[0])
			a.usage(a.stderr)
			return exitUsage
		}
		a.usage(a.stdout)
		return exitOK
	case "-version", "--version":
		name = "version"
	}
	for _, sc := range commands() {
		if sc.name != name {
			continue
		}
		cmd, run := sc.build(a)
		positional, err := cmd.parse(rest, a.lookupEnv)
		if errors.Is(err, flag.ErrHelp) {
			cmd.usage(a.stdout)
			return exitOK
		}
		if err != nil {
			fmt.Fprintf(a.stderr, "skillstream %s: %v (see skillstream %s --help)\n", name, err, name)
			return exitUsage
		}
		if f := cmd.fs.Lookup("json"); f != nil && f.Value.String() == "true" {
			a.jsonErrors = true
			a.stdout = &countingWriter{w: a.stdout, n: &a.jsonWritten}
		}
		return a.exit(name, run(ctx, positional))
	}
	fmt.Fprintf(a.stderr, "skillstream: unknown command %q\n\n", name)
	a.usage(a.stderr)
	return exitUsage
}

// exit maps a command's error to an exit status, printing it in one line
// (with what a terminal would act on shown escaped: an error may quote a
// skill's or a worker's text). The rule, the same for every command:
//
//	0  it did what was asked;
//	1  it ran and the operation failed or found problems: a skill, revision,
//	   session or scope that is not there, a tool error, lint errors, NATS
//	   or the store failing;
//	2  it was called wrongly: a bad flag or value, a missing argument, a
//	   name that cannot be a skill's, input it cannot read as what it must
//	   be (a corrupt recording).
//
// A command run with --json also prints the error as one JSON object on
// stdout, {"error": {"message", "exit"}}, unless it already printed its own
// answer there.
func (a *app) exit(name string, err error) int {
	if err != nil {
		err = revealed{err}
	}
	code := exitFailure
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, errReported):
		// Already printed on stderr.
	case errors.Is(err, errUsage):
		fmt.Fprintf(a.stderr, "skillstream %s: %v (see skillstream %s --help)\n", name, err, name)
		code = exitUsage
	case errors.Is(err, errBadInput), errors.Is(err, catalog.ErrInvalidName):
		fmt.Fprintf(a.stderr, "skillstream %s: %v\n", name, err)
		code = exitUsage
	default:
		fmt.Fprintf(a.stderr, "skillstream %s: %v\n", name, err)
	}
	if a.jsonErrors && a.jsonWritten == 0 {
		type jsonError struct {
			Message string `json:"message"`
			Exit    int    `json:"exit"`
		}
		_ = printJSON(a.stdout, struct {
			Error jsonError `json:"error"`
		}{jsonError{Message: err.Error(), Exit: code}})
	}
	return code
}

// usage writes the top-level help.
func (a *app) usage(w io.Writer) {
	var b strings.Builder
	b.WriteString(`skillstream gives LLM agents a skill catalog and a model-facing "skill" tool,
as a stream processor on NATS JetStream.

Usage: skillstream <command> [flags] [arguments]

Commands:
`)
	for _, sc := range commands() {
		fmt.Fprintf(&b, "  %-11s %s\n", sc.name, sc.summary)
	}
	b.WriteString(`
Run "skillstream <command> --help" (or "skillstream help <command>") for a
command's flags, environment variables and examples.

Examples:
  skillstream serve                      # embedded NATS on 127.0.0.1:4222, store in ./skillstream-data
  skillstream demo                       # see a session play out, nothing to set up
  skillstream catalog --cwd ~/src/app    # what the model is shown in that project
  skillstream load commit-message        # what the skill tool returns
  skillstream validate .agents/skills    # lint skills, e.g. in CI
`)
	io.WriteString(w, b.String())
}

// revealed prints an error as catalog.Reveal shows it.
type revealed struct{ error }

func (e revealed) Error() string { return catalog.Reveal(e.error.Error()) }
func (e revealed) Unwrap() error { return e.error }
