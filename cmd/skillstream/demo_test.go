package main

import (
	"os"
	"regexp"
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
