package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/partition"
	"github.com/skillstream/skillstream/processor/usage"
	"github.com/skillstream/skillstream/processor/usage/projection"
)

func (a *app) usageCommand() (*command, runFunc) {
	var (
		c       Config
		since   string
		sid     string
		project string
		asJSON  bool
		scan    bool
		rebuild bool
		by      string
	)
	cmd := newCommand("usage", "skillstream usage [NAME] [--since DURATION|TIME] [--session SID] [--project ID] [--scan] [--json] [flags]\n       skillstream usage [NAME] --by hour|day [--since DURATION|TIME] [--json] [flags]\n       skillstream usage --rebuild [--since DURATION|TIME] [flags]", `
Report which skills were used: per skill, the model's loads (successful
skill tool results), users' invocations (skill.invocation records), errors
by code, distinct sessions, first and last use, and the digests and store
revisions its loads carried; per catalog, appends by kind (initial,
replacement, tombstone), the bytes of catalog text sent to models and an
estimate in tokens (bytes / 4, rounded up); the skills catalogs listed in
the window that were never loaded nor invoked - the pruning list; and,
when the model searched for skills (skill_search), the searches, the
skills searches found, and the queries that found nothing.

usage NAME reports one skill, with a row per revision of the skill store
and channel that served it: stable, canary (a release's candidate, for
the share of sessions in its canary) and pin, side by side, each with its
loads, errors (calls whose name resolved to that revision) and error
rate, and, read from the stream (--scan), the loads that followed a
search of the same session that found the skill. Records older than
releases name no revision: they count in the skill's totals only.

The report is read from the usage projection that serve keeps (unless
--no-usage-projection) in the key-value bucket --usage-bucket: one sum per hour (UTC), kept current as
outputs are appended, so a report over any window reads one value per
hour, whatever the stream's size. Its window starts at the hour of
--since. It keeps distinct sessions exactly up to 1,024 per skill and hour
and 8,192 in all, and estimates them beyond (shown ~N, within 2%);
it does not keep what follows one session's searches through time (the
skills found then loaded, the sessions that searched most): --scan
reports those. When the projection has not yet applied the newest
outputs, the report says by how many records and seconds, and counts
them, read from the stream, when they are at most 10,000 records.

--scan reads the stream instead: only the processor's output kinds
(catalog.append, tool.result, skill.invocation), from --since, so a read
costs what the window holds; the skill of an error result is read from
its trigger (one direct get per error), which also tells a failed search
from a failed skill call. --session and --project always read the stream:
a session's report reads that session's log, and --project also reads the
window's triggers, which alone name a project, and counts a session's
outputs under the project of its latest trigger in the window. Without a
projection (every serve ran with --no-usage-projection, or none yet) usage reads
the stream too, and says so.

--by hour or --by day prints usage over time from the projection
instead: one row per hour or day (UTC) of the window, every one shown,
with the loads, searches, searches followed by a load of a skill they
found (same session, within the hour), searches that found nothing, and
errors (skill calls and searches answered with an error); usage NAME
--by the skill's loads, the searches that found it, its loads after
them, its errors, and its loads per store revision and channel (canary
against stable). The window is --since to now, by default the last 48
hours by the hour and 30 days by the day, at most 92 days. --json prints
the series as one object: step, from, to, times (each point's start,
Unix seconds), total (loads, searches, searchThenLoad, noMatch, errors:
one number per point), skills (name, loads, found, searchThenLoad,
errors, releases - rev, channel, loads, errors), partial, appliedSeq,
lagRecords, lagCounted and, with --partitions, partitions; usage NAME --by --json the same with that
skill alone in skills. The operator console plots these same points.

--rebuild deletes the projection and replays the stream's outputs into
it, from the start or from --since, then prints how many it applied; a
serve keeping the projection stands by meanwhile and goes on after it.

Records that are not what their subject says (written by something else)
are counted as unreadable, names that are not skill names in one row,
_invalid, and errors of names that are no skill in one row, _unknown. On a terminal, progress is shown on stderr. --json prints one
object with the keys stream, prefix, partitions (with --partitions: how
many the report sums), since, session, project, records,
unreadable, skills (name, loads, invocations, errors, sessions,
sessionsEstimated when an estimate, first, last, digests, revisions, and
releases - rev, channel, loads, errors, foundThenLoaded - for store
skills' revisions), usage NAME --json the skill's row alone,
catalogs (appends, bytesByKind, textBytes, estimatedTokens, listed),
listedNeverUsed, searches (searches, found, noMatch, errors, sessions,
perSession, sessionsEstimated, foundThenLoaded, bySession, skills,
noMatchQueries, noMatchOther), partial (what the report could not give
whole) and, from the projection, projection (bucket, requestedSince,
hours, hoursRead, countsFrom, appliedSeq, appliedAt, lagRecords,
lagSeconds, lagCounted, notKept, partial).

The stream is read from --nats-url when given, else through the server
answering on --listen, else from the --data store. Nothing is written,
but the bucket by --rebuild. With --partitions N the report sums the N
partitions: their streams (--scan, --project), or each partition's
projection, kept in bucket <usage-bucket>-<k>, summed hour by hour (a
session is kept in one partition, so distinct sessions add up exactly);
--session reads the session's own partition; --by sums the partitions'
projections point by point, and --rebuild rebuilds each in turn.`[1:], `
  skillstream usage --since 24h
  skillstream usage --since 2026-11-01T00:00:00Z --project web --json | jq '.listedNeverUsed'
  skillstream usage --since 7d --scan
  skillstream usage deploy --since 24h
  skillstream usage --by hour --since 24h
  skillstream usage deploy --by day --json
  skillstream usage --rebuild`[1:])
	cmd.group("Flags")
	cmd.localString(&since, "since", "", "read from `DURATION` ago (24h, 7d) or from TIME (RFC 3339); default the stream's start")
	cmd.localString(&sid, "session", "", "read session `id` only (from the stream)")
	cmd.localString(&project, "project", "", "count only sessions of project `id` (from the stream: triggers name projects)")
	cmd.localBool(&scan, "scan", false, "read the stream, not the usage projection")
	cmd.localBool(&rebuild, "rebuild", false, "delete the usage projection and replay the stream into it (from --since when given), then print the count")
	cmd.localString(&by, "by", "", "print usage over time, one row per `step`: hour or day (UTC), from the projection")
	cmd.localBool(&asJSON, "json", false, "print the report as one JSON object")
	c.readerFlags(cmd)
	cmd.group("Usage projection")
	c.usageBucketFlag(cmd)
	return cmd, func(ctx context.Context, args []string) error {
		var name string
		switch {
		case len(args) > 1:
			return usagef("usage takes at most one skill name, got %q", args)
		case len(args) == 1:
			if err := catalog.CheckName(args[0]); err != nil {
				return usagef("usage %s: %v", printable(args[0]), err)
			}
			if rebuild {
				return usagef("--rebuild rebuilds the whole projection: it takes no skill name")
			}
			name = args[0]
		}
		start, err := parseSince(since, time.Now())
		if err != nil {
			return err
		}
		if rebuild && (scan || sid != "" || project != "") {
			return usagef("--rebuild rebuilds the whole projection: it takes no --scan, --session or --project")
		}
		if sid != "" {
			if err := c.checkSession(sid); err != nil {
				return err
			}
		}
		var step projection.Step
		if by != "" {
			if step, err = projection.ParseStep(by); err != nil {
				return usagef("--by: %v", err)
			}
			if rebuild || scan || sid != "" || project != "" {
				return usagef("--by reads the usage projection: it takes no --rebuild, --scan, --session or --project")
			}
		}
		js, closeJS, err := a.openSessions(&c)
		if err != nil {
			return err
		}
		defer closeJS()
		if step != "" {
			s, err := projection.ReadSeriesPartitions(ctx, js, c.usageOptions(), c.Partitions, step, start, time.Time{})
			if err != nil {
				return c.partitionHint(ctx, js, err)
			}
			out := bufio.NewWriterSize(a.stdout, 64<<10)
			if err := printSeries(out, s, name, asJSON); err != nil {
				return err
			}
			return out.Flush()
		}
		if rebuild {
			return a.rebuildUsage(ctx, &c, js, start, asJSON)
		}
		var rep *usage.Report
		if !scan && sid == "" && project == "" {
			// With --partitions, each partition's projection, summed.
			rep, err = projection.ReadPartitions(ctx, js, c.usageOptions(), c.Partitions, start)
			if errors.Is(err, projection.ErrNoProjection) {
				fmt.Fprintf(a.stderr, "%v: reading the stream instead (serve keeps the projection; usage --rebuild builds it now)\n", err)
				err = nil
			}
			if err != nil {
				return c.partitionHint(ctx, js, err)
			}
		}
		if rep == nil {
			prog := newProgress(a.stderr, "read")
			o := usage.Options{
				Stream: c.Stream, Prefix: c.Prefix, Layout: c.layout(), Since: start, Project: project,
				Partitions: c.Partitions, Progress: prog.update,
			}
			if sid != "" {
				o.Session, o.Partitions = sid, 0
				o.Stream, o.Prefix = c.sessionPlace(sid)
			}
			rep, err = usage.Read(ctx, js, o)
			prog.done()
			if err != nil {
				return c.partitionHint(ctx, js, err)
			}
			if sid != "" && rep.Records == 0 {
				// Not where it is placed: in another stream, when the
				// partition count is not the server's.
				if err := partition.Elsewhere(ctx, js, c.Stream, c.Prefix, c.layout(), sid, c.Partitions, partition.Place{Stream: o.Stream, Prefix: o.Prefix}); errors.Is(err, partition.ErrMismatch) {
					return inputf("%v", err)
				}
			}
		}
		out := bufio.NewWriterSize(a.stdout, 64<<10)
		if name != "" {
			if err := printSkillUsage(out, rep, name, asJSON); err != nil {
				return err
			}
			return out.Flush()
		}
		if asJSON {
			enc := newJSONEncoder(out)
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

// rebuildUsage runs usage --rebuild and prints what it applied.
func (a *app) rebuildUsage(ctx context.Context, c *Config, js jetstream.JetStream, since time.Time, asJSON bool) error {
	prog := newProgress(a.stderr, "rebuild: read")
	results, err := projection.RebuildPartitions(ctx, js, c.usageOptions(), c.Partitions, since, func(read, remaining uint64) { prog.update(int(read), remaining) })
	prog.done()
	for _, res := range results {
		if err := printRebuilt(a.stdout, res, asJSON); err != nil {
			return err
		}
	}
	return c.partitionHint(ctx, js, err)
}

// printRebuilt writes what usage --rebuild applied to one projection.
func printRebuilt(w io.Writer, res *projection.RebuildResult, asJSON bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(struct {
			Bucket     string    `json:"bucket"`
			Records    uint64    `json:"records"`
			Unreadable uint64    `json:"unreadable"`
			FirstSeq   uint64    `json:"firstSeq"`
			LastSeq    uint64    `json:"lastSeq"`
			From       time.Time `json:"from,omitzero"`
			Seconds    float64   `json:"seconds"`
		}{res.Bucket, res.Records, res.Unreadable, res.FirstSeq, res.LastSeq, res.From, res.Elapsed.Seconds()})
	}
	from := "the stream's start"
	if !res.From.IsZero() {
		from = res.From.Format(time.RFC3339)
	}
	fmt.Fprintf(w, "rebuilt the usage projection %s from %s: %d output records applied (%d unreadable)", res.Bucket, from, res.Records, res.Unreadable)
	if res.LastSeq > 0 {
		fmt.Fprintf(w, ", stream sequences %d to %d", res.FirstSeq, res.LastSeq)
	}
	_, err := fmt.Fprintf(w, ", in %.1f s\n", res.Elapsed.Seconds())
	return err
}

// parseSince reads --since: a duration back from now, or an RFC 3339 time.
func parseSince(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if d, err := parseDays(s); err == nil {
		if d <= 0 {
			return time.Time{}, usagef("--since %q: a duration must be positive", s)
		}
		return now.Add(-d), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, nil
	}
	return time.Time{}, usagef("--since %q: want a duration (24h, 7d) or an RFC 3339 time (2026-11-01T00:00:00Z)", s)
}

// parseDays is time.ParseDuration that also takes whole days first:
// "7d", "1d12h".
func parseDays(s string) (time.Duration, error) {
	days, rest, ok := strings.Cut(s, "d")
	if !ok {
		return time.ParseDuration(s)
	}
	n, err := strconv.Atoi(days)
	if err != nil || n < 0 || n > 100000 {
		return 0, fmt.Errorf("bad number of days %q", days)
	}
	d := time.Duration(n) * 24 * time.Hour
	if rest != "" {
		r, err := time.ParseDuration(rest)
		if err != nil {
			return 0, err
		}
		d += r
	}
	return d, nil
}

// printUsage writes the report as tables.
func printUsage(w io.Writer, r *usage.Report) {
	window := "the whole stream"
	if !r.Since.IsZero() {
		window = "since " + r.Since.UTC().Format(time.RFC3339)
	}
	p := r.Projection
	if p != nil && !r.Since.IsZero() && !p.Since.Equal(r.Since) {
		window += " (the start of the hour of --since " + p.Since.UTC().Format(time.RFC3339) + ": the projection counts by the hour)"
	}
	if r.Partitions >= 2 {
		fmt.Fprintf(w, "streams %s to %s (prefixes %s to %s: %d partitions), %s", events.PartitionStream(r.Stream, 0), events.PartitionStream(r.Stream, r.Partitions-1),
			events.PartitionPrefix(r.Prefix, 0), events.PartitionPrefix(r.Prefix, r.Partitions-1), r.Partitions, window)
	} else {
		fmt.Fprintf(w, "stream %s (prefix %s), %s", r.Stream, r.Prefix, window)
	}
	if r.Session != "" {
		fmt.Fprintf(w, ", session %s", r.Session)
	}
	if r.Project != "" {
		fmt.Fprintf(w, ", project %s", printable(r.Project))
	}
	switch {
	case p != nil && r.Partitions >= 2:
		fmt.Fprintf(w, ": %d records, %d unreadable (usage projections %s to %s: %d hour buckets)\n",
			r.Records, r.Unreadable, projection.PartitionBucket(p.Bucket, 0), projection.PartitionBucket(p.Bucket, r.Partitions-1), p.Read)
	case p != nil:
		buckets := "hour buckets"
		if p.Read == 1 {
			buckets = "hour bucket"
		}
		fmt.Fprintf(w, ": %d records, %d unreadable (usage projection %s: %d %s, up to stream sequence %d)\n",
			r.Records, r.Unreadable, p.Bucket, p.Read, buckets, p.AppliedSeq)
	}
	if p != nil {
		printProjectionLag(w, r)
		fmt.Fprintln(w)
	} else {
		fmt.Fprintf(w, ": %d records read, %d unreadable\n\n", r.Records, r.Unreadable)
	}
	estimated := false
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SKILL\tLOADS\tINVOKED\tERRORS\tSESSIONS\tFIRST\tLAST\tDIGESTS\tREVISIONS")
	for _, s := range r.Skills {
		estimated = estimated || s.SessionsEstimated
		fmt.Fprintf(tw, "%s\t%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s\n", printable(s.Name), s.Loads, s.Invocations,
			errorCodes(s.Errors), approx(s.Sessions, s.SessionsEstimated), s.First.Format(time.RFC3339), s.Last.Format(time.RFC3339),
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
	printList(w, fmt.Sprintf("listed, never used (%d)", len(names)), names)
	printSearches(w, r.Searches, p != nil)
	if p == nil {
		for _, s := range r.Partial {
			fmt.Fprintf(w, "partial: %s\n", s)
		}
		return
	}
	fmt.Fprintln(w)
	if estimated || r.Searches.SessionsEstimated {
		fmt.Fprintf(w, "~: an estimate: distinct sessions past %d per skill and hour (%s in all) are counted by a HyperLogLog sketch, within about %.1f%% (one standard error)\n",
			projection.SparseMax, "8,192", 104/math.Sqrt(1<<projection.Precision))
	}
	for _, s := range p.Partial {
		fmt.Fprintf(w, "partial: %s\n", s)
	}
	fmt.Fprintln(w, "from the usage projection; --scan reads the stream (and gives the searches per session and the skills found then loaded)")
}

// printSkillUsage prints one skill's row of r and its releases side by
// side: a line per revision and channel.
func printSkillUsage(w io.Writer, r *usage.Report, name string, asJSON bool) error {
	row := usage.SkillUsage{Name: name, Errors: map[string]int{}}
	for _, s := range r.Skills {
		if s.Name == name {
			row = s
		}
	}
	if asJSON {
		enc := newJSONEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(row)
	}
	window := "the whole stream"
	if !r.Since.IsZero() {
		window = "since " + r.Since.UTC().Format(time.RFC3339)
	}
	from := "the stream"
	if r.Projection != nil {
		from = "the usage projection"
	}
	fmt.Fprintf(w, "skill %s, %s (from %s): %d loads, %d invocations, errors %s, %s sessions\n\n", name, window, from,
		row.Loads, row.Invocations, errorCodes(row.Errors), approx(row.Sessions, row.SessionsEstimated))
	if len(row.Releases) == 0 {
		fmt.Fprintln(w, "(no load or error in the window names a revision: the skill is not a store skill, or was not used since releases)")
		return nil
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "REV\tCHANNEL\tLOADS\tERRORS\tERROR RATE\tFOUND THEN LOADED")
	for _, ru := range row.Releases {
		rate := "-"
		if n := ru.Loads + ru.Errors; n > 0 {
			rate = fmt.Sprintf("%.1f%%", 100*float64(ru.Errors)/float64(n))
		}
		found := strconv.Itoa(ru.FoundThenLoaded)
		if r.Projection != nil {
			found = "-" // not kept by the projection
		}
		fmt.Fprintf(tw, "%d\t%s\t%d\t%d\t%s\t%s\n", ru.Rev, printable(ru.Channel), ru.Loads, ru.Errors, rate, found)
	}
	tw.Flush()
	if r.Projection != nil {
		fmt.Fprintln(w, "\nfrom the usage projection; --scan reads the stream (and gives the loads found by a search first)")
	}
	return nil
}

// printProjectionLag says how far the projection is behind the stream,
// and where it starts when it was rebuilt from a time.
func printProjectionLag(w io.Writer, r *usage.Report) {
	p := r.Projection
	records := "output records"
	if p.LagRecords == 1 {
		records = "output record"
	}
	switch {
	case p.LagRecords > 0 && p.LagCounted:
		fmt.Fprintf(w, "the projection is %d %s (%.1f s) behind the stream: read from the stream, they are counted\n",
			p.LagRecords, records, p.LagSeconds)
	case p.LagRecords > 0:
		fmt.Fprintf(w, "the projection is %d %s (%.1f s) behind the stream: they are not counted (a serve member applies them; --scan reads the stream)\n",
			p.LagRecords, records, p.LagSeconds)
	}
	if !p.CountsFrom.IsZero() && (r.Since.IsZero() || r.Since.Before(p.CountsFrom)) {
		fmt.Fprintf(w, "the projection counts from %s (rebuilt --since): records before it are not in it (--scan reads them)\n",
			p.CountsFrom.UTC().Format(time.RFC3339))
	}
}

// approx writes n, "~n" when it is an estimate.
func approx(n int, estimated bool) string {
	if estimated {
		return "~" + strconv.Itoa(n)
	}
	return strconv.Itoa(n)
}

// printSearches writes the searches' part of the report, when the model
// searched at all. A report of the projection has no searches per
// session: they are shown as not kept.
func printSearches(w io.Writer, su usage.SearchUsage, projected bool) {
	if su.Searches == 0 {
		return
	}
	failed := 0
	for _, n := range su.Errors {
		failed += n
	}
	perSession := fmt.Sprintf("%.1f", su.PerSession)
	if su.SessionsEstimated {
		perSession = "~" + perSession
	}
	thenLoaded := fmt.Sprintf("%d skills found then loaded", su.FoundThenLoaded)
	if projected {
		thenLoaded = "skills found then loaded: not kept by the projection"
	}
	fmt.Fprintf(w, "\nsearches: %d in %s sessions (%s per session): %d found skills, %d found nothing, %d failed (%s); %s\n",
		su.Searches, approx(su.Sessions, su.SessionsEstimated), perSession, su.Found, su.NoMatch, failed, errorCodes(su.Errors), thenLoaded)
	if len(su.Skills) > 0 {
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "FOUND SKILL\tFOUND\tSESSIONS\tLOADED AFTER")
		for _, s := range su.Skills {
			if projected {
				fmt.Fprintf(tw, "%s\t%d\t-\t-\n", printable(s.Name), s.Found)
				continue
			}
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
	printList(w, fmt.Sprintf("found nothing (%d)", su.NoMatch), queries)
}

// listWidth is the widest line printList writes, in columns (a column
// per rune: the items are printable or quoted).
const listWidth = 100

// printList writes "heading: a, b, c" when it fits on a line of listWidth
// columns, "heading: -" for no items, and otherwise the heading then the
// items under it, indented, in as many aligned columns as fit in
// listWidth, sorted down each column as ls sorts them (an item wider than
// a line alone on its line).
func printList(w io.Writer, heading string, items []string) {
	if len(items) == 0 {
		fmt.Fprintf(w, "%s: -\n", heading)
		return
	}
	if line := heading + ": " + strings.Join(items, ", "); utf8.RuneCountInString(line) <= listWidth {
		fmt.Fprintln(w, line)
		return
	}
	fmt.Fprintf(w, "%s:\n", heading)
	const indent, gap = "  ", 2
	width := make([]int, len(items))
	narrowest := listWidth
	for i, it := range items {
		width[i] = utf8.RuneCountInString(it)
		narrowest = min(narrowest, width[i])
	}
	// The most columns that fit: each as wide as its widest item.
	var rows int
	var colWidth []int
	for cols := min(len(items), (listWidth-len(indent)+gap)/(narrowest+gap)); cols >= 1; cols-- {
		rows = (len(items) + cols - 1) / cols
		colWidth = colWidth[:0]
		total := len(indent) - gap
		for c := 0; c*rows < len(items); c++ {
			widest := 0
			for _, n := range width[c*rows : min(len(items), (c+1)*rows)] {
				widest = max(widest, n)
			}
			colWidth = append(colWidth, widest)
			total += widest + gap
		}
		if total <= listWidth {
			break
		}
	}
	var line strings.Builder
	for r := range rows {
		line.Reset()
		line.WriteString(indent)
		for c := range colWidth {
			i := c*rows + r
			if i >= len(items) {
				break
			}
			if c > 0 {
				line.WriteString(strings.Repeat(" ", colWidth[c-1]+gap-width[i-rows]))
			}
			line.WriteString(items[i])
		}
		fmt.Fprintln(w, line.String())
	}
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

// printSeries writes usage --by: the series, or the skill name's alone.
func printSeries(w io.Writer, s *projection.Series, name string, asJSON bool) error {
	var sk *projection.SkillSeries
	if name != "" {
		sk = s.Skill(name)
		one := *s
		one.Skills = []projection.SkillSeries{}
		if sk != nil {
			one.Skills = append(one.Skills, *sk)
		}
		s = &one
	}
	if asJSON {
		enc := newJSONEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(s)
	}
	layout := "2006-01-02T15:04Z"
	if s.Step == projection.ByDay {
		layout = "2006-01-02"
	}
	if s.Partitions >= 2 {
		fmt.Fprintf(w, "usage by %s (UTC), %s to %s, from the usage projections of %d partitions", s.Step,
			s.From.Format(layout), s.To.Format(layout), s.Partitions)
	} else {
		fmt.Fprintf(w, "usage by %s (UTC), %s to %s, from the usage projection up to stream sequence %d", s.Step,
			s.From.Format(layout), s.To.Format(layout), s.AppliedSeq)
	}
	switch {
	case s.LagRecords > 0 && s.LagCounted:
		fmt.Fprintf(w, " and the %d output records after it", s.LagRecords)
	case s.LagRecords > 0:
		fmt.Fprintf(w, " (%d output records behind the stream, not counted)", s.LagRecords)
	}
	if name != "" {
		fmt.Fprintf(w, "; skill %s", name)
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	row := func(cells ...string) { fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t") }
	n := strconv.Itoa
	switch {
	case name == "":
		row("TIME", "LOADS", "SEARCHES", "SEARCH-THEN-LOAD", "NO-MATCH", "ERRORS")
		t := s.Total
		for i, at := range s.Times {
			row(time.Unix(at, 0).UTC().Format(layout), n(t.Loads[i]), n(t.Searches[i]), n(t.SearchThenLoad[i]), n(t.NoMatch[i]), n(t.Errors[i]))
		}
	case sk == nil:
		tw.Flush()
		fmt.Fprintf(w, "(%s was not loaded, found or failing in the window)\n", name)
	default:
		head := []string{"TIME", "LOADS", "FOUND", "SEARCH-THEN-LOAD", "ERRORS"}
		for _, r := range sk.Releases {
			head = append(head, fmt.Sprintf("LOADS r%d %s", r.Rev, r.Channel), fmt.Sprintf("ERRORS r%d %s", r.Rev, r.Channel))
		}
		row(head...)
		for i, at := range s.Times {
			cells := []string{time.Unix(at, 0).UTC().Format(layout), n(sk.Loads[i]), n(sk.Found[i]), n(sk.SearchThenLoad[i]), n(sk.Errors[i])}
			for _, r := range sk.Releases {
				cells = append(cells, n(r.Loads[i]), n(r.Errors[i]))
			}
			row(cells...)
		}
	}
	tw.Flush()
	for _, p := range s.Partial {
		fmt.Fprintf(w, "partial: %s\n", p)
	}
	return nil
}
