package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
)

// TestServeSearchLearn: serve --search-learn ranks a skill for the words
// of a search its session followed by loading it, in another session,
// and records the learned version with the search; restarted with
// --search-learn-since after those sessions, it has forgotten them.
func TestServeSearchLearn(t *testing.T) {
	root := searchRoot(t)
	data := t.TempDir()
	cwd := t.TempDir()
	search := func(s *served, sid string) events.ToolResult {
		t.Helper()
		c, err := client.New(s.connect(t))
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		r, err := c.SearchSkills(ctx, events.SkillSearch{Session: sid, Call: "s1", Cwd: cwd, Args: events.SearchArgs{Query: "black friday"}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	s := startServe(t, data, root, "--skill-search", "--search-learn")
	if r := search(s, "a"); r.Search == nil || len(r.Search.Results) != 0 || r.Search.Learned != "" {
		t.Fatalf("before learning: %+v", r)
	}
	c, err := client.New(s.connect(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.CallSkill(ctx, events.SkillCall{Session: "a", Call: "c1", Cwd: cwd, Args: events.SkillArgs{Name: "changelog"}}); err != nil {
		t.Fatal(err)
	}
	c.Close()
	n := 0
	eventually(t, 30*time.Second, "serve learns the search followed by a load", func() error {
		n++
		r := search(s, fmt.Sprintf("b%d", n))
		if r.Search == nil || len(r.Search.Results) == 0 || r.Search.Results[0].Name != "changelog" || !strings.HasPrefix(r.Search.Learned, "1-") {
			return fmt.Errorf("search: %+v", r.Search)
		}
		return nil
	})
	if code := s.stop(); code != exitOK {
		t.Fatalf("serve: exit %d\n%s", code, s.stderr)
	}
	// A replay of the search that used learned terms: as recorded, the
	// same; by today's skills, ranked by their text alone, and it says so.
	skills := []string{"--no-bundled", "--user-skills-dir=", "--skills-dir", root}
	rec := filepath.Join(t.TempDir(), "b.jsonl")
	sid := fmt.Sprintf("b%d", n)
	if code, _, stderr := runMain(t, append([]string{"export", "--session", sid, "--out", rec, "--data", data, "--listen", quietAddr(t)}, skills...)...); code != exitOK {
		t.Fatalf("export: exit %d\n%s", code, stderr)
	}
	if code, out, stderr := runMain(t, "replay", rec, "--as-recorded", "--skill-search"); code != exitOK || strings.Contains(out, "learned search terms") {
		t.Errorf("replay --as-recorded: exit %d\n%s%s", code, out, stderr)
	}
	// Exported with the skills captured, the ranking is rebuilt with the
	// learned terms the search recorded.
	captured := filepath.Join(t.TempDir(), "b-captured.jsonl")
	if code, _, stderr := runMain(t, append([]string{"export", "--session", sid, "--out", captured, "--capture-skills", "--data", data, "--listen", quietAddr(t)}, skills...)...); code != exitOK {
		t.Fatalf("export --capture-skills: exit %d\n%s", code, stderr)
	}
	if code, out, stderr := runMain(t, "replay", captured, "--as-recorded", "--skill-search", "--json"); code != exitOK || !strings.Contains(out, "ranked with the recorded learned search terms (version 1-") {
		t.Errorf("replay --as-recorded of the captured skills: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr := runMain(t, append([]string{"replay", rec, "--skill-search"}, skills...)...)
	if code != exitFailure || !strings.Contains(out, "recorded with learned search terms (version 1-") {
		t.Errorf("replay by today's skills: exit %d\n%s%s", code, out, stderr)
	}
	// Reset: what the log holds before now is not learned.
	since := time.Now().UTC().Add(time.Second).Format(time.RFC3339)
	s = startServe(t, data, root, "--skill-search", "--search-learn", "--search-learn-since", since)
	if r := search(s, "c"); r.Search == nil || len(r.Search.Results) != 0 || r.Search.Learned != "" {
		t.Errorf("after a reset: %+v", r.Search)
	}
	if code := s.stop(); code != exitOK {
		t.Fatalf("serve: exit %d\n%s", code, s.stderr)
	}
}

// TestServeSearchLearnFlags: the flags' misuse is a usage error naming
// the flag.
func TestServeSearchLearnFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--search-learn"}, "--search-learn teaches the skill search index: it needs --skill-search"},
		{[]string{"--skill-search", "--search-learn", "--search-learn-since", "yesterday"}, `--search-learn-since "yesterday"`},
		{[]string{"--skill-search", "--search-learn", "--search-learn-window", "0s"}, "--search-learn-window 0s"},
	} {
		code, _, stderr := runMain(t, append([]string{"serve"}, c.args...)...)
		if code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("%q: exit %d, stderr %q; want %d and %q", c.args, code, stderr, exitUsage, c.want)
		}
	}
}
