package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const userInvocationLine = "A user may also invoke a skill directly; its <skill_content> block then appears in this conversation. Follow it, and do not call the `skill` tool again for that skill."

// catalog with --user-invocation (or its variable) prints the catalog with
// the extra line, the list unchanged; without it the text is as before.
func TestCatalogUserInvocation(t *testing.T) {
	root := spec4Skills(t)
	plain, err := os.ReadFile(filepath.Join("testdata", "catalog_spec4.golden"))
	if err != nil {
		t.Fatal(err)
	}
	want := strings.TrimSuffix(string(plain), "\n</system-reminder>") + "\n" + userInvocationLine + "\n</system-reminder>\n"
	args := append([]string{"catalog", "--catalog-description-max-length", "50", "--user-invocation"}, skillsArgs(t, root)...)
	code, stdout, stderr := runMain(t, args...)
	if code != exitOK || stdout != want {
		t.Fatalf("exit %d, stdout:\n%s\nwant:\n%s\nstderr:\n%s", code, stdout, want, stderr)
	}
	t.Setenv("SKILLSTREAM_USER_INVOCATION", "true")
	code, stdout, _ = runMain(t, append([]string{"catalog", "--catalog-description-max-length", "50"}, skillsArgs(t, root)...)...)
	if code != exitOK || stdout != want {
		t.Errorf("from the environment: exit %d, stdout:\n%s", code, stdout)
	}
	code, stdout, _ = runMain(t, append([]string{"catalog", "--catalog-description-max-length", "50", "--user-invocation=false"}, skillsArgs(t, root)...)...)
	if code != exitOK || stdout != string(plain)+"\n" {
		t.Errorf("flag false over the environment: exit %d, stdout:\n%s", code, stdout)
	}
}

// load --user previews a user's invocation: the tool's text for a skill
// the user may invoke, even one the model may not; the reason otherwise.
func TestLoadUser(t *testing.T) {
	root := spec4Skills(t)
	for _, tc := range []struct {
		skill, stdout, stderr string
		code                  int
	}{
		{skill: "user-only-skill", code: exitOK, stdout: "Users only."},
		{skill: "a-skill", code: exitOK, stdout: "Follow these steps."},
		{skill: "model-only-skill", code: exitFailure, stderr: "/model-only-skill invokes nothing: not_user_invocable"},
		{skill: "no-such-skill", code: exitFailure, stderr: "/no-such-skill invokes nothing: unknown"},
	} {
		t.Run(tc.skill, func(t *testing.T) {
			code, stdout, stderr := runMain(t, append(append([]string{"load", "--user"}, skillsArgs(t, root)...), tc.skill)...)
			if code != tc.code || !strings.Contains(stdout, tc.stdout) || !strings.Contains(stderr, tc.stderr) {
				t.Fatalf("exit %d, stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
			}
			if tc.code == exitOK {
				_, tool, _ := runMain(t, append(append([]string{"load"}, skillsArgs(t, root)...), "a-skill")...)
				if tc.skill == "a-skill" && stdout != tool {
					t.Errorf("--user text differs from the tool's:\n%s\n%s", stdout, tool)
				}
			} else if stdout != "" {
				t.Errorf("stdout %q for a name that invokes nothing", stdout)
			}
		})
	}
}
