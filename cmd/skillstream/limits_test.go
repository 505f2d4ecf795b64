package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// manyRoot writes n skills with long descriptions.
func manyRoot(t *testing.T, n int) string {
	root := t.TempDir()
	for i := range n {
		name := fmt.Sprintf("skill-%03d", i)
		writeFile(t, root, name+"/SKILL.md", skillMD("Body.", "name: "+name,
			"description: "+strings.Repeat("A long description of this skill. ", 14)))
	}
	return root
}

func TestCatalogReportsShortening(t *testing.T) {
	root := manyRoot(t, 80)
	args := append([]string{"catalog", "--catalog-max-length", "1000"}, skillsArgs(t, root)...)
	code, stdout, stderr := runMain(t, args...)
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "(Shortened to fit the catalog size limit: ") {
		t.Errorf("no notice in the catalog:\n%s", stdout)
	}
	for _, want := range []string{
		"shortened to fit --catalog-max-length 1000: about ",
		"tokens before, ",
		"listed without a description (size limit): ",
		"not listed (size limit; still loadable by name): ",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}

	// The environment sets it too, and --json tells what was shortened.
	t.Setenv("SKILLSTREAM_CATALOG_MAX_LENGTH", "1000")
	code, stdout, stderr = runMain(t, append([]string{"catalog", "--json"}, skillsArgs(t, root)...)...)
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	var v catalogView
	if err := json.Unmarshal([]byte(stdout), &v); err != nil {
		t.Fatal(err)
	}
	if sh := v.Shortened; sh == nil || len(sh.Omitted) == 0 || len(sh.WithoutDescription) != len(v.Entries) || sh.ApproxTokensBefore <= v.ApproxTokens {
		t.Errorf("shortened = %+v, %d entries", v.Shortened, len(v.Entries))
	}

	// Within the limit nothing is said.
	code, _, stderr = runMain(t, append([]string{"catalog", "--catalog-max-length", "0"}, skillsArgs(t, root)...)...)
	if code != exitOK || strings.Contains(stderr, "shortened") {
		t.Errorf("no limit: exit %d, stderr:\n%s", code, stderr)
	}
}

func TestLoadTruncates(t *testing.T) {
	root := t.TempDir()
	body := strings.Repeat("Do it. ", 1000)
	writeFile(t, root, "big/SKILL.md", skillMD(body, "name: big", "description: Big."))
	code, stdout, stderr := runMain(t, append([]string{"load", "big", "--max-skill-bytes", "1024"}, skillsArgs(t, root)...)...)
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "\n\n[Skill instructions truncated: the first 1024 of 6999 bytes are shown.]\n</skill_instructions>") {
		t.Errorf("stdout:\n%s", stdout[max(0, len(stdout)-300):])
	}
	if !strings.Contains(stderr, "truncated by --max-skill-bytes 1024") {
		t.Errorf("stderr: %q", stderr)
	}
	t.Setenv("SKILLSTREAM_MAX_SKILL_BYTES", "2048")
	_, stdout, _ = runMain(t, append([]string{"load", "big", "--json"}, skillsArgs(t, root)...)...)
	var out loadJSON
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	if out.Value == nil || out.Value.Truncated == nil || out.Value.Truncated.Kept != 2048 || out.Value.Truncated.Total != 6999 {
		t.Errorf("value = %+v", out.Value)
	}
}

func TestLimitFlagsEverySurface(t *testing.T) {
	for _, name := range []string{"serve", "catalog", "load", "replay", "bench"} {
		_, stdout, _ := runMain(t, name, "--help")
		for _, want := range []string{"--catalog-max-length", "SKILLSTREAM_CATALOG_MAX_LENGTH", "--max-skill-bytes", "SKILLSTREAM_MAX_SKILL_BYTES"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("%s --help lacks %s", name, want)
			}
		}
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"catalog", "--catalog-max-length", "199"}, "--catalog-max-length 199: must be 0 or at least 200"},
		{[]string{"serve", "--catalog-max-length=-1"}, "must be 0 or at least 200"},
		{[]string{"load", "x", "--max-skill-bytes", "1023"}, "--max-skill-bytes 1023: must be 0 or at least 1024"},
		{[]string{"serve", "--max-skill-bytes", "5"}, "must be 0 or at least 1024"},
		{[]string{"validate", "--max-skill-bytes", "5", "."}, "must be 0 or at least 1024"},
	} {
		code, _, stderr := runMain(t, tc.args...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q; want %q", tc.args, code, stderr, tc.want)
		}
	}
}

func TestValidateWarnsOfCuts(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "long/SKILL.md", skillMD(strings.Repeat("x", 2000), "name: long",
		"description: "+strings.Repeat("word  ", 100)))
	writeFile(t, root, "short/SKILL.md", skillMD("Fine.", "name: short", "description: Short."))
	code, stdout, _ := runMain(t, "validate", "--catalog-description-max-length", "100", "--max-skill-bytes", "1024", root)
	if code != exitOK {
		t.Fatalf("exit %d:\n%s", code, stdout)
	}
	for _, want := range []string{
		"long/SKILL.md: warning: description is 499 characters once white space is collapsed; the catalog shows the first 97",
		"long/SKILL.md: warning: instructions are 2000 bytes; the skill tool shows about the first 1024",
		"0 errors, 2 warnings",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("validate output lacks %q:\n%s", want, stdout)
		}
	}
}

// TestServeRefusesLimitsOverTheMessageSize: serve refuses, at start and
// with the numbers, an instruction size limit whose results could not fit
// in one message, before it logs that it serves.
func TestServeRefusesLimitsOverTheMessageSize(t *testing.T) {
	args := []string{"serve", "--listen", fmt.Sprintf("127.0.0.1:%d", freePort(t)), "--data", t.TempDir(),
		"--no-bundled", "--user-skills-dir=", "--max-skill-bytes", "2000000"}
	code, _, stderr := runMain(t, args...)
	if code == exitOK {
		t.Fatal("serve started")
	}
	for _, want := range []string{"max skill bytes 2000000", "1048576 bytes", "use a max skill bytes of at most"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "skillstream serving") {
		t.Errorf("serve announced that it serves a configuration it refused:\n%s", stderr)
	}
}

// TestCatalogUpdatesEverySurface: --catalog-updates (and its variable) is
// taken by every command that computes model text, and only full or
// changes is accepted.
func TestCatalogUpdatesEverySurface(t *testing.T) {
	for _, name := range []string{"serve", "catalog", "load", "replay", "bench", "mcp", "demo"} {
		_, stdout, _ := runMain(t, name, "--help")
		for _, want := range []string{"--catalog-updates", "SKILLSTREAM_CATALOG_UPDATES"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("%s --help lacks %s", name, want)
			}
		}
	}
	for _, args := range [][]string{{"catalog", "--catalog-updates", "diff"}, {"serve", "--catalog-updates=all"}, {"demo", "--catalog-updates", "x"}} {
		code, _, stderr := runMain(t, args...)
		if code != exitUsage || !strings.Contains(stderr, "must be full or changes") {
			t.Errorf("%q: exit %d, stderr %q", args, code, stderr)
		}
	}
	t.Setenv("SKILLSTREAM_CATALOG_UPDATES", "sometimes")
	if code, _, stderr := runMain(t, "catalog"); code != exitUsage || !strings.Contains(stderr, `--catalog-updates "sometimes": must be full or changes`) {
		t.Errorf("from the environment: exit %d, stderr %q", code, stderr)
	}
}

// TestCatalogRankFlag: --catalog-rank (and its variable) is taken by the
// commands that serve model text from a fleet's use, and only name or use
// is accepted.
func TestCatalogRankFlag(t *testing.T) {
	for _, name := range []string{"serve", "replay", "mcp"} {
		_, stdout, _ := runMain(t, name, "--help")
		for _, want := range []string{"--catalog-rank", "SKILLSTREAM_CATALOG_RANK"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("%s --help lacks %s", name, want)
			}
		}
	}
	for _, args := range [][]string{{"catalog", "--catalog-rank", "popular"}, {"serve", "--catalog-rank="}} {
		code, _, stderr := runMain(t, args...)
		if code != exitUsage || !strings.Contains(stderr, "must be name or use") {
			t.Errorf("%q: exit %d, stderr %q", args, code, stderr)
		}
	}
	t.Setenv("SKILLSTREAM_CATALOG_RANK", "often")
	if code, _, stderr := runMain(t, "catalog"); code != exitUsage || !strings.Contains(stderr, `--catalog-rank "often": must be name or use`) {
		t.Errorf("from the environment: exit %d, stderr %q", code, stderr)
	}
}
