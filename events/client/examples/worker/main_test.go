package main

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/skillstream/skillstream/natstest"
	"github.com/skillstream/skillstream/processor"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
)

// readme is the repository's README, from this package's folder.
const readme = "../../../../README.md"

// codeBlocks returns the bodies of the fenced blocks of language lang in
// markdown text, in order.
func codeBlocks(text, lang string) []string {
	var blocks []string
	var cur []string
	in := false
	for _, line := range strings.Split(text, "\n") {
		switch {
		case !in && strings.TrimSpace(line) == "```"+lang:
			in, cur = true, nil
		case in && strings.TrimSpace(line) == "```":
			in = false
			blocks = append(blocks, strings.Join(cur, "\n")+"\n")
		case in:
			cur = append(cur, line)
		}
	}
	return blocks
}

// TestREADMEShowsThisWorker: the README's Go code is this program's code,
// verbatim, so what a newcomer copies is what the next test runs.
func TestREADMEShowsThisWorker(t *testing.T) {
	doc, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	blocks := codeBlocks(string(doc), "go")
	if len(blocks) == 0 {
		t.Fatal("the README shows no Go code")
	}
	for _, b := range blocks {
		if !strings.Contains(string(src), b) {
			t.Errorf("the README's Go block is not in events/client/examples/worker/main.go verbatim:\n%s", b)
		}
	}
}

// TestWorkerAgainstAProcessor runs the README's command line for this
// program (go run ./events/client/examples/worker ...) as the program
// itself, in a project folder holding one skill, against a real processor
// on a real NATS server: the catalog lists the skill, and the skill call
// returns its instructions.
func TestWorkerAgainstAProcessor(t *testing.T) {
	args := readmeArgs(t)

	srv := natstest.Start(t, natstest.WithTCP())
	project := t.TempDir()
	if err := os.Mkdir(filepath.Join(project, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	skill := filepath.Join(project, ".agents", "skills", "hello-world")
	if err := os.MkdirAll(skill, 0o755); err != nil {
		t.Fatal(err)
	}
	md := "---\nname: hello-world\ndescription: Greets the world.\n---\n\nSay hello to the world.\n"
	if err := os.WriteFile(filepath.Join(skill, "SKILL.md"), []byte(md), 0o644); err != nil {
		t.Fatal(err)
	}
	// And one that does not parse: the worker tells its user.
	broken := filepath.Join(project, ".agents", "skills", "broken", "SKILL.md")
	if err := os.MkdirAll(filepath.Dir(broken), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(broken, []byte("---\nname: broken\ndescription: [unclosed\n---\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	fs, err := agentskills.New(agentskills.Config{NoUserDir: true})
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	reg := providers.NewRegistry([]providers.Provider{fs}, providers.WithLogger(quiet))
	t.Cleanup(func() { reg.Close() })
	p, err := processor.New(srv.Connect(), reg, processor.Config{Workers: 4}, processor.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("processor: %v", err)
		}
	})
	select {
	case <-p.Ready():
	case err := <-done:
		t.Fatalf("processor: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("processor not ready")
	}

	// The README runs it in a project folder, or names one: here, project.
	t.Chdir(project)
	if len(args) == 1 {
		args = []string{project}
	}
	env := func(k string) string {
		if k == "SKILLSTREAM_URL" {
			return srv.ClientURL()
		}
		return ""
	}
	var out, errOut bytes.Buffer
	if code := cli(context.Background(), args, env, &out, &errOut); code != 0 {
		t.Fatalf("worker exited %d: %s", code, errOut.String())
	}
	if want := "skill file skipped: " + broken + ": "; !strings.Contains(errOut.String(), want) {
		t.Errorf("stderr lacks %q:\n%s", want, errOut.String())
	}
	for _, want := range []string{
		"pre-step: appended\n",
		"- `hello-world`: Greets the world.",
		"skill hello-world (the tool result for the model):\n<skill_content name=\"hello-world\">",
		"Say hello to the world.",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

// readmeArgs returns the arguments of the README's `go run` line for this
// program (it must have one).
func readmeArgs(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile(readme)
	if err != nil {
		t.Fatal(err)
	}
	const run = "go run ./events/client/examples/worker"
	for _, b := range codeBlocks(string(doc), "sh") {
		for _, line := range strings.Split(b, "\n") {
			line, _, _ = strings.Cut(line, "#")
			if f := strings.Fields(line); len(f) >= 3 && strings.Join(f[:3], " ") == run {
				if len(f) > 4 {
					t.Fatalf("README: %q takes at most one argument", line)
				}
				return f[3:]
			}
		}
	}
	t.Fatalf("the README does not show %q", run)
	return nil
}

// TestWorkerBadInput: more than one argument is a usage error (exit 2),
// and a URL where no NATS server answers fails with exit 1, saying why,
// without hanging.
func TestWorkerBadInput(t *testing.T) {
	var out, errOut bytes.Buffer
	if code := cli(context.Background(), []string{"a", "b"}, func(string) string { return "" }, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "usage: worker [PROJECT_DIR]") {
		t.Errorf("two arguments: exit %d, stderr %q", code, errOut.String())
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "nats://" + ln.Addr().String()
	ln.Close()
	for _, url := range []string{closed, "not a url \x00"} {
		out.Reset()
		errOut.Reset()
		env := func(string) string { return url }
		if code := cli(context.Background(), []string{t.TempDir()}, env, &out, &errOut); code != 1 || !strings.HasPrefix(errOut.String(), "worker: ") || out.Len() != 0 {
			t.Errorf("url %q: exit %d, stdout %q, stderr %q", url, code, out.String(), errOut.String())
		}
	}
}
