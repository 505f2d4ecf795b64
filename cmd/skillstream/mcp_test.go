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
	"testing"
	"time"
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
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"skills/list","params":{}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
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
