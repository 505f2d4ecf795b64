package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/processor/partition"
	"github.com/skillstream/skillstream/processor/replay"
	"github.com/skillstream/skillstream/processor/replay/eval"
	"github.com/skillstream/skillstream/providers/store"
)

func (a *app) evalCommand() (*command, runFunc) {
	var (
		c      Config
		asJSON bool
		steps  bool
		window int
		failOn string
		maps   cwdMaps
		since  string
		until  string
		most   int
		revs   []string
		scope  string
	)
	cmd := newCommand("eval", "skillstream eval FILE... | --since DURATION|TIME [--until TIME] [--fail-on KEY=LIMIT,...] [--cwd-map OLD=NEW] [--json] [--steps] [flags]", `
Judge a change to the skills or the catalog options on sessions already
recorded: files written by "export", or with --since the sessions of the
stream with a pre-step in a window of time (read whole, as export reads them,
from where export reads; --tenant for a tenant's; with --partitions, each
partition's in turn). The baseline is what each recording
shows; the candidate is what this command's skill flags and catalog flags give
now (the same flags and SKILLSTREAM_* variables as serve): point
--skills-dir at the changed folder, add --skill-search or --catalog-listed-max
to try an option, or --skill-revision NAME@REV to try another revision of a
skill of the skill store in place of its current one (REV as "skills history
NAME" lists it: the skill's own number, or store:N, a store revision; --scope
for a project's skill): its description, whenToUse and instructions are that
revision's, and a revision that is a removal leaves the skill out. Every
recording is replayed against the candidate with replay's own code, over as
many workers as there are CPUs, with one search index of the candidate's
skills for them all.

Per session and in sum it reports:
  * the catalog in view at each pre-step, before and after: entries added,
    removed, changed and left without a description, its bytes and tokens
    (approximate: characters/4);
  * recorded skill calls and /name invocations that would now fail or load
    other text (and failed calls that would now load);
  * search-then-load pairs: a recorded search followed, within --window
    pre-steps and before another search, by a skill the model loaded. The
    loaded skill's rank among the matches the search showed (before) and the
    candidate's search for the same arguments shows (after): hit@1, hit@5 and
    MRR over the pairs. A skill not shown is a miss.

--fail-on sets gates for CI, comma-separated or repeated:
  hit1-drop=X, hit5-drop=X, mrr-drop=X  the figure falls by more than X
  failures=N                            more than N recorded loads now fail
  bytes-growth=X                        the catalog bytes grow by more than X
X is a fraction (0.05) or a percentage (5%).

Exit status: 0 when no gate trips, 1 when one does (each is named on stderr)
or the evaluation failed, 2 on bad input (a missing, unreadable, corrupt or
truncated recording, an unknown gate, bad flags).`[1:], `
  skillstream eval recordings/*.jsonl --skills-dir ./skills --no-skill-store
  skillstream eval recordings/*.jsonl --skills-dir ./skills --skill-search --fail-on hit5-drop=0.05,failures=0
  skillstream eval --since 7d --skills-dir ./skills --skill-search --nats-url nats://nats:4222 --json
  skillstream eval recordings/*.jsonl --skill-revision pdf-forms@3 --nats-url nats://nats:4222
  skillstream eval 7f3a.jsonl --skills-dir ./skills --cwd-map /srv/app=$HOME/src/app --json --steps`[1:])
	cmd.group("Flags")
	cmd.fs.Func("fail-on", "exit 1 when a gate `KEY=LIMIT` trips: hit1-drop, hit5-drop, mrr-drop, failures, bytes-growth; comma-separated, repeatable", func(s string) error {
		if failOn != "" {
			failOn += ","
		}
		failOn += s
		return nil
	})
	cmd.add("fail-on", false)
	cmd.localString(&since, "since", "", "evaluate the stream's sessions with a pre-step from `DURATION` ago (24h, 7d) or from TIME (RFC 3339), instead of files")
	cmd.localString(&until, "until", "", "with --since, up to `TIME` (RFC 3339) or DURATION ago; default now")
	cmd.localInt(&most, "max-sessions", 10000, "with --since, refuse a window of more sessions than this")
	cmd.localInt(&window, "window", eval.DefaultWindow, "pair a search with a load at most this many pre-steps after it")
	cmd.fs.Var(&maps, "cwd-map", "evaluate working directory `OLD=NEW`; repeatable")
	cmd.add("cwd-map", false)
	cmd.fs.Func("skill-revision", "show the skill store's skill `NAME@REV` at that revision (the skill's own number, or store:N) instead of its current one; repeatable", func(s string) error {
		revs = append(revs, s)
		return nil
	})
	cmd.add("skill-revision", false)
	cmd.localString(&scope, "scope", "", "with --skill-revision, the skills' `scope`: global or project/<id>; default global")
	cmd.localBool(&asJSON, "json", false, "print the report as one JSON object")
	cmd.localBool(&steps, "steps", false, "also report every pre-step's catalog, before and after")
	c.skillFlags(cmd)
	c.storeFlags(cmd)
	c.readerFlags(cmd)
	return cmd, func(ctx context.Context, args []string) error {
		switch {
		case len(args) == 0 && since == "":
			return usagef("eval needs one or more recording files, or --since for the stream's sessions")
		case len(args) > 0 && since != "":
			return usagef("give recording files or --since, not both")
		case until != "" && since == "":
			return usagef("--until applies to --since only")
		case most < 1:
			return usagef("--max-sessions %d: must be at least 1", most)
		}
		if window < 1 {
			return usagef("--window %d: must be at least 1", window)
		}
		var gates []eval.Gate
		if failOn != "" {
			var err error
			if gates, err = eval.ParseGates(failOn); err != nil {
				return usagef("--fail-on: %v", err)
			}
		}
		w := eval.Window{Stream: c.Stream, Prefix: c.Prefix, Layout: c.layout(), Max: most}
		if since != "" {
			now := time.Now()
			var err error
			if w.Since, err = parseSince(since, now); err != nil {
				return err
			}
			if until != "" {
				if w.Until, err = parseSince(until, now); err != nil {
					return usagef("--until %q: want a duration (24h) or an RFC 3339 time", until)
				}
			}
		}
		pins, err := parsePins(revs, scope, c.NoSkillStore)
		if err != nil {
			return err
		}
		c.pins = pins
		if err := c.validateSkills(); err != nil {
			return err
		}
		if err := c.validateStore(); err != nil {
			return err
		}
		// A revision of the store needs the store: no preview without it.
		js, closeNC, err := a.dialStore(&c, "eval", len(pins) > 0)
		if err != nil {
			return err
		}
		defer closeNC()
		// Watched, as a long-running command's: unwatched, the registry
		// finds changes by reading every skill folder again at each
		// question, and an eval asks about every skill its sessions named.
		reg, err := c.registryWith(ctx, nil, true, js)
		if err != nil {
			if len(pins) > 0 && (errors.Is(err, catalog.ErrNotFound) || errors.Is(err, store.ErrNotKept)) {
				return inputf("--skill-revision: %w", err)
			}
			return err
		}
		defer reg.Close()
		sources := make([]eval.Source, len(args))
		for i, path := range args {
			sources[i] = eval.Source{Name: path, Open: func(context.Context) (io.ReadCloser, error) { return os.Open(path) }}
		}
		if since != "" {
			sjs, closeJS, err := a.openSessions(&c)
			if err != nil {
				return err
			}
			defer closeJS()
			// Each partition's sessions in turn (with --partitions), in
			// the order of their first pre-step in the window.
			found := 0
			for _, p := range partition.Places(c.Stream, c.Prefix, c.Partitions) {
				pw := w
				pw.Stream, pw.Prefix = p.Stream, p.Prefix
				sids, err := eval.Sessions(ctx, sjs, pw)
				if err != nil {
					return err
				}
				if found += len(sids); found > most {
					return fmt.Errorf("%w (%d over %d partitions): narrow the window", eval.ErrTooManySessions, most, c.Partitions)
				}
				for _, sid := range sids {
					sources = append(sources, eval.StreamSource(sjs, pw, sid))
				}
			}
			if found == 0 {
				return fmt.Errorf("no session of stream %s has a pre-step in the window", c.Stream)
			}
		}
		rep, err := eval.Run(ctx, sources, eval.Options{Window: window, Steps: steps, Candidate: eval.Candidate{
			ToolOwner: c.ToolOwner, Catalog: c.catalogOptions(), Skills: reg, CwdMap: maps, Bodies: c.SearchBodies,
		}})
		if err != nil {
			return evalError(err)
		}
		verdicts := make([]eval.Verdict, len(gates))
		for i, g := range gates {
			verdicts[i] = g.Check(rep.Summary)
		}
		out := bufio.NewWriterSize(a.stdout, 64<<10)
		if asJSON {
			err = printJSON(out, struct {
				*eval.Report
				Gates []eval.Verdict `json:"gates"`
			}{rep, verdicts})
		} else {
			err = printEval(out, rep, verdicts, steps)
		}
		if err == nil {
			err = out.Flush()
		}
		if err != nil {
			return err
		}
		var tripped []string
		for _, v := range verdicts {
			if v.Tripped {
				tripped = append(tripped, v.Gate)
				fmt.Fprintf(a.stderr, "skillstream eval: gate %s tripped: %s\n", v.Gate, figure(v.Value))
			}
		}
		if len(tripped) > 0 {
			return reportedf("gates tripped: %s", strings.Join(tripped, ", "))
		}
		return nil
	}
}

// parsePins reads eval's --skill-revision values, each NAME@REV, in the
// skill store's scope.
func parsePins(revs []string, scope string, noStore bool) ([]store.Pin, error) {
	if len(revs) == 0 {
		if scope != "" {
			return nil, usagef("--scope applies to --skill-revision only")
		}
		return nil, nil
	}
	if noStore {
		return nil, usagef("--skill-revision names a revision of the skill store: drop --no-skill-store")
	}
	sc := skillstore.Global
	if scope != "" {
		var err error
		if sc, err = skillstore.ParseScope(scope); err != nil {
			return nil, usagef("--scope: %v", err)
		}
	}
	pins := make([]store.Pin, 0, len(revs))
	seen := map[string]bool{}
	for _, s := range revs {
		name, at, err := parseNameRev(s)
		if err != nil {
			return nil, usagef("--skill-revision %q: %v", s, err)
		}
		if at == (store.At{}) {
			return nil, usagef("--skill-revision %q: want NAME@REV (REV the skill's revision, or store:N)", s)
		}
		if seen[name] {
			return nil, usagef("--skill-revision %q: skill %s is named twice", s, name)
		}
		seen[name] = true
		pins = append(pins, store.Pin{Scope: sc, Name: name, At: at})
	}
	return pins, nil
}

// evalError marks a recording that cannot be read as bad input.
func evalError(err error) error {
	var se *eval.SourceError
	if !errors.As(err, &se) {
		return err
	}
	var fe *replay.FormatError
	if errors.As(err, &fe) || errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
		return inputf("%w", err)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return inputf("%w", err)
	}
	return err
}

// figure prints a gate's figure: a count as such, a fraction with three
// decimals.
func figure(v float64) string {
	if v == float64(int64(v)) {
		return fmt.Sprintf("%d", int64(v))
	}
	return fmt.Sprintf("%.3f", v)
}

func printEval(w io.Writer, rep *eval.Report, verdicts []eval.Verdict, steps bool) error {
	p := func(format string, args ...any) {
		fmt.Fprintln(w, catalog.RevealLine(fmt.Sprintf(format, args...)))
	}
	for _, s := range rep.Sessions {
		p("session %s (%s): %d steps, catalog %d → %d bytes, about %d → %d tokens; %d added, %d removed, %d changed, %d without description",
			s.Session, s.Name, s.Steps, s.Before.Bytes, s.After.Bytes, s.Before.Tokens, s.After.Tokens,
			len(s.Added), len(s.Removed), len(s.Changed), len(s.Bare))
		for _, e := range []struct {
			what  string
			names []string
		}{{"added", s.Added}, {"removed", s.Removed}, {"changed", s.Changed}, {"without description", s.Bare}} {
			if len(e.names) > 0 {
				p("  %s: %s", e.what, strings.Join(e.names, ", "))
			}
		}
		if s.Incomplete > 0 {
			p("  %d steps with the candidate's skills incomplete (a provider failed)", s.Incomplete)
		}
		for _, l := range s.Loads {
			what := "call " + l.ID
			if l.Kind == eval.KindInvocation {
				what = "step " + l.ID + " /" + l.Skill
			}
			verdict := l.Verdict
			if l.Code != "" {
				verdict += " (" + l.Code + ")"
			}
			p("  %s (%s): %s", what, l.Skill, verdict)
		}
		for _, pr := range s.Pairs {
			p("  search seq %d %q then %s: rank %s → %s", pr.Search, pr.Query, pr.Skill, rankText(pr.Before), rankText(pr.After))
		}
		if steps {
			for _, r := range s.StepRows {
				p("  step %s: %d → %d bytes, about %d → %d tokens%s", r.Step, r.Before, r.After, r.TokensBefore, r.TokensAfter, entriesText(r.Entries))
			}
		}
	}
	t := rep.Summary
	growth := ""
	if t.Before.Bytes > 0 {
		growth = fmt.Sprintf(" (%+.1f%%)", 100*t.ByteGrowth())
	}
	p("sessions: %d, steps with a catalog in view: %d", t.Sessions, t.Steps)
	p("catalog in view: %d → %d bytes%s, about %d → %d tokens (characters/4)", t.Before.Bytes, t.After.Bytes, growth, t.Before.Tokens, t.After.Tokens)
	p("entries: %d added, %d removed, %d changed, %d without description (each name once per session)", t.Added, t.Removed, t.Changed, t.Bare)
	p("recorded loads: %d now fail, %d load other text, %d failed and now load", t.Failures, t.OtherText, t.Fixed)
	p("search-then-load pairs: %d (a load within %d pre-steps of its search)", t.Pairs, t.Window)
	if t.Pairs > 0 {
		b, a := t.RanksBefore, t.RanksAfter
		p("  hit@1 %.3f → %.3f, hit@5 %.3f → %.3f, MRR %.3f → %.3f", b.Hit1, a.Hit1, b.Hit5, a.Hit5, b.MRR, a.MRR)
	}
	for _, v := range verdicts {
		verdict := "ok"
		if v.Tripped {
			verdict = "TRIPPED"
		}
		p("gate %s: %s, %s", v.Gate, figure(v.Value), verdict)
	}
	return nil
}

func rankText(r int) string {
	if r == 0 {
		return "not shown"
	}
	return fmt.Sprint(r)
}

func entriesText(e eval.Entries) string {
	var parts []string
	for _, x := range []struct {
		what  string
		names []string
	}{{"+", e.Added}, {"-", e.Removed}, {"~", e.Changed}, {"bare ", e.Bare}} {
		for _, n := range x.names {
			parts = append(parts, x.what+n)
		}
	}
	if len(parts) == 0 {
		return ""
	}
	return ": " + strings.Join(parts, " ")
}
