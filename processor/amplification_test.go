package processor

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/events"
)

// TestOutputAmplification measures what a worker looping on one session
// makes the server store, per byte it publishes (payloads): a loop of
// compaction then pre-step (each pre-step re-sends the whole catalog), a
// loop of pre-steps whose userText invokes a large skill (/big), and a
// loop that shows and hides the skill tool in turn (real changes of the
// list: only their bytes are budgeted). It logs the figures; run it with
//
//	SKILLSTREAM_AMPLIFICATION=1 go test ./processor -run TestOutputAmplification -count=1 -v
//
// The budget's clock stands still (the figures do not depend on how fast
// the loop runs); with the budget at its defaults it asserts that what the
// loops stored is the budget, whatever the number of iterations.
func TestOutputAmplification(t *testing.T) {
	if os.Getenv("SKILLSTREAM_AMPLIFICATION") == "" {
		t.Skip("a measurement: set SKILLSTREAM_AMPLIFICATION=1 to run it")
	}
	const iterations = 100
	for _, budget := range []bool{false, true} {
		name := "without budget"
		if budget {
			name = "with the default budget"
		}
		t.Run(name, func(t *testing.T) {
			e := newEnv(t)
			for i := range 300 {
				e.writeSkill(fmt.Sprintf("skill-%03d", i), strings.Repeat(fmt.Sprintf("Does task %d carefully. ", i), 5))
			}
			dir := filepath.Join(e.skillDir, "big")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			body := strings.Repeat("Follow this rule carefully. ", 128<<10/28) // 128 KiB
			if err := os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: big\ndescription: Big.\n---\n"+body), 0o644); err != nil {
				t.Fatal(err)
			}
			e.waitSkills(append([]string{"big"}, skillNames(300)...)...)
			e.start(userInvocationOn, newBudgetClock().hook, func(c *Config, _ *options) {
				c.Catalog.MaxLength = 0 // the whole catalog
				if !budget {
					c.CatalogResends, c.CatalogBytes, c.InvocationBytes = NoLimit, NoLimit, NoLimit
				}
			})
			w := e.worker()
			stored := func() uint64 {
				ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
				defer cancel()
				st, err := e.js.Stream(ctx, DefaultStream)
				if err != nil {
					t.Fatal(err)
				}
				return st.CachedInfo().State.Bytes
			}
			size := func(v any) int {
				b, err := events.Encode(events.Msgpack, v)
				if err != nil {
					t.Fatal(err)
				}
				return len(b)
			}
			loop := func(sid string, step func(i int) int) {
				before := stored()
				published := 0
				for i := range iterations {
					published += step(i)
				}
				after := stored()
				t.Logf("%s, %d iterations: worker published %d bytes, the stream grew by %d bytes: x%.0f",
					sid, iterations, published, after-before, float64(after-before)/float64(published))
			}

			// Compaction, then a pre-step: the catalog is masked and sent again.
			var shown uint64
			loop("compaction loop", func(i int) int {
				n := 0
				if shown != 0 {
					c := events.Compaction{V: 1, Session: "compact", RetainFrom: shown + 1}
					w.compact("compact", shown+1)
					n += size(c)
				}
				ps := events.PreStep{V: 1, Session: "compact", Step: fmt.Sprint(i), Cwd: e.cwd, Tools: ourTool()}
				d := w.preStep(ps)
				if d.CatalogSeq != 0 {
					shown = d.CatalogSeq
				}
				return n + size(ps)
			})
			// A pre-step invoking /big at every step.
			loop("/name loop", func(i int) int {
				ps := events.PreStep{V: 1, Session: "invoke", Step: fmt.Sprint(i), Cwd: e.cwd, Tools: ourTool(), UserText: []string{"/big"}}
				w.preStep(ps)
				return size(ps)
			})
			// Not budgeted: the skill tool shown and hidden in turn, so
			// that every step changes the list (the catalog, then the
			// tombstone).
			loop("tool toggle loop", func(i int) int {
				tools := ourTool()
				if i%2 == 1 {
					tools = []events.Tool{{Name: "bash", Owner: "agent"}}
				}
				ps := events.PreStep{V: 1, Session: "toggle", Step: fmt.Sprint(i), Cwd: e.cwd, Tools: tools}
				w.preStep(ps)
				return size(ps)
			})
			if !budget {
				return
			}
			// The budget's clock stood still: what was stored is the
			// budget, whatever the number of iterations.
			if n := len(e.catalogs("compact")); n != 1+DefaultCatalogResends {
				t.Errorf("%d catalogs stored by the compaction loop, want %d", n, 1+DefaultCatalogResends)
			}
			n := 0
			for _, m := range e.outputs("invoke", events.KindInvocation) {
				n += len(m.Data)
			}
			if n > DefaultInvocationBytes {
				t.Errorf("%d invocation bytes stored by the /name loop, over the budget of %d", n, DefaultInvocationBytes)
			}
			n = 0
			for i, m := range e.outputs("toggle", events.KindCatalog) {
				if i > 0 {
					n += len(m.Data)
				}
			}
			if n > DefaultCatalogBytes {
				t.Errorf("%d bytes of catalogs after the first stored by the toggle loop, over the budget of %d", n, DefaultCatalogBytes)
			}
		})
	}
}

func skillNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("skill-%03d", i)
	}
	return out
}
