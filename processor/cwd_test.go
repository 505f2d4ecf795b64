package processor

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/events"
)

func TestCwdRootsCheck(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "tenants", "a")
	other := filepath.Join(base, "tenants", "b")
	for _, d := range []string{filepath.Join(root, "proj"), other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// A link planted under the root that leads to another tenant.
	if err := os.Symlink(other, filepath.Join(root, "escape")); err != nil {
		t.Fatal(err)
	}
	confined := newCwdRoots([]string{root + "/"})
	open := newCwdRoots(nil)
	cases := []struct {
		roots cwdRoots
		cwd   string
		want  string // cleaned cwd, or "" with why
		why   string
	}{
		{open, "", "", ""},
		{open, "/etc", "/etc", ""},
		{open, "/srv/a/../b/", "/srv/b", ""},
		{open, "relative/dir", "", "not an absolute path"},
		{open, ".", "", "not an absolute path"},
		{confined, "", "", ""},
		{confined, root, root, ""},
		{confined, filepath.Join(root, "proj"), filepath.Join(root, "proj"), ""},
		{confined, filepath.Join(root, "proj", "not", "here", "yet"), filepath.Join(root, "proj", "not", "here", "yet"), ""},
		{confined, "/etc", "", "outside the allowed cwd roots"},
		{confined, "/", "", "outside"},
		{confined, other, "", "outside"},
		{confined, root + "/../b", "", "outside"},
		{confined, root + "/proj/../../../../../../etc", "", "outside"},
		{confined, root + "-sibling", "", "outside"},
		{confined, filepath.Join(root, "escape"), "", "symbolic link"},
		{confined, filepath.Join(root, "escape", "deeper", "missing"), "", "symbolic link"},
		{confined, "proj", "", "not an absolute path"},
	}
	for _, c := range cases {
		got, err := c.roots.check(c.cwd)
		if c.why == "" {
			if err != nil || got != c.want {
				t.Errorf("check(%q) = %q, %v; want %q", c.cwd, got, err, c.want)
			}
			continue
		}
		if err == nil || !errors.Is(err, errCwd) || !strings.Contains(err.Error(), c.why) || !strings.Contains(err.Error(), "cwd") {
			t.Errorf("check(%q) = %q, %v; want an error saying %q", c.cwd, got, err, c.why)
		}
	}
	if err := (Config{CwdRoots: []string{"rel"}}).WithDefaults().Validate(); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "rel") {
		t.Fatalf("relative cwd root: %v", err)
	}
}

// Workers name their working directory; with cwd roots configured the
// processor reads nothing outside them.
func TestCwdConfined(t *testing.T) {
	e := newEnv(t)
	e.writeSkill("a-skill", "A skill.")
	e.waitSkills("a-skill")
	// Another project, outside the root, with a skill of its own.
	outside := t.TempDir()
	if err := os.MkdirAll(filepath.Join(outside, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	secret := filepath.Join(outside, ".agents", "skills", "secret")
	if err := os.MkdirAll(secret, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(secret, "SKILL.md"), []byte("---\nname: secret\ndescription: Not yours.\n---\nSecret.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.cfg.CwdRoots = []string{e.cwd}
	e.start()
	m := e.mustMetrics(t)
	w := e.worker()

	// Inside the root: served.
	d := w.preStep(events.PreStep{Session: "in", Step: "1", Cwd: e.cwd, Tools: ourTool()})
	e.expect(d, events.OutcomeAppended, 1)

	for i, cwd := range []string{outside, e.cwd + "/../" + filepath.Base(outside), "/", "relative/proj"} {
		sid := "out" + string(rune('a'+i))
		before := counter(t, m.rejects.WithLabelValues(reasonCwd))
		d := w.preStep(events.PreStep{Session: sid, Step: "1", Cwd: cwd, Tools: ourTool()})
		if d.Outcome != events.OutcomeRejected || d.Error == nil || d.Error.Code != events.CodeBadRequest ||
			!strings.Contains(d.Error.Message, "cwd") {
			t.Fatalf("pre-step in %q: %+v", cwd, d)
		}
		r := w.call(events.SkillCall{Session: sid, Call: "c1", Cwd: cwd, Args: events.SkillArgs{Name: "secret"}})
		if !r.IsError || r.Error == nil || r.Error.Code != events.CodeBadRequest || !strings.Contains(r.Text, "cwd") || r.Value != nil {
			t.Fatalf("skill call in %q: %+v", cwd, r)
		}
		if n := len(e.outputs(sid, events.KindCatalog)); n != 0 {
			t.Fatalf("%d catalogs appended for cwd %q", n, cwd)
		}
		stored := e.outputs(sid, events.KindToolResult)
		if len(stored) != 1 {
			t.Fatalf("%d tool results for cwd %q, want the bad_request one", len(stored), cwd)
		}
		if got := counter(t, m.rejects.WithLabelValues(reasonCwd)); got != before+2 {
			t.Fatalf("rejects{cwd} = %v, want %v", got, before+2)
		}
	}
}

// A relative cwd is bad input even without cwd roots.
func TestRelativeCwdRejected(t *testing.T) {
	e := newEnv(t)
	e.start()
	w := e.worker()
	d := w.preStep(events.PreStep{Session: "rel", Step: "1", Cwd: "src/app", Tools: ourTool()})
	if d.Outcome != events.OutcomeRejected || d.Error == nil || !strings.Contains(d.Error.Message, `cwd "src/app" is not an absolute path`) {
		t.Fatalf("%+v", d)
	}
}
