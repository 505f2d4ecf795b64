package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/skillstream/skillstream/processor/replay"
)

func (a *app) exportCommand() (*command, runFunc) {
	var (
		c       Config
		sid     string
		out     string
		capture bool
	)
	cmd := newCommand("export", "skillstream export --session SID [--out FILE] [--capture-skills] [flags]", `
Write one session's whole log - every event of every kind, in stream order,
with its stream sequence, subject, time, headers and payload - to a portable
recording file (stdout by default). The format is JSON lines, versioned and
checksummed; see "Recording and replaying sessions" in
cmd/skillstream/MANUAL.md. Large sessions are streamed, never loaded whole;
on a terminal, progress is shown on stderr.

The log is read from --nats-url when given, else through the server
answering on --listen (a running "skillstream serve"), else from the --data
store. Nothing is published. With --partitions N (sessions spread over N
streams by the server's mapping) the session is read from the stream its
id places it in; a count that does not match the server's streams, or a
session found in another stream than its id's, is refused with the count
or stream to use.

--capture-skills also records, for every working directory the session's
triggers name, the skills (with bodies) that this command's skill flags give
on this host now, so that "replay --recorded-skills" can run without them.
Give export the skill flags serve runs with: afterwards it asks every
serving processor which catalog it decides for each of those directories now,
and says on stderr whether the captured skills give the same one (or names
the member and both digests where they differ).`[1:], `
  skillstream export --session 7f3a --out 7f3a.jsonl
  skillstream export --session 7f3a --nats-url nats://nats:4222 --capture-skills > 7f3a.jsonl`[1:])
	cmd.group("Flags")
	cmd.localString(&sid, "session", "", "`id` of the session to export")
	cmd.localString(&out, "out", "", "write the recording to `file` (default stdout): whole or not at all, mode 0600")
	cmd.localBool(&capture, "capture-skills", false, "record the skills of every working directory the session uses")
	cmd.group("Skills (for --capture-skills)")
	cmd.pick(c.skillFlags, "skills-dir", "user-skills-dir", "project-skills-subdir", "no-bundled", "no-follow-symlinks")
	c.readerFlags(cmd)
	return cmd, func(ctx context.Context, args []string) error {
		if len(args) > 0 {
			return usagef("export takes no arguments, got %q", args[0])
		}
		if err := c.checkSession(sid); err != nil {
			return err
		}
		if capture {
			if err := c.validateSkills(); err != nil {
				return err
			}
		}
		js, closeJS, err := a.openSessions(&c)
		if err != nil {
			return err
		}
		defer closeJS()
		stream, prefix := c.sessionPlace(sid)
		opts := replay.ExportOptions{Stream: stream, Prefix: prefix, Layout: c.layout(), Session: sid}
		var captured *capturing
		if capture {
			reg, err := c.registry(nil, false)
			if err != nil {
				return err
			}
			defer reg.Close()
			captured = &capturing{Skills: reg}
			opts.Skills = captured
			// The serving members may be configured otherwise: say whose
			// skills these are, and compare them with the members' below.
			fmt.Fprintf(a.stderr, "--capture-skills: capturing the skills this export's own skill flags give on this host (%s)\n", c.describeSources())
		}
		prog := newProgress(a.stderr, "exported")
		opts.Progress = prog.update
		n, err := writeAtomically(out, a.stdout, func(w io.Writer) (int, error) {
			return replay.Export(ctx, js, opts, w)
		})
		prog.done()
		if errors.Is(err, replay.ErrEmptySession) {
			return c.sessionNotFound(ctx, js, sid)
		}
		if err != nil {
			return c.partitionHint(ctx, js, err)
		}
		if out != "" {
			fmt.Fprintf(a.stderr, "exported %d events of session %s to %s\n", n, sid, out)
		}
		if captured != nil {
			compareCaptured(ctx, js.Conn(), a.stderr, captured, c.catalogOptions())
		}
		return nil
	}
}

// writeAtomically runs write on path (through a temporary file renamed on
// success, so a failed export leaves nothing behind) or on stdout when path
// is empty.
func writeAtomically(path string, stdout io.Writer, write func(io.Writer) (int, error)) (int, error) {
	if path == "" {
		return write(stdout)
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return 0, fmt.Errorf("create %s: %w", path, err)
	}
	n, err := write(f)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("write %s: %w", path, cerr)
	}
	if err == nil {
		if err = os.Rename(f.Name(), path); err != nil {
			err = fmt.Errorf("write %s: %w", path, err)
		}
	}
	if err != nil {
		os.Remove(f.Name())
	}
	return n, err
}

// progress prints a counter on stderr when it is a terminal, at most a few
// times a second.
type progress struct {
	w     io.Writer
	verb  string
	on    bool
	last  time.Time
	shown bool
}

func newProgress(w io.Writer, verb string) *progress {
	p := &progress{w: w, verb: verb}
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			p.on = true
		}
	}
	return p
}

func (p *progress) update(n int, remaining uint64) {
	if !p.on || time.Since(p.last) < 200*time.Millisecond {
		return
	}
	p.last = time.Now()
	p.shown = true
	fmt.Fprintf(p.w, "\r%s %d events, %d to go   ", p.verb, n, remaining)
}

func (p *progress) done() {
	if p.shown {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
