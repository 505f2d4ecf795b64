package providers_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
)

// listOnly offers one skill and cannot hand out files.
type listOnly struct{}

func (listOnly) Name() string { return "list-only" }
func (listOnly) List(context.Context, catalog.Query) ([]providers.Candidate, error) {
	return []providers.Candidate{{Summary: catalog.Summary{Name: "plain", Description: "Plain."}, Rank: providers.RankBundled}}, nil
}
func (listOnly) Load(context.Context, string, catalog.Query) (catalog.Skill, error) {
	return catalog.Skill{}, catalog.ErrNotFound
}

func writeSkillFolder(t *testing.T, root, name string, files map[string]string) {
	t.Helper()
	for p, data := range files {
		fp := filepath.Join(root, name, p)
		os.MkdirAll(filepath.Dir(fp), 0o755)
		if err := os.WriteFile(fp, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestFilesOfTheWinner: Files reads the files of the skill that wins the
// name (the first custom folder over the second), a flat-file skill as
// one SKILL.md; an unknown name is ErrNotFound, a provider without files
// ErrNoFiles.
func TestFilesOfTheWinner(t *testing.T) {
	first, second := t.TempDir(), t.TempDir()
	md := "---\nname: dup\ndescription: D.\n---\nBody.\n"
	writeSkillFolder(t, first, "dup", map[string]string{"SKILL.md": md, "refs/a.txt": "first"})
	writeSkillFolder(t, second, "dup", map[string]string{"SKILL.md": md, "refs/b.txt": "second"})
	flat := "---\nname: flat\ndescription: F.\n---\nFlat.\n"
	os.WriteFile(filepath.Join(second, "flat.md"), []byte(flat), 0o644)
	fs, err := agentskills.New(agentskills.Config{CustomDirs: []string{first, second}, NoUserDir: true, NoWatch: true})
	if err != nil {
		t.Fatal(err)
	}
	reg := providers.NewRegistry([]providers.Provider{fs, listOnly{}})
	defer reg.Close()
	ctx := context.Background()
	files, err := reg.Files(ctx, "dup", catalog.Query{}, 10, 1<<20)
	if err != nil || len(files) != 2 || files[0].Path != "SKILL.md" || files[1].Path != "refs/a.txt" || string(files[1].Data) != "first" {
		t.Errorf("dup: %+v %v", files, err)
	}
	files, err = reg.Files(ctx, "flat", catalog.Query{}, 10, 1<<20)
	if err != nil || len(files) != 1 || files[0].Path != "SKILL.md" || string(files[0].Data) != flat {
		t.Errorf("flat: %+v %v", files, err)
	}
	if _, err := reg.Files(ctx, "dup", catalog.Query{}, 1, 1<<20); !errors.Is(err, agentskills.ErrTooManyFiles) {
		t.Errorf("over the file limit: %v", err)
	}
	if _, err := reg.Files(ctx, "nope", catalog.Query{}, 10, 1<<20); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("unknown: %v", err)
	}
	if _, err := reg.Files(ctx, "plain", catalog.Query{}, 10, 1<<20); !errors.Is(err, providers.ErrNoFiles) {
		t.Errorf("provider without files: %v", err)
	}
	if _, err := reg.Files(ctx, "../dup", catalog.Query{}, 10, 1<<20); !errors.Is(err, catalog.ErrNotFound) {
		t.Errorf("path as a name: %v", err)
	}
}
