package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
)

// TestOwnerLayoutCommands plays two sessions of the owner layout, a1.s7 and
// a2.s7, through serve --session-layout owner --skill-search, then reads
// a1.s7 back with every session reader given --session-layout owner (or
// SKILLSTREAM_SESSION_LAYOUT): export writes a recording that says its
// layout, replay reproduces it from the file and live, history shows its
// steps, and usage names it by its dotted id. Given without the layout,
// or with a flat id, the readers refuse the session id saying why.
func TestOwnerLayoutCommands(t *testing.T) {
	root := searchRoot(t)
	data := t.TempDir()
	cwd := t.TempDir()
	// One client for two owners (a trusted deployment): answers on its
	// inboxes, whatever the session's owner.
	s := startServe(t, data, root, "--session-layout", "owner", "--any-owner-inbox", "--skill-search")
	c, err := client.New(s.connect(t), client.WithLayout(events.LayoutOwner))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tools := []events.Tool{client.SkillTool("skillstream"), client.SkillSearchTool("skillstream")}
	const sid = "a1.s7"
	if d, err := c.PreStep(ctx, events.PreStep{Session: sid, Step: "1", Cwd: cwd, Tools: tools}); err != nil || d.Outcome != events.OutcomeAppended {
		t.Fatalf("step 1: %+v %v", d, err)
	}
	if r, err := c.SearchSkills(ctx, events.SkillSearch{Session: sid, Call: "s1", Cwd: cwd, Args: events.SearchArgs{Query: "deploy a service"}}); err != nil || r.Search == nil {
		t.Fatalf("search: %+v %v", r, err)
	}
	if r, err := c.CallSkill(ctx, events.SkillCall{Session: sid, Call: "c1", Cwd: cwd, Args: events.SkillArgs{Name: "k8s-deploy"}}); err != nil || r.IsError {
		t.Fatalf("skill call: %+v %v", r, err)
	}
	if d, err := c.PreStep(ctx, events.PreStep{Session: sid, Step: "2", Cwd: cwd, Tools: tools}); err != nil || d.Outcome != events.OutcomeUnchanged {
		t.Fatalf("step 2: %+v %v", d, err)
	}
	if d, err := c.PreStep(ctx, events.PreStep{Session: "a2.s7", Step: "1", Cwd: cwd, Tools: tools}); err != nil || d.Outcome != events.OutcomeAppended {
		t.Fatalf("a2.s7 step 1: %+v %v", d, err)
	}
	c.Close()
	if code := s.stop(); code != exitOK {
		t.Fatalf("serve: exit %d\n%s", code, s.stderr)
	}
	if !strings.Contains(s.stderr.String(), `"session_layout":"owner"`) {
		t.Errorf("serve does not log its session layout:\n%s", s.stderr)
	}

	owner := []string{"--session-layout", "owner"}
	store := []string{"--data", data, "--listen", quietAddr(t)}
	search := []string{"--skill-search", "--no-bundled", "--user-skills-dir=", "--skills-dir", root}
	run := func(args ...[]string) (int, string, string) {
		t.Helper()
		var all []string
		for _, a := range args {
			all = append(all, a...)
		}
		return runMain(t, all...)
	}

	rec := filepath.Join(t.TempDir(), "a1.s7.jsonl")
	if code, _, stderr := run([]string{"export", "--session", sid, "--out", rec}, owner, store); code != exitOK {
		t.Fatalf("export: exit %d\n%s", code, stderr)
	}
	b, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	header, _, _ := strings.Cut(string(b), "\n")
	if !strings.Contains(header, `"session":"a1.s7","prefix":"ev","layout":"owner"`) || strings.Contains(string(b), "a2.s7") {
		t.Errorf("recording header %s (or another session's events in it)", header)
	}

	const same = "4 triggers replayed: 4 same, 0 differ\n"
	for _, args := range [][]string{
		{"replay", rec, "--as-recorded", "--skill-search"}, // the recording says its layout
		append([]string{"replay", rec}, search...),
	} {
		if code, out, stderr := runMain(t, args...); code != exitOK || !strings.HasSuffix(out, same) {
			t.Errorf("%q: exit %d\n%s%s", args, code, out, stderr)
		}
	}
	if code, out, stderr := run([]string{"replay", "--live", "--session", sid}, owner, store, search); code != exitOK || !strings.HasSuffix(out, same) {
		t.Errorf("replay --live: exit %d\n%s%s", code, out, stderr)
	}

	for _, args := range [][]string{{"history", rec}, append(append([]string{"history", "--session", sid}, owner...), store...)} {
		code, out, stderr := runMain(t, args...)
		if code != exitOK || !strings.Contains(out, "step 1 (seq 1): catalog seq 2") || !strings.Contains(out, "step 2 (seq") ||
			!strings.Contains(out, `search s1 (seq 3): "deploy a service"`) {
			t.Errorf("%q: exit %d\n%s%s", args[:2], code, out, stderr)
		}
	}

	// usage, from the environment this time: the searching session by its
	// dotted id, every owner's sessions counted (a scan: the usage
	// projection does not keep searches per session).
	t.Setenv("SKILLSTREAM_SESSION_LAYOUT", "owner")
	code, out, stderr := run([]string{"usage", "--scan"}, store)
	if code != exitOK || !strings.Contains(out, "searches: 1 in 1 sessions") || !strings.Contains(out, "\na1.s7 ") {
		t.Errorf("usage: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = run([]string{"usage", "--json", "--session", sid}, store)
	var rep struct {
		Session  string `json:"session"`
		Catalogs struct {
			Appends map[string]int `json:"appends"`
		} `json:"catalogs"`
		Skills []struct {
			Name     string `json:"name"`
			Loads    int    `json:"loads"`
			Sessions int    `json:"sessions"`
		} `json:"skills"`
		Searches struct {
			BySession []struct {
				Session string `json:"session"`
			} `json:"bySession"`
		} `json:"searches"`
	}
	if code != exitOK || json.Unmarshal([]byte(out), &rep) != nil {
		t.Fatalf("usage --json --session: exit %d\n%s%s", code, out, stderr)
	}
	if rep.Session != sid || rep.Catalogs.Appends["initial"] != 1 || len(rep.Skills) != 1 || rep.Skills[0].Name != "k8s-deploy" ||
		rep.Skills[0].Loads != 1 || len(rep.Searches.BySession) != 1 || rep.Searches.BySession[0].Session != sid {
		t.Errorf("usage --json --session %s: %s", sid, out)
	}
	code, out, _ = run([]string{"usage", "--json"}, store)
	if code != exitOK || !strings.Contains(out, `"initial": 2`) {
		t.Errorf("usage of every owner's sessions: exit %d\n%s", code, out)
	}
	t.Setenv("SKILLSTREAM_SESSION_LAYOUT", "")

	// The wrong layout for the id, in either direction, and no layout at all.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"export", "--session", sid}, "owner session layout, which is not set"},
		{[]string{"history", "--session", sid}, "owner session layout, which is not set"},
		{[]string{"usage", "--session", sid}, "owner session layout, which is not set"},
		{[]string{"replay", "--live", "--session", sid}, "owner session layout, which is not set"},
		{[]string{"export", "--session-layout", "owner", "--session", "s7"}, "wants <owner>.<session>"},
		{[]string{"export", "--session-layout", "owner", "--session", "a1.s7.x"}, "wants <owner>.<session>"},
		{[]string{"export", "--session-layout", "tenant", "--session", sid}, `--session-layout "tenant": must be flat or owner`},
		{[]string{"usage", "--session-layout", "tenant"}, `--session-layout "tenant": must be flat or owner`},
	} {
		code, _, stderr := run(tc.args, store)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("%q: exit %d, stderr %q, want %q", tc.args, code, stderr, tc.want)
		}
	}
	if code, _, stderr := runMain(t, "serve", "--session-layout", "tenant"); code != exitUsage || !strings.Contains(stderr, "--session-layout") {
		t.Errorf("serve --session-layout tenant: exit %d\n%s", code, stderr)
	}
}
