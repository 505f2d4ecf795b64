package bench

import (
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
)

// generated is a folder of n generated skills (WriteSkills) and a registry
// serving it, closed with the test.
type generated struct {
	reg     *providers.Registry
	names   []string
	summary []catalog.Summary
	body    string
}

func generateSkills(t *testing.T, n int) generated {
	t.Helper()
	dir, names, sums, body, err := WriteSkills(t.TempDir(), n)
	if err != nil {
		t.Fatal(err)
	}
	fs, err := agentskills.New(agentskills.Config{CustomDirs: []string{dir}, NoUserDir: true})
	if err != nil {
		t.Fatal(err)
	}
	reg := providers.NewRegistry([]providers.Provider{fs})
	t.Cleanup(func() { _ = reg.Close() })
	return generated{reg: reg, names: names, summary: sums, body: body}
}
