package main

import (
	"bytes"
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skillstream/skillstream/processor"
)

// envMap is a lookupEnv over a fixed map.
func envMap(m map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := m[k]
		return v, ok
	}
}

func newServeFlags() (*Config, *command) {
	var c Config
	cmd := newCommand("serve", "skillstream serve", "", "")
	c.skillFlags(cmd)
	c.natsFlags(cmd)
	c.streamFlags(cmd)
	c.opsFlags(cmd, true)
	return &c, cmd
}

func TestParseEnvFillsWhatFlagsDidNotSet(t *testing.T) {
	c, cmd := newServeFlags()
	env := envMap(map[string]string{
		"SKILLSTREAM_CATALOG_DESCRIPTION_MAX_LENGTH": "80",
		"SKILLSTREAM_TOOL_OWNER":                     "from-env",
		"SKILLSTREAM_SKILLS_DIR":                     "/a,/b:/c",
		"SKILLSTREAM_NO_BUNDLED":                     "true",
		"SKILLSTREAM_MAX_AGE":                        "72h",
		"SKILLSTREAM_PREFIX":                         "", // empty counts as unset
	})
	pos, err := cmd.parse([]string{"--tool-owner", "from-flag", "--listen", "127.0.0.1:0"}, env)
	if err != nil {
		t.Fatal(err)
	}
	if len(pos) != 0 {
		t.Errorf("positional = %q, want none", pos)
	}
	if c.DescriptionMaxLength != 80 {
		t.Errorf("DescriptionMaxLength = %d, want 80 from the environment", c.DescriptionMaxLength)
	}
	if c.ToolOwner != "from-flag" {
		t.Errorf("ToolOwner = %q, want the flag to win over the environment", c.ToolOwner)
	}
	if want := []string{"/a", "/b", "/c"}; !slices.Equal(c.SkillsDirs, want) {
		t.Errorf("SkillsDirs = %q, want %q", c.SkillsDirs, want)
	}
	if !c.NoBundled {
		t.Error("NoBundled not read from SKILLSTREAM_NO_BUNDLED")
	}
	if c.MaxAge != (limit[time.Duration]{V: 72 * time.Hour, Given: true}) {
		t.Errorf("MaxAge = %+v, want 72h, given", c.MaxAge)
	}
	if c.Prefix != "ev" {
		t.Errorf("Prefix = %q, want default ev (empty env is unset)", c.Prefix)
	}
	if c.Listen != "127.0.0.1:0" {
		t.Errorf("Listen = %q", c.Listen)
	}
}

// TestParseStreamLimits: the stream's limits and the trigger bound are
// read from flags and the environment, in bytes or binary units; a limit
// given reaches the processor (0 as no limit), one not given is the
// processor's default, which only a stream serve creates gets.
func TestParseStreamLimits(t *testing.T) {
	tests := []struct {
		name string
		args []string
		env  map[string]string
		want processor.Config // the limits only
	}{
		{name: "defaults", want: processor.Config{MaxTriggerBytes: processor.DefaultMaxTriggerBytes}},
		{name: "flags", args: []string{"--max-age", "24h", "--max-bytes", "2GiB", "--max-msg-size", "512KiB", "--max-trigger-bytes", "128KiB"},
			want: processor.Config{MaxAge: 24 * time.Hour, MaxBytes: 2 << 30, MaxMsgSize: 512 << 10, MaxTriggerBytes: 128 << 10}},
		{name: "environment", env: map[string]string{"SKILLSTREAM_MAX_AGE": "48h", "SKILLSTREAM_MAX_BYTES": "1073741824",
			"SKILLSTREAM_MAX_MSG_SIZE": "1MiB", "SKILLSTREAM_MAX_TRIGGER_BYTES": "32768"},
			want: processor.Config{MaxAge: 48 * time.Hour, MaxBytes: 1 << 30, MaxMsgSize: 1 << 20, MaxTriggerBytes: 32 << 10}},
		{name: "zero is none", args: []string{"--max-age", "0", "--max-bytes=0"}, env: map[string]string{"SKILLSTREAM_MAX_MSG_SIZE": "0"},
			want: processor.Config{MaxAge: processor.NoLimit, MaxBytes: processor.NoLimit, MaxMsgSize: processor.NoLimit, MaxTriggerBytes: processor.DefaultMaxTriggerBytes}},
		{name: "a default given is given", args: []string{"--max-bytes", "10GiB"},
			want: processor.Config{MaxBytes: processor.DefaultMaxBytes, MaxTriggerBytes: processor.DefaultMaxTriggerBytes}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var c Config
			cmd := newCommand("serve", "", "", "")
			c.streamFlags(cmd)
			c.securityFlags(cmd)
			if _, err := cmd.parse(tt.args, envMap(tt.env)); err != nil {
				t.Fatal(err)
			}
			pc := c.processorConfig()
			got := processor.Config{MaxAge: pc.MaxAge, MaxBytes: pc.MaxBytes, MaxMsgSize: pc.MaxMsgSize, MaxTriggerBytes: pc.MaxTriggerBytes}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("limits %+v, want %+v", got, tt.want)
			}
		})
	}
	_, cmd := newServeFlags()
	for _, bad := range []string{"10 gigabytes", "-5", "1.5GiB", "9999999999TiB"} {
		if _, err := cmd.parse([]string{"--max-bytes", bad}, envMap(nil)); err == nil {
			t.Errorf("--max-bytes %q parsed", bad)
		}
	}
	if _, err := cmd.parse(nil, envMap(map[string]string{"SKILLSTREAM_MAX_BYTES": "lots"})); err == nil ||
		!strings.Contains(err.Error(), "SKILLSTREAM_MAX_BYTES") {
		t.Errorf("bad SKILLSTREAM_MAX_BYTES: %v", err)
	}
}

func TestParseRepeatedFlagIgnoresEnvList(t *testing.T) {
	c, cmd := newServeFlags()
	env := envMap(map[string]string{"SKILLSTREAM_SKILLS_DIR": "/env"})
	if _, err := cmd.parse([]string{"--skills-dir", "/x", "--skills-dir=/y"}, env); err != nil {
		t.Fatal(err)
	}
	if want := []string{"/x", "/y"}; !slices.Equal(c.SkillsDirs, want) {
		t.Errorf("SkillsDirs = %q, want %q", c.SkillsDirs, want)
	}
}

func TestParseInterspersedPositional(t *testing.T) {
	var cwd string
	var c Config
	cmd := newCommand("load", "", "", "")
	c.skillFlags(cmd)
	cmd.localString(&cwd, "cwd", "", "")
	pos, err := cmd.parse([]string{"my-skill", "--cwd", "/p", "--no-bundled", "--", "--not-a-flag"}, envMap(nil))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"my-skill", "--not-a-flag"}; !slices.Equal(pos, want) {
		t.Errorf("positional = %q, want %q", pos, want)
	}
	if cwd != "/p" || !c.NoBundled {
		t.Errorf("cwd = %q, NoBundled = %v", cwd, c.NoBundled)
	}
}

func TestParseLocalFlagsIgnoreEnv(t *testing.T) {
	var cwd string
	cmd := newCommand("catalog", "", "", "")
	cmd.localString(&cwd, "cwd", "", "")
	if _, err := cmd.parse(nil, envMap(map[string]string{"SKILLSTREAM_CWD": "/nope"})); err != nil {
		t.Fatal(err)
	}
	if cwd != "" {
		t.Errorf("cwd = %q, want local flags untouched by the environment", cwd)
	}
}

func TestParseBadEnvValueNamesVariable(t *testing.T) {
	_, cmd := newServeFlags()
	_, err := cmd.parse(nil, envMap(map[string]string{"SKILLSTREAM_WORKERS": "many"}))
	if err == nil || !strings.Contains(err.Error(), "SKILLSTREAM_WORKERS") || !strings.Contains(err.Error(), `"many"`) {
		t.Fatalf("err = %v, want it to name SKILLSTREAM_WORKERS and the value", err)
	}
}

// runMain runs Main in-process and returns exit status, stdout and stderr.
func runMain(t testing.TB, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := Main(context.Background(), args, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func TestMainUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string // in stderr
	}{
		{"no command", nil, "Usage: skillstream <command>"},
		{"unknown command", []string{"frobnicate"}, `unknown command "frobnicate"`},
		{"unknown flag", []string{"catalog", "--frob"}, "flag provided but not defined: -frob"},
		{"bad int", []string{"serve", "--workers", "x"}, `invalid value "x" for flag -workers`},
		{"cap below 3", []string{"catalog", "--catalog-description-max-length", "2"}, "greater than or equal to 3"},
		{"cap below 3 on serve", []string{"serve", "--catalog-description-max-length=0"}, "greater than or equal to 3"},
		{"bad log format", []string{"serve", "--log-format", "xml"}, `--log-format "xml": must be text or json`},
		{"bad listen", []string{"serve", "--listen", "nowhere"}, `--listen "nowhere": want host:port`},
		{"credentials without url", []string{"serve", "--nats-token", "s3cret"}, "--nats-token applies to --nats-url only"},
		{"two auth methods", []string{"serve", "--nats-url", "nats://127.0.0.1:1", "--nats-token", "a", "--nats-user", "u"}, "choose one of"},
		{"instance not a subject token", []string{"serve", "--instance", "host.example"}, `--instance "host.example": must be 1 to 128 letters, digits, '-' or '_'`},
		{"relative cwd root", []string{"serve", "--cwd-root", "srv/projects"}, `--cwd-root "srv/projects": must be an absolute folder`},
		{"wildcard reply prefix", []string{"serve", "--reply-prefix", "_INBOX.>"}, `reply prefix "_INBOX.>": want a literal subject prefix`},
		{"reply prefix on the stream", []string{"serve", "--reply-prefix", "ev.replies"}, `reply prefix "ev.replies" overlaps the session stream`},
		{"trigger bound over 1 MiB", []string{"serve", "--max-trigger-bytes", "2MiB"}, "--max-trigger-bytes 2MiB: must be between 1KiB and 1MiB"},
		{"negative max age", []string{"serve", "--max-age", "-1h"}, "--max-age -1h0m0s: must not be negative"},
		{"max age under the duplicate window", []string{"serve", "--max-age", "1m"}, "duplicate window 2m0s exceeds max age 1m0s"},
		{"message larger than the stream", []string{"serve", "--max-bytes", "1MiB", "--max-msg-size", "2MiB"}, "max message size 2097152 exceeds max bytes 1048576"},
		{"bad size", []string{"serve", "--max-bytes", "ten"}, `invalid value "ten" for flag -max-bytes: want a size in bytes`},
		{"load without name", []string{"load"}, "load needs a skill name"},
		{"validate without dir", []string{"validate"}, "validate needs at least one"},
		{"version with argument", []string{"version", "x"}, "takes no arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runMain(t, tt.args...)
			if code != exitUsage {
				t.Errorf("exit = %d, want %d; stderr:\n%s", code, exitUsage, stderr)
			}
			if !strings.Contains(stderr, tt.want) {
				t.Errorf("stderr = %q, want it to contain %q", stderr, tt.want)
			}
			if stdout != "" {
				t.Errorf("stdout = %q, want nothing", stdout)
			}
			if tt.args != nil && strings.Count(strings.TrimRight(stderr, "\n"), "\n") > 0 && tt.name != "unknown command" {
				t.Errorf("stderr has several lines, want one clear line:\n%s", stderr)
			}
		})
	}
}

func TestMainHelpForEveryCommand(t *testing.T) {
	for _, sc := range commands() {
		for _, args := range [][]string{{sc.name, "--help"}, {sc.name, "-h"}, {"help", sc.name}} {
			code, stdout, stderr := runMain(t, args...)
			if code != exitOK {
				t.Errorf("%q: exit = %d, stderr %q", args, code, stderr)
			}
			if !strings.HasPrefix(stdout, "Usage: skillstream "+sc.name) || !strings.Contains(stdout, "Examples:") {
				t.Errorf("%q: help lacks usage line or examples:\n%s", args, stdout)
			}
		}
	}
	code, stdout, _ := runMain(t, "--help")
	if code != exitOK || !strings.Contains(stdout, "Commands:") {
		t.Errorf("top-level --help: exit %d\n%s", code, stdout)
	}
}

func TestVersion(t *testing.T) {
	code, stdout, _ := runMain(t, "version")
	if code != exitOK || !strings.HasPrefix(stdout, "skillstream ") || !strings.Contains(stdout, "go1.") {
		t.Errorf("version: exit %d, %q", code, stdout)
	}
}

func TestLoopback(t *testing.T) {
	for addr, want := range map[string]bool{
		"127.0.0.1:4222": true, "localhost:4222": true, "[::1]:4222": true,
		"0.0.0.0:4222": false, ":4222": false, "10.0.0.5:4222": false, "nonsense": false,
	} {
		if got := loopback(addr); got != want {
			t.Errorf("loopback(%q) = %v, want %v", addr, got, want)
		}
	}
}

// FuzzParse feeds arbitrary command lines and environment values to the
// serve flag parser: it must return positional arguments or an error, never
// panic.
func FuzzParse(f *testing.F) {
	f.Add("--skills-dir\x00/a\x00x\x00--\x00--y", "/a,/b:/c", "12")
	f.Add("--workers=\x00--no-bundled=maybe", "", "-1")
	f.Add("-h", ",,:", "1e9")
	f.Fuzz(func(t *testing.T, args, list, num string) {
		_, cmd := newServeFlags()
		env := envMap(map[string]string{
			"SKILLSTREAM_SKILLS_DIR": list, "SKILLSTREAM_WORKERS": num, "SKILLSTREAM_MAX_AGE": num,
		})
		_, _ = cmd.parse(strings.Split(args, "\x00"), env)
	})
}
