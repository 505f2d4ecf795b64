package agentskills_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
)

// write creates path (and its parents) holding content.
func write(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// skillText is a valid skill file.
func skillText(name, desc, body string) string {
	return "---\nname: " + name + "\ndescription: " + desc + "\n---\n" + body + "\n"
}

func mkdir(t testing.TB, path string) {
	t.Helper()
	if err := os.MkdirAll(path, 0o755); err != nil {
		t.Fatal(err)
	}
}

func symlink(t testing.TB, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}

// newProvider makes a provider whose user folder is inside the test's temp
// directory unless cfg says otherwise, and closes it at the end.
func newProvider(t testing.TB, cfg agentskills.Config) *agentskills.Provider {
	t.Helper()
	if cfg.UserDir == "" && !cfg.NoUserDir {
		cfg.UserDir = filepath.Join(t.TempDir(), "user-skills")
	}
	p, err := agentskills.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return p
}

func list(t testing.TB, p providers.Provider, cwd string) []providers.Candidate {
	t.Helper()
	cs, err := p.List(context.Background(), catalog.At(cwd))
	if err != nil {
		t.Fatalf("List(%q): %v", cwd, err)
	}
	return cs
}

// describe renders candidates as "name=description@source" for comparison.
func describe(cs []providers.Candidate) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Name+"="+c.Description+"@"+c.Source)
	}
	return out
}

func summaries(s catalog.Snapshot) []string {
	var out []string
	for _, sk := range s.Skills {
		out = append(out, sk.Name+"="+sk.Description)
	}
	return out
}

func diagnostics(t testing.TB, p *agentskills.Provider, cwd string) map[string]string {
	t.Helper()
	ds, err := p.Diagnostics(context.Background(), catalog.At(cwd))
	if err != nil {
		t.Fatalf("Diagnostics: %v", err)
	}
	m := make(map[string]string)
	for _, d := range ds {
		if d.Provider != p.Name() {
			t.Errorf("diagnostic %v does not name the provider", d)
		}
		m[d.Path] = d.Reason
	}
	return m
}

// eventually polls cond until it holds or 10 s pass; what describes the
// state for the failure message.
func eventually(t testing.TB, what func() string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not reached within 10s; last state: %s", what())
		}
		<-tick.C
	}
}

// snapshotIs polls a registry until its snapshot for cwd lists exactly want
// (name=description) and is complete.
func snapshotIs(t testing.TB, r *providers.Registry, cwd string, want ...string) {
	t.Helper()
	var last catalog.Snapshot
	eventually(t, func() string {
		return strings.Join(summaries(last), ", ")
	}, func() bool {
		s, err := r.Snapshot(context.Background(), catalog.At(cwd))
		if err != nil {
			t.Fatalf("Snapshot: %v", err)
		}
		last = s
		got := summaries(s)
		if len(got) == 0 && len(want) == 0 {
			return s.Complete
		}
		return s.Complete && slices.Equal(got, want)
	})
}
