package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDemo runs the demo as a newcomer would and compares its output with
// the golden transcript (temporary paths replaced). It also checks that the
// demo cleans up after itself.
func TestDemo(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	code, stdout, stderr := runMain(t, "demo")
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	if stderr != "" {
		t.Errorf("stderr not empty:\n%s", stderr)
	}
	norm := regexp.MustCompile(regexp.QuoteMeta(tmp)+`/skillstream-demo-[0-9]+`).ReplaceAllString(stdout, "$$DEMO")
	golden(t, "demo.golden", norm)

	left, err := os.ReadDir(tmp)
	if err != nil {
		t.Fatal(err)
	}
	if len(left) != 0 {
		t.Errorf("demo left %d entries in the temporary folder", len(left))
	}
}

// With --user-invocation the demo shows a user's /name: the invocation
// after the catalog, the name of a skill users may not invoke left as
// prose, and every catalog with its closing line.
func TestDemoUserInvocation(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	code, stdout, stderr := runMain(t, "demo", "--user-invocation")
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	norm := regexp.MustCompile(regexp.QuoteMeta(tmp)+`/skillstream-demo-[0-9]+`).ReplaceAllString(stdout, "$$DEMO")
	golden(t, "demo_user_invocation.golden", norm)
	for _, want := range []string{
		"processor: skill.invocation /commit-message",
		"processor: /code-review invokes nothing (not_user_invocable): it stays prose",
		"| A user may also invoke a skill directly;",
		"| A user may still invoke a skill directly;",
		"skill.invocation       step 3: /commit-message",
	} {
		if !strings.Contains(norm, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
}

// With --skill-search the demo's agent has the skill_search tool and the
// model searches; with --catalog-listed-max 1 its catalog lists one skill
// and points to the search.
func TestDemoSkillSearch(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	code, stdout, stderr := runMain(t, "demo", "--skill-search", "--catalog-listed-max", "1")
	if code != exitOK {
		t.Fatalf("exit %d, stderr:\n%s", code, stderr)
	}
	norm := regexp.MustCompile(regexp.QuoteMeta(tmp)+`/skillstream-demo-[0-9]+`).ReplaceAllString(stdout, "$$DEMO")
	golden(t, "demo_skill_search.golden", norm)
	for _, want := range []string{
		"(tools: read_file, skill, skill_search)",
		"| (1 more skills are available but not listed here. Call the `skill_search` tool to find them by what they do.)",
		"model: skill_search(query=\"describe my changes for the commit\")",
		"| <skill_search_results query=\"describe my changes for the commit\" shown=\"",
		"- `commit-message`: ",
	} {
		if !strings.Contains(norm, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
}
