package agentskills_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers/agentskills"
	"github.com/skillstream/skillstream/providers/providertest"
)

func seedText(s providertest.Seed) string {
	return "---\nname: " + s.Name + "\ndescription: " + strconv.Quote(s.Description) + "\n---\n" + s.Body + "\n"
}

func TestConformance(t *testing.T) {
	variants := []struct {
		name  string
		cfg   agentskills.Config
		where func(repo string) string // the skills folder seeded
		flat  bool
	}{
		{"project directories, watched", agentskills.Config{NoUserDir: true},
			func(repo string) string { return filepath.Join(repo, ".agents/skills") }, false},
		{"user flat files, watched", agentskills.Config{},
			nil, true},
		{"project directories, stat validation", agentskills.Config{NoUserDir: true, NoWatch: true},
			func(repo string) string { return filepath.Join(repo, ".agents/skills") }, false},
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			providertest.Run(t, func(t *testing.T, seeds []providertest.Seed) providertest.Harness {
				repo := t.TempDir()
				mkdir(t, filepath.Join(repo, ".git"))
				cfg := v.cfg
				folder := filepath.Join(t.TempDir(), "user-skills")
				if v.where != nil {
					folder = v.where(repo)
				} else {
					cfg.UserDir = folder
				}
				path := func(name string) string {
					if v.flat {
						return filepath.Join(folder, name+".md")
					}
					return filepath.Join(folder, name, "SKILL.md")
				}
				for _, s := range seeds {
					write(t, path(s.Name), seedText(s))
				}
				p := newProvider(t, cfg)
				return providertest.Harness{
					Provider: p,
					Query:    catalog.At(filepath.Join(repo, "some", "subdir")),
					Add:      func(t testing.TB, s providertest.Seed) { write(t, path(s.Name), seedText(s)) },
					Remove: func(t testing.TB, name string) {
						if err := os.Remove(path(name)); err != nil {
							t.Fatal(err)
						}
					},
				}
			})
		})
	}
}
