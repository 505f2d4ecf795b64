package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/processor/replay"
)

func (a *app) historyCommand() (*command, runFunc) {
	var (
		c      Config
		sid    string
		step   string
		asJSON bool
	)
	cmd := newCommand("history", "skillstream history --session SID | FILE [--step STEP] [--json] [flags]", `
Show which skill catalog the model saw at each step of a session: the
catalog message (its stream sequence, initial / replacement / tombstone, and
entries) that was the newest one on the model-visible surface after the
step's pre-step was answered, taking compaction masking into account. Steps
where no catalog was visible say why (none published yet, or every one
masked by a compaction). The model's skill searches (skill_search) follow
the step they were made in, one indented line each: the query, and how many
skills of how many matches the result showed and which, nothing found, or
the error.

With --step STEP it prints exactly the text of that catalog as the model
read it (nothing, and a note on stderr, when none was visible), with
characters a terminal would act on printed escaped as catalog prints them.

The session is read from a recording FILE, or with --session from the stream
(see export for where it is read from). --tool-owner must be the serving
processor's: only its catalogs count.`[1:], `
  skillstream history --session 7f3a
  skillstream history 7f3a.jsonl --step 12
  skillstream history --session 7f3a --json | jq -r '.seen.text // empty'`[1:])
	cmd.group("Flags")
	cmd.localString(&sid, "session", "", "`id` of the session to read from the stream")
	cmd.localString(&step, "step", "", "print the exact catalog text visible at step `id`")
	cmd.localBool(&asJSON, "json", false, "print one JSON object per pre-step and per skill search")
	cmd.pick(c.skillFlags, "tool-owner")
	c.readerFlags(cmd)
	return cmd, func(ctx context.Context, args []string) error {
		switch {
		case sid != "" && len(args) > 0:
			return usagef("history reads either --session or a recording file, not both")
		case sid == "" && len(args) != 1:
			return usagef("history needs --session SID or one recording file, got %d arguments", len(args))
		case sid != "":
			if err := c.checkSession(sid); err != nil {
				return err
			}
		}
		if err := c.validateSkills(); err != nil { // tool-owner; the rest hold their defaults
			return err
		}
		out := bufio.NewWriterSize(a.stdout, 64<<10)
		defer out.Flush()
		var (
			found *replay.Step
			print = stepPrinter(out, asJSON, true)
		)
		opts := replay.Options{ToolOwner: c.ToolOwner, HistoryOnly: true, Emit: func(s replay.Step) error {
			if s.Kind != replay.TriggerPreStep && (s.Kind != replay.TriggerSkillSearch || step != "") {
				return nil
			}
			if step != "" {
				if s.ID == step {
					found = &s // a retry of the step replaces it
				}
				return nil
			}
			return print(s)
		}}
		if _, err := a.replaySession(ctx, &c, sid, args, opts); err != nil {
			return err
		}
		if step == "" {
			return out.Flush()
		}
		if found == nil {
			return inputf("step %q is not in the session", step)
		}
		if asJSON {
			print(*found)
		} else if found.Seen != nil {
			fmt.Fprintln(out, catalog.Reveal(found.Seen.Text))
		} else {
			fmt.Fprintf(a.stderr, "no catalog was visible at step %s: %s\n", step, whyNone(*found))
		}
		return out.Flush()
	}
}

// printSeen writes one line about the catalog visible at a pre-step, or
// an indented one about a search made after it.
func printSeen(w io.Writer, s replay.Step) error {
	if s.Kind == replay.TriggerSkillSearch {
		return printSearch(w, s)
	}
	head := fmt.Sprintf("step %s (seq %d): ", s.ID, s.Seq)
	if s.ID == "" {
		head = fmt.Sprintf("undecodable pre-step (seq %d): ", s.Seq)
	}
	var invoked string
	for i, inv := range s.Recorded.Invocations {
		if i == 0 {
			invoked = "; the user invoked"
		}
		invoked += fmt.Sprintf(" /%s (seq %d)", inv.Name, inv.Seq)
	}
	c := s.Seen
	if c == nil {
		_, err := fmt.Fprintln(w, catalog.RevealLine(head+"no catalog visible: "+whyNone(s)+invoked))
		return err
	}
	names := make([]string, len(c.Entries))
	for i, e := range c.Entries {
		names[i] = e.Name
	}
	line := fmt.Sprintf("%scatalog seq %d (%s, step %s), %d entries", head, c.Seq, c.Update, c.Step, len(c.Entries))
	if len(names) > 0 {
		line += ": " + strings.Join(names, ", ")
	}
	if s.MaskedBy != 0 {
		line += fmt.Sprintf("; newest compaction: seq %d", s.MaskedBy)
	}
	_, err := fmt.Fprintln(w, catalog.RevealLine(line+invoked)) // names and ids come from the log
	return err
}

// printSearch writes one indented line about a recorded skill search:
// its query and what its result showed.
func printSearch(w io.Writer, s replay.Step) error {
	id := s.ID
	if id == "" {
		id = "?"
	}
	line := fmt.Sprintf("  search %s (seq %d): %q: ", id, s.Seq, s.Query)
	rec := s.Recorded
	switch v := s.Search; {
	case v != nil && len(v.Results) > 0:
		names := make([]string, len(v.Results))
		for i, e := range v.Results {
			names[i] = e.Name
		}
		line += fmt.Sprintf("%d of %d matches", len(v.Results), v.Total)
		if v.Offset > 0 {
			line += fmt.Sprintf(" from %d", v.Offset)
		}
		line += ": " + strings.Join(names, ", ")
	case v != nil && v.Total > 0:
		line += fmt.Sprintf("none of %d matches past %d", v.Total, v.Offset)
	case v != nil:
		line += "nothing found"
	case rec.Outcome == replay.OutcomeNone:
		line += "no result recorded"
	default:
		line += rec.Outcome
		if rec.Code != "" {
			line += " " + rec.Code
		}
	}
	_, err := fmt.Fprintln(w, catalog.RevealLine(line)) // queries and names come from the log
	return err
}

func whyNone(s replay.Step) string {
	if s.Published {
		return fmt.Sprintf("every catalog was masked by the compaction at seq %d", s.MaskedBy)
	}
	return "none published yet"
}
