package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/replay"
	"github.com/skillstream/skillstream/processor/usage/projection"
)

// cwdMaps is the repeatable --cwd-map flag.
type cwdMaps []replay.CwdMapping

func (m *cwdMaps) String() string {
	if m == nil {
		return ""
	}
	var parts []string
	for _, x := range *m {
		parts = append(parts, x.Old+"="+x.New)
	}
	return strings.Join(parts, ",")
}

func (m *cwdMaps) Set(s string) error {
	x, err := replay.ParseCwdMapping(s)
	if err != nil {
		return err
	}
	*m = append(*m, x)
	return nil
}

func (a *app) replayCommand() (*command, runFunc) {
	var (
		c        Config
		live     bool
		sid      string
		recorded bool
		asRec    bool
		asJSON   bool
		maps     cwdMaps
	)
	cmd := newCommand("replay", "skillstream replay FILE | --live --session SID [--as-recorded | --recorded-skills] [--cwd-map OLD=NEW] [--json] [flags]", `
Re-run the processor's decisions at every trigger of a recorded session and
compare them with what the recording holds. For each pre-step, skill call and
skill search, in stream order, it prints the step or call id, the recorded
outcome, the replayed outcome and, where the model text differs, a unified
diff from the recorded to the replayed text.

Each trigger is decided against the session as it was recorded up to that
point (the catalogs and compactions before the processor answered it), not
against the replay's own earlier answers: a change shows at the steps it
really affects. By default skills are the ones the configured skill roots
give now (the same flags and SKILLSTREAM_* variables as serve): does today's
processor, with today's skills, still say what was said? With
--recorded-skills they are the skills captured in the recording by "export
--capture-skills". A skill search is run again by the processor's own search
index, built over those skills: a changed ranking is a difference.

With --as-recorded every trigger is decided against the skills the session
saw at that point, as the recording shows them: a pre-step against the
entries of the catalog it appended (or, when it appended none, of the
newest catalog before it), a skill call against the tool result it got (or
the newest earlier result for that skill, else the captured skills), a skill
search against the matches it got (the recording does not hold every skill
a ranking weighs; a search ranked with learned terms, exported with
--capture-skills, is ranked again over the captured skills with the terms
it recorded). An unchanged processor then reproduces every recorded
output, even when skills were added, edited or removed during the session:
the regression check for a processor upgrade. It reads no skill roots.

Catalogs and skill results of store skills record the revision and channel
(stable, canary, pin) each entry or load came from. A replay compares them
too: the same text from another revision is a difference, shown as the
recorded and replayed revisions. Against today's store the session is
placed in the same canaries as the processor placed it (its tenant, from
--tenant, and its session id): while the store's releases are unchanged it
is served the same revisions. With --as-recorded each trigger gets the
revisions it recorded.

The options that shape model text (--catalog-max-length,
--catalog-description-max-length, --max-skill-bytes, --skill-search,
--catalog-listed-max, --catalog-updates, --user-invocation, --catalog-rank)
are the ones the recording says it was made under, unless given on the
command line. The first line names the options used and those that differ
from the recording; an older recording, which does not say, is replayed with
the flags and the first line says so. A catalog listed by use (--catalog-rank use) is decided
again with the ranking its record carries; against today's skills, a step
is noted when today's use (the usage projection's last 7 days, when the
store's server holds one) would rank the skills otherwise. Whether the
search index held the skills' bodies (--search-bodies) is one of the
recorded options; give the flag for a recording too old to say.

With today's skills, --cwd-map OLD=NEW replays triggers whose working
directory is OLD, or under it, in NEW instead (for a recording made on
another machine); paths under NEW in replayed tool results are written back
as OLD before comparing.

--live --session SID replays a session straight from the stream (see export
for where it is read from); nothing is published.

Output is deterministic: the same recording and skills give the same bytes.
Exit status: 0 when every trigger replays identically, 1 when any differs,
2 on bad input (unreadable, corrupt or truncated recording, bad flags).`[1:], `
  skillstream replay 7f3a.jsonl
  skillstream replay 7f3a.jsonl --skills-dir ./skills --cwd-map /srv/app=$HOME/src/app
  skillstream replay 7f3a.jsonl --recorded-skills --json | jq 'select(.differs)'
  skillstream replay 7f3a.jsonl --as-recorded
  skillstream replay --live --session 7f3a --nats-url nats://nats:4222`[1:])
	cmd.group("Flags")
	cmd.localBool(&live, "live", false, "replay a session from the stream instead of a file (needs --session)")
	cmd.localString(&sid, "session", "", "`id` of the session to replay with --live")
	cmd.localBool(&recorded, "recorded-skills", false, "replay against the skills captured in the recording instead of the skill roots")
	cmd.localBool(&asRec, "as-recorded", false, "replay each trigger against the skills the session saw at that point, as the recording shows them")
	cmd.fs.Var(&maps, "cwd-map", "replay working directory `OLD=NEW`; repeatable")
	cmd.add("cwd-map", false)
	cmd.localBool(&asJSON, "json", false, "print one JSON object per trigger, then a summary object")
	c.skillFlags(cmd)
	c.storeFlags(cmd)
	c.readerFlags(cmd)
	return cmd, func(ctx context.Context, args []string) error {
		switch {
		case live && len(args) > 0:
			return usagef("replay --live reads the stream: give --session, not a file")
		case live:
			if err := c.checkSession(sid); err != nil {
				return err
			}
			if recorded {
				return usagef("--recorded-skills needs a recording file: a live stream holds no captured skills")
			}
		case len(args) != 1:
			return usagef("replay needs one recording file (or --live --session SID), got %d arguments", len(args))
		case sid != "":
			return usagef("--session applies to --live only")
		}
		if asRec && recorded {
			return usagef("--as-recorded and --recorded-skills exclude each other")
		}
		if asRec && len(maps) > 0 {
			return usagef("--cwd-map applies to today's skills, not to --as-recorded")
		}
		if err := c.validateSkills(); err != nil {
			return err
		}
		out := bufio.NewWriterSize(a.stdout, 64<<10)
		defer out.Flush()
		// The options the session was recorded under, unless a flag on
		// the command line says otherwise (the environment is serve's
		// configuration, which the recording already says).
		rec, err := a.recordedOptions(ctx, &c, sid, args)
		if err != nil {
			return err
		}
		given := map[string]bool{}
		cmd.fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
		catOpts, settings := replay.MergeOptions(c.catalogOptions(), func(name string) bool { return given[name] }, rec)
		if err := catOpts.Validate(); err != nil {
			return inputf("the options the session was recorded under: %w", err)
		}
		// The first line, written with the first step (or the summary): a
		// replay refused before it prints nothing.
		optionsLine := sync.OnceValue(func() error { return printOptions(out, asJSON, settings, rec != nil) })
		emitStep := stepPrinter(out, asJSON)
		opts := replay.Options{
			ToolOwner:  c.ToolOwner,
			Catalog:    catOpts,
			Recorded:   recorded,
			AsRecorded: asRec,
			CwdMap:     maps,
			Bodies:     catOpts.SearchBodies,
			Recording:  rec,
			Tenant:     c.Tenant,
			Emit: func(s replay.Step) error {
				if err := optionsLine(); err != nil {
					return err
				}
				return emitStep(s)
			},
		}
		if !recorded && !asRec {
			if err := c.validateStore(); err != nil {
				return err
			}
			js, closeNC, err := a.dialStore(&c, "replay", false)
			if err != nil {
				return err
			}
			defer closeNC()
			reg, err := c.registryWith(ctx, nil, false, js)
			if err != nil {
				return err
			}
			defer reg.Close()
			opts.Skills = reg
			if catOpts.Rank == catalog.RankUse && js != nil {
				// Today's use, to note the catalogs it would rank
				// otherwise; none without a projection.
				if rep, err := projection.ReadPartitions(ctx, js, c.usageOptions(), c.Partitions, time.Now().Add(-projection.DefaultUseWindow)); err == nil {
					opts.Ranking = projection.RankingOf(rep)
				}
			}
		}
		sum, err := a.replaySession(ctx, &c, sid, args, opts)
		if err != nil {
			out.Flush()
			return err
		}
		if err := optionsLine(); err != nil {
			return err
		}
		if err := printSummary(out, asJSON, sum); err != nil {
			return err
		}
		if err := out.Flush(); err != nil {
			return err
		}
		if sum.Differ > 0 {
			return errReported
		}
		return nil
	}
}

// recordedOptions returns the options the session to replay was recorded
// under: those the recording file says (args[0]), or with sid those of the
// session's newest catalog in the stream; nil when it does not say.
func (a *app) recordedOptions(ctx context.Context, c *Config, sid string, args []string) (*events.CatalogOptions, error) {
	if sid == "" {
		if err := verifyRecording(args[0]); err != nil {
			return nil, err
		}
		r, closeFile, err := openRecording(args[0])
		if err != nil {
			return nil, err
		}
		defer closeFile()
		o, err := replay.RecordedOptions(r)
		return o, recordingError(args[0], err)
	}
	js, closeJS, err := a.openSessions(c)
	if err != nil {
		return nil, err
	}
	defer closeJS()
	stream, prefix := c.sessionPlace(sid)
	o, err := replay.SessionOptions(ctx, js, stream, prefix, c.layout(), sid)
	return o, c.partitionHint(ctx, js, err)
}

// printOptions writes the replay's first line: the options it uses, and
// which of them differ from the recording (or that the recording does not
// say).
func printOptions(w io.Writer, asJSON bool, settings []replay.Setting, recorded bool) error {
	if asJSON {
		return newJSONEncoder(w).Encode(struct {
			Options  []replay.Setting `json:"options"`
			Recorded bool             `json:"recorded"`
		}{settings, recorded})
	}
	var used, differ []string
	for _, s := range settings {
		used = append(used, "--"+s.Flag+"="+s.Value)
		if s.Differs() {
			differ = append(differ, fmt.Sprintf("--%s=%s (recorded %s)", s.Flag, s.Value, s.Recorded))
		}
	}
	line := "options: " + strings.Join(used, " ")
	switch {
	case !recorded:
		line += " (from flags: the recording does not say which options it was made under)"
	case len(differ) == 0:
		line += " (as recorded)"
	default:
		line += "; differ from the recording: " + strings.Join(differ, ", ")
	}
	_, err := fmt.Fprintln(w, line)
	return err
}

// openRecording opens a recording file; problems with the file are the
// user's to fix (exit 2).
func openRecording(path string) (*replay.Reader, func(), error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, inputf("open recording: %w", err)
	}
	r, err := replay.NewReader(f)
	if err != nil {
		f.Close()
		return nil, nil, recordingError(path, err)
	}
	return r, func() { f.Close() }, nil
}

// verifyRecording reads the recording at path to its end record, checking
// every record, the event count and the checksum.
func verifyRecording(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return inputf("open recording: %w", err)
	}
	defer f.Close()
	return recordingError(path, replay.Verify(f))
}

// recordingError marks a format error of a recording as bad input.
func recordingError(path string, err error) error {
	var fe *replay.FormatError
	if errors.As(err, &fe) || errors.Is(err, replay.ErrNoRecordedSkills) {
		return inputf("%s: %w", path, err)
	}
	return err
}

// replaySession replays session sid from the stream (in --session-layout)
// when sid is set, else the recording file args[0] (in the layout its
// header says).
func (a *app) replaySession(ctx context.Context, c *Config, sid string, args []string, opts replay.Options) (replay.Summary, error) {
	if sid == "" {
		return replayFile(ctx, args[0], opts)
	}
	opts.Layout = c.layout()
	js, closeJS, err := a.openSessions(c)
	if err != nil {
		return replay.Summary{}, err
	}
	defer closeJS()
	stream, prefix := c.sessionPlace(sid)
	sum, err := replay.Live(ctx, js, stream, prefix, sid, opts)
	if errors.Is(err, replay.ErrEmptySession) {
		return replay.Summary{}, c.sessionNotFound(ctx, js, sid)
	}
	return sum, c.partitionHint(ctx, js, err)
}

func replayFile(ctx context.Context, path string, opts replay.Options) (replay.Summary, error) {
	// The end record's checksum is only known at the end: read the whole
	// recording once before printing anything, so that a truncated or
	// altered one is refused without a single diff.
	if err := verifyRecording(path); err != nil {
		return replay.Summary{}, err
	}
	r, closeFile, err := openRecording(path)
	if err != nil {
		return replay.Summary{}, err
	}
	defer closeFile()
	sum, err := replay.Run(ctx, r, opts)
	return sum, recordingError(path, err)
}

// stepPrinter writes replayed steps as text or JSON lines.
func stepPrinter(w io.Writer, asJSON bool) func(replay.Step) error {
	enc := newJSONEncoder(w)
	return func(s replay.Step) error {
		if asJSON {
			return enc.Encode(s)
		}
		return printStep(w, s)
	}
}

// trigger names a step for people: `step 3` or `call c1 (b-skill)`.
func triggerName(s replay.Step) string {
	id := s.ID
	if id == "" {
		id = "?"
	}
	switch s.Kind {
	case replay.TriggerSkillCall:
		if s.Skill != "" {
			return fmt.Sprintf("call %s (%s)", id, s.Skill)
		}
		return "call " + id
	case replay.TriggerSkillSearch:
		return fmt.Sprintf("search %s (%q)", id, s.Query)
	}
	return "step " + id
}

func printStep(w io.Writer, s replay.Step) error {
	verdict := "same"
	if s.Differs {
		verdict = "DIFFERS"
	}
	line := fmt.Sprintf("seq %d %s: recorded %s; replayed %s: %s", s.Seq, triggerName(s), s.Recorded, s.Replayed, verdict)
	if s.Note != "" {
		line += " (" + s.Note + ")"
	}
	if _, err := fmt.Fprintln(w, catalog.RevealLine(line)); err != nil {
		return err
	}
	if s.Diff != "" {
		_, err := io.WriteString(w, catalog.Reveal(s.Diff)) // skill text, recorded or current
		return err
	}
	return nil
}

func printSummary(w io.Writer, asJSON bool, sum replay.Summary) error {
	if asJSON {
		return newJSONEncoder(w).Encode(struct {
			Summary replay.Summary `json:"summary"`
		}{sum})
	}
	_, err := fmt.Fprintf(w, "%d triggers replayed: %d same, %d differ\n", sum.Triggers, sum.Same, sum.Differ)
	return err
}
