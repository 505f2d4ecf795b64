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
Show, step by step, what changed in the skill catalog the model saw: the
catalog on the model-visible surface after each step's pre-step was
answered (its stream sequence, initial / replacement / changes / tombstone,
and how many entries), taking compaction masking into account, then one
indented line per kind of change against what the model saw at the
previous step: the entries added, removed, changed (their description),
listed without a description (by the catalog size limit, or a skill without
one), a new order, a new count of skills not listed, and the entries the
step's catalog took from a revision that is not their skill's stable one
(not stable: name rev N (canary or pin)). The first list
shows as all added. A step that changed nothing says "no change". When a
compaction hid the list the model saw, the step says so: the list visible
after it is new to the model and shows as all added, with how it differs
from the hidden one. Steps where no catalog was visible say why (none
published yet, or every one masked by a compaction).

Under each step, in stream order, what the model did in it: each skill
search (skill_search: the query, and how many skills of how many matches
the result showed and which, nothing found, or the error), each skill call
(the call id, the name, ok or the error, and the revision and channel
when the session was not served the stable one), and each skill the user
invoked with /name.

With --step STEP it prints the whole list the model saw at that step (every
name), a blank line, and the exact text of that catalog as the model read
it (nothing, and a note on stderr, when none was visible), with characters
a terminal would act on printed escaped as catalog prints them. --json
prints one object per step (its catalog, added, removed, changed,
undescribed, revisions, searches, loads); with --step, the step with the
catalog's entries and text.

The session is read from a recording FILE, or with --session from the stream
(see export for where it is read from). --tool-owner must be the serving
processor's: only its catalogs count.`[1:], `
  skillstream history --session 7f3a
  skillstream history 7f3a.jsonl --step 12
  skillstream history 7f3a.jsonl --json | jq -c 'select(.removed) | [.step, .removed]'
  skillstream history --session 7f3a --step 12 --json | jq -r '.seen.text // empty'`[1:])
	cmd.group("Flags")
	cmd.localString(&sid, "session", "", "`id` of the session to read from the stream")
	cmd.localString(&step, "step", "", "print the whole list and the exact catalog text visible at step `id`")
	cmd.localBool(&asJSON, "json", false, "print one JSON object per step")
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
			found  *replay.Step
			deltas replay.Deltas
			enc    = newJSONEncoder(out)
		)
		print := func(d *replay.Delta) error {
			if d == nil {
				return nil
			}
			if asJSON {
				return enc.Encode(d)
			}
			return printDelta(out, d)
		}
		opts := replay.Options{ToolOwner: c.ToolOwner, HistoryOnly: true, Emit: func(s replay.Step) error {
			if step != "" {
				if s.Kind == replay.TriggerPreStep && s.ID == step {
					found = &s // a retry of the step replaces it
				}
				return nil
			}
			return print(deltas.Add(s))
		}}
		if _, err := a.replaySession(ctx, &c, sid, args, opts); err != nil {
			return err
		}
		if step == "" {
			if err := print(deltas.Finish()); err != nil {
				return err
			}
			return out.Flush()
		}
		if found == nil {
			return inputf("step %q is not in the session", step)
		}
		if asJSON {
			enc.Encode(*found)
		} else if found.Seen != nil {
			printSeen(out, *found)
			fmt.Fprintln(out)
			fmt.Fprintln(out, catalog.Reveal(found.Seen.Text))
		} else {
			fmt.Fprintf(a.stderr, "no catalog was visible at step %s: %s\n", step, whyNone(found.Published, found.MaskedBy))
		}
		return out.Flush()
	}
}

// printDelta writes what changed at one step in the list the model saw,
// then the searches and loads made in it, one indented line each.
func printDelta(w io.Writer, d *replay.Delta) error {
	var lines []string
	switch {
	case d.Seq == 0 && d.Step == "":
		lines = append(lines, "before the first step:")
	default:
		head := fmt.Sprintf("step %s (seq %d): ", d.Step, d.Seq)
		if d.Step == "" {
			head = fmt.Sprintf("undecodable pre-step (seq %d): ", d.Seq)
		}
		lines = append(lines, head+deltaHead(d))
		lines = append(lines, deltaLines(d)...)
	}
	// Searches and loads, in stream order.
	i, j := 0, 0
	for i < len(d.Searches) || j < len(d.Loads) {
		if j == len(d.Loads) || i < len(d.Searches) && d.Searches[i].Seq < d.Loads[j].Seq {
			lines = append(lines, searchLine(d.Searches[i]))
			i++
		} else {
			lines = append(lines, loadLine(d.Loads[j]))
			j++
		}
	}
	for _, l := range lines {
		if _, err := fmt.Fprintln(w, catalog.RevealLine(l)); err != nil { // names, queries and ids come from the log
			return err
		}
	}
	return nil
}

// deltaHead says which catalog the model saw after the step, and whether
// that changed anything.
func deltaHead(d *replay.Delta) string {
	hid := ""
	if d.Hidden != 0 {
		hid = fmt.Sprintf("the compaction at seq %d hid catalog seq %d", d.Compaction, d.Hidden)
	}
	c := d.Catalog
	if c == nil {
		why := "no catalog visible: " + whyNone(d.Published, d.Compaction)
		if hid != "" {
			why = hid + "; no catalog visible"
		}
		return why
	}
	line := fmt.Sprintf("catalog seq %d (%s, step %s), %d entries", c.Seq, c.Update, c.Step, c.Entries)
	switch {
	case hid != "" && d.SinceHidden != nil:
		// The model sees only this list now: every entry is new to it.
		line += "; " + hid + ": all listed anew"
		if n := *d.SinceHidden; n == (replay.Counts{}) {
			line += " (as in the hidden list)"
		} else {
			line += fmt.Sprintf(" (against the hidden list: %s)", countsText(n))
		}
	case d.Empty():
		line += ", no change"
	}
	return line
}

func countsText(n replay.Counts) string {
	var parts []string
	for _, p := range []struct {
		n    int
		what string
	}{{n.Added, "added"}, {n.Removed, "removed"}, {n.Changed, "changed"}, {n.Undescribed, "without a description"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.what))
		}
	}
	return strings.Join(parts, ", ")
}

// deltaLines are the indented lines of a step's changes: each kind of
// change with its count and names.
func deltaLines(d *replay.Delta) []string {
	var lines []string
	names := func(what string, ns []string) {
		if len(ns) > 0 {
			lines = append(lines, fmt.Sprintf("  %s %d: %s", what, len(ns), strings.Join(ns, ", ")))
		}
	}
	added := make([]string, len(d.Added))
	for i, e := range d.Added {
		added[i] = e.Name
	}
	changed := make([]string, len(d.Changed))
	for i, c := range d.Changed {
		changed[i] = c.Name
	}
	names("added", added)
	names("removed", d.Removed)
	names("revoked", d.Revoked)
	names("changed", changed)
	names("without a description", d.Undescribed)
	if d.Reordered {
		lines = append(lines, "  reordered")
	}
	if len(d.Revisions) > 0 {
		lines = append(lines, fmt.Sprintf("  not stable %d: %s", len(d.Revisions), replay.OriginsText(d.Revisions)))
	}
	if d.LeftOut != d.LeftOutBefore {
		line := fmt.Sprintf("  %d skills not listed", d.LeftOut)
		if d.LeftOutBefore > 0 {
			line += fmt.Sprintf(" (was %d)", d.LeftOutBefore)
		}
		lines = append(lines, line)
	}
	return lines
}

// searchLine is one line about a recorded skill search: its query and
// what its result showed.
func searchLine(s replay.Search) string {
	id := s.Call
	if id == "" {
		id = "?"
	}
	line := fmt.Sprintf("  search %s (seq %d): %q: ", id, s.Seq, s.Query)
	switch {
	case s.Found && len(s.Shown) > 0:
		line += fmt.Sprintf("%d of %d matches", len(s.Shown), s.Total)
		if s.Offset > 0 {
			line += fmt.Sprintf(" from %d", s.Offset)
		}
		line += ": " + strings.Join(s.Shown, ", ")
	case s.Found && s.Total > 0:
		line += fmt.Sprintf("none of %d matches past %d", s.Total, s.Offset)
	case s.Found:
		line += "nothing found"
	case s.Outcome == replay.OutcomeNone:
		line += "no result recorded"
	default:
		line += s.Outcome
		if s.Code != "" {
			line += " " + s.Code
		}
	}
	return line
}

// loadLine is one line about a skill loaded: by the model's skill call,
// or invoked by the user.
func loadLine(l replay.Load) string {
	if l.By == replay.ByUser {
		if l.Name == "" {
			return fmt.Sprintf("  invocation (seq %d): undecodable", l.Seq)
		}
		return fmt.Sprintf("  /%s (seq %d): invoked by the user", l.Name, l.Seq)
	}
	id, name := l.Call, l.Name
	if id == "" {
		id = "?"
	}
	if name == "" {
		name = "?"
	}
	line := fmt.Sprintf("  skill %s (seq %d): %s: ", id, l.Seq, name)
	switch l.Outcome {
	case replay.OutcomeNone:
		return line + "no result recorded"
	case replay.OutcomeRetry:
		return line + "a retry, answered with the earlier result"
	}
	line += l.Outcome
	if l.Code != "" {
		line += " " + l.Code
	}
	if l.Channel != "" && l.Channel != catalog.ChannelStable {
		line += fmt.Sprintf(" (rev %d, %s)", l.Rev, l.Channel)
	}
	return line
}

// printSeen writes one line about the catalog visible at a pre-step: the
// whole list the model saw, by name.
func printSeen(w io.Writer, s replay.Step) error {
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
		_, err := fmt.Fprintln(w, catalog.RevealLine(head+"no catalog visible: "+whyNone(s.Published, s.MaskedBy)+invoked))
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

// whyNone says why no catalog was visible at a step.
func whyNone(published bool, compaction uint64) string {
	if published {
		return fmt.Sprintf("every catalog was masked by the compaction at seq %d", compaction)
	}
	return "none published yet"
}
