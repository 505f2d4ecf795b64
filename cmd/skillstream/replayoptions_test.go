package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor/replay"
)

// A recording whose options cannot be used (hostile, or of a processor
// from another version) is bad input, named as the recording's; a flag
// given on the command line replaces the recorded value, and the first
// line says so.
func TestReplayRecordedOptionsChecked(t *testing.T) {
	write := func(opts *events.CatalogOptions) string {
		path := filepath.Join(t.TempDir(), "rec.jsonl")
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		w, err := replay.NewWriter(f, replay.Header{Session: "s1", Prefix: "ev", Options: opts})
		if err != nil {
			t.Fatal(err)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return path
	}
	bad := write(&events.CatalogOptions{DescriptionMax: 1, MaxLength: 24000, MaxSkillBytes: 1 << 18, Updates: "full"})
	code, out, stderr := runMain(t, "replay", bad, "--as-recorded")
	if code != exitUsage || out != "" || !strings.Contains(stderr, "the options the session was recorded under") {
		t.Errorf("hostile options: exit %d\n%s%s", code, out, stderr)
	}
	// The flag overrides the bad value.
	code, out, stderr = runMain(t, "replay", bad, "--as-recorded", "--catalog-description-max-length", "500")
	first, _, _ := strings.Cut(out, "\n")
	if code != exitOK || !strings.Contains(first, "differ from the recording: --catalog-description-max-length=500 (recorded 1)") {
		t.Errorf("overridden: exit %d\n%s%s", code, out, stderr)
	}
}
