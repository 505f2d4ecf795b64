package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/natstest"
)

// TestExitCodes holds every command to one rule: 0 done, 1 the operation
// failed (a skill, revision or session that is not there, a tool error,
// lint errors), 2 called wrongly (a bad flag, a name that cannot be a
// skill's). With --json a failure is also one JSON object on stdout, unless
// the command printed its own answer (load's tool error result).
func TestExitCodes(t *testing.T) {
	srv := natstest.Start(t, natstest.WithTCP())
	nats := []string{"--nats-url", srv.URL()}
	root := t.TempDir()
	writeFile(t, root, "a-skill/SKILL.md", skillMD("Version one.", "name: a-skill", "description: A skill."))
	bad := t.TempDir()
	writeFile(t, bad, "b-skill/SKILL.md", skillMD("Body.", "name: b-skill")) // no description
	if code, _, stderr := runMain(t, append([]string{"skills", "push", root}, nats...)...); code != 0 {
		t.Fatalf("push: %d\n%s", code, stderr)
	}
	local := []string{"--no-bundled", "--user-skills-dir=", "--skills-dir", root, "--no-skill-store"}
	for _, c := range []struct {
		args     []string
		want     int
		jsonErr  bool // stdout is {"error": ...}
		jsonSelf bool // stdout is the command's own JSON answer
	}{
		{args: append([]string{"load", "nope"}, local...), want: 1},
		{args: append([]string{"load", "--json", "nope"}, local...), want: 1, jsonSelf: true},
		{args: append([]string{"load", "a-skill"}, local...), want: 0},
		{args: append([]string{"skills", "get", "nope", "--out", t.TempDir()}, nats...), want: 1},
		{args: append([]string{"skills", "get", "Not_A_Name", "--out", t.TempDir()}, nats...), want: 2},
		{args: append([]string{"skills", "rm", "nope", "--scope", "global"}, nats...), want: 1},
		{args: append([]string{"skills", "history", "nope"}, nats...), want: 1},
		{args: append([]string{"skills", "diff", "nope", "1"}, nats...), want: 1},
		{args: append([]string{"skills", "rollback", "nope", "--scope", "global"}, nats...), want: 1},
		{args: append([]string{"skills", "push", "--json", bad}, nats...), want: 1, jsonErr: true},
		{args: append([]string{"history", "--json", "--session", "nope"}, nats...), want: 1, jsonErr: true},
		{args: append([]string{"usage", "--json", "--since", "yesterday-ish"}, nats...), want: 2, jsonErr: true},
		{args: []string{"eval", "--json", "--fail-on", "hit5-dorp=0.05", "x.jsonl"}, want: 2, jsonErr: true},
		{args: append([]string{"eval", "--json", "nope.jsonl"}, local...), want: 2, jsonErr: true},
		{args: []string{"validate", bad}, want: 1},
		{args: []string{"catalog", "--frob"}, want: 2},
	} {
		t.Run(strings.Join(c.args[:min(3, len(c.args))], " "), func(t *testing.T) {
			code, stdout, stderr := runMain(t, c.args...)
			if code != c.want {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, c.want, stdout, stderr)
			}
			var out map[string]any
			switch {
			case c.jsonErr:
				var e struct {
					Error struct {
						Message string `json:"message"`
						Exit    int    `json:"exit"`
					} `json:"error"`
				}
				if err := json.Unmarshal([]byte(stdout), &e); err != nil || e.Error.Message == "" || e.Error.Exit != c.want {
					t.Fatalf("stdout is not a JSON error object with exit %d (%v):\n%s", c.want, err, stdout)
				}
			case c.jsonSelf:
				if err := json.Unmarshal([]byte(stdout), &out); err != nil || out["error"] == nil || out["isError"] != true {
					t.Fatalf("stdout is not the command's JSON answer (%v):\n%s", err, stdout)
				}
			}
		})
	}
}
