package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
)

// mcpTool is a tool as tools/list gives it.
type mcpTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// mcpCallResult is a tools/call result.
type mcpCallResult struct {
	Content []struct{ Text string } `json:"content"`
	IsError bool                    `json:"isError"`
}

// TestMCPStdioSkillSearch: mcp --skill-search lists skill_search beside
// skill, with the catalog's definition, points the skill tool's catalog to
// it (entries left out to --catalog-listed-max), and answers a search
// with the tool's text, its argument errors as isError.
func TestMCPStdioSkillSearch(t *testing.T) {
	root := searchRoot(t)
	h := startMCPHost(t, envMap(map[string]string{"SKILLSTREAM_CATALOG_LISTED_MAX": "2"}), "--skill-search",
		"--no-bundled", "--user-skills-dir=", "--no-skill-store", "--skills-dir", root, "--cwd", t.TempDir())
	h.connect()
	var tl struct{ Tools []mcpTool }
	if err := json.Unmarshal(h.call(2, "tools/list", `{}`), &tl); err != nil || len(tl.Tools) != 2 {
		t.Fatalf("tools/list: %+v %v", tl, err)
	}
	def := catalog.SearchToolDefinition()
	if st := tl.Tools[1]; st.Name != def.Name || st.Description != def.Description || !sameJSON(t, st.InputSchema, def.Parameters) {
		t.Errorf("skill_search listed as %+v", st)
	}
	if d := tl.Tools[0].Description; !strings.Contains(d, "- `changelog`: ") || !strings.Contains(d, "- `db-migrate`: ") ||
		strings.Contains(d, "- `deploy-preview`") || !strings.Contains(d, "\n"+searchNotice("6")+"\n") {
		t.Errorf("the skill tool's catalog is not the one offered search:\n%s", d)
	}
	for i, c := range []struct {
		args    string
		isError bool
		text    string
	}{
		{`{"query":"deploy a service"}`, false, "<skill_search_results query=\"deploy a service\" shown=\"2\" total=\"2\">\n- `k8s-deploy`: "},
		{`{"query":"quantum chromodynamics"}`, false, `No available skill matches "quantum chromodynamics". Continue without a skill, or search again with other words.`},
		{`{"query":5}`, true, "Error: invalid search arguments: query must be a string, not a number"},
	} {
		var r mcpCallResult
		if err := json.Unmarshal(h.call(3+i, "tools/call", `{"name":"skill_search","arguments":`+c.args+`}`), &r); err != nil {
			t.Fatal(err)
		}
		if len(r.Content) != 1 || r.IsError != c.isError || !strings.HasPrefix(r.Content[0].Text, c.text) {
			t.Errorf("skill_search %s: %+v", c.args, r)
		}
	}
}

// TestServeMCPSkillSearch: serve --skill-search --mcp-listen answers an
// MCP host's search with the very text a session's search over NATS gets
// from the processor: one index, one registry.
func TestServeMCPSkillSearch(t *testing.T) {
	root := searchRoot(t)
	port := freePort(t)
	cwd := t.TempDir()
	s := startServe(t, t.TempDir(), root, "--skill-search", "--mcp-listen", "127.0.0.1:"+strconv.Itoa(port), "--mcp-cwd", cwd)
	c, err := client.New(s.connect(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/mcp"
	for i, q := range []string{"deploy a service", "pull request", "nothing like it at all"} {
		want, err := c.SearchSkills(ctx, events.SkillSearch{Session: "nats", Call: "s" + strconv.Itoa(i), Cwd: cwd, Args: events.SearchArgs{Query: q}})
		if err != nil {
			t.Fatal(err)
		}
		args, _ := json.Marshal(map[string]any{"name": "skill_search", "arguments": map[string]any{"query": q}})
		body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + string(args) + `}`
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		resp, err := plainHTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		var m struct{ Result mcpCallResult }
		data := string(raw)
		if i := strings.Index(data, "data: "); i >= 0 { // an event stream
			data = strings.SplitN(data[i+len("data: "):], "\n", 2)[0]
		}
		if err := json.Unmarshal([]byte(data), &m); err != nil || len(m.Result.Content) != 1 {
			t.Fatalf("tools/call %q: HTTP %d %s: %v", q, resp.StatusCode, raw, err)
		}
		if got := m.Result.Content[0].Text; got != want.Text || m.Result.IsError {
			t.Errorf("search %q over MCP:\n got %q\nwant %q (over NATS)", q, got, want.Text)
		}
	}
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(t *testing.T, a json.RawMessage, b string) bool {
	t.Helper()
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal([]byte(b), &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return string(xa) == string(ya)
}
