package eval

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/processor"
	"github.com/skillstream/skillstream/processor/replay"
)

// The figures' recordings: go test ./processor/replay/eval -run
// TestGenerateRecordings -eval.gen DIR writes DIR/project (a project of
// -eval.skills skills) and DIR/recordings/*.jsonl (-eval.sessions sessions
// of -eval.steps pre-steps, played through a real processor with search
// on), and DIR/candidate, the project with every tenth skill's description
// rewritten and every fiftieth removed. Time `skillstream eval` over them
// with --cwd-map DIR/project=DIR/candidate (see the manual's "Evaluating
// a change on recorded sessions").
var (
	genDir      = flag.String("eval.gen", "", "write recordings for eval's figures into this directory")
	genSessions = flag.Int("eval.sessions", 1000, "sessions to record with -eval.gen")
	genSteps    = flag.Int("eval.steps", 40, "pre-steps per session with -eval.gen")
	genSkills   = flag.Int("eval.skills", 300, "skills of the project with -eval.gen")
)

var genWords = []string{"deploy", "kubernetes", "invoice", "ledger", "certificate", "rotate", "migrate", "schema",
	"review", "pull", "request", "terraform", "plan", "incident", "outage", "changelog", "release", "tests", "unit",
	"pdf", "forms", "docs", "api", "cache", "queue", "backup", "restore", "metrics", "alert", "budget", "report",
	"translate", "summary", "security", "audit", "license", "profile", "latency", "index", "search"}

// genDescription is skill i's description: four words of the vocabulary,
// chosen by i.
func genDescription(r *rand.Rand) string {
	w := make([]string, 6)
	for j := range w {
		w[j] = genWords[r.IntN(len(genWords))]
	}
	return fmt.Sprintf("Help %s the %s %s, then %s %s for %s.", w[0], w[1], w[2], w[3], w[4], w[5])
}

func TestGenerateRecordings(t *testing.T) {
	if *genDir == "" {
		t.Skip("give -eval.gen DIR to write the recordings for eval's figures")
	}
	dir, err := filepath.Abs(*genDir)
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	skills := map[string]string{}
	var names []string
	for i := range *genSkills {
		name := fmt.Sprintf("skill-%03d-%s", i, genWords[i%len(genWords)])
		skills[name] = genDescription(r)
		names = append(names, name)
	}
	project := filepath.Join(dir, "project")
	if err := os.RemoveAll(project); err != nil {
		t.Fatal(err)
	}
	writeProjectAt(t, project, skills)
	recs := filepath.Join(dir, "recordings")
	if err := os.MkdirAll(recs, 0o755); err != nil {
		t.Fatal(err)
	}

	srv := natstest.Start(t)
	opts := searchOptions()
	opts.ListedMax = 60
	runProcessor(t, srv, opts)
	var wg sync.WaitGroup
	sessions := make(chan int)
	for range 8 {
		wg.Go(func() {
			for n := range sessions {
				sid := fmt.Sprintf("gen-%04d", n)
				playGenerated(t, srv, project, sid, names, rand.New(rand.NewPCG(uint64(n), 7)))
				var buf bytes.Buffer
				if err := replay.Record(context.Background(), srv.JS, processor.DefaultStream, events.DefaultPrefix, sid, &buf); err != nil {
					t.Error(err)
					return
				}
				if err := os.WriteFile(filepath.Join(recs, sid+".jsonl"), buf.Bytes(), 0o644); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	for n := range *genSessions {
		sessions <- n
	}
	close(sessions)
	wg.Wait()

	// The candidate: every tenth skill's description rewritten, every
	// fiftieth removed.
	cand := filepath.Join(dir, "candidate")
	if err := os.RemoveAll(cand); err != nil {
		t.Fatal(err)
	}
	changed := map[string]string{}
	for i, name := range names {
		switch {
		case i%50 == 0:
		case i%10 == 0:
			changed[name] = genDescription(r)
		default:
			changed[name] = skills[name]
		}
	}
	writeProjectAt(t, cand, changed)
	t.Logf("%d sessions of %d steps over %d skills in %s", *genSessions, *genSteps, *genSkills, recs)
}

func writeProjectAt(t testing.TB, root string, skills map[string]string) {
	t.Helper()
	for name, desc := range skills {
		d := filepath.Join(root, ".agents", "skills", name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		md := "---\nname: " + name + "\ndescription: " + desc + "\n---\nSteps of " + name + ".\n"
		if err := os.WriteFile(filepath.Join(d, "SKILL.md"), []byte(md), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.MkdirAll(filepath.Join(root, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// playGenerated plays one session: every pre-step may search for two
// words of the vocabulary and load one of the first matches, or load a
// skill by name.
func playGenerated(t testing.TB, srv *natstest.Server, cwd, sid string, names []string, r *rand.Rand) {
	w := &worker{t: t, nc: srv.Conn, js: srv.JS, sid: sid, cwd: cwd}
	for step := range *genSteps {
		w.preStep(fmt.Sprint(step + 1))
		switch r.IntN(4) {
		case 0:
			q := genWords[r.IntN(len(genWords))] + " " + genWords[r.IntN(len(genWords))]
			res := w.search(fmt.Sprintf("s%d", step), q)
			if res.Search != nil && len(res.Search.Results) > 0 {
				pick := res.Search.Results[r.IntN(min(5, len(res.Search.Results)))]
				w.call(fmt.Sprintf("c%d", step), pick.Name)
			}
		case 1:
			w.call(fmt.Sprintf("c%d", step), names[r.IntN(len(names))])
		}
	}
}
