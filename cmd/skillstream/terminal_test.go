package main

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/natstest"
)

// What a hostile skill holds to take over the terminal that shows it:
// retitle it, clear it, hide a line under review, reorder text.
const (
	hostileBody = "Review this.\n\tprintf '\x1b]0;owned\x07'\n\x1b[2J\nrm -rf ~/work\r\x1b[Kls -l\nx\u202eevil\u202c y\u2028z\u009b[31m"
	// hostileDesc is YAML for a description holding ESC, BEL and U+202E.
	hostileDesc = `description: "Formats code\e]0;owned\a \u202eevil"`
	hostileRun  = "echo hi\x1b[2J\r\x1b[K\n"
)

// rawTerminal are what must never reach a terminal from skill text.
var rawTerminal = []string{"\x1b", "\x07", "\r", "\u202e", "\u202c", "\u2028", "\u009b"}

// assertRevealed fails when out holds a raw terminal control, or lacks one
// of the escaped forms.
func assertRevealed(t *testing.T, what, out string, want ...string) {
	t.Helper()
	for _, raw := range rawTerminal {
		if strings.Contains(out, raw) {
			t.Errorf("%s prints %q raw:\n%q", what, raw, out)
		}
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("%s lacks %s:\n%s", what, w, out)
		}
	}
}

// TestSkillTextReachesTerminalEscaped: a pushed skill whose SKILL.md and
// script hold terminal control sequences is shown with them escaped by
// every command that prints it to a person (skills diff, load, catalog,
// validate, push's warnings); --json keeps the exact text.
func TestSkillTextReachesTerminalEscaped(t *testing.T) {
	srv := natstest.Start(t, natstest.WithTCP())
	nats := []string{"--nats-url", srv.URL()}
	root := t.TempDir()
	writeFile(t, root, "term/SKILL.md", skillMD("Review this.", "name: term", "description: Formats code."))
	writeFile(t, root, "term/run.sh", "echo hi\n")
	if code, stdout, stderr := runMain(t, append([]string{"skills", "push", root}, nats...)...); code != 0 || stderr != "" {
		t.Fatalf("first push: exit %d\n%s%s", code, stdout, stderr)
	}
	writeFile(t, root, "term/SKILL.md", skillMD(hostileBody, "name: term", hostileDesc))
	writeFile(t, root, "term/run.sh", hostileRun)

	// push publishes, and warns on stderr, naming file, field, line and character.
	code, stdout, stderr := runMain(t, append([]string{"skills", "push", root}, nats...)...)
	if code != 0 || !strings.Contains(stdout, "updated term rev 2 ") {
		t.Fatalf("hostile push: exit %d\n%s%s", code, stdout, stderr)
	}
	skillFile := filepath.Join(root, "term", "SKILL.md")
	assertRevealed(t, "push", stdout+stderr,
		skillFile+": warning: description on line 3 holds U+001B, a control character (and 2 more)",
		skillFile+": warning: body on line 6 holds U+001B, a control character (and 6 more)")

	// skills diff: the unified diff of both files.
	code, stdout, stderr = runMain(t, append([]string{"skills", "diff", "term", "1"}, nats...)...)
	if code != 0 {
		t.Fatalf("diff: exit %d\n%s%s", code, stdout, stderr)
	}
	assertRevealed(t, "skills diff", stdout+stderr, `+	printf '\x1b]0;owned\x07'`, `+\x1b[2J`, `+rm -rf ~/work\r\x1b[Kls -l`,
		`x\u202eevil\u202c y\u2028z\u009b[31m`, `+echo hi\x1b[2J\r\x1b[K`, `Formats code\e]0;owned\a \u202eevil`)

	// load: what the model reads, for a person; --json as it is.
	load := append([]string{"load", "term", "--cwd", t.TempDir(), "--no-bundled", "--user-skills-dir="}, nats...)
	code, stdout, stderr = runMain(t, load...)
	if code != 0 {
		t.Fatalf("load: exit %d\n%s%s", code, stdout, stderr)
	}
	assertRevealed(t, "load", stdout+stderr, "Review this.\n\tprintf '\\x1b]0;owned\\x07'\n\\x1b[2J\n", `rm -rf ~/work\r\x1b[Kls -l`)
	code, stdout, _ = runMain(t, append(load, "--json")...)
	var res loadJSON
	if err := json.Unmarshal([]byte(stdout), &res); code != 0 || err != nil || res.Value == nil || res.Value.Content != hostileBody {
		t.Errorf("load --json: exit %d, %v, content not the exact body:\n%s", code, err, stdout)
	}
	if strings.ContainsAny(stdout, "\x1b\x07\r") {
		t.Errorf("load --json prints C0 controls raw:\n%q", stdout) // JSON escapes them
	}

	// catalog: the description as the model's catalog carries it.
	cat := append([]string{"catalog", "--cwd", t.TempDir(), "--no-bundled", "--user-skills-dir="}, nats...)
	code, stdout, stderr = runMain(t, cat...)
	if code != 0 {
		t.Fatalf("catalog: exit %d\n%s%s", code, stdout, stderr)
	}
	assertRevealed(t, "catalog", stdout+stderr, "- `term`: Formats code\\x1b]0;owned\\x07 \\u202eevil\n")
	code, stdout, _ = runMain(t, append(cat, "--json")...)
	var view catalogView
	if err := json.Unmarshal([]byte(stdout), &view); code != 0 || err != nil || !strings.Contains(view.Text, "Formats code\x1b]0;owned\x07 \u202eevil") {
		t.Errorf("catalog --json: exit %d, %v, text not as the model reads it:\n%s", code, err, stdout)
	}

	// validate: the same warnings, the skill still valid.
	code, stdout, stderr = runMain(t, "validate", root)
	if code != 0 {
		t.Fatalf("validate: exit %d\n%s%s", code, stdout, stderr)
	}
	assertRevealed(t, "validate", stdout+stderr,
		skillFile+": warning: description on line 3 holds U+001B",
		skillFile+": warning: body on line 6 holds U+001B",
		"1 file checked, 1 valid skill: 0 errors, 2 warnings")
}

// TestValidateShowsFileNamesEscaped: a finding names its file with what
// a terminal would act on escaped, and the warnings name bidi controls.
func TestValidateShowsFileNamesEscaped(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "bidi/SKILL.md", skillMD("Fine \u2066body\u2069.", "name: bidi", "description: \"Safe \\u202eevil\""))
	writeFile(t, root, "x\x1b]0;owned\x07.md", skillMD("x", "name: x", "description: d"))
	code, stdout, stderr := runMain(t, "validate", root)
	if code != exitFailure {
		t.Fatalf("validate: exit %d\n%s%s", code, stdout, stderr)
	}
	assertRevealed(t, "validate", stdout+stderr,
		filepath.Join(root, "bidi", "SKILL.md")+": warning: description on line 3 holds U+202E, a bidirectional-text control",
		filepath.Join(root, "bidi", "SKILL.md")+": warning: body on line 5 holds U+2066, a bidirectional-text control (and 1 more)",
		filepath.Join(root, `x\x1b]0;owned\x07.md`)+`: error: name "x" differs from its file name "x\x1b]0;owned\a"`)
}

// TestServeWarnsOfControlCharactersInDescriptions: serve's registry logs a
// skill whose description holds control characters once, however many
// snapshots list it, and leaves the description (the model's text) as it
// is.
func TestServeWarnsOfControlCharactersInDescriptions(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "term/SKILL.md", skillMD("Body.", "name: term", hostileDesc))
	writeFile(t, root, "plain/SKILL.md", skillMD("Body.", "name: plain", "description: Plain."))
	var logs bytes.Buffer
	c := Config{SkillsDirs: []string{root}, NoBundled: true}
	reg, err := c.registry(slog.New(slog.NewTextHandler(&logs, nil)), true)
	if err != nil {
		t.Fatal(err)
	}
	defer reg.Close()
	for _, cwd := range []string{"", t.TempDir(), ""} {
		s, err := reg.Snapshot(context.Background(), catalog.At(cwd))
		if err != nil || len(s.Skills) != 2 {
			t.Fatalf("snapshot: %v, %+v", err, s)
		}
		if d := s.Skills[1].Description; d != "Formats code\x1b]0;owned\x07 \u202eevil" {
			t.Errorf("description = %q, want it as written", d)
		}
	}
	out := logs.String()
	if n := strings.Count(out, "skill description holds control characters"); n != 1 {
		t.Errorf("logged %d times, want once:\n%s", n, out)
	}
	for _, want := range []string{"level=WARN", "skill=term", "char=U+001B", "count=3", "custom " + filepath.Join(root, "term")} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.ContainsAny(out, "\x1b\x07") || strings.Contains(out, "\u202e") {
		t.Errorf("log holds raw control characters:\n%q", out)
	}
}
