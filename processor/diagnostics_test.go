package processor

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
)

// TestDecisionCarriesProjectDiagnostics: a SKILL.md of the session's
// project that stops parsing is not in the catalog, and every decision of
// the session says which file and why, in the words the registry's report
// (validate) uses; the model's catalog says nothing of it. Once the file is
// mended the diagnostics are gone.
func TestDecisionCarriesProjectDiagnostics(t *testing.T) {
	e := newEnv(t)
	e.withoutFlaky()
	e.writeSkill("good", "A good skill.")
	broken := filepath.Join(e.skillDir, "broken", "SKILL.md")
	if err := os.MkdirAll(filepath.Dir(broken), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(broken, []byte("---\nname: broken\ndescription: [unclosed\n---\nBody.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.waitSkills("good")
	e.start()
	w := e.worker()
	d := w.preStep(events.PreStep{Session: "diag", Step: "1", Cwd: e.cwd, Tools: ourTool()})
	e.expect(d, events.OutcomeAppended, 1)
	if len(d.Diagnostics) != 1 || d.Diagnostics[0].Path != broken {
		t.Fatalf("diagnostics %+v, want one for %s", d.Diagnostics, broken)
	}
	rep := e.registry.Inspect(context.Background(), catalog.Query{Cwd: e.cwd})
	if len(rep.Diagnostics) != 1 || rep.Diagnostics[0].Reason != d.Diagnostics[0].Reason {
		t.Fatalf("decision says %q, the report %+v", d.Diagnostics[0].Reason, rep.Diagnostics)
	}
	if strings.Contains(d.Catalog.Text, "broken") {
		t.Fatalf("the model's catalog mentions the broken skill:\n%s", d.Catalog.Text)
	}
	// Unchanged steps carry them too.
	d = w.preStep(events.PreStep{Session: "diag", Step: "2", Cwd: e.cwd, Tools: ourTool()})
	e.expect(d, events.OutcomeUnchanged, 1)
	if len(d.Diagnostics) != 1 {
		t.Fatalf("unchanged step: diagnostics %+v", d.Diagnostics)
	}
	// Mended: the skill is listed and the diagnostics are gone.
	if err := os.WriteFile(broken, []byte("---\nname: broken\ndescription: Mended.\n---\nBody.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.waitSkills("broken", "good")
	d = w.preStep(events.PreStep{Session: "diag", Step: "3", Cwd: e.cwd, Tools: ourTool()})
	e.expect(d, events.OutcomeAppended, 2)
	if len(d.Diagnostics) != 0 {
		t.Fatalf("mended: diagnostics %+v", d.Diagnostics)
	}
}
