package agentskills_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers/agentskills"
)

// TestConfineProjects: with working directories confined to a folder,
// nothing outside it is served from a project: skill folders, SKILL.md
// files, flat skill files and skills folders that are links out of it are
// skipped (with a diagnostic), and a .git above the folder does not make
// a project of what lies above. Without confinement all of it is served.
func TestConfineProjects(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "tenants", "a")
	outside := filepath.Join(base, "outside")
	write(t, filepath.Join(outside, "skills/secret/SKILL.md"), skillText("secret", "outside the root", ""))
	write(t, filepath.Join(outside, "flat.md"), skillText("flat", "outside, flat", ""))
	write(t, filepath.Join(outside, "inner/SKILL.md"), skillText("inner", "outside, linked SKILL.md", ""))
	write(t, filepath.Join(outside, "agents/skills/whole/SKILL.md"), skillText("whole", "a linked .agents", ""))

	proj := filepath.Join(root, "proj")
	mkdir(t, filepath.Join(proj, ".git"))
	skills := filepath.Join(proj, ".agents/skills")
	write(t, filepath.Join(skills, "good/SKILL.md"), skillText("good", "inside", ""))
	symlink(t, filepath.Join(outside, "skills/secret"), filepath.Join(skills, "secret"))
	symlink(t, filepath.Join(outside, "flat.md"), filepath.Join(skills, "flat.md"))
	mkdir(t, filepath.Join(skills, "inner"))
	symlink(t, filepath.Join(outside, "inner/SKILL.md"), filepath.Join(skills, "inner/SKILL.md"))
	// A link inside the root, to a skill inside the root, is skipped too:
	// links in confined projects are not followed at all.
	write(t, filepath.Join(root, "shared/near/SKILL.md"), skillText("near", "inside, linked", ""))
	symlink(t, filepath.Join(root, "shared/near"), filepath.Join(skills, "near"))

	linkedAgents := filepath.Join(root, "linked")
	mkdir(t, filepath.Join(linkedAgents, ".git"))
	symlink(t, filepath.Join(outside, "agents"), filepath.Join(linkedAgents, ".agents"))

	// A repository above the root, with skills of its own.
	mkdir(t, filepath.Join(base, ".git"))
	write(t, filepath.Join(base, ".agents/skills/above/SKILL.md"), skillText("above", "above the root", ""))
	nogit := filepath.Join(root, "nogit", "sub")
	mkdir(t, nogit)

	names := func(p *agentskills.Provider, cwd string) []string {
		var out []string
		for _, c := range list(t, p, cwd) {
			out = append(out, c.Name)
		}
		slices.Sort(out)
		return out
	}
	open := newProvider(t, agentskills.Config{NoUserDir: true})
	confined := newProvider(t, agentskills.Config{NoUserDir: true, ConfineProjects: []string{root}})
	for _, c := range []struct {
		cwd            string
		open, confined string
	}{
		{proj, "flat,good,inner,near,secret", "good"},
		{linkedAgents, "whole", ""},
		{nogit, "above", ""},
	} {
		if got := strings.Join(names(open, c.cwd), ","); got != c.open {
			t.Errorf("unconfined %s: %s, want %s", c.cwd, got, c.open)
		}
		if got := strings.Join(names(confined, c.cwd), ","); got != c.confined {
			t.Errorf("confined %s: %s, want %s", c.cwd, got, c.confined)
		}
	}
	for _, name := range []string{"secret", "flat", "inner", "near"} {
		if _, err := confined.Load(context.Background(), name, catalog.At(proj)); !errors.Is(err, catalog.ErrNotFound) {
			t.Errorf("confined Load(%s): %v, want not found", name, err)
		}
	}
	if sk, err := confined.Load(context.Background(), "good", catalog.At(proj)); err != nil || sk.Name != "good" {
		t.Errorf("confined Load(good): %+v, %v", sk.Summary, err)
	}
	diags := diagnostics(t, confined, proj)
	for _, p := range []string{filepath.Join(skills, "secret"), filepath.Join(skills, "flat.md"), filepath.Join(skills, "inner/SKILL.md")} {
		if !strings.Contains(diags[p], "following links is disabled") {
			t.Errorf("diagnostic for %s = %q", p, diags[p])
		}
	}
	// A confining folder named through a link stops the walk whichever
	// way the cwd is written.
	linkedRoot := filepath.Join(t.TempDir(), "tenants-link")
	symlink(t, root, linkedRoot)
	viaLink := newProvider(t, agentskills.Config{NoUserDir: true, ConfineProjects: []string{linkedRoot}})
	for _, cwd := range []string{nogit, filepath.Join(linkedRoot, "nogit", "sub")} {
		if got := names(viaLink, cwd); len(got) != 0 {
			t.Errorf("confined through a link, %s: %v, want nothing from above the root", cwd, got)
		}
	}
	if root, err := agentskills.ProjectRoot(nogit); err != nil || root != base {
		t.Errorf("ProjectRoot (unconfined) of %s = %q, %v; want %s", nogit, root, err, base)
	}
}
