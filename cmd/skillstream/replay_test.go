package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/processor"
	"github.com/skillstream/skillstream/processor/demo"
	"github.com/skillstream/skillstream/processor/embedded"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
	"github.com/skillstream/skillstream/providers/search"
)

// replayProject writes a project with three skills and a .git marker and
// returns the session working directory inside it.
func replayProject(t testing.TB) string {
	t.Helper()
	root := filepath.Join(t.TempDir(), "project")
	writeFile(t, root, ".git/HEAD", "ref: refs/heads/main\n")
	writeFile(t, root, ".agents/skills/a-skill/SKILL.md", skillMD("Imperative subject line.",
		"name: a-skill", "description: Write commit messages that <explain> why & what."))
	writeFile(t, root, ".agents/skills/b-skill/SKILL.md", skillMD("Read the whole diff.",
		"name: b-skill", "description: Review a pull request."))
	writeFile(t, root, ".agents/skills/release-notes.md", skillMD("Group by effect.",
		"name: release-notes", "description: Draft release notes from merged changes."))
	cwd := filepath.Join(root, "src")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	return cwd
}

// rig is a real processor over project folders on an embedded server
// whose store is a directory.
type rig struct {
	ctx  context.Context
	nc   *nats.Conn
	reg  *providers.Registry
	stop func()
}

// startRig starts the processor on an embedded server storing in dir; stop
// shuts everything down and leaves the store closed.
func startRig(t *testing.T, dir string) *rig {
	t.Helper()
	return startRigWith(t, dir, processor.Config{})
}

// startRigWith is startRig with the processor configured by cfg (and
// given a search index when cfg turns search on).
func startRigWith(t *testing.T, dir string, cfg processor.Config) *rig {
	t.Helper()
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	var stops []func()
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	srv, err := embedded.Start(embedded.Options{Name: "replay-test", StoreDir: dir}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	stops = append(stops, func() { srv.Shutdown(); srv.WaitForShutdown() })
	nc, err := embedded.Connect(srv, "replay-test")
	if err != nil {
		stop()
		t.Fatal(err)
	}
	stops = append(stops, nc.Close)
	fs, err := agentskills.New(agentskills.Config{NoUserDir: true, NoWatch: true})
	if err != nil {
		stop()
		t.Fatal(err)
	}
	reg := providers.NewRegistry([]providers.Provider{fs})
	stops = append(stops, func() { reg.Close() })
	popts := []processor.Option{processor.WithLogger(quiet)}
	if cfg.Catalog.SkillSearch {
		// The search index, as serve builds it.
		ix := search.New(reg, search.Options{})
		stops = append(stops, func() { ix.Close() })
		popts = append(popts, processor.WithSearcher(ix))
	}
	p, err := processor.New(nc, reg, cfg, popts...)
	if err != nil {
		stop()
		t.Fatal(err)
	}
	pctx, cancelRun := context.WithTimeout(context.Background(), 60*time.Second)
	done := make(chan error, 1)
	go func() { done <- p.Run(pctx) }()
	stops = append(stops, func() {
		cancelRun()
		if err := <-done; err != nil {
			t.Errorf("processor: %v", err)
		}
	})
	// The recorded triggers carry no deadline (the recording must not
	// depend on the clock): the worker's context is bounded by a timer
	// instead of a deadline.
	ctx, cancelPlay := context.WithCancel(context.Background())
	bound := time.AfterFunc(60*time.Second, cancelPlay)
	stops = append(stops, func() { bound.Stop(); cancelPlay() })
	return &rig{ctx: ctx, nc: nc, reg: reg, stop: stop}
}

// playStore runs the real processor on an embedded server whose store is
// dir, plays session sid (initial catalog, unchanged, two calls, compaction,
// re-established catalog, tombstone when another owner's tool shadows ours,
// replacement, unchanged) and stops everything, leaving the store closed.
func playStore(t *testing.T, dir, cwd, sid string) {
	t.Helper()
	rig := startRig(t, dir)
	defer rig.stop()
	ctx, nc := rig.ctx, rig.nc
	w, err := demo.NewWorker(nc, events.DefaultPrefix, sid, processor.DefaultToolOwner)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	shadowed, err := demo.NewWorker(nc, events.DefaultPrefix, sid, "someone-else")
	if err != nil {
		t.Fatal(err)
	}
	defer shadowed.Close()
	expect := func(what, got, want string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got != want {
			t.Fatalf("%s: got %s, want %s", what, got, want)
		}
	}
	d, err := w.PreStep(ctx, "1", cwd)
	expect("step 1", d.Outcome, events.OutcomeAppended, err)
	d, err = w.PreStep(ctx, "2", cwd)
	expect("step 2", d.Outcome, events.OutcomeUnchanged, err)
	r, err := w.Call(ctx, "call-1", cwd, "b-skill")
	expect("call-1", r.Text[:15], "<skill_content ", err)
	r, err = w.Call(ctx, "call-2", cwd, "no-such-skill")
	expect("call-2", r.Text, `Error: skill "no-such-skill" is unknown or no longer available`, err)
	seq, err := w.Append(ctx, "message.user", map[string]any{"v": 1, "text": "hi"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = w.Compact(ctx, seq+1)
	expect("compact", "", "", err)
	d, err = w.PreStep(ctx, "3", cwd)
	expect("step 3", d.Outcome, events.OutcomeAppended, err)
	d, err = shadowed.PreStep(ctx, "4", cwd)
	expect("step 4", d.Outcome, events.OutcomeAppended, err)
	if d.Catalog == nil || len(d.Catalog.Source.Entries) != 0 {
		t.Fatalf("step 4 is not a tombstone: %+v", d.Catalog)
	}
	d, err = w.PreStep(ctx, "5", cwd)
	expect("step 5", d.Outcome, events.OutcomeAppended, err)
	d, err = w.PreStep(ctx, "6", cwd)
	expect("step 6", d.Outcome, events.OutcomeUnchanged, err)
}

// quietAddr returns a loopback address nothing listens on.
func quietAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

var onlyProject = []string{"--no-bundled", "--user-skills-dir="}

func TestExportReplayHistoryEndToEnd(t *testing.T) {
	dir := t.TempDir()
	cwd := replayProject(t)
	playStore(t, dir, cwd, "s1")
	store := []string{"--data", dir, "--listen", quietAddr(t)}
	rec := filepath.Join(t.TempDir(), "s1.jsonl")

	code, _, stderr := runMain(t, append([]string{"export", "--session", "s1", "--out", rec}, store...)...)
	if code != exitOK {
		t.Fatalf("export: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stderr, "exported 16 events of session s1") {
		t.Errorf("export stderr: %s", stderr)
	}
	keep(t, rec, "plain.jsonl")

	// Replayed against the unchanged skills: identical, exit 0, and the
	// same bytes every time.
	code, out, stderr := runMain(t, append([]string{"replay", rec}, onlyProject...)...)
	if code != exitOK {
		t.Fatalf("replay: exit %d\n%s%s", code, out, stderr)
	}
	golden(t, "replay/identical.golden", out)
	if _, again, _ := runMain(t, append([]string{"replay", rec}, onlyProject...)...); again != out {
		t.Errorf("second replay printed other bytes:\n%s", again)
	}

	// The same session straight from the store.
	code, live, stderr := runMain(t, append(append([]string{"replay", "--live", "--session", "s1"}, store...), onlyProject...)...)
	if code != exitOK || live != out {
		t.Errorf("replay --live: exit %d, output differs from the file's:\n%s%s", code, live, stderr)
	}

	// History: the catalog the model saw at each step, and one step's text.
	code, out, stderr = runMain(t, "history", rec)
	if code != exitOK {
		t.Fatalf("history: exit %d\n%s", code, stderr)
	}
	golden(t, "replay/history.golden", out)
	code, out, _ = runMain(t, "history", rec, "--step", "4")
	if code != exitOK || !strings.Contains(out, "<available_skills>\n</available_skills>\n\nNo skills are currently available") {
		t.Errorf("history --step 4: exit %d\n%s", code, out)
	}
	code, liveHist, _ := runMain(t, append([]string{"history", "--session", "s1"}, store...)...)
	if code != exitOK || !strings.HasPrefix(liveHist, "step 1 (seq 1): catalog seq 2 (initial, step 1), 3 entries") {
		t.Errorf("history --session: exit %d\n%s", code, liveHist)
	}

	// A description edited on disk: exactly the steps whose catalog text
	// depends on it differ, with a readable diff; exit 1.
	path := filepath.Join(filepath.Dir(cwd), ".agents/skills/b-skill/SKILL.md")
	writeFile(t, filepath.Dir(path), "SKILL.md", skillMD("Read the whole diff.", "name: b-skill", "description: Review a pull request carefully."))
	code, out, stderr = runMain(t, append([]string{"replay", rec}, onlyProject...)...)
	if code != exitFailure {
		t.Fatalf("replay after the edit: exit %d\n%s%s", code, out, stderr)
	}
	golden(t, "replay/changed.golden", out)

	// --json: one object per trigger, then the summary.
	code, out, _ = runMain(t, append([]string{"replay", rec, "--json"}, onlyProject...)...)
	if code != exitFailure {
		t.Fatalf("replay --json: exit %d", code)
	}
	var differ []string
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(nil, 1<<20)
	var last map[string]any
	for sc.Scan() {
		var step struct {
			ID      string `json:"id"`
			Differs bool   `json:"differs"`
			Diff    string `json:"diff"`
		}
		if err := json.Unmarshal(sc.Bytes(), &step); err != nil {
			t.Fatalf("--json line %q: %v", sc.Text(), err)
		}
		if step.Differs {
			differ = append(differ, step.ID)
		}
		last = nil
		json.Unmarshal(sc.Bytes(), &last)
	}
	if strings.Join(differ, ",") != "1,2,3,5,6" {
		t.Errorf("differing steps in --json: %v", differ)
	}
	if s, ok := last["summary"].(map[string]any); !ok || s["differ"] != float64(5) || s["triggers"] != float64(8) {
		t.Errorf("summary line: %v", last)
	}
}

func TestReplayRecordedSkills(t *testing.T) {
	dir := t.TempDir()
	cwd := replayProject(t)
	playStore(t, dir, cwd, "s2")
	rec := filepath.Join(t.TempDir(), "s2.jsonl")
	args := append([]string{"export", "--session", "s2", "--out", rec, "--capture-skills", "--data", dir, "--listen", quietAddr(t)}, onlyProject...)
	if code, _, stderr := runMain(t, args...); code != exitOK {
		t.Fatalf("export: exit %d\n%s", code, stderr)
	}
	keep(t, rec, "session.jsonl")
	if err := os.RemoveAll(filepath.Join(filepath.Dir(cwd), ".agents")); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runMain(t, append([]string{"replay", rec, "--recorded-skills"}, onlyProject...)...)
	if code != exitOK || !strings.HasSuffix(out, "8 triggers replayed: 8 same, 0 differ\n") {
		t.Errorf("replay --recorded-skills: exit %d\n%s%s", code, out, stderr)
	}
	// Without the capture the skills are gone: the replay differs.
	if code, _, _ := runMain(t, append([]string{"replay", rec}, onlyProject...)...); code != exitFailure {
		t.Errorf("replay against the removed skills: exit %d, want 1", code)
	}
}

func TestReplayBadInput(t *testing.T) {
	good, err := os.ReadFile("testdata/replay/session.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	lines := strings.SplitAfter(string(good), "\n")
	corrupt := strings.Join(lines[:3], "") + "{\"type\":\"event\",\"seq\":\n" + strings.Join(lines[4:], "")
	// Well-formed records whose bytes no longer match the end checksum.
	altered := strings.Replace(string(good), `why \u0026 what.`, `why \u0026 WHAT.`, 1)
	if altered == string(good) {
		t.Fatal("the recording changed: nothing altered")
	}
	// hint: a flag error points at --help; bad input does not.
	tests := []struct {
		name string
		args []string
		want []string // in stderr
		hint bool
	}{
		{"corrupt", []string{"replay", write("corrupt.jsonl", []byte(corrupt))},
			[]string{"corrupt recording: record 4 (byte offset " + strconv.Itoa(len(lines[0])+len(lines[1])+len(lines[2])) + ")"}, false},
		{"truncated", []string{"replay", write("truncated.jsonl", good[:len(good)-200])},
			[]string{"truncated recording: record", "byte offset", "ends without a newline"}, false},
		{"altered", []string{"replay", write("altered.jsonl", []byte(altered))},
			[]string{"checksum mismatch: the bytes before the end record were altered"}, false},
		{"history truncated", []string{"history", filepath.Join(dir, "truncated.jsonl")}, []string{"truncated recording"}, false},
		{"history altered", []string{"history", filepath.Join(dir, "altered.jsonl")}, []string{"checksum mismatch"}, false},
		{"newer version", []string{"replay", write("v9.jsonl", []byte(`{"format":"skillstream-recording","version":9,"session":"s"}`+"\n"))},
			[]string{"format version 9 is newer than the newest this skillstream reads (1)"}, false},
		{"not a recording", []string{"replay", write("x.json", []byte("{}\n"))}, []string{`format is ""`}, false},
		{"missing file", []string{"replay", filepath.Join(dir, "absent.jsonl")}, []string{"open recording"}, false},
		{"no file", []string{"replay"}, []string{"replay needs one recording file"}, true},
		{"live without session", []string{"replay", "--live"}, []string{"--session is required"}, true},
		{"bad cwd map", []string{"replay", "x", "--cwd-map", "nope"}, []string{`cwd mapping "nope": want OLD=NEW`}, true},
		{"as recorded and recorded skills", []string{"replay", "x", "--as-recorded", "--recorded-skills"}, []string{"--as-recorded and --recorded-skills exclude each other"}, true},
		{"as recorded with a cwd map", []string{"replay", "x", "--as-recorded", "--cwd-map", "/a=/b"}, []string{"--cwd-map applies to today's skills"}, true},
		{"recorded skills missing", append([]string{"replay", "testdata/replay/plain.jsonl", "--recorded-skills"}, onlyProject...),
			[]string{"holds no captured skills"}, false},
		{"history corrupt", []string{"history", filepath.Join(dir, "corrupt.jsonl")}, []string{"byte offset"}, false},
		{"history missing step", []string{"history", "testdata/replay/plain.jsonl", "--step", "nope"}, []string{`step "nope" is not in the session`}, false},
		{"export without session", []string{"export"}, []string{"--session is required"}, true},
		{"export bad session", []string{"export", "--session", "a.b"}, []string{"--session: bad session token"}, true},
		{"export no store", []string{"export", "--session", "s", "--data", filepath.Join(dir, "nostore"), "--listen", quietAddr(t)}, []string{"no such store directory"}, true},
		{"export empty stream", []string{"export", "--session", "s", "--stream", ""}, []string{`stream name ""`}, true},
		{"history bad prefix", []string{"history", "--session", "s", "--prefix", "a.>"}, []string{"subject prefix"}, true},
		{"export serve-only flag", []string{"export", "--session", "s", "--workers", "2"}, []string{"flag provided but not defined: -workers"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runMain(t, tt.args...)
			if code != exitUsage {
				t.Errorf("exit %d, want %d\nstdout: %s\nstderr: %s", code, exitUsage, stdout, stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr %q does not mention %q", stderr, w)
				}
			}
			// Refused before anything is printed: no diff of a recording
			// that cannot be trusted.
			if stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			if hint := strings.Contains(stderr, "--help)"); hint != tt.hint {
				t.Errorf("stderr %q: points at --help %v, want %v", stderr, hint, tt.hint)
			}
		})
	}
}

// TestReaderCommandsTakeOnlyWhatTheyUse checks that export, replay,
// history and eval register no serve-only flag and ignore serve-only variables, and
// keeps their manuals as golden files.
func TestReaderCommandsTakeOnlyWhatTheyUse(t *testing.T) {
	serveOnly := []string{"workers", "ack-wait", "max-deliver", "no-provision", "replicas", "max-age",
		"duplicate-window", "server-name", "consumer", "metrics-listen", "usage-projection", "no-usage-projection"}
	for _, name := range []string{"export", "replay", "history", "eval"} {
		code, out, _ := runMain(t, name, "--help")
		if code != exitOK {
			t.Fatalf("%s --help: exit %d", name, code)
		}
		for _, f := range serveOnly {
			if strings.Contains(out, "--"+f+" ") || strings.Contains(out, "--"+f+"\n") {
				t.Errorf("%s --help lists serve's --%s", name, f)
			}
		}
		sep := fmt.Sprintf("%q-separated", string(os.PathListSeparator))
		golden(t, "help_"+name+".golden", strings.ReplaceAll(out, sep, `":"-separated`))
	}
	// A bad serve-only setting in the environment is not the readers'
	// business: export gets as far as the missing store.
	t.Setenv("SKILLSTREAM_WORKERS", "-1")
	t.Setenv("SKILLSTREAM_METRICS_LISTEN", "nowhere")
	code, _, stderr := runMain(t, "export", "--session", "s", "--data", filepath.Join(t.TempDir(), "none"), "--listen", quietAddr(t))
	if code != exitUsage || !strings.Contains(stderr, "no such store directory") {
		t.Errorf("export with serve-only variables set: exit %d, %s", code, stderr)
	}
}

// TestReadersGoThroughRunningServer runs export, history and replay --live
// while serve runs on the store they would open: they read through it.
func TestReadersGoThroughRunningServer(t *testing.T) {
	dir := t.TempDir()
	cwd := replayProject(t)
	playStore(t, dir, cwd, "s1")
	srv := startServe(t, dir, t.TempDir())
	store := []string{"--data", dir, "--listen", strings.TrimPrefix(srv.url, "nats://")}
	through := "reading through the server running on --listen"

	rec := filepath.Join(t.TempDir(), "s1.jsonl")
	code, _, stderr := runMain(t, append([]string{"export", "--session", "s1", "--out", rec}, store...)...)
	if code != exitOK || !strings.Contains(stderr, "exported 16 events of session s1") || !strings.Contains(stderr, through) {
		t.Fatalf("export: exit %d\n%s", code, stderr)
	}
	code, out, stderr := runMain(t, append([]string{"history", "--session", "s1"}, store...)...)
	if code != exitOK || !strings.HasPrefix(out, "step 1 (seq 1): catalog seq 2 (initial, step 1), 3 entries") || !strings.Contains(stderr, through) {
		t.Errorf("history --session: exit %d\n%s%s", code, out, stderr)
	}
	code, live, stderr := runMain(t, append(append([]string{"replay", "--live", "--session", "s1"}, store...), onlyProject...)...)
	_, fromFile, _ := runMain(t, append([]string{"replay", rec}, onlyProject...)...)
	if code != exitOK || live != fromFile || !strings.Contains(stderr, through) {
		t.Errorf("replay --live: exit %d, output differs from the file's:\n%s%s", code, live, stderr)
	}

	// --capture-skills says whose skills it records, and compares them
	// with what the serving member sees: the same flags give its catalog.
	code, _, stderr = runMain(t, append([]string{"export", "--session", "s1", "--out", rec, "--capture-skills", "--no-bundled", "--user-skills-dir="}, store...)...)
	if code != exitOK || !strings.Contains(stderr, "this export's own skill flags") || !strings.Contains(stderr, "give the catalog each of the 1 serving members decides") {
		t.Errorf("export --capture-skills: exit %d\n%s", code, stderr)
	}
	// An extra skills folder the member does not have: said clearly.
	extra := t.TempDir()
	writeFile(t, extra, "extra-skill/SKILL.md", "---\nname: extra-skill\ndescription: Only here.\n---\nBody.\n")
	code, _, stderr = runMain(t, append([]string{"export", "--session", "s1", "--out", rec, "--capture-skills", "--no-bundled", "--user-skills-dir=", "--skills-dir", extra}, store...)...)
	if code != exitOK || !strings.Contains(stderr, "DIFFERS: for "+cwd+" member ") {
		t.Errorf("export --capture-skills with other skills than the member's: exit %d\n%s", code, stderr)
	}

	// Something that is not a NATS server on --listen: a clear error, and
	// the store is not opened.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	code, _, stderr = runMain(t, "export", "--session", "s1", "--data", t.TempDir(), "--listen", ln.Addr().String())
	if code != exitFailure || !strings.Contains(stderr, "answers on --listen "+ln.Addr().String()+" but reading through it failed") {
		t.Errorf("not a NATS server: exit %d, stderr %s", code, stderr)
	}
}

// TestReplayGoldenRecording replays the committed recording: identical.
func TestReplayGoldenRecording(t *testing.T) {
	code, out, stderr := runMain(t, append([]string{"replay", "testdata/replay/session.jsonl", "--recorded-skills"}, onlyProject...)...)
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, stderr)
	}
	golden(t, "replay/golden-replay.golden", out)
}

// keep copies a recording into testdata/replay when -update is given.
func keep(t *testing.T, src, name string) {
	t.Helper()
	if !*update {
		return
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join("testdata/replay", name), b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestMakeLargeSession builds a store holding one long session, played
// through the real processor, for measuring export and replay by hand (see
// cmd/skillstream/MANUAL.md). It runs only when SKILLSTREAM_LARGE_STORE names a directory:
//
//	SKILLSTREAM_LARGE_STORE=/tmp/big go test ./cmd/skillstream -run TestMakeLargeSession -timeout 30m
//
// The store is DIR/store, the skills project DIR/project, the session "big"
// with SKILLSTREAM_LARGE_EVENTS events (default 100000): per turn a pre-step
// and nine other events (messages, another tool's calls and results, about
// 300 bytes each), a skill call every 50 turns, a compaction every 1000.
func TestMakeLargeSession(t *testing.T) {
	dir := os.Getenv("SKILLSTREAM_LARGE_STORE")
	if dir == "" {
		t.Skip("set SKILLSTREAM_LARGE_STORE=DIR to build a large session store")
	}
	total := 100000
	if v := os.Getenv("SKILLSTREAM_LARGE_EVENTS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			t.Fatal(err)
		}
		total = n
	}
	project := filepath.Join(dir, "project")
	writeFile(t, project, ".git/HEAD", "ref: refs/heads/main\n")
	for i := range 20 {
		name := "skill-" + strconv.Itoa(i)
		writeFile(t, project, ".agents/skills/"+name+"/SKILL.md", skillMD("Body of "+name+".",
			"name: "+name, "description: Does task number "+strconv.Itoa(i)+" carefully and well."))
	}
	cwd := filepath.Join(project, "src")
	if err := os.MkdirAll(cwd, 0o755); err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	srv, err := embedded.Start(embedded.Options{Name: "large", StoreDir: filepath.Join(dir, "store")}, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Shutdown(); srv.WaitForShutdown() }()
	nc, err := embedded.Connect(srv, "large")
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	fs, err := agentskills.New(agentskills.Config{NoUserDir: true})
	if err != nil {
		t.Fatal(err)
	}
	reg := providers.NewRegistry([]providers.Provider{fs})
	defer reg.Close()
	p, err := processor.New(nc, reg, processor.Config{}, processor.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	pctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(pctx) }()
	defer func() { stop(); <-done }()
	w, err := demo.NewWorker(nc, events.DefaultPrefix, "big", processor.DefaultToolOwner)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	filler := map[string]any{"v": 1, "text": strings.Repeat("lorem ipsum ", 24)}
	kinds := []events.Kind{"message.user", "message.assistant", "tool.call.read", "tool.result.read"}
	start := time.Now()
	var last uint64
	for turn := 0; int(last) < total; turn++ {
		tctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		if turn%1000 == 999 {
			if _, err := w.Compact(tctx, last+1); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.PreStep(tctx, "step-"+strconv.Itoa(turn), cwd); err != nil {
			t.Fatal(err)
		}
		if turn%50 == 0 {
			if _, err := w.Call(tctx, "call-"+strconv.Itoa(turn), cwd, "skill-"+strconv.Itoa(turn%20)); err != nil {
				t.Fatal(err)
			}
		}
		for i := range 9 {
			if last, err = w.Append(tctx, kinds[i%len(kinds)], filler); err != nil {
				t.Fatal(err)
			}
		}
		cancel()
	}
	t.Logf("session big: %d events in %v, store %s, cwd %s", last, time.Since(start).Round(time.Millisecond), filepath.Join(dir, "store"), cwd)
}

// waitSkills polls the registry until check accepts what it gives for cwd.
func waitSkills(t *testing.T, r *rig, cwd, what string, check func(catalog.Snapshot, string) bool) {
	t.Helper()
	q := catalog.At(cwd)
	deadline := time.Now().Add(20 * time.Second)
	for {
		snap, err := r.reg.Snapshot(r.ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		body := ""
		if sk, err := r.reg.Load(r.ctx, "b-skill", q); err == nil {
			body = sk.Content
		}
		if snap.Complete && check(snap, body) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the registry never showed %s: %+v", what, snap)
		}
	}
}

// describes reports whether snap lists name with description desc ("" for
// absent).
func describes(snap catalog.Snapshot, name, desc string) bool {
	for _, s := range snap.Skills {
		if s.Name == name {
			return s.Description == desc
		}
	}
	return desc == ""
}

// TestReplayAsRecorded plays a session whose skills change while it runs
// (a skill added, a description edited, a body edited, a skill removed),
// then replays it: against today's skills the early triggers differ; with
// --as-recorded every trigger is decided against the skills the session
// saw at that point, and an unchanged processor reproduces every output.
func TestReplayAsRecorded(t *testing.T) {
	dir := t.TempDir()
	cwd := replayProject(t)
	skills := filepath.Join(filepath.Dir(cwd), ".agents/skills")
	rig := startRig(t, dir)
	w, err := demo.NewWorker(rig.nc, events.DefaultPrefix, "s3", processor.DefaultToolOwner)
	if err != nil {
		rig.stop()
		t.Fatal(err)
	}
	step := func(id, want string) {
		t.Helper()
		d, err := w.PreStep(rig.ctx, id, cwd)
		if err != nil || d.Outcome != want {
			t.Fatalf("step %s: %+v %v, want %s", id, d, err, want)
		}
	}
	call := func(id, name, want string) {
		t.Helper()
		r, err := w.Call(rig.ctx, id, cwd, name)
		if err != nil || !strings.Contains(r.Text, want) {
			t.Fatalf("call %s: %q %v, want %q in it", id, r.Text, err, want)
		}
	}
	step("1", events.OutcomeAppended)
	call("c1", "b-skill", "Read the whole diff.")
	writeFile(t, skills, "c-skill/SKILL.md", skillMD("Check the build.", "name: c-skill", "description: Added while the session ran."))
	waitSkills(t, rig, cwd, "c-skill", func(s catalog.Snapshot, _ string) bool {
		return describes(s, "c-skill", "Added while the session ran.")
	})
	step("2", events.OutcomeAppended)
	writeFile(t, skills, "a-skill/SKILL.md", skillMD("Imperative subject line.", "name: a-skill", "description: Write commit messages, edited."))
	waitSkills(t, rig, cwd, "a-skill's new description", func(s catalog.Snapshot, _ string) bool {
		return describes(s, "a-skill", "Write commit messages, edited.")
	})
	step("3", events.OutcomeAppended)
	writeFile(t, skills, "b-skill/SKILL.md", skillMD("Read the whole diff, then the tests.", "name: b-skill", "description: Review a pull request."))
	waitSkills(t, rig, cwd, "b-skill's new body", func(_ catalog.Snapshot, body string) bool { return body == "Read the whole diff, then the tests." })
	step("4", events.OutcomeUnchanged)
	call("c2", "b-skill", "Read the whole diff, then the tests.")
	if err := os.Remove(filepath.Join(skills, "release-notes.md")); err != nil {
		t.Fatal(err)
	}
	waitSkills(t, rig, cwd, "release-notes removed", func(s catalog.Snapshot, _ string) bool { return describes(s, "release-notes", "") })
	step("5", events.OutcomeAppended)
	call("c3", "release-notes", `skill "release-notes" is unknown or no longer available`)
	call("c4", "c-skill", "Check the build.")
	w.Close()
	rig.stop()

	store := []string{"--data", dir, "--listen", quietAddr(t)}
	rec := filepath.Join(t.TempDir(), "s3.jsonl")
	if code, _, stderr := runMain(t, append([]string{"export", "--session", "s3", "--out", rec}, store...)...); code != exitOK {
		t.Fatalf("export: exit %d\n%s", code, stderr)
	}
	// Today's skills are the last ones: every trigger before the last
	// change differs.
	code, out, stderr := runMain(t, append([]string{"replay", rec}, onlyProject...)...)
	if code != exitFailure || !strings.HasSuffix(out, "9 triggers replayed: 4 same, 5 differ\n") {
		t.Errorf("replay against today's skills: exit %d\n%s%s", code, out, stderr)
	}
	var differ []string
	for _, line := range strings.Split(out, "\n") {
		if strings.HasPrefix(line, "seq ") && strings.HasSuffix(line, ": DIFFERS") {
			differ = append(differ, strings.SplitN(line, ":", 2)[0])
		}
	}
	if got := strings.Join(differ, ", "); got != "seq 1 step 1, seq 3 call c1 (b-skill), seq 5 step 2, seq 7 step 3, seq 9 step 4" {
		t.Errorf("replay against today's skills: differing triggers %s\n%s", got, out)
	}
	// As recorded: every trigger the same, exit 0, from the file and live.
	code, out, stderr = runMain(t, "replay", rec, "--as-recorded")
	if code != exitOK || !strings.HasSuffix(out, "9 triggers replayed: 9 same, 0 differ\n") {
		t.Errorf("replay --as-recorded: exit %d\n%s%s", code, out, stderr)
	}
	code, live, stderr := runMain(t, append([]string{"replay", "--live", "--session", "s3", "--as-recorded"}, store...)...)
	if code != exitOK || live != out {
		t.Errorf("replay --live --as-recorded: exit %d, output differs from the file's:\n%s%s", code, live, stderr)
	}
}

// TestReplayWithCatalogHeads plays a session whose catalog is large enough
// to get a head, exports it and replays it: the heads are in the
// recording, and replay, which reads catalogs only, finds every trigger the
// same; history reads it too.
func TestReplayWithCatalogHeads(t *testing.T) {
	dir := t.TempDir()
	cwd := replayProject(t)
	root := filepath.Dir(cwd)
	for i := range 150 {
		name := fmt.Sprintf("skill-%03d", i)
		writeFile(t, root, ".agents/skills/"+name+"/SKILL.md", skillMD("Body.", "name: "+name,
			"description: "+strings.Repeat("Handles one more kind of chore for the test. ", 3)))
	}
	rig := startRig(t, dir)
	w, err := demo.NewWorker(rig.nc, events.DefaultPrefix, "big", processor.DefaultToolOwner)
	if err != nil {
		rig.stop()
		t.Fatal(err)
	}
	waitSkills(t, rig, cwd, "150 more skills", func(s catalog.Snapshot, _ string) bool { return len(s.Skills) == 153 })
	for i, want := range []string{events.OutcomeAppended, events.OutcomeUnchanged, events.OutcomeUnchanged} {
		d, err := w.PreStep(rig.ctx, fmt.Sprint(i+1), cwd)
		if err != nil || d.Outcome != want {
			w.Close()
			rig.stop()
			t.Fatalf("step %d: %+v %v, want %s", i+1, d, err, want)
		}
	}
	w.Close()
	rig.stop()

	store := []string{"--data", dir, "--listen", quietAddr(t)}
	rec := filepath.Join(t.TempDir(), "big.jsonl")
	if code, _, stderr := runMain(t, append([]string{"export", "--session", "big", "--out", rec}, store...)...); code != exitOK {
		t.Fatalf("export: exit %d\n%s", code, stderr)
	}
	b, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), `"ev.big.catalog.head"`); n != 1 {
		t.Fatalf("recording holds %d catalog heads, want 1", n)
	}
	code, out, stderr := runMain(t, append([]string{"replay", rec}, onlyProject...)...)
	if code != exitOK || !strings.HasSuffix(out, "3 triggers replayed: 3 same, 0 differ\n") {
		t.Fatalf("replay: exit %d\n%s%s", code, out, stderr)
	}
	code, out, stderr = runMain(t, "history", rec)
	if code != exitOK || !strings.Contains(out, "step 3 (seq 5): catalog seq 3 (initial, step 1), 153 entries") {
		t.Fatalf("history: exit %d\n%s%s", code, out, stderr)
	}
}
