package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor"
	"github.com/skillstream/skillstream/processor/demo"
	"github.com/skillstream/skillstream/processor/replay"
)

// TestHistoryOfStoredRecordings: history of the recordings kept under
// testdata, as text and --json, and one step's whole list and text.
func TestHistoryOfStoredRecordings(t *testing.T) {
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"history-plain.golden", []string{"testdata/replay/plain.jsonl"}},
		{"history-plain-json.golden", []string{"testdata/replay/plain.jsonl", "--json"}},
		{"history-plain-step.golden", []string{"testdata/replay/plain.jsonl", "--step", "3"}},
		{"history-session.golden", []string{"testdata/replay/session.jsonl"}},
	} {
		code, out, stderr := runMain(t, append([]string{"history"}, tc.args...)...)
		if code != exitOK {
			t.Fatalf("history %q: exit %d\n%s", tc.args, code, stderr)
		}
		golden(t, "replay/"+tc.golden, out)
	}
}

// historyProject writes a project with four skills (one with a long
// description) and a .git marker, and returns the session working
// directory inside it and the skills folder.
func historyProject(t *testing.T) (cwd, skills string) {
	t.Helper()
	root := filepath.Join(t.TempDir(), "project")
	writeFile(t, root, ".git/HEAD", "ref: refs/heads/main\n")
	skills = filepath.Join(root, ".agents/skills")
	for _, s := range []struct{ name, desc string }{
		{"alpha", "Write commit messages that explain why."},
		{"beta", "Review a pull request and its comments."},
		{"delta", "Old tool."},
		{"omega", strings.Repeat("Handle one more rare chore. ", 9)},
	} {
		writeFile(t, skills, s.name+"/SKILL.md", skillMD("Steps of "+s.name+".", "name: "+s.name, "description: "+s.desc))
	}
	cwd = filepath.Join(root, "src")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	return cwd, skills
}

// TestHistoryDeltas plays a session through a real processor whose
// catalog size limit is tight, with search and user invocation on: a
// first list and a /name invocation, a search then a load, then a skill
// added, one edited and one removed (which costs another its description
// under the size limit), a compaction that hides the list and a list
// re-established, another invocation and a failing load. history shows
// each step as what changed, --json the same as objects, and --step the
// whole list and the text.
func TestHistoryDeltas(t *testing.T) {
	dir := t.TempDir()
	cwd, skills := historyProject(t)
	opts := catalog.DefaultOptions()
	opts.UserInvocation, opts.SkillSearch, opts.MaxLength = true, true, 400
	func() {
		rig := startRigWith(t, dir, processor.Config{Catalog: opts})
		defer rig.stop()
		w, err := demo.NewWorker(rig.nc, events.DefaultPrefix, "d1", processor.DefaultToolOwner)
		if err != nil {
			t.Fatal(err)
		}
		defer w.Close()
		step := func(id, want string, userText ...string) events.Decision {
			t.Helper()
			d, err := w.PreStep(rig.ctx, id, cwd, userText...)
			if err != nil || d.Outcome != want {
				t.Fatalf("step %s: %+v %v, want %s", id, d, err, want)
			}
			return d
		}
		call := func(id, name string, isErr bool) {
			t.Helper()
			if r, err := w.Call(rig.ctx, id, cwd, name); err != nil || r.IsError != isErr {
				t.Fatalf("call %s: %+v %v", id, r, err)
			}
		}
		if d := step("1", events.OutcomeAppended, "/alpha go"); len(d.Invocations) != 1 {
			t.Fatalf("step 1: %+v", d)
		}
		if r, err := w.Search(rig.ctx, "s1", cwd, "review a pull request"); err != nil || r.IsError || r.Search == nil || r.Search.Results[0].Name != "beta" {
			t.Fatalf("search s1: %+v %v", r, err)
		}
		call("c1", "beta", false)

		writeFile(t, skills, "gamma/SKILL.md", skillMD("Steps of gamma.", "name: gamma", "description: Plan a release and tag it when the build passes."))
		writeFile(t, skills, "alpha/SKILL.md", skillMD("Steps of alpha.", "name: alpha", "description: Write commit messages that explain the why."))
		if err := os.RemoveAll(filepath.Join(skills, "delta")); err != nil {
			t.Fatal(err)
		}
		waitSkills(t, rig, cwd, "gamma added, alpha edited, delta removed", func(s catalog.Snapshot, _ string) bool {
			return describes(s, "gamma", "Plan a release and tag it when the build passes.") &&
				describes(s, "alpha", "Write commit messages that explain the why.") && describes(s, "delta", "")
		})
		step("2", events.OutcomeAppended)

		seq, err := w.Append(rig.ctx, "message.user", map[string]any{"v": 1, "text": "hi"})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Compact(rig.ctx, seq+1); err != nil {
			t.Fatal(err)
		}
		step("3", events.OutcomeAppended)
		if d := step("4", events.OutcomeUnchanged, "/gamma now"); len(d.Invocations) != 1 {
			t.Fatalf("step 4: %+v", d)
		}
		call("c2", "delta", true)
	}()

	store := []string{"--data", dir, "--listen", quietAddr(t)}
	rec := filepath.Join(t.TempDir(), "d1.jsonl")
	if code, _, stderr := runMain(t, append([]string{"export", "--session", "d1", "--out", rec}, store...)...); code != exitOK {
		t.Fatalf("export: exit %d\n%s", code, stderr)
	}

	code, out, stderr := runMain(t, "history", rec)
	if code != exitOK {
		t.Fatalf("history: exit %d\n%s", code, stderr)
	}
	golden(t, "replay/history-deltas.golden", out)
	// The same from the stream.
	if code, live, stderr := runMain(t, append([]string{"history", "--session", "d1"}, store...)...); code != exitOK || live != out {
		t.Errorf("history --session: exit %d, output differs from the file's:\n%s%s", code, live, stderr)
	}

	code, out, stderr = runMain(t, "history", rec, "--json")
	if code != exitOK {
		t.Fatalf("history --json: exit %d\n%s", code, stderr)
	}
	golden(t, "replay/history-deltas-json.golden", out)
	var ds []replay.Delta
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var d replay.Delta
		if err := json.Unmarshal(sc.Bytes(), &d); err != nil {
			t.Fatalf("history --json line %q: %v", sc.Text(), err)
		}
		ds = append(ds, d)
	}
	if len(ds) != 4 {
		t.Fatalf("history --json: %d steps, want 4", len(ds))
	}
	if d := ds[1]; len(d.Added) != 1 || d.Added[0].Name != "gamma" || len(d.Removed) != 1 || d.Removed[0] != "delta" ||
		len(d.Changed) != 1 || d.Changed[0].After != "Write commit messages that explain the why." ||
		len(d.Undescribed) != 1 || d.Undescribed[0] != "omega" {
		t.Errorf("step 2: %+v", d)
	}
	if d := ds[2]; d.Hidden == 0 || d.SinceHidden == nil || *d.SinceHidden != (replay.Counts{}) || len(d.Added) != 4 {
		t.Errorf("step 3: %+v", d)
	}

	// --step: the whole list the model saw, then the catalog's text.
	code, out, _ = runMain(t, "history", rec, "--step", "2")
	if code != exitOK || !strings.HasPrefix(out, "step 2 (seq ") || !strings.Contains(out, "4 entries: alpha, beta, gamma, omega\n\n") ||
		!strings.Contains(out, "- `omega`\n") || !strings.Contains(out, "1 skills listed without a description") {
		t.Errorf("history --step 2: exit %d\n%s", code, out)
	}
	code, out, _ = runMain(t, "history", rec, "--step", "2", "--json")
	var st replay.Step
	if err := json.Unmarshal([]byte(out), &st); code != exitOK || err != nil || st.Seen == nil || len(st.Seen.Entries) != 4 {
		t.Errorf("history --step 2 --json: exit %d, %v\n%s", code, err, out)
	}
}

// TestPrintDelta: the lines of the cases a recorded session seldom shows.
func TestPrintDelta(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    replay.Delta
		want string
	}{
		{"before the first step", replay.Delta{Searches: []replay.Search{{Seq: 1, Call: "s0", Query: "q", Outcome: replay.OutcomeNone}}},
			"before the first step:\n  search s0 (seq 1): \"q\": no result recorded\n"},
		{"undecodable pre-step", replay.Delta{Seq: 3},
			"undecodable pre-step (seq 3): no catalog visible: none published yet\n"},
		{"hidden, nothing visible", replay.Delta{Seq: 9, Step: "4", Published: true, Compaction: 8, Hidden: 2},
			"step 4 (seq 9): the compaction at seq 8 hid catalog seq 2; no catalog visible\n"},
		{"masked from the start", replay.Delta{Seq: 9, Step: "4", Published: true, Compaction: 8},
			"step 4 (seq 9): no catalog visible: every catalog was masked by the compaction at seq 8\n"},
		{"relisted, other than the hidden list",
			replay.Delta{Seq: 9, Step: "4", Catalog: &replay.CatalogRef{Seq: 10, Step: "4", Update: "replacement", Entries: 1},
				Compaction: 8, Hidden: 2, SinceHidden: &replay.Counts{Removed: 2, Changed: 1}, Added: []events.Entry{{Name: "a"}}, Undescribed: []string{"a"}},
			"step 4 (seq 9): catalog seq 10 (replacement, step 4), 1 entries; the compaction at seq 8 hid catalog seq 2: all listed anew (against the hidden list: 2 removed, 1 changed)\n" +
				"  added 1: a\n  without a description 1: a\n"},
		{"reordered, fewer left out, a retried call, a bad invocation",
			replay.Delta{Seq: 5, Step: "2", Catalog: &replay.CatalogRef{Seq: 6, Step: "2", Update: "replacement", Entries: 2},
				Reordered: true, LeftOut: 3, LeftOutBefore: 4, Loads: []replay.Load{{Seq: 7, By: replay.ByUser, Outcome: replay.OutcomeRejected},
					{Seq: 8, By: replay.ByModel, Call: "c1", Name: "a", Outcome: replay.OutcomeRetry}}},
			"step 2 (seq 5): catalog seq 6 (replacement, step 2), 2 entries\n  reordered\n  3 skills not listed (was 4)\n" +
				"  invocation (seq 7): undecodable\n  skill c1 (seq 8): a: a retry, answered with the earlier result\n"},
		{"a name a terminal would act on", replay.Delta{Seq: 1, Step: "1", Catalog: &replay.CatalogRef{Seq: 2, Step: "1", Update: "initial", Entries: 1},
			Added: []events.Entry{{Name: "x\x1b[2Jy"}}},
			"step 1 (seq 1): catalog seq 2 (initial, step 1), 1 entries\n  added 1: x\\x1b[2Jy\n"},
	} {
		var b strings.Builder
		if err := printDelta(&b, &tc.d); err != nil {
			t.Fatal(err)
		}
		if b.String() != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, b.String(), tc.want)
		}
	}
}
