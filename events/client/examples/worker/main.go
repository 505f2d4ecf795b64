// Command worker is the smallest skillstream worker: it tells the
// processor a model step is about to happen, prints the catalog the model
// is to be shown, and calls the skill tool for the first skill listed, as a
// model might.
//
//	go run ./events/client/examples/worker [PROJECT_DIR]
//
// It connects to $SKILLSTREAM_URL, by default nats://127.0.0.1:4222, where
// `skillstream serve` listens; PROJECT_DIR (default: the current directory)
// is the session's working directory. The repository's README shows its
// worker function, and a test runs it against a real processor.
//
// Against a NATS server that names its workers (the shipped permission
// files: a tenant's workers, or the single-tenant file's), set
// SKILLSTREAM_USER and SKILLSTREAM_PASSWORD: it connects as that user and
// takes its answers under the inbox prefix _INBOX.<user>, the only inboxes
// those files let the user subscribe to.
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
)

const usage = `usage: worker [PROJECT_DIR]

The smallest skillstream worker: one pre-step for a session in PROJECT_DIR
(default: the current directory), printing the catalog the model is to be
shown, then a skill call for the first skill listed, printing its result.
It connects to $SKILLSTREAM_URL (default nats://127.0.0.1:4222), where
skillstream serve listens.
`

func main() {
	os.Exit(cli(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// cli is the whole program, minus os.Exit: its exit status for args.
func cli(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	url := getenv("SKILLSTREAM_URL")
	if url == "" {
		url = "nats://127.0.0.1:4222"
	}
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {}
	if err := fs.Parse(args); errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(stdout, usage)
		return 0
	} else if err != nil {
		fmt.Fprint(stderr, usage)
		return 2
	}
	dir := "."
	switch args = fs.Args(); len(args) {
	case 0:
	case 1:
		dir = args[0]
	default:
		fmt.Fprint(stderr, usage)
		return 2
	}
	dir, err := filepath.Abs(dir) // a trigger's cwd is absolute
	if err != nil {
		fmt.Fprintln(stderr, "worker:", err)
		return 2
	}
	if err := worker(ctx, url, dir, stdout, stderr, as(getenv)...); err != nil {
		fmt.Fprintln(stderr, "worker:", err)
		return 1
	}
	return 0
}

func worker(ctx context.Context, url, dir string, out, stderr io.Writer, opts ...client.Option) error {
	c, err := client.Connect(url, opts...)
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second) // becomes each trigger's deadline
	defer cancel()
	session := rand.Text() // session ids are secrets: random, 128 bits or more
	tools := []events.Tool{{Name: "bash", Owner: "my-agent"}, client.SkillTool("skillstream")}
	// Before each model step: is there something new for the model to see?
	d, err := c.PreStep(ctx, events.PreStep{Session: session, Step: "1", Cwd: dir, Tools: tools})
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "pre-step: %s\n", d.Outcome)
	// Files of the project that are not skills, and why: for the user who
	// edits them, never for the model.
	for _, dg := range d.Diagnostics {
		fmt.Fprintf(stderr, "skill file skipped: %s: %s\n", dg.Path, dg.Reason)
	}
	if d.Catalog == nil || len(d.Catalog.Source.Entries) == 0 {
		return nil
	}
	fmt.Fprintf(out, "catalog (a user message for the model):\n%s\n", d.Catalog.Text)
	// The model calls the skill tool; here, for the first skill listed.
	name := d.Catalog.Source.Entries[0].Name
	r, err := c.CallSkill(ctx, events.SkillCall{Session: session, Call: "call-1", Cwd: dir,
		Args: events.SkillArgs{Name: name}})
	if err != nil {
		return err
	}
	// An unknown skill is not an error: r.IsError is set, r.Text says why.
	fmt.Fprintf(out, "skill %s (the tool result for the model):\n%s\n", name, r.Text)
	return nil
}

// as returns the client options of the user SKILLSTREAM_USER names, with
// its password from SKILLSTREAM_PASSWORD: its credentials, and its inbox
// prefix _INBOX.<user>; none when it is not set.
func as(getenv func(string) string) []client.Option {
	user := getenv("SKILLSTREAM_USER")
	if user == "" {
		return nil
	}
	return []client.Option{client.WithUserInfo(user, getenv("SKILLSTREAM_PASSWORD")), client.WithInboxPrefix("_INBOX." + user)}
}
