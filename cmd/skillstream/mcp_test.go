package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf16"
)

// TestMCPStdio runs `skillstream mcp` as a host would spawn it: MCP on
// stdin and stdout, the skills a load in --cwd would see, project skills
// included.
func TestMCPStdio(t *testing.T) {
	root := spec4Skills(t)
	project := t.TempDir()
	os.Mkdir(filepath.Join(project, ".git"), 0o755)
	writeFile(t, project, ".agents/skills/project-skill/SKILL.md", skillMD("Project body.", "name: project-skill", "description: From the project."))
	writeFile(t, project, ".agents/skills/project-skill/refs/notes.md", "notes")

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	stderr := &syncBuffer{}
	a := &app{stdin: inR, stdout: outW, stderr: stderr, lookupEnv: func(string) (string, bool) { return "", false }}
	done := make(chan int, 1)
	go func() {
		code := a.main(context.Background(), []string{"mcp", "--no-bundled", "--user-skills-dir=", "--no-skill-store", "--skills-dir", root, "--cwd", project})
		outW.Close()
		done <- code
	}()
	lines := bufio.NewScanner(outR)
	lines.Buffer(make([]byte, 1<<20), 16<<20)
	send := func(msg string) {
		t.Helper()
		if _, err := io.WriteString(inW, msg+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	// recv returns the response with id, skipping notifications.
	recv := func(id int) json.RawMessage {
		t.Helper()
		for lines.Scan() {
			var m struct {
				ID     *int            `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if err := json.Unmarshal(lines.Bytes(), &m); err != nil {
				t.Fatalf("stdout line is not JSON-RPC: %q", lines.Text())
			}
			if m.ID != nil && *m.ID == id {
				if m.Error != nil {
					return m.Error
				}
				return m.Result
			}
		}
		t.Fatalf("no response %d; stderr:\n%s", id, stderr)
		return nil
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}}}`)
	init := recv(1)
	if !strings.Contains(string(init), `"io.modelcontextprotocol/skills":{"directoryRead":true}`) {
		t.Errorf("initialize: %s", init)
	}
	send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	var list struct {
		Skills []struct {
			URI string `json:"uri"`
		} `json:"skills"`
	}
	var uris []string
	eventually(t, 20*time.Second, "skills listed", func() error {
		send(`{"jsonrpc":"2.0","id":2,"method":"skills/list","params":{}}`)
		if err := json.Unmarshal(recv(2), &list); err != nil {
			return err
		}
		uris = uris[:0]
		for _, s := range list.Skills {
			uris = append(uris, s.URI)
		}
		if len(uris) != 5 {
			return fmt.Errorf("listed %v", uris)
		}
		return nil
	})
	want := "skill://a-skill/SKILL.md skill://model-only-skill/SKILL.md skill://project-skill/SKILL.md skill://user-only-skill/SKILL.md skill://z-skill/SKILL.md"
	if strings.Join(uris, " ") != want {
		t.Errorf("skills: %v", uris)
	}
	send(`{"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"skill://project-skill/refs/notes.md"}}`)
	if r := recv(3); !strings.Contains(string(r), `"text":"notes"`) {
		t.Errorf("resources/read: %s", r)
	}
	send(`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"skill","arguments":{"name":"a-skill"}}}`)
	var call struct {
		Content []struct{ Text string } `json:"content"`
		IsError bool                    `json:"isError"`
	}
	json.Unmarshal(recv(4), &call)
	code, loadOut, _ := runMain(t, append([]string{"load", "a-skill"}, "--no-bundled", "--user-skills-dir=", "--no-skill-store", "--skills-dir", root, "--cwd", project)...)
	if call.IsError || len(call.Content) != 1 || code != exitOK || call.Content[0].Text+"\n" != loadOut {
		t.Errorf("tools/call: %+v, load says:\n%s", call, loadOut)
	}
	send(`{"jsonrpc":"2.0","id":5,"method":"resources/read","params":{"uri":"skill://project-skill/../a-skill/SKILL.md"}}`)
	if r := recv(5); !strings.Contains(string(r), `"code":-32602`) {
		t.Errorf("traversal: %s", r)
	}
	// Keep reading stdout, as a host does until the server exits: a
	// notification written meanwhile must not block it.
	go io.Copy(io.Discard, outR)
	inW.Close()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("mcp exited %d; stderr:\n%s", code, stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("mcp did not exit after stdin closed")
	}
}

// TestServeMCPFlags: a non-loopback --mcp-listen (from the flag or the
// environment) without a token is refused at start, saying why; a bad
// token file too.
func TestServeMCPFlags(t *testing.T) {
	dir := t.TempDir()
	code, _, stderr := runMain(t, "serve", "--data", dir, "--mcp-listen", "0.0.0.0:7777")
	if code != exitUsage || !strings.Contains(stderr, "not a loopback address") || !strings.Contains(stderr, "--mcp-token-file") {
		t.Errorf("public address without token: exit %d, stderr %q", code, stderr)
	}
	t.Setenv("SKILLSTREAM_MCP_LISTEN", "192.0.2.10:7777")
	code, _, stderr = runMain(t, "serve", "--data", dir)
	if code != exitUsage || !strings.Contains(stderr, "192.0.2.10:7777 is not a loopback address") {
		t.Errorf("from the environment: exit %d, stderr %q", code, stderr)
	}
	empty := writeFile(t, dir, "empty-token", "\n")
	code, _, stderr = runMain(t, "serve", "--data", dir, "--mcp-token-file", empty)
	if code != exitUsage || !strings.Contains(stderr, "--mcp-token-file") {
		t.Errorf("empty token file: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = runMain(t, "serve", "--data", dir, "--mcp-token-file", filepath.Join(dir, "missing"))
	if code != exitUsage || !strings.Contains(stderr, "--mcp-token-file") {
		t.Errorf("missing token file: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = runMain(t, "serve", "--data", dir, "--mcp-listen", "127.0.0.1:1", "--mcp-allowed-origin", "evil.example.com")
	if code != exitUsage || !strings.Contains(stderr, "--mcp-allowed-origin") {
		t.Errorf("bad origin: exit %d, stderr %q", code, stderr)
	}
}

// mcpPost posts one JSON-RPC body to an MCP endpoint as a host does,
// with token as its bearer token when set and the header pairs given, and
// returns the status and body.
func mcpPost(url, token, body string, header ...string) (int, string) {
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := plainHTTP.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestServeMCPEndToEnd: serve --mcp-listen with a token serves the folder
// skills over HTTP, refuses requests without the token, and counts
// requests on the metrics endpoint.
func TestServeMCPEndToEnd(t *testing.T) {
	root := spec4Skills(t)
	tokenFile := writeFile(t, t.TempDir(), "token", "tok-123\n")
	port := freePort(t)
	s := startServe(t, t.TempDir(), root, "--mcp-listen", "127.0.0.1:"+strconv.Itoa(port), "--mcp-token-file", tokenFile)
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/mcp"
	post := func(token string) (int, string) {
		return mcpPost(url, token, `{"jsonrpc":"2.0","id":1,"method":"skills/list","params":{}}`, "MCP-Protocol-Version", "2025-11-25")
	}
	if code, _ := post(""); code != http.StatusUnauthorized {
		t.Errorf("without token: HTTP %d", code)
	}
	eventually(t, 20*time.Second, "skills served", func() error {
		code, body := post("tok-123")
		if code != http.StatusOK || !strings.Contains(body, "skill://z-skill/SKILL.md") {
			return fmt.Errorf("HTTP %d %s", code, body)
		}
		return nil
	})
	_, metrics, err := s.get("/metrics")
	if err != nil || !strings.Contains(metrics, `skillstream_mcp_requests_total{method="skills/list"}`) ||
		!strings.Contains(metrics, `skillstream_mcp_http_refused_total{reason="token"} 1`) {
		t.Errorf("metrics lack the MCP counters: %v", err)
	}
	if !strings.Contains(s.stderr.String(), `"mcp":"http://127.0.0.1:`+strconv.Itoa(port)+`/mcp"`) {
		t.Errorf("serving line does not name the MCP endpoint:\n%s", s.stderr)
	}
}

// mcpHost is `skillstream mcp` run in-process as a host spawns it, spoken
// to in JSON lines on its stdin and stdout; every notification it writes
// is recorded from the first byte on.
type mcpHost struct {
	t         *testing.T
	in        *io.PipeWriter
	responses chan json.RawMessage
	notes     chan string
	stderr    *syncBuffer

	mu          sync.Mutex
	initialized bool     // notifications/initialized was sent
	early       []string // notifications written before it
}

func startMCPHost(t *testing.T, env func(string) (string, bool), args ...string) *mcpHost {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	h := &mcpHost{t: t, in: inW, responses: make(chan json.RawMessage, 16), notes: make(chan string, 64), stderr: &syncBuffer{}}
	a := &app{stdin: inR, stdout: outW, stderr: h.stderr, lookupEnv: env}
	done := make(chan int, 1)
	go func() {
		code := a.main(context.Background(), append([]string{"mcp"}, args...))
		outW.Close()
		done <- code
	}()
	read := make(chan struct{})
	go func() {
		defer close(read)
		lines := bufio.NewScanner(outR)
		lines.Buffer(make([]byte, 1<<20), 64<<20)
		for lines.Scan() {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			if json.Unmarshal(lines.Bytes(), &m) != nil {
				h.notes <- "not JSON-RPC: " + lines.Text()
				continue
			}
			if m.ID == nil {
				h.mu.Lock()
				if !h.initialized {
					h.early = append(h.early, m.Method)
				}
				h.mu.Unlock()
				h.notes <- m.Method
				continue
			}
			h.responses <- append(json.RawMessage(nil), lines.Bytes()...)
		}
	}()
	t.Cleanup(func() {
		inW.Close()
		select {
		case code := <-done:
			if code != exitOK {
				t.Errorf("mcp exited %d; stderr:\n%s", code, h.stderr)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("mcp did not exit after stdin closed")
		}
		<-read
	})
	return h
}

func (h *mcpHost) send(msg string) {
	h.t.Helper()
	if strings.Contains(msg, `"notifications/initialized"`) {
		h.mu.Lock()
		h.initialized = true
		h.mu.Unlock()
	}
	if _, err := io.WriteString(h.in, msg+"\n"); err != nil {
		h.t.Fatal(err)
	}
}

// call sends a request and returns its result.
func (h *mcpHost) call(id int, method, params string) json.RawMessage {
	h.t.Helper()
	h.send(`{"jsonrpc":"2.0","id":` + strconv.Itoa(id) + `,"method":"` + method + `","params":` + params + `}`)
	select {
	case line := <-h.responses:
		var m struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal(line, &m); err != nil || m.ID != id || m.Result == nil {
			h.t.Fatalf("%s: response %s", method, line)
		}
		return m.Result
	case <-time.After(30 * time.Second):
		h.t.Fatalf("%s: no response; stderr:\n%s", method, h.stderr)
		return nil
	}
}

// connect is a host's handshake: initialize, then initialized.
func (h *mcpHost) connect() {
	h.t.Helper()
	h.call(1, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"host","version":"1"}}`)
	h.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
}

// toolDescription lists the tools and returns the skill tool's
// description.
func (h *mcpHost) toolDescription(id int) string {
	h.t.Helper()
	var tl struct {
		Tools []struct{ Name, Description string } `json:"tools"`
	}
	if err := json.Unmarshal(h.call(id, "tools/list", `{}`), &tl); err != nil || len(tl.Tools) != 1 || tl.Tools[0].Name != "skill" {
		h.t.Fatalf("tools/list: %+v %v", tl, err)
	}
	return tl.Tools[0].Description
}

// quiet fails when a notification arrives within d.
func (h *mcpHost) quiet(d time.Duration, when string) {
	h.t.Helper()
	select {
	case n := <-h.notes:
		h.t.Fatalf("%s: %s", when, n)
	case <-time.After(d):
	}
}

// fleetRoot writes n skills, far more than a host keeps of a tool's
// description, as a custom skills root.
func fleetRoot(t *testing.T, n int) string {
	root := t.TempDir()
	for i := range n {
		name := fmt.Sprintf("team-%03d-runbook", i)
		writeFile(t, root, name+"/SKILL.md", skillMD("Body.", "name: "+name,
			fmt.Sprintf("description: The on-call runbook of team %d, with the checks to run, who to page, and how to roll back a bad deploy.", i)))
	}
	return root
}

// TestMCPStdioFirstAnswer: a host that lists the tools as soon as it is
// initialized, from a server of 301 skills, gets the catalog at once,
// fitted to the 2,048 UTF-16 code units Claude Code keeps of a tool's
// description (whole entries, the notice, the closing lines). Nothing is
// notified before initialized, nor in the 2 s after with nothing changed;
// a skill added gives one tools/list_changed and one
// resources/list_changed.
func TestMCPStdioFirstAnswer(t *testing.T) {
	root := fleetRoot(t, 301)
	h := startMCPHost(t, envMap(nil), "--no-bundled", "--user-skills-dir=", "--no-skill-store", "--skills-dir", root, "--cwd", t.TempDir())
	h.connect()
	desc := h.toolDescription(2)
	if n := len(utf16.Encode([]rune(desc))); n > 2048 {
		t.Errorf("tool description of %d UTF-16 code units, over 2048", n)
	}
	for _, want := range []string{"- `team-000-runbook`\n", "\n(Shortened to fit the catalog size limit: ",
		"until it has been loaded.\n</system-reminder>"} {
		if !strings.Contains(desc, want) {
			t.Errorf("the first tool description lacks %q:\n%s", want, desc)
		}
	}
	h.mu.Lock()
	early := h.early
	h.mu.Unlock()
	if len(early) > 0 {
		t.Errorf("notified before initialized: %q", early)
	}
	h.quiet(2*time.Second, "nothing changed since start, yet notified")
	// A skill added at once, as a folder moved into the root.
	dir := filepath.Join(t.TempDir(), "aaa-new")
	writeFile(t, dir, "SKILL.md", skillMD("New.", "name: aaa-new", "description: A new skill."))
	if err := os.Rename(dir, filepath.Join(root, "aaa-new")); err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	deadline := time.After(20 * time.Second)
	for got["notifications/tools/list_changed"] == 0 || got["notifications/resources/list_changed"] == 0 {
		select {
		case n := <-h.notes:
			got[n]++
		case <-deadline:
			t.Fatalf("after a skill was added: %v; stderr:\n%s", got, h.stderr)
		}
	}
	select {
	case n := <-h.notes:
		t.Errorf("a second notification for one change: %s (%v before)", n, got)
	case <-time.After(time.Second):
	}
	if desc := h.toolDescription(3); !strings.Contains(desc, "- `aaa-new`\n") {
		t.Errorf("the tool description after the change lacks the new skill:\n%s", desc)
	}
}

// TestMCPToolDescriptionMaxFlag: --mcp-tool-description-max (or its
// variable) 0 lifts the budget; a budget under 1024 is refused at start,
// by mcp and by serve.
func TestMCPToolDescriptionMaxFlag(t *testing.T) {
	root := fleetRoot(t, 301)
	h := startMCPHost(t, envMap(map[string]string{"SKILLSTREAM_MCP_TOOL_DESCRIPTION_MAX": "0"}),
		"--no-bundled", "--user-skills-dir=", "--no-skill-store", "--skills-dir", root, "--cwd", t.TempDir())
	h.connect()
	if desc := h.toolDescription(2); len(utf16.Encode([]rune(desc))) <= 2048 || !strings.Contains(desc, "- `team-000-runbook`: The on-call runbook") {
		t.Errorf("without a budget the description is still cut (%d UTF-16 code units)", len(utf16.Encode([]rune(desc))))
	}
	for _, args := range [][]string{
		{"mcp", "--no-skill-store", "--mcp-tool-description-max", "1023"},
		{"serve", "--data", t.TempDir(), "--mcp-tool-description-max=-1"},
	} {
		code, _, stderr := runMain(t, args...)
		if code != exitUsage || !strings.Contains(stderr, "--mcp-tool-description-max") || !strings.Contains(stderr, "must be 0 or at least 1024") {
			t.Errorf("%q: exit %d, stderr %q", args, code, stderr)
		}
	}
}
