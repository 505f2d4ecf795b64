package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/skillstream/skillstream/processor"
)

// envPrefix prefixes the environment variable that stands in for a
// configuration flag: --catalog-description-max-length reads
// SKILLSTREAM_CATALOG_DESCRIPTION_MAX_LENGTH when the flag is not given.
const envPrefix = "SKILLSTREAM_"

// envName returns the environment variable for a flag name.
func envName(flagName string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// listValue is a repeatable string flag. From the environment it takes a
// list separated by commas or by the OS path-list separator.
type listValue struct{ p *[]string }

func (l listValue) String() string {
	if l.p == nil {
		return ""
	}
	return strings.Join(*l.p, ",")
}

func (l listValue) Set(s string) error {
	*l.p = append(*l.p, s)
	return nil
}

// splitList splits an environment value into list items.
func splitList(s string) []string {
	parts := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == os.PathListSeparator })
	out := parts[:0]
	for _, p := range parts {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// limit is a stream limit as configured: its value (0 for none), and
// whether it was given, on the command line or in the environment. serve
// applies a limit given to an existing stream, and a default only to a
// stream it creates.
type limit[T ~int64] struct {
	V     T
	Given bool
}

// processor is the limit as processor.Config takes it: 0 for the default,
// processor.NoLimit for none.
func (l limit[T]) processor() T {
	switch {
	case !l.Given:
		return 0
	case l.V == 0:
		return processor.NoLimit
	}
	return l.V
}

// durationLimit is the flag value of a limit[time.Duration].
type durationLimit struct{ l *limit[time.Duration] }

func (v durationLimit) String() string {
	if v.l == nil {
		return ""
	}
	return formatDuration(v.l.V)
}

func (v durationLimit) Set(s string) error {
	d, err := time.ParseDuration(s)
	if err != nil {
		return errors.New("want a duration such as 720h or 30m")
	}
	v.l.V, v.l.Given = d, true
	return nil
}

// formatDuration writes d without the zero minutes and seconds
// time.Duration.String adds (720h, not 720h0m0s).
func formatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// bytesLimit is the flag value of a limit[int64] in bytes.
type bytesLimit struct{ l *limit[int64] }

func (v bytesLimit) String() string {
	if v.l == nil {
		return ""
	}
	return formatBytes(v.l.V)
}

func (v bytesLimit) Set(s string) error {
	n, err := parseBytes(s)
	if err != nil {
		return err
	}
	v.l.V, v.l.Given = n, true
	return nil
}

// bytesValue is a size flag in bytes.
type bytesValue struct{ p *int64 }

func (v bytesValue) String() string {
	if v.p == nil {
		return ""
	}
	return formatBytes(*v.p)
}

func (v bytesValue) Set(s string) error {
	n, err := parseBytes(s)
	if err == nil {
		*v.p = n
	}
	return err
}

// byteUnits are the suffixes a size may have, largest first.
var byteUnits = []struct {
	name  string
	shift uint
}{{"TiB", 40}, {"GiB", 30}, {"MiB", 20}, {"KiB", 10}}

// parseBytes reads a size: a number of bytes, or a whole number of KiB,
// MiB, GiB or TiB (10GiB, 64KiB).
func parseBytes(s string) (int64, error) {
	num, shift := strings.TrimSpace(s), uint(0)
	for _, u := range byteUnits {
		if n, ok := strings.CutSuffix(num, u.name); ok {
			num, shift = strings.TrimSpace(n), u.shift
			break
		}
	}
	num = strings.TrimSuffix(num, "B")
	n, err := strconv.ParseInt(num, 10, 64)
	if err != nil || n < 0 || n > math.MaxInt64>>shift {
		return 0, errors.New("want a size in bytes such as 1048576, 64KiB or 10GiB")
	}
	return n << shift, nil
}

// formatBytes writes n in the largest unit that divides it.
func formatBytes(n int64) string {
	if n > 0 {
		for _, u := range byteUnits {
			if n%(1<<u.shift) == 0 {
				return strconv.FormatInt(n>>u.shift, 10) + u.name
			}
		}
	}
	return strconv.FormatInt(n, 10)
}

// flagGroup is a titled set of flags, in the order they were registered, so
// that --help reads like a manual rather than an alphabetical dump.
type flagGroup struct {
	title string
	names []string
}

// command is one subcommand: its flag set, how --help describes it, and
// which of its flags fall back to SKILLSTREAM_* environment variables.
type command struct {
	name     string
	synopsis string // one line: "skillstream catalog [flags]"
	about    string // paragraph(s) after the synopsis
	examples string // indented example lines
	fs       *flag.FlagSet
	groups   []flagGroup
	env      map[string]bool // flag names read from the environment too
}

func newCommand(name, synopsis, about, examples string) *command {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are reported by Main, in one line
	fs.Usage = func() {}
	return &command{name: name, synopsis: synopsis, about: about, examples: examples, fs: fs, env: map[string]bool{}}
}

// group starts a new titled group; later registrations land in it.
func (c *command) group(title string) *command {
	c.groups = append(c.groups, flagGroup{title: title})
	return c
}

func (c *command) add(name string, env bool) {
	if len(c.groups) == 0 {
		c.group("Flags")
	}
	g := &c.groups[len(c.groups)-1]
	g.names = append(g.names, name)
	if env {
		c.env[name] = true
	}
}

// The registration helpers below register a flag in the current group. The
// cfg variants also read SKILLSTREAM_<NAME> when the flag is absent.

func (c *command) cfgString(p *string, name, def, usage string) {
	c.fs.StringVar(p, name, def, usage)
	c.add(name, true)
}

func (c *command) cfgInt(p *int, name string, def int, usage string) {
	c.fs.IntVar(p, name, def, usage)
	c.add(name, true)
}

func (c *command) cfgBool(p *bool, name string, def bool, usage string) {
	c.fs.BoolVar(p, name, def, usage)
	c.add(name, true)
}

func (c *command) cfgDuration(p *time.Duration, name string, def time.Duration, usage string) {
	c.fs.DurationVar(p, name, def, usage)
	c.add(name, true)
}

func (c *command) cfgDurationLimit(l *limit[time.Duration], name string, def time.Duration, usage string) {
	l.V = def
	c.fs.Var(durationLimit{l}, name, usage)
	c.add(name, true)
}

func (c *command) cfgBytesLimit(l *limit[int64], name string, def int64, usage string) {
	l.V = def
	c.fs.Var(bytesLimit{l}, name, usage)
	c.add(name, true)
}

func (c *command) cfgBytes(p *int64, name string, def int64, usage string) {
	*p = def
	c.fs.Var(bytesValue{p}, name, usage)
	c.add(name, true)
}

func (c *command) cfgList(p *[]string, name, usage string) {
	c.fs.Var(listValue{p}, name, usage)
	c.add(name, true)
}

func (c *command) localString(p *string, name, def, usage string) {
	c.fs.StringVar(p, name, def, usage)
	c.add(name, false)
}

func (c *command) localBool(p *bool, name string, def bool, usage string) {
	c.fs.BoolVar(p, name, def, usage)
	c.add(name, false)
}

func (c *command) localInt(p *int, name string, def int, usage string) {
	c.fs.IntVar(p, name, def, usage)
	c.add(name, false)
}

func (c *command) localDuration(p *time.Duration, name string, def time.Duration, usage string) {
	c.fs.DurationVar(p, name, def, usage)
	c.add(name, false)
}

// pick registers in the current group the named flags of register (one of
// Config's flag sets), in register's order, each with its usage, default
// and environment variable. Every flag of register is bound to its field,
// so the fields of the flags left out hold their defaults.
func (c *command) pick(register func(*command), names ...string) {
	all := newCommand(c.name, "", "", "")
	register(all)
	picked := 0
	for _, g := range all.groups {
		for _, name := range g.names {
			if !slices.Contains(names, name) {
				continue
			}
			f := all.fs.Lookup(name)
			c.fs.Var(f.Value, name, f.Usage)
			c.add(name, all.env[name])
			picked++
		}
	}
	if picked != len(names) {
		panic(fmt.Sprintf("pick %q: only %d of these flags exist", names, picked))
	}
}

// parse parses args (flags may come before, between or after positional
// arguments; "--" ends flags), then fills every configuration flag that was
// not given from its environment variable. An empty environment value counts
// as unset. It returns the positional arguments.
func (c *command) parse(args []string, lookupEnv func(string) (string, bool)) ([]string, error) {
	var positional []string
	for {
		if err := c.fs.Parse(args); err != nil {
			return nil, err
		}
		rest := c.fs.Args()
		consumed := args[:len(args)-len(rest)]
		if len(consumed) > 0 && consumed[len(consumed)-1] == "--" {
			positional = append(positional, rest...)
			break
		}
		if len(rest) == 0 {
			break
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}

	given := map[string]bool{}
	c.fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, g := range c.groups {
		for _, name := range g.names {
			if !c.env[name] || given[name] {
				continue
			}
			key := envName(name)
			v, ok := lookupEnv(key)
			if !ok || v == "" {
				continue
			}
			f := c.fs.Lookup(name)
			values := []string{v}
			if _, isList := f.Value.(listValue); isList {
				values = splitList(v)
			}
			for _, item := range values {
				if err := f.Value.Set(item); err != nil {
					return nil, fmt.Errorf("invalid value %q for %s: %v", v, key, err)
				}
			}
		}
	}
	return positional, nil
}

// usage writes the command's manual: synopsis, description, flags by group
// (each with its environment variable and default), examples.
func (c *command) usage(w io.Writer) {
	fmt.Fprintf(w, "Usage: %s\n", c.synopsis)
	if c.about != "" {
		fmt.Fprintf(w, "\n%s\n", strings.TrimRight(c.about, "\n"))
	}
	for _, g := range c.groups {
		if len(g.names) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s:\n", g.title)
		for _, name := range g.names {
			f := c.fs.Lookup(name)
			kind, text := flag.UnquoteUsage(f)
			if _, isList := f.Value.(listValue); isList && kind == "value" {
				kind = "DIR"
			}
			if b, ok := f.Value.(interface{ IsBoolFlag() bool }); ok && b.IsBoolFlag() {
				kind = "" // a back-quoted word in its usage is not an argument
			}
			if kind != "" {
				kind = " " + strings.ToUpper(kind)
			}
			fmt.Fprintf(w, "  --%s%s\n", name, kind)
			var notes []string
			if def := f.DefValue; def != "" && def != "false" && def != "0" && def != "0s" {
				notes = append(notes, "default "+def)
			}
			if c.env[name] {
				notes = append(notes, "env "+envName(name))
			}
			fmt.Fprintf(w, "      %s", text)
			if len(notes) > 0 {
				fmt.Fprintf(w, " (%s)", strings.Join(notes, "; "))
			}
			fmt.Fprintln(w)
		}
	}
	if len(c.env) > 0 {
		fmt.Fprintf(w, "\nA flag that is not given is read from its environment variable; a given flag wins.\n"+
			"Repeatable flags take a comma- or %q-separated list from the environment.\n", string(os.PathListSeparator))
	}
	if c.examples != "" {
		fmt.Fprintf(w, "\nExamples:\n%s\n", strings.TrimRight(c.examples, "\n"))
	}
}

// errUsage marks an error that is the user's to fix: a bad flag, a bad
// value, a missing argument. Main exits 2 on it and points at --help.
var errUsage = errors.New("usage")

// errBadInput marks a problem of what a command was given to read rather
// than of how it was called: a corrupt or truncated recording, a step that
// is not in the session. Main exits 2 on it; --help would not help.
var errBadInput = errors.New("bad input")

// usageError wraps a message as a usage error.
type usageError struct{ msg string }

func (e usageError) Error() string        { return e.msg }
func (e usageError) Is(target error) bool { return target == errUsage }

func usagef(format string, args ...any) error {
	return usageError{msg: fmt.Sprintf(format, args...)}
}

// inputError wraps an error as bad input.
type inputError struct{ err error }

func (e inputError) Error() string        { return e.err.Error() }
func (e inputError) Unwrap() error        { return e.err }
func (e inputError) Is(target error) bool { return target == errBadInput }

// inputf formats a bad input error; %w keeps the cause.
func inputf(format string, args ...any) error {
	return inputError{err: fmt.Errorf(format, args...)}
}
