package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/skillstream/skillstream/processor/usage"
)

func (a *app) usageCommand() (*command, runFunc) {
	var (
		c       Config
		since   string
		sid     string
		project string
		asJSON  bool
	)
	cmd := newCommand("usage", "skillstream usage [--since DURATION|TIME] [--session SID] [--project ID] [--json] [flags]", `
Report which skills were used, from the session stream: per skill, the
model's loads (successful skill tool results), users' invocations
(skill.invocation records), errors by code, distinct sessions, first and
last use, and the digests and store revisions its loads carried; per
catalog, appends by kind (initial, replacement, tombstone), the bytes of
catalog text sent to models and an estimate in tokens (bytes / 4, rounded
up); the skills catalogs listed in the window that were never loaded nor
invoked - the pruning list; and, when the model searched for skills
(skill_search), the searches per session, the skills searches found and
how often a session then loaded them, and the queries that found nothing.

Only the processor's output kinds are read (catalog.append, tool.result,
skill.invocation), starting at --since, so a read costs what the window
holds, not the stream's history. The skill of an error result is read from
its trigger (one direct get per error), which also tells a failed search
from a failed skill call. --project also reads the
window's triggers, which alone name a project, and counts a session's
outputs under the project of its latest trigger in the window.

Records inside the window that are not what their subject says (written by
something else) are counted as unreadable, and names that are not skill
names in one row, _invalid. On a terminal, progress is shown
on stderr. --json prints one object with the keys stream, prefix, since,
session, project, records, unreadable, skills (name, loads, invocations,
errors, sessions, first, last, digests, revisions), catalogs (appends,
textBytes, estimatedTokens, listed), listedNeverUsed and searches
(searches, found, noMatch, errors, sessions, perSession, foundThenLoaded,
bySession, skills, noMatchQueries, noMatchOther).

The stream is read from --nats-url when given, else through the server
answering on --listen, else from the --data store. Nothing is published.`[1:], `
  skillstream usage --since 24h
  skillstream usage --since 2026-11-01T00:00:00Z --project web --json | jq '.listedNeverUsed'`[1:])
	cmd.group("Flags")
	cmd.localString(&since, "since", "", "read from `DURATION` ago or from TIME (RFC 3339); default the stream's start")
	cmd.localString(&sid, "session", "", "read session `id` only")
	cmd.localString(&project, "project", "", "count only sessions of project `id`")
	cmd.localBool(&asJSON, "json", false, "print the report as one JSON object")
	c.readerFlags(cmd)
	return cmd, func(ctx context.Context, args []string) error {
		if len(args) > 0 {
			return usagef("usage takes no arguments, got %q", args[0])
		}
		start, err := parseSince(since, time.Now())
		if err != nil {
			return err
		}
		if sid != "" {
			if err := c.checkSession(sid); err != nil {
				return err
			}
		}
		js, closeJS, err := a.openSessions(&c)
		if err != nil {
			return err
		}
		defer closeJS()
		prog := newProgress(a.stderr, "read")
		rep, err := usage.Read(ctx, js, usage.Options{
			Stream: c.Stream, Prefix: c.Prefix, Layout: c.layout(), Since: start, Session: sid, Project: project,
			Progress: prog.update,
		})
		prog.done()
		if err != nil {
			return err
		}
		out := bufio.NewWriterSize(a.stdout, 64<<10)
		if asJSON {
			enc := json.NewEncoder(out)
			enc.SetEscapeHTML(false)
			enc.SetIndent("", "  ")
			if err := enc.Encode(rep); err != nil {
				return err
			}
		} else {
			printUsage(out, rep)
		}
		return out.Flush()
	}
}

// parseSince reads --since: a duration back from now, or an RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := time.ParseDuration(s); err == nil {
		if d <= 0 {
			return time.Time{}, usagef("--since %q: a duration must be positive", s)
		}
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	return time.Time{}, usagef("--since %q: want a duration (24h) or an RFC 3339 time (2026-11-01T00:00:00Z)", s)
}

// printUsage writes the report as tables.
func printUsage(w io.Writer, r *usage.Report) {
	window := "the whole stream"
	if !r.Since.IsZero() {
		window = "since " + r.Since.UTC().Format(time.RFC3339)
	}
	fmt.Fprintf(w, "stream %s (prefix %s), %s", r.Stream, r.Prefix, window)
	if r.Session != "" {
		fmt.Fprintf(w, ", session %s", r.Session)
	}
	if r.Project != "" {
		fmt.Fprintf(w, ", project %s", printable(r.Project))
	}
	fmt.Fprintf(w, ": %d records read, %d unreadable\n\n", r.Records, r.Unreadable)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SKILL\tLOADS\tINVOKED\tERRORS\tSESSIONS\tFIRST\tLAST\tDIGESTS\tREVISIONS")
	for _, s := range r.Skills {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%d\t%s\t%s\t%s\t%s\n", printable(s.Name), s.Loads, s.Invocations,
			errorCodes(s.Errors), s.Sessions, s.First.Format(time.RFC3339), s.Last.Format(time.RFC3339),
			shortDigests(s.Digests), revisions(s.Revisions))
	}
	tw.Flush()
	if len(r.Skills) == 0 {
		fmt.Fprintln(w, "(no skill was loaded, invoked or failed in the window)")
	}
	cu := r.Catalogs
	fmt.Fprintf(w, "\ncatalogs: %d initial, %d replacement, %d tombstone; %d bytes of text (~%d tokens at %d bytes a token); %d skills listed\n",
		cu.Appends["initial"], cu.Appends["replacement"], cu.Appends["tombstone"], cu.TextBytes, cu.EstimatedTokens, usage.TokenBytes, cu.Listed)
	if n := cu.Appends["changes"]; n > 0 {
		fmt.Fprintf(w, "change lists: %d, %d bytes of text; full lists: %d bytes (initial %d, replacement %d, tombstone %d)\n",
			n, cu.BytesByKind["changes"], cu.BytesByKind["initial"]+cu.BytesByKind["replacement"]+cu.BytesByKind["tombstone"],
			cu.BytesByKind["initial"], cu.BytesByKind["replacement"], cu.BytesByKind["tombstone"])
	}
	names := make([]string, len(r.ListedNeverUsed))
	for i, n := range r.ListedNeverUsed {
		names[i] = printable(n)
	}
	list := strings.Join(names, ", ")
	if len(names) == 0 {
		list = "-"
	}
	fmt.Fprintf(w, "listed, never used (%d): %s\n", len(names), list)
	printSearches(w, r.Searches)
}

// printSearches writes the searches' part of the report, when the model
// searched at all.
func printSearches(w io.Writer, su usage.SearchUsage) {
	if su.Searches == 0 {
		return
	}
	failed := 0
	for _, n := range su.Errors {
		failed += n
	}
	fmt.Fprintf(w, "\nsearches: %d in %d sessions (%.1f per session): %d found skills, %d found nothing, %d failed (%s); %d skills found then loaded\n",
		su.Searches, su.Sessions, su.PerSession, su.Found, su.NoMatch, failed, errorCodes(su.Errors), su.FoundThenLoaded)
	if len(su.Skills) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "FOUND SKILL\tFOUND\tSESSIONS\tLOADED AFTER")
		for _, s := range su.Skills {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\n", printable(s.Name), s.Found, s.Sessions, s.LoadedAfter)
		}
		tw.Flush()
	}
	if len(su.BySession) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "SESSION\tSEARCHES\tFOUND NOTHING\tFOUND THEN LOADED")
		for _, s := range su.BySession[:min(len(su.BySession), 10)] {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\n", printable(s.Session), s.Searches, s.NoMatch, s.FoundThenLoaded)
		}
		tw.Flush()
		if len(su.BySession) > 10 || su.Sessions > len(su.BySession) {
			fmt.Fprintf(w, "(the 10 sessions that searched most of %d)\n", su.Sessions)
		}
	}
	queries := make([]string, len(su.NoMatchQueries))
	for i, q := range su.NoMatchQueries {
		queries[i] = strconv.Quote(q.Query)
		if q.Count > 1 {
			queries[i] += fmt.Sprintf(" ×%d", q.Count)
		}
	}
	if su.NoMatchOther > 0 {
		queries = append(queries, fmt.Sprintf("%d more", su.NoMatchOther))
	}
	list := strings.Join(queries, ", ")
	if len(queries) == 0 {
		list = "-"
	}
	fmt.Fprintf(w, "found nothing (%d): %s\n", su.NoMatch, list)
}

// printable quotes a name that holds anything but printable characters
// (names in the log are written by workers and may be hostile).
func printable(s string) string {
	q := strconv.Quote(s)
	if q[1:len(q)-1] == s && !strings.ContainsAny(s, " \t") && s != "" {
		return s
	}
	return q
}

func errorCodes(m map[string]int) string {
	if len(m) == 0 {
		return "0"
	}
	codes := make([]string, 0, len(m))
	for c := range m {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	parts := make([]string, len(codes))
	for i, c := range codes {
		parts[i] = fmt.Sprintf("%s=%d", printable(c), m[c])
	}
	return strings.Join(parts, ",")
}

func shortDigests(ds []string) string {
	if len(ds) == 0 {
		return "-"
	}
	parts := make([]string, len(ds))
	for i, d := range ds {
		parts[i] = printable(d[:min(12, len(d))])
	}
	return strings.Join(parts, ",")
}

func revisions(rs []uint64) string {
	if len(rs) == 0 {
		return "-"
	}
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = strconv.FormatUint(r, 10)
	}
	return strings.Join(parts, ",")
}
