package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode"
)

// The documents these tests keep honest, relative to the repository root.
var docFiles = []string{
	"README.md",
	"cmd/skillstream/MANUAL.md",
	"events/protocol.md",
	"events/client/typescript/README.md",
}

// repoRoot is the repository root, absolute: tests that run commands
// change the working directory.
var repoRoot = func() string {
	abs, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		panic(err)
	}
	return abs
}()

func readDoc(t testing.TB, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, rel))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// mdLine is one line of a markdown document, with what fence it is in.
type mdLine struct {
	n     int    // 1-based line number
	text  string // the line
	fence string // the info string of the fenced block holding it ("" for none, "-" for a bare fence); the fences themselves are not listed
}

// mdLines splits a markdown document into its lines, marking those inside
// fenced code blocks.
func mdLines(doc string) []mdLine {
	var out []mdLine
	fence := ""
	in := false
	for i, line := range strings.Split(doc, "\n") {
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			if in && trimmed == "```" {
				in, fence = false, ""
				continue
			}
			if !in {
				in, fence = true, strings.TrimSpace(strings.TrimPrefix(trimmed, "```"))
				if fence == "" {
					fence = "-"
				}
				continue
			}
		}
		out = append(out, mdLine{n: i + 1, text: line, fence: fence})
	}
	return out
}

// blocks returns the fenced blocks with info string lang, each as its
// text (lines joined, with a final newline).
func blocks(doc, lang string) []string {
	var out []string
	var cur []string
	last := -1
	for _, l := range mdLines(doc) {
		if l.fence != lang {
			continue
		}
		if last >= 0 && l.n != last+1 {
			out = append(out, strings.Join(cur, "\n")+"\n")
			cur = nil
		}
		cur = append(cur, l.text)
		last = l.n
	}
	if cur != nil {
		out = append(out, strings.Join(cur, "\n")+"\n")
	}
	return out
}

var (
	codeSpan = regexp.MustCompile("`[^`]*`")
	mdLink   = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)\)`)
)

// slug is the anchor a heading gets: lower case, letters, digits, '-' and
// '_' kept, spaces made '-', everything else dropped.
func slug(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the anchors of a document's headings (outside code
// blocks), a repeated one numbered as -1, -2, ...
func anchors(doc string) map[string]bool {
	seen := map[string]int{}
	out := map[string]bool{}
	for _, l := range mdLines(doc) {
		if l.fence != "" || !strings.HasPrefix(l.text, "#") {
			continue
		}
		h := strings.TrimLeft(l.text, "#")
		if !strings.HasPrefix(h, " ") {
			continue
		}
		s := slug(h)
		if n := seen[s]; n > 0 {
			out[s+"-"+strconv.Itoa(n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	return out
}

// brokenLinks checks every relative link of the document rel (outside code
// blocks and code spans): its target must exist under root, and a
// #fragment must be a heading of the target (a markdown file).
func brokenLinks(root, rel, doc string) []string {
	var bad []string
	for _, l := range mdLines(doc) {
		if l.fence != "" {
			continue
		}
		text := codeSpan.ReplaceAllString(l.text, "")
		for _, m := range mdLink.FindAllStringSubmatch(text, -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, frag, _ := strings.Cut(target, "#")
			file := rel
			if path != "" {
				file = filepath.Join(filepath.Dir(rel), path)
			}
			where := fmt.Sprintf("%s:%d: %s", rel, l.n, target)
			fi, err := os.Stat(filepath.Join(root, file))
			if err != nil {
				bad = append(bad, where+": "+err.Error())
				continue
			}
			if frag == "" {
				continue
			}
			if fi.IsDir() {
				bad = append(bad, where+": an anchor into a folder")
				continue
			}
			b, err := os.ReadFile(filepath.Join(root, file))
			if err != nil {
				bad = append(bad, where+": "+err.Error())
				continue
			}
			if !strings.HasSuffix(file, ".md") {
				bad = append(bad, where+": an anchor into a file that is not markdown")
				continue
			}
			if !anchors(string(b))[frag] {
				bad = append(bad, where+": no heading #"+frag+" in "+file)
			}
		}
	}
	return bad
}

// TestDocsLinksResolve: every relative link of the README, the manual, the
// protocol and the TypeScript client's README names a file that exists,
// and every #anchor a heading of its file.
func TestDocsLinksResolve(t *testing.T) {
	for _, rel := range docFiles {
		for _, b := range brokenLinks(repoRoot, rel, readDoc(t, rel)) {
			t.Error(b)
		}
	}
}

// TestDocsLinkCheckFindsBrokenLinks: the check above reports a missing
// file, a missing anchor and an anchor into a non-markdown file, and
// ignores links in code and external ones.
func TestDocsLinkCheckFindsBrokenLinks(t *testing.T) {
	root := t.TempDir()
	writeFile(t, root, "docs/other.md", "# Other\n\n## Fresh skills (read-your-writes)\n\n```sh\n# not a heading\n```\n")
	writeFile(t, root, "docs/code.go", "package code\n")
	doc := strings.Join([]string{
		"# Doc",
		"[ok](other.md#fresh-skills-read-your-writes) [ok](#doc) [ok](code.go) [ok](https://example.com/x#y)",
		"[gone](missing.md) [no anchor](other.md#not-a-heading) [not md](code.go#x) [self](#nowhere)",
		"`[in a span](missing.md)`",
		"```md",
		"[in a block](missing.md)",
		"```",
	}, "\n")
	writeFile(t, root, "docs/doc.md", doc)
	bad := brokenLinks(root, "docs/doc.md", doc)
	want := []string{"missing.md", "other.md#not-a-heading", "code.go#x", "#nowhere"}
	if len(bad) != len(want) {
		t.Fatalf("reported %d problems, want %d:\n%s", len(bad), len(want), strings.Join(bad, "\n"))
	}
	for i, w := range want {
		if !strings.Contains(bad[i], "docs/doc.md:3: "+w+":") {
			t.Errorf("problem %d = %q, want it about %s", i, bad[i], w)
		}
	}
}

func TestDocsSlug(t *testing.T) {
	for in, want := range map[string]string{
		"Recreating the store's buckets":           "recreating-the-stores-buckets",
		" Several instances: a consumer group":     "several-instances-a-consumer-group",
		"User invocation (`/name`)":                "user-invocation-name",
		"PreStep — `agent.pre-step`, written by a": "prestep--agentpre-step-written-by-a",
	} {
		if got := slug(in); got != want {
			t.Errorf("slug(%q) = %q, want %q", in, got, want)
		}
	}
}

// shellLines returns the command lines of a document's sh blocks:
// continuation lines joined, comments and blank lines dropped.
func shellLines(doc string) []string {
	var out []string
	for _, b := range blocks(doc, "sh") {
		joined := strings.ReplaceAll(b, "\\\n", " ")
		for _, line := range strings.Split(joined, "\n") {
			if i := strings.Index(line, " #"); i >= 0 {
				line = line[:i]
			}
			if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
				out = append(out, line)
			}
		}
	}
	return out
}

// skillstreamArgs returns the arguments of a skillstream command line, and
// whether it is one.
func skillstreamArgs(line string) ([]string, bool) {
	f := strings.Fields(line)
	if len(f) == 0 || (f[0] != "skillstream" && f[0] != "./skillstream") {
		return nil, false
	}
	return f[1:], true
}

// ranElsewhere says which test or CI step runs a README command line that
// is not a skillstream command, checking that it still does; "" when
// nothing does.
func ranElsewhere(t *testing.T, line string) string {
	t.Helper()
	ci := readDoc(t, ".ci/run")
	has := func(file, sub string) bool { return strings.Contains(readDoc(t, file), sub) }
	ciRunsNpmTest := strings.Contains(ci, "(cd events/client/typescript && npm ci --no-audit --no-fund && npm test)")
	switch strings.Join(strings.Fields(line), " ") {
	case "go test ./...":
		if regexp.MustCompile(`(?m)^go test -race .* \./\.\.\.$`).MatchString(ci) {
			return ".ci/run (with -race)"
		}
	case "go build -o skillstream ./cmd/skillstream":
		if has("events/client/typescript/scripts/test.mjs", `"go", ["build", "-o", join(bin, "skillstream"), "./cmd/skillstream"]`) && ciRunsNpmTest {
			return "the TypeScript tests' scripts/test.mjs, in .ci/run"
		}
	case "cd events/client/typescript && npm ci && npm test":
		if ciRunsNpmTest {
			return ".ci/run"
		}
	case "cd events/client/typescript && npm ci && npm run worker":
		var pkg struct{ Scripts map[string]string }
		if err := json.Unmarshal([]byte(readDoc(t, "events/client/typescript/package.json")), &pkg); err != nil {
			t.Fatal(err)
		}
		if pkg.Scripts["worker"] == "npm run build && node dist/examples/worker.js" &&
			has("events/client/typescript/test/examples.test.ts", `join(here, "..", "examples", "worker.js")`) && ciRunsNpmTest {
			return "test/examples.test.ts runs dist/examples/worker.js, in .ci/run's npm test"
		}
	case "go run ./events/client/examples/worker":
		if has("events/client/examples/worker/main_test.go", `const run = "go run ./events/client/examples/worker"`) {
			return "TestWorkerAgainstAProcessor in events/client/examples/worker"
		}
	}
	return ""
}

// TestDocsREADMECommandsRun runs every command line of the README's sh
// blocks: a skillstream command through Main, in a project folder built
// from the README's own SKILL.md and tree, with the environment pointing
// serve at a free port and temporary folders (serve runs until the end,
// the others must exit 0); any other line must be one a test or CI runs.
// Then it starts the MCP server the README's host configuration names.
func TestDocsREADMECommandsRun(t *testing.T) {
	readme := readDoc(t, "README.md")
	project := readmeProject(t, readme)
	tmp := t.TempDir()
	port, mport := freePort(t), freePort(t)
	env := envMap(map[string]string{
		"SKILLSTREAM_LISTEN":          "127.0.0.1:" + strconv.Itoa(port),
		"SKILLSTREAM_DATA":            filepath.Join(tmp, "data"),
		"SKILLSTREAM_USER_SKILLS_DIR": filepath.Join(tmp, "user-skills"),
		"SKILLSTREAM_METRICS_LISTEN":  "127.0.0.1:" + strconv.Itoa(mport),
	})
	t.Chdir(project)

	var serve *served
	ran := 0
	for _, line := range shellLines(readme) {
		args, ok := skillstreamArgs(line)
		if !ok {
			if by := ranElsewhere(t, line); by != "" {
				t.Logf("%s: run by %s", line, by)
			} else {
				t.Errorf("the README shows %q, which no test or CI step runs", line)
			}
			continue
		}
		ran++
		if args[0] == "serve" {
			if serve != nil {
				t.Fatalf("%s: a second serve", line)
			}
			serve = startREADMEServe(t, args, env, port, mport)
			continue
		}
		var stdout, stderr syncBuffer
		a := &app{stdout: &stdout, stderr: &stderr, lookupEnv: env}
		if code := a.main(context.Background(), args); code != exitOK {
			t.Errorf("%s: exit %d\n%s%s", line, code, stdout.String(), stderr.String())
			continue
		}
		checkREADMEOutput(t, line, args, stdout.String())
	}
	if ran == 0 || serve == nil {
		t.Fatalf("ran %d skillstream commands, serve among them: %v", ran, serve != nil)
	}
	runREADMEMCPConfig(t, readme, project, env)
	if code := serve.stop(); code != exitOK {
		t.Errorf("serve exited %d:\n%s", code, serve.stderr)
	}
}

// readmeProject builds the README's example project: a git repository
// whose .agents/skills holds the README's SKILL.md and the file its tree
// shows beside it.
func readmeProject(t *testing.T, readme string) string {
	t.Helper()
	md := blocks(readme, "markdown")
	if len(md) != 1 || !strings.Contains(md[0], "name: commit-message") {
		t.Fatalf("want the README to show one SKILL.md, of commit-message; got %q", md)
	}
	project := t.TempDir()
	if err := os.Mkdir(filepath.Join(project, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, project, ".agents/skills/commit-message/SKILL.md", md[0])
	if !strings.Contains(readme, "└── examples/good.txt") {
		t.Fatal("the README's skill tree no longer shows examples/good.txt")
	}
	writeFile(t, project, ".agents/skills/commit-message/examples/good.txt", "Fix the flaky upload test\n")
	return project
}

// startREADMEServe runs the README's serve line with the test's
// environment until the test ends, and waits until it is ready.
func startREADMEServe(t *testing.T, args []string, env func(string) (string, bool), port, mport int) *served {
	t.Helper()
	return runServe(t, port, mport, "the README's serve ready", func(ctx context.Context, stderr io.Writer) int {
		a := &app{stdout: io.Discard, stderr: stderr, lookupEnv: env}
		return a.main(ctx, args)
	})
}

// checkREADMEOutput checks what the README's commands say they do.
func checkREADMEOutput(t *testing.T, line string, args []string, stdout string) {
	t.Helper()
	want := ""
	switch strings.Join(args[:min(2, len(args))], " ") {
	case "catalog":
		want = "- `commit-message`: Write a commit message for the staged changes, in the house style."
	case "load commit-message":
		want = "Write the subject in the imperative, at most 50 characters."
	case "skills push":
		want = "store revision "
	case "skills ls":
		want = "commit-message"
	case "skills get":
		out := ""
		for i, a := range args {
			if a == "--out" && i+1 < len(args) {
				out = args[i+1]
			}
		}
		b, err := os.ReadFile(filepath.Join(out, "commit-message", "examples", "good.txt"))
		if err != nil || string(b) != "Fix the flaky upload test\n" {
			t.Errorf("%s: the skill's files are not in %s/commit-message: %v %q", line, out, err, b)
		}
	}
	if !strings.Contains(stdout, want) {
		t.Errorf("%s: output lacks %q:\n%s", line, want, stdout)
	}
}

// runREADMEMCPConfig starts each stdio MCP server the README's host
// configurations name, as the host would (its working directory standing
// for the project), and lists its tools.
func runREADMEMCPConfig(t *testing.T, readme, project string, env func(string) (string, bool)) {
	t.Helper()
	found := 0
	for _, b := range blocks(readme, "json") {
		var cfg struct {
			MCPServers map[string]struct {
				Command string   `json:"command"`
				Args    []string `json:"args"`
			} `json:"mcpServers"`
		}
		if err := json.Unmarshal([]byte(b), &cfg); err != nil {
			t.Fatalf("README json block does not parse: %v\n%s", err, b)
		}
		for name, s := range cfg.MCPServers {
			found++
			if s.Command != "skillstream" || len(s.Args) == 0 || s.Args[0] != "mcp" {
				t.Errorf("MCP server %q: %s %q is not skillstream mcp", name, s.Command, s.Args)
				continue
			}
			args := append([]string(nil), s.Args...)
			for i := range args {
				if i > 0 && args[i-1] == "--cwd" {
					args[i] = project
				}
			}
			runMCPTools(t, args, env)
		}
	}
	if found == 0 {
		t.Error("the README shows no MCP host configuration")
	}
}

// runMCPTools runs skillstream with args (an mcp command) on pipes,
// initializes, checks tools/list offers the skill tool listing the
// project's skill, and closes stdin: it must exit 0.
func runMCPTools(t *testing.T, args []string, env func(string) (string, bool)) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stderr := &syncBuffer{}
	a := &app{stdin: inR, stdout: outW, stderr: stderr, lookupEnv: env}
	done := make(chan int, 1)
	go func() {
		code := a.main(context.Background(), args)
		outW.Close()
		done <- code
	}()
	lines := bufio.NewScanner(outR)
	lines.Buffer(make([]byte, 1<<20), 16<<20)
	send := func(msg string) {
		if _, err := io.WriteString(inW, msg+"\n"); err != nil {
			t.Fatalf("mcp %q: %v; stderr:\n%s", args, err, stderr)
		}
	}
	recv := func(id int) string {
		for lines.Scan() {
			var m struct {
				ID *int `json:"id"`
			}
			if json.Unmarshal(lines.Bytes(), &m) == nil && m.ID != nil && *m.ID == id {
				return lines.Text()
			}
		}
		t.Fatalf("mcp %q: no response %d; stderr:\n%s", args, id, stderr)
		return ""
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`)
	recv(1)
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	eventually(t, 20*time.Second, "the skill tool lists commit-message", func() error {
		send(`{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{}}`)
		if r := recv(2); !strings.Contains(r, `"name":"skill"`) || !strings.Contains(r, "commit-message") {
			return fmt.Errorf("tools/list: %s", r)
		}
		return nil
	})
	go io.Copy(io.Discard, outR)
	inW.Close()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("mcp %q exited %d; stderr:\n%s", args, code, stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("mcp %q did not exit after stdin closed", args)
	}
}

// TestDocsCommandsParse: every skillstream command the documents show in
// a code span, an sh block or a transcript ("$ skillstream ...") names a
// command and flags that exist, parsed by that command's own flag set.
// Synopses with placeholders ([...], <...>, a|b, ...) are left out.
func TestDocsCommandsParse(t *testing.T) {
	checked := 0
	check := func(where, c string) {
		if i := strings.Index(c, " | "); i >= 0 {
			c = c[:i]
		}
		args, ok := skillstreamArgs(c)
		if !ok || len(args) == 0 || strings.ContainsAny(c, "[]<>|…$") || strings.Contains(c, "...") {
			return
		}
		checked++
		if err := parseCommandLine(args); err != nil {
			t.Errorf("%s: %s: %v", where, c, err)
		}
	}
	for _, rel := range docFiles {
		doc := readDoc(t, rel)
		for _, l := range mdLines(doc) {
			where := fmt.Sprintf("%s:%d", rel, l.n)
			switch l.fence {
			case "":
				for _, s := range codeSpan.FindAllString(l.text, -1) {
					check(where, strings.Trim(s, "`"))
				}
			case "-": // a transcript
				if s, ok := strings.CutPrefix(strings.TrimSpace(l.text), "$ "); ok {
					check(where, s)
				}
			}
		}
		for _, line := range shellLines(doc) {
			check(rel+" (sh)", line)
		}
	}
	t.Logf("%d command lines parsed", checked)
	if checked < 20 {
		t.Errorf("checked only %d command lines; is the extraction broken?", checked)
	}
}

// parseCommandLine parses args (without the program name) with the real
// command table and flag sets, without running anything.
func parseCommandLine(args []string) error {
	a := &app{stdout: io.Discard, stderr: io.Discard, lookupEnv: envMap(nil)}
	for _, sc := range commands() {
		if sc.name == args[0] {
			cmd, _ := sc.build(a)
			_, err := cmd.parse(args[1:], a.lookupEnv)
			return err
		}
	}
	return fmt.Errorf("no command %q", args[0])
}

// TestDocsCommandsParseRefusesUnknown: the parse check above would catch a
// renamed command or flag.
func TestDocsCommandsParseRefusesUnknown(t *testing.T) {
	if err := parseCommandLine([]string{"catalog", "--cwd", "/x", "--json"}); err != nil {
		t.Errorf("a valid line: %v", err)
	}
	if err := parseCommandLine([]string{"catalogue"}); err == nil {
		t.Error("an unknown command parsed")
	}
	if err := parseCommandLine([]string{"serve", "--no-such-flag"}); err == nil {
		t.Error("an unknown flag parsed")
	}
}

// TestDocsREADMEShowsTheTypeScriptWorker: the README's TypeScript code is
// examples/worker.ts's, verbatim (test/examples.test.ts runs that file
// against a real serve).
func TestDocsREADMEShowsTheTypeScriptWorker(t *testing.T) {
	src := readDoc(t, "events/client/typescript/examples/worker.ts")
	ts := blocks(readDoc(t, "README.md"), "ts")
	if len(ts) == 0 {
		t.Fatal("the README shows no TypeScript")
	}
	for _, b := range ts {
		if !strings.Contains(src, b) {
			t.Errorf("the README's TypeScript block is not in examples/worker.ts verbatim:\n%s", b)
		}
	}
}

// TestDocsREADMEListsEveryCommand: the README's command table has a row
// for each command of the program, in the program's order.
func TestDocsREADMEListsEveryCommand(t *testing.T) {
	row := regexp.MustCompile("(?m)^\\| `skillstream ([a-z-]+)")
	var got []string
	for _, m := range row.FindAllStringSubmatch(readDoc(t, "README.md"), -1) {
		got = append(got, m[1])
	}
	var want []string
	for _, sc := range commands() {
		want = append(want, sc.name)
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("README command table: %v\nthe program's commands: %v", got, want)
	}
}

// TestDocsWorkersAddress: the README says how a worker finds a serve that
// listens elsewhere, by the variable both example workers read, whose
// default is where serve listens by default.
func TestDocsWorkersAddress(t *testing.T) {
	readme := readDoc(t, "README.md")
	listen := "127.0.0.1:4222"
	cmd, _ := (&app{stdout: io.Discard, stderr: io.Discard, lookupEnv: envMap(nil)}).serveCommand()
	if f := cmd.fs.Lookup("listen"); f == nil || f.DefValue != listen {
		t.Fatalf("serve's --listen default is not %s", listen)
	}
	for file, reads := range map[string]string{
		"events/client/examples/worker/main.go":       `url := getenv("SKILLSTREAM_URL")`,
		"events/client/typescript/examples/worker.ts": `const url = process.env.SKILLSTREAM_URL ?? "nats://` + listen + `";`,
	} {
		if !strings.Contains(readDoc(t, file), reads) {
			t.Errorf("%s no longer reads the address as %q", file, reads)
		}
	}
	for _, want := range []string{
		"connect to `$SKILLSTREAM_URL`,\nby default `nats://" + listen + "`",
		"`SKILLSTREAM_URL=nats://127.0.0.1:5222 go run ./events/client/examples/worker`",
		"`SKILLSTREAM_URL=nats://127.0.0.1:5222 npm run worker`",
	} {
		if !strings.Contains(readme, want) {
			t.Errorf("the README does not say %q", want)
		}
	}
}

// TestDocsTypeScriptREADME: every document's code fences are closed; the
// TypeScript client's README says the package is ES modules and CommonJS,
// shows a whole worker app of type module and a CommonJS one requiring it (its
// test/readme.test.ts runs both against a real serve), and runs the
// example worker as it takes its arguments: a project folder, the address
// in SKILLSTREAM_URL.
func TestDocsTypeScriptREADME(t *testing.T) {
	for _, rel := range docFiles {
		open := 0
		for i, line := range strings.Split(readDoc(t, rel), "\n") {
			trimmed := strings.TrimSpace(line)
			switch {
			case open == 0 && strings.HasPrefix(trimmed, "```"):
				open = i + 1
			case open != 0 && trimmed == "```":
				open = 0
			}
		}
		if open != 0 {
			t.Errorf("%s: the code fence opened on line %d is never closed", rel, open)
		}
	}
	doc := readDoc(t, "events/client/typescript/README.md")
	for _, want := range []string{"ES modules and CommonJS", "`require()` its CommonJS build", "npm pkg set type=module", `"type": "module"`} {
		if !strings.Contains(doc, want) {
			t.Errorf("the TypeScript README does not say %q", want)
		}
	}
	js := blocks(doc, "js")
	if len(js) != 2 || !strings.Contains(js[0], `from "@skillstream/client";`) ||
		!strings.Contains(js[1], `= require("@skillstream/client");`) || strings.Contains(js[1], "import") {
		t.Errorf("the TypeScript README shows %d js blocks; want a worker importing the package, then CommonJS requiring it:\n%s", len(js), strings.Join(js, "\n"))
	}
	worker := 0
	for _, line := range regexp.MustCompile("[^`\n]*npm run worker[^`\n]*").FindAllString(doc, -1) {
		before, args, _ := strings.Cut(line, "npm run worker")
		worker++
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(args), "--"))
		if len(f) > 1 || len(f) == 1 && strings.Contains(f[0], "://") || !strings.Contains(before, "SKILLSTREAM_URL=nats://") {
			t.Errorf("the TypeScript README runs the worker as %q; it takes one project folder, and its address in SKILLSTREAM_URL", line)
		}
	}
	if worker == 0 {
		t.Error("the TypeScript README does not show how to run examples/worker.ts")
	}
}

// TestDocsREADMEIsAFrontDoor: the README stays short (what it is, a quick
// start, the tests, the structure); details belong in the manual.
func TestDocsREADMEIsAFrontDoor(t *testing.T) {
	const most = 249
	if n := strings.Count(readDoc(t, "README.md"), "\n"); n > most {
		t.Errorf("the README has %d lines; keep it to %d and move details into cmd/skillstream/MANUAL.md", n, most)
	}
}

// TestDocsTestCommandSaysWhatToExpect: `go test ./...` runs for minutes
// and prints nothing while a slow package runs; the README's line says so
// beside the command, and the manual's Tests section says how to watch
// progress.
func TestDocsTestCommandSaysWhatToExpect(t *testing.T) {
	said := false
	for _, b := range blocks(readDoc(t, "README.md"), "sh") {
		for _, line := range strings.Split(b, "\n") {
			cmd, comment, _ := strings.Cut(line, " #")
			if strings.TrimSpace(cmd) == "go test ./..." {
				said = strings.Contains(comment, "minutes") && strings.Contains(comment, "each package ends")
				if !said {
					t.Errorf("the README's test command does not say how long it runs and when it prints: %q", line)
				}
			}
		}
	}
	if !said {
		t.Error("the README shows no go test ./... line saying what to expect")
	}
	manual := readDoc(t, "cmd/skillstream/MANUAL.md")
	tests := manual[strings.Index(manual, "\n## Tests\n"):]
	for _, want := range []string{"go test -json ./...", "-p 1"} {
		if !strings.Contains(tests, want) {
			t.Errorf("the manual's Tests section does not say %q", want)
		}
	}
}
