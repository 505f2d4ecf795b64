package main

import (
	"flag"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var (
	// helpFlagLine is a flag's line in --help: its name, then the name of
	// its argument in capitals when it takes one.
	helpFlagLine = regexp.MustCompile(`^  --([a-z0-9]+(?:-[a-z0-9]+)*)(?: ([A-Z][A-Z0-9_]*(?:[=@][A-Z][A-Z0-9_]*)?))?$`)
	// helpRunOn is a back-quoted word run into the next one ("`load`run").
	helpRunOn = regexp.MustCompile("`[^`\\s]+`[[:alnum:]]")
)

// TestHelpRendersEveryFlag runs every command's --help: each flag of the
// command (but internal ones, without a usage) is listed once, on a line of its own that shows an argument name
// exactly when the flag takes one (never for a boolean flag), followed by
// its description, indented; no text has a blank line too many or a
// back-quoted word run into the next.
func TestHelpRendersEveryFlag(t *testing.T) {
	for _, sc := range commands() {
		code, stdout, stderr := runMain(t, sc.name, "--help")
		if code != exitOK || stderr != "" {
			t.Errorf("%s --help: exit %d, stderr %q", sc.name, code, stderr)
			continue
		}
		cmd, _ := sc.build(&app{stdout: io.Discard, stderr: io.Discard, lookupEnv: envMap(nil)})
		listed := map[string]bool{}
		lines := strings.Split(stdout, "\n")
		for i, line := range lines {
			if !strings.HasPrefix(line, "  -") {
				continue
			}
			m := helpFlagLine.FindStringSubmatch(line)
			if m == nil {
				t.Errorf("%s --help: malformed flag line %q", sc.name, line)
				continue
			}
			name, arg := m[1], m[2]
			f := cmd.fs.Lookup(name)
			if f == nil {
				t.Errorf("%s --help lists --%s, which it does not take", sc.name, name)
				continue
			}
			if listed[name] {
				t.Errorf("%s --help lists --%s twice", sc.name, name)
			}
			listed[name] = true
			b, isBool := f.Value.(interface{ IsBoolFlag() bool })
			switch {
			case isBool && b.IsBoolFlag() && arg != "":
				t.Errorf("%s --help shows boolean flag --%s with an argument: %q", sc.name, name, line)
			case !(isBool && b.IsBoolFlag()) && arg == "":
				t.Errorf("%s --help shows --%s, which takes a value, without one: %q", sc.name, name, line)
			}
			if i+1 >= len(lines) || !strings.HasPrefix(lines[i+1], "      ") || strings.TrimSpace(lines[i+1]) == "" {
				t.Errorf("%s --help: --%s has no description below it", sc.name, name)
			}
		}
		cmd.fs.VisitAll(func(f *flag.Flag) {
			if !listed[f.Name] && f.Usage != "" { // an internal flag has no usage
				t.Errorf("%s --help does not list --%s", sc.name, f.Name)
			}
		})
		if strings.Contains(stdout, "\n\n\n") {
			t.Errorf("%s --help has two blank lines in a row:\n%s", sc.name, stdout)
		}
		if m := helpRunOn.FindString(stdout); m != "" {
			t.Errorf("%s --help runs a back-quoted word into the next: %q", sc.name, m)
		}
	}
}

// TestHelpMetavarsNameTheArgument: the word --help shows after a flag
// names what the flag takes (MODE, DIR, N), never one of its values: the
// first back-quoted word of a usage becomes that name, so a usage that
// quotes a value first ("`full` or changes") shows the value as if it
// were the argument's name. Neither is it the flag package's bare kind
// ("string"), which names nothing, and a number's name says it counts.
func TestHelpMetavarsNameTheArgument(t *testing.T) {
	for _, sc := range commands() {
		cmd, _ := sc.build(&app{stdout: io.Discard, stderr: io.Discard, lookupEnv: envMap(nil)})
		cmd.fs.VisitAll(func(f *flag.Flag) {
			if b, ok := f.Value.(interface{ IsBoolFlag() bool }); f.Usage == "" || ok && b.IsBoolFlag() {
				return
			}
			name, _ := flag.UnquoteUsage(f)
			if _, isList := f.Value.(listValue); isList && name == "value" {
				name = "dir" // as --help shows it
			}
			where := sc.name + " --" + f.Name
			switch {
			case strings.EqualFold(name, f.DefValue):
				t.Errorf("%s shows its default value %q as its argument's name: %q", where, f.DefValue, f.Usage)
			case regexp.MustCompile("`" + regexp.QuoteMeta(name) + "` or | or `" + regexp.QuoteMeta(name) + "`").MatchString(f.Usage):
				t.Errorf("%s shows one of the values it lists as its argument's name (%s): %q", where, strings.ToUpper(name), f.Usage)
			case name == "string" || name == "value":
				t.Errorf("%s shows the bare kind %s as its argument's name; back-quote the word that names it: %q", where, strings.ToUpper(name), f.Usage)
			}
			if g, ok := f.Value.(flag.Getter); ok {
				if _, isInt := g.Get().(int); isInt && !slices.Contains([]string{"int", "n", "count"}, strings.ToLower(name)) {
					t.Errorf("%s takes a number but calls it %s: %q", where, strings.ToUpper(name), f.Usage)
				}
			}
		})
	}
}
