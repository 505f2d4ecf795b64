package agentskills_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers/agentskills"
)

// TestLargeFiles: a skill file over 1 MiB is a skill (the instruction size
// limit, applied at load, decides what the model gets); only a file over
// the memory ceiling MaxFileSize is dropped, with a diagnostic.
func TestLargeFiles(t *testing.T) {
	root := t.TempDir()
	big := strings.Repeat("Step. ", 2<<20/6)
	write(t, filepath.Join(root, "big", "SKILL.md"), skillText("big", "Two MiB of instructions.", big))
	huge := strings.Repeat("x", agentskills.MaxFileSize)
	write(t, filepath.Join(root, "huge", "SKILL.md"), skillText("huge", "Over the ceiling.", huge))
	p := newProvider(t, agentskills.Config{CustomDirs: []string{root}, NoUserDir: true, NoWatch: true})
	got := describe(list(t, p, ""))
	if strings.Join(got, ",") != "big=Two MiB of instructions.@custom" {
		t.Fatalf("List = %v, want only the 2 MiB skill", got)
	}
	sk, err := p.Load(context.Background(), "big", catalog.Query{})
	if err != nil || sk.Content != strings.TrimSpace(big) {
		t.Fatalf("Load big: %d bytes, %v", len(sk.Content), err)
	}
	d := diagnostics(t, p, "")[filepath.Join(root, "huge", "SKILL.md")]
	if !strings.Contains(d, "larger than 8388608 bytes") {
		t.Errorf("diagnostic for the huge file: %q", d)
	}
}
