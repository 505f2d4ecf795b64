package main

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files under testdata/")

// golden compares got with testdata/<name>, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file (run with -update to create it): %v", err)
	}
	if got != string(want) {
		t.Errorf("%s differs from golden file\n--- got ---\n%s\n--- want ---\n%s", name, got, want)
	}
}

// writeFile writes content to root/rel, creating folders.
func writeFile(t testing.TB, root, rel, content string) string {
	t.Helper()
	p := filepath.Join(root, rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// skillMD is a SKILL.md with the given frontmatter lines and body.
func skillMD(body string, front ...string) string {
	return "---\n" + strings.Join(front, "\n") + "\n---\n" + body + "\n"
}

// spec4Skills writes the worked example's skills (see catalog's
// workedExample) as a custom skills root and returns it.
func spec4Skills(t testing.TB) string {
	t.Helper()
	root := t.TempDir()
	writeFile(t, root, "z-skill/SKILL.md", skillMD("Z body.",
		"name: z-skill", `description: "`+strings.Repeat("Long   description ", 5)+`"`))
	writeFile(t, root, "a-skill/SKILL.md", skillMD("Follow these steps.\n\n1. Be careful.",
		"name: a-skill", "description: 'Use {{placeholder}} <safely> & carefully.'"))
	writeFile(t, root, "model-only-skill/SKILL.md", skillMD("Model only.",
		"name: model-only-skill", "description: Model-only skill.", "user-invocable: false"))
	writeFile(t, root, "user-only-skill/SKILL.md", skillMD("Users only.",
		"name: user-only-skill", "description: User-only skill.", "disable-model-invocation: true"))
	return root
}

// skillsArgs are the flags that make a command see only root.
func skillsArgs(t testing.TB, root string) []string {
	return []string{"--no-bundled", "--user-skills-dir=", "--no-skill-store", "--skills-dir", root, "--cwd", t.TempDir()}
}

func TestCatalogWorkedExample(t *testing.T) {
	root := spec4Skills(t)
	args := append([]string{"catalog", "--catalog-description-max-length", "50"}, skillsArgs(t, root)...)
	code, stdout, stderr := runMain(t, args...)
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if !strings.HasSuffix(stdout, "\n") {
		t.Fatalf("stdout does not end with a newline: %q", stdout)
	}
	text := strings.TrimSuffix(stdout, "\n")
	golden(t, "catalog_spec4.golden", text)
	wantLines := "- `a-skill`: Use {{placeholder}} &lt;safely&gt; &amp; carefully.\n" +
		"- `model-only-skill`: Model-only skill.\n" +
		"- `z-skill`: Long description Long description Long descript...\n"
	if !strings.Contains(text, "<available_skills>\n"+wantLines+"</available_skills>") {
		t.Errorf("entry lines are not the worked example's:\n%s", text)
	}
	for _, want := range []string{"3 skills in the catalog", "approximate", "not listed (model invocation disabled): user-only-skill"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
}

func TestCatalogEnvOverridesDefaultFlagWins(t *testing.T) {
	root := spec4Skills(t)
	want, err := os.ReadFile(filepath.Join("testdata", "catalog_spec4.golden"))
	if err != nil {
		t.Skip("golden file missing; run TestCatalogWorkedExample -update first")
	}

	t.Setenv("SKILLSTREAM_CATALOG_DESCRIPTION_MAX_LENGTH", "50")
	code, stdout, stderr := runMain(t, append([]string{"catalog"}, skillsArgs(t, root)...)...)
	if code != exitOK || stdout != string(want)+"\n" {
		t.Errorf("with the cap from the environment: exit %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}

	t.Setenv("SKILLSTREAM_CATALOG_DESCRIPTION_MAX_LENGTH", "20")
	code, stdout, _ = runMain(t, append([]string{"catalog", "--catalog-description-max-length=50"}, skillsArgs(t, root)...)...)
	if code != exitOK || stdout != string(want)+"\n" {
		t.Errorf("flag 50 over environment 20: exit %d, stdout:\n%s", code, stdout)
	}

	t.Setenv("SKILLSTREAM_CATALOG_DESCRIPTION_MAX_LENGTH", "2")
	code, _, stderr = runMain(t, append([]string{"catalog"}, skillsArgs(t, root)...)...)
	if code != exitUsage || !strings.Contains(stderr, "greater than or equal to 3") {
		t.Errorf("cap 2 from the environment: exit %d, stderr %q", code, stderr)
	}
}

func TestCatalogEmptyPrintsNothing(t *testing.T) {
	code, stdout, stderr := runMain(t, append([]string{"catalog"}, skillsArgs(t, t.TempDir())...)...)
	if code != exitOK || stdout != "" {
		t.Fatalf("exit %d, stdout %q", code, stdout)
	}
	if !strings.Contains(stderr, "no catalog would be sent") {
		t.Errorf("stderr = %q", stderr)
	}
}

func TestCatalogReportsShadowedAndDropped(t *testing.T) {
	first, second := t.TempDir(), t.TempDir()
	writeFile(t, first, "dup/SKILL.md", skillMD("one", "name: dup", "description: First."))
	writeFile(t, second, "dup/SKILL.md", skillMD("two", "name: dup", "description: Second."))
	broken := writeFile(t, second, "broken/SKILL.md", "no frontmatter here\n")
	args := []string{"catalog", "--no-bundled", "--user-skills-dir=", "--skills-dir", first, "--skills-dir", second, "--cwd", t.TempDir()}

	code, stdout, stderr := runMain(t, args...)
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "- `dup`: First.") || strings.Contains(stdout, "Second") {
		t.Errorf("the first custom root should win:\n%s", stdout)
	}
	for _, want := range []string{
		"shadowed: dup from custom " + filepath.Join(second, "dup") + " by custom " + filepath.Join(first, "dup") + ": lower rank wins",
		"dropped: " + broken + ": no frontmatter",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}

	code, stdout, _ = runMain(t, append(args, "--json")...)
	if code != exitOK {
		t.Fatalf("--json: exit %d", code)
	}
	var v catalogView
	if err := json.Unmarshal([]byte(stdout), &v); err != nil {
		t.Fatalf("--json output: %v\n%s", err, stdout)
	}
	if len(v.Entries) != 1 || v.Entries[0].Name != "dup" || v.Entries[0].Description != "First." {
		t.Errorf("entries = %+v", v.Entries)
	}
	if len(v.Shadowed) != 1 || v.Shadowed[0].Loser.Rank <= v.Shadowed[0].Winner.Rank {
		t.Errorf("shadowed = %+v", v.Shadowed)
	}
	if len(v.Diagnostics) != 1 || v.Diagnostics[0].Path != broken {
		t.Errorf("diagnostics = %+v", v.Diagnostics)
	}
	if !v.Complete || v.Digest == "" || !strings.HasPrefix(v.Text, "<system-reminder>") {
		t.Errorf("complete %v, digest %q, text %q", v.Complete, v.Digest, v.Text)
	}
}

func TestCatalogProjectSkillsSubdir(t *testing.T) {
	project := t.TempDir()
	if err := os.Mkdir(filepath.Join(project, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, project, ".claude/skills/claude-skill/SKILL.md", skillMD("b", "name: claude-skill", "description: From .claude."))
	writeFile(t, project, ".agents/skills/agents-skill/SKILL.md", skillMD("b", "name: agents-skill", "description: From .agents."))
	sub := filepath.Join(project, "src", "pkg")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	base := []string{"catalog", "--no-bundled", "--user-skills-dir=", "--cwd", sub}

	_, stdout, _ := runMain(t, base...)
	if !strings.Contains(stdout, "agents-skill") || strings.Contains(stdout, "claude-skill") {
		t.Errorf("default roots:\n%s", stdout)
	}
	_, stdout, _ = runMain(t, append(base, "--project-skills-subdir", ".claude/skills")...)
	if !strings.Contains(stdout, "agents-skill") || !strings.Contains(stdout, "claude-skill") {
		t.Errorf("with --project-skills-subdir:\n%s", stdout)
	}
}

func TestLoad(t *testing.T) {
	root := spec4Skills(t)
	tests := []struct {
		name     string
		skill    string
		wantCode int
		golden   string // for success
		want     string // whole stdout for errors
	}{
		{name: "success", skill: "a-skill", wantCode: exitOK, golden: "load_a-skill.golden"},
		{name: "model-only but not user-invocable loads", skill: "model-only-skill", wantCode: exitOK, golden: "load_model-only-skill.golden"},
		{name: "invalid name", skill: "Bad_Name", wantCode: exitFailure, want: "Error: invalid skill name \"Bad_Name\"\n"},
		{name: "unknown", skill: "no-such-skill", wantCode: exitFailure, want: "Error: skill \"no-such-skill\" is unknown or no longer available\n"},
		{name: "not model-invocable", skill: "user-only-skill", wantCode: exitFailure, want: "Error: skill \"user-only-skill\" is not available for model invocation\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The name comes after the flags here; interspersed flags are
			// covered by the parser tests.
			code, stdout, stderr := runMain(t, append(append([]string{"load"}, skillsArgs(t, root)...), tt.skill)...)
			if code != tt.wantCode {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, tt.wantCode, stderr)
			}
			if !strings.HasSuffix(stdout, "\n") {
				t.Fatalf("stdout does not end with a newline: %q", stdout)
			}
			if tt.golden != "" {
				golden(t, tt.golden, strings.ReplaceAll(strings.TrimSuffix(stdout, "\n"), root, "$ROOT"))
				return
			}
			if stdout != tt.want {
				t.Errorf("stdout = %q, want %q", stdout, tt.want)
			}
		})
	}
}

func TestLoadJSON(t *testing.T) {
	root := spec4Skills(t)
	code, stdout, _ := runMain(t, append([]string{"load", "a-skill", "--json"}, skillsArgs(t, root)...)...)
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	var out loadJSON
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	if out.IsError || out.Value == nil || out.Value.Name != "a-skill" || out.Value.ResourceBase == nil ||
		out.Value.ResourceBase.Path != filepath.Join(root, "a-skill") || out.Value.Content != "Follow these steps.\n\n1. Be careful." {
		t.Errorf("load --json = %+v", out)
	}
}

func TestValidateZoo(t *testing.T) {
	root := t.TempDir()
	long := strings.Repeat("a", 65)
	files := map[string]string{
		"good/SKILL.md":       skillMD("ok", "name: good", "description: A good skill."),
		"flat-good.md":        skillMD("ok", "name: flat-good", "description: A flat skill."),
		"no-front/SKILL.md":   "just text\n",
		"unclosed/SKILL.md":   "---\nname: unclosed\ndescription: never closed\n",
		"bad-yaml/SKILL.md":   skillMD("x", "name: bad-yaml", "description: [unbalanced"),
		"Bad_Name/SKILL.md":   skillMD("x", "name: Bad_Name", "description: Upper case and underscore."),
		"long-name/SKILL.md":  skillMD("x", "name: "+long, "description: Too long a name."),
		"no-desc/SKILL.md":    skillMD("x", "name: no-desc"),
		"long-desc/SKILL.md":  skillMD("x", "name: long-desc", "description: "+strings.Repeat("d", 1025)),
		"legacy/SKILL.md":     skillMD("x", "name: legacy", "description: Legacy key.", "modelInvocable: true"),
		"bad-flag/SKILL.md":   skillMD("x", "name: bad-flag", "description: Bad flag.", "disable-model-invocation: maybe"),
		"mismatch/SKILL.md":   skillMD("x", "name: other-name", "description: Name differs from folder."),
		"empty-folder/readme": "not a skill folder",
		// The Agent Skills spec's limits are errors; at the limit is fine.
		"edge-desc/SKILL.md":   skillMD("ok", "name: edge-desc", "description: "+strings.Repeat("d", 1024)),
		"edge-compat/SKILL.md": skillMD("ok", "name: edge-compat", "description: d", "compatibility: "+strings.Repeat("c", 500)),
		"long-compat/SKILL.md": skillMD("x", "name: long-compat", "description: d", "compatibility: "+strings.Repeat("c", 501)),
		// A skill file named SKILL.md in another case is no skill file.
		"wrong-case/Skill.md": skillMD("x", "name: wrong-case", "description: Capitalised file name."),
		"lower-case/skill.md": skillMD("x", "name: lower-case", "description: Lower-case file name."),
		// YAML errors name the line of the file.
		"bad-token/SKILL.md": skillMD("x", "name: bad-token", "description: d", "@x: 1"),
	}
	for rel, content := range files {
		writeFile(t, root, rel, content)
	}
	code, stdout, _ := runMain(t, "validate", root)
	if code != exitFailure {
		t.Errorf("exit %d, want %d", code, exitFailure)
	}
	p := func(rel string) string { return filepath.Join(root, rel) }
	for _, want := range []string{
		p("no-front/SKILL.md") + ": error: no frontmatter",
		p("unclosed/SKILL.md") + ": error: unclosed frontmatter",
		p("bad-yaml/SKILL.md") + ": error: frontmatter is not valid YAML: line 3: did not find expected ',' or ']'",
		p("bad-token/SKILL.md") + ": error: frontmatter is not valid YAML: line 4: found character that cannot start any token",
		p("Bad_Name/SKILL.md") + `: error: name "Bad_Name" is invalid`,
		p("long-name/SKILL.md") + `: error: name "` + long + `" is invalid`,
		p("no-desc/SKILL.md") + ": error: description is missing",
		p("long-desc/SKILL.md") + ": error: description is 1025 characters; the Agent Skills spec allows at most 1024",
		p("long-compat/SKILL.md") + ": error: compatibility is 501 characters; the Agent Skills spec allows at most 500",
		p("wrong-case/Skill.md") + ": error: file is named Skill.md: a skill's file must be named exactly SKILL.md",
		p("lower-case/skill.md") + ": error: file is named skill.md: a skill's file must be named exactly SKILL.md",
		p("legacy/SKILL.md") + `: error: legacy key "modelInvocable"`,
		p("bad-flag/SKILL.md") + ": error: disable-model-invocation must be true or false",
		p("mismatch/SKILL.md") + `: error: name "other-name" differs from its folder name "mismatch"; the Agent Skills spec requires them to be equal`,
		p("empty-folder") + ": warning: folder has no SKILL.md",
		"18 files checked, 4 valid skills: 14 errors, 3 warnings",
	} {
		if !strings.Contains(stdout, want+"") {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	for _, ok := range []string{"good/SKILL.md", "flat-good.md", "edge-compat/SKILL.md", "edge-desc/SKILL.md: error"} {
		if strings.Contains(stdout, p(ok)) {
			t.Errorf("valid %s reported:\n%s", ok, stdout)
		}
	}
}

func TestValidateSingleSkillAndFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "release-notes")
	writeFile(t, dir, "SKILL.md", skillMD("ok", "name: release-notes", "description: Write release notes."))
	flat := writeFile(t, t.TempDir(), "commit-message.md", skillMD("ok", "name: commit-message", "description: Write commit messages."))

	code, stdout, _ := runMain(t, "validate", dir, flat)
	if code != exitOK {
		t.Errorf("exit %d:\n%s", code, stdout)
	}
	if want := "2 files checked, 2 valid skills: 0 errors, 0 warnings\n"; stdout != want {
		t.Errorf("stdout = %q, want %q", stdout, want)
	}

	missing := filepath.Join(t.TempDir(), "missing")
	code, _, stderr := runMain(t, "validate", dir, missing)
	if code != exitUsage || !strings.Contains(stderr, missing+": no such file or directory") {
		t.Errorf("missing path: exit %d, stderr %q", code, stderr)
	}

	// A warning alone does not fail.
	hidden := filepath.Join(t.TempDir(), "hidden-file")
	writeFile(t, hidden, "SKILL.md", skillMD("ok", "name: hidden-file", "description: Holds a hidden file."))
	writeFile(t, hidden, ".notes", "left out by push")
	code, stdout, _ = runMain(t, "validate", hidden)
	if code != exitOK || !strings.Contains(stdout, "1 warning") {
		t.Errorf("hidden file only: exit %d:\n%s", code, stdout)
	}
}

// TestValidateSkillFolderAsTheSpecSays: a folder given as a skill is one
// when it holds a file named exactly SKILL.md; a name differing from the
// folder's is an error, as are a Skill.md or skill.md in its place (about
// the file's name) and a folder with neither SKILL.md nor skills.
func TestValidateSkillFolderAsTheSpecSays(t *testing.T) {
	base := t.TempDir()
	mismatch := filepath.Join(base, "folder-name")
	writeFile(t, mismatch, "SKILL.md", skillMD("ok", "name: skill-name", "description: Mismatched."))
	upper := filepath.Join(base, "upper")
	writeFile(t, upper, "Skill.md", skillMD("ok", "name: upper", "description: Wrong case."))
	lower := filepath.Join(base, "lower")
	writeFile(t, lower, "skill.md", skillMD("ok", "name: lower", "description: Wrong case."))
	writeFile(t, lower, "scripts/run.sh", "echo\n")
	bare := filepath.Join(base, "bare")
	writeFile(t, bare, "README.md", "# A skill without its SKILL.md\n")
	writeFile(t, bare, "scripts/run.sh", "echo\n")
	for _, c := range []struct{ arg, want string }{
		{mismatch, filepath.Join(mismatch, "SKILL.md") + `: error: name "skill-name" differs from its folder name "folder-name"; the Agent Skills spec requires them to be equal`},
		{upper, filepath.Join(upper, "Skill.md") + ": error: file is named Skill.md: a skill's file must be named exactly SKILL.md"},
		{lower, filepath.Join(lower, "skill.md") + ": error: file is named skill.md: a skill's file must be named exactly SKILL.md"},
		{filepath.Join(lower, "skill.md"), filepath.Join(lower, "skill.md") + ": error: file is named skill.md: a skill's file must be named exactly SKILL.md"},
		{bare, bare + ": error: no SKILL.md and no skills: a skill folder holds a file named exactly SKILL.md"},
	} {
		code, stdout, _ := runMain(t, "validate", c.arg)
		if code != exitFailure || !strings.Contains(stdout, c.want) || strings.Contains(stdout, "warning: name") {
			t.Errorf("validate %s: exit %d, want %d and %q:\n%s", c.arg, code, exitFailure, c.want, stdout)
		}
	}
}

// --json prints <, > and & as they are: the model's text is full of them.
func TestJSONDoesNotEscapeHTML(t *testing.T) {
	root := spec4Skills(t) // a-skill's description holds <safely> & …
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"catalog", "--json"}, "<safely> &"},
		{[]string{"load", "a-skill", "--json"}, `<skill_content name=\"a-skill\">`},
	} {
		args := c.args
		code, stdout, stderr := runMain(t, append(args, skillsArgs(t, root)...)...)
		if code != exitOK {
			t.Fatalf("%v: exit %d:\n%s", args, code, stderr)
		}
		if strings.Contains(stdout, `\u003c`) || strings.Contains(stdout, `\u0026`) || strings.Contains(stdout, `\u003e`) {
			t.Errorf("%v escapes HTML characters:\n%s", args, stdout)
		}
		if !strings.Contains(stdout, c.want) {
			t.Errorf("%v does not show %s as written:\n%s", args, c.want, stdout)
		}
	}
}
