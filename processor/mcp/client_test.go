package mcp_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/natstest"
	mcpserver "github.com/skillstream/skillstream/processor/mcp"
)

// connect opens an SDK client session at version ("" = the SDK's
// newest), reporting list-changed notifications on the channels.
func (f *fixture) connect(t *testing.T, version string) (cs *sdk.ClientSession, resources, tools chan struct{}) {
	t.Helper()
	resources, tools = make(chan struct{}, 16), make(chan struct{}, 16)
	c := sdk.NewClient(&sdk.Implementation{Name: "test-host", Version: "1"}, &sdk.ClientOptions{
		ResourceListChangedHandler: func(context.Context, *sdk.ResourceListChangedRequest) {
			select {
			case resources <- struct{}{}:
			default:
			}
		},
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			select {
			case tools <- struct{}{}:
			default:
			}
		},
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := c.Connect(ctx, &sdk.StreamableClientTransport{Endpoint: f.url}, &sdk.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect at %q: %v", version, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, resources, tools
}

func wait(t *testing.T, ch chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(20 * time.Second):
		t.Fatalf("no %s within 20 s", what)
	}
}

// TestListChangedAfterPush: a skill pushed to the store reaches connected
// sessions of both revisions as resources and tools list-changed
// notifications, and the next skills/list and resources/list show it.
func TestListChangedAfterPush(t *testing.T) {
	f := newFixture(t, fixtureOpts{store: true, config: defaultResync()})
	writeSkill(t, f.root, "alpha", map[string]string{"SKILL.md": skillMD("alpha", "Alpha.", "A.")})
	f.waitFor(t, "alpha")
	for _, version := range []string{"2025-11-25", ""} {
		t.Run("version="+version, func(t *testing.T) {
			cs, resources, tools := f.connect(t, version)
			if version != "" && cs.InitializeResult().ProtocolVersion != version {
				t.Fatalf("negotiated %s", cs.InitializeResult().ProtocolVersion)
			}
			name := "pushed-" + strings.ReplaceAll(version, "-", "")
			if version == "" {
				name = "pushed-newest"
			}
			f.push(t, writeSkill(t, t.TempDir(), name, map[string]string{"SKILL.md": skillMD(name, "Pushed skill.", "P."), "extra.txt": "x"}))
			wait(t, resources, "notifications/resources/list_changed")
			wait(t, tools, "notifications/tools/list_changed")
			// A notification of an earlier change may come first: the
			// listing shows the push at the latest with its own.
			var e entry
			natstest.Eventually(t, 20*time.Second, "pushed skill listed", func() (err error) {
				e, err = find(f.listAll(t), name)
				return err
			})
			if len(e.Resources) != 2 || e.Resources[1].Digest != sha([]byte("x")) {
				t.Errorf("pushed entry: %+v", e)
			}
			rl, err := cs.ListResources(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, r := range rl.Resources {
				found = found || r.URI == "skill://"+name+"/SKILL.md"
			}
			if !found {
				t.Errorf("resources/list lacks %s", name)
			}
			tl, err := cs.ListTools(context.Background(), nil)
			if err != nil || len(tl.Tools) != 1 || !strings.Contains(tl.Tools[0].Description, "- `"+name+"`: Pushed skill.") {
				t.Errorf("tools/list after push: %+v %v", tl, err)
			}
		})
	}
}

// defaultResync leaves the resync at the default: the changes must come
// from the providers' announcements, not from polling.
func defaultResync() mcpserver.Config { return mcpserver.Config{Resync: mcpserver.DefaultResync} }

// TestSkillTool: tools/list and tools/call give what a session's skill
// tool gives: the catalog in the description, the tool's result text,
// errors as isError.
func TestSkillTool(t *testing.T) {
	f := newFixture(t, fixtureOpts{})
	writeSkill(t, f.root, "alpha", map[string]string{"SKILL.md": skillMD("alpha", "Alpha does <things> & more.", "Alpha body.")})
	writeSkill(t, f.root, "hidden", map[string]string{"SKILL.md": "---\nname: hidden\ndescription: User only.\ndisable-model-invocation: true\n---\nHidden.\n"})
	f.waitFor(t, "alpha", "hidden")
	cs, _, _ := f.connect(t, "2025-11-25")
	natstest.Eventually(t, 10*time.Second, "tool description", func() error {
		tl, err := cs.ListTools(context.Background(), nil)
		if err != nil {
			return err
		}
		want := catalog.ToolDescription + "\n\n" + catalog.RenderList(catalog.UpdateInitial, []catalog.Entry{{Name: "alpha", Description: "Alpha does <things> & more."}}, 0)
		if len(tl.Tools) != 1 || tl.Tools[0].Name != "skill" || tl.Tools[0].Description != want {
			b, _ := json.Marshal(tl)
			return &mismatch{string(b)}
		}
		return nil
	})
	for _, c := range []struct {
		args    any
		isError bool
		text    string
	}{
		{map[string]any{"name": "alpha"}, false, "<skill_content name=\"alpha\">"},
		{map[string]any{"name": "nope"}, true, `Error: skill "nope" is unknown or no longer available`},
		{map[string]any{"name": "hidden"}, true, `Error: skill "hidden" is not available for model invocation`},
		{map[string]any{"name": "../x"}, true, `Error: invalid skill name "../x"`},
		{map[string]any{"name": 5}, true, `Error: invalid skill name "5"`},
	} {
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "skill", Arguments: c.args})
		if err != nil {
			t.Fatalf("call %v: %v", c.args, err)
		}
		text := res.Content[0].(*sdk.TextContent).Text
		if res.IsError != c.isError || !strings.HasPrefix(text, c.text) {
			t.Errorf("call %v: isError %v, text %q", c.args, res.IsError, text)
		}
	}
	// Metrics: counted by method, errors by code.
	f.rpc(t, "skills/get", map[string]any{"uri": "skill://nope/SKILL.md"})
	if n := metricT(t, f, "skillstream_mcp_errors_total", "-32602", "skills/get"); n < 1 {
		t.Errorf("errors_total{skills/get,-32602} = %v", n)
	}
	if n := metricT(t, f, "skillstream_mcp_requests_total", "tools/call"); n != 5 {
		t.Errorf("requests_total{tools/call} = %v, want 5", n)
	}
	if n := metricT(t, f, "skillstream_mcp_request_duration_seconds", "skills/list"); n < 1 {
		t.Errorf("request_duration_seconds{skills/list} count = %v", n)
	}
}

// metric returns a counter's value (a histogram's count) for the label
// values given in the order of the label names.
func metricT(t *testing.T, f *fixture, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := f.metrics.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for i, l := range m.GetLabel() {
				if i >= len(labels) || l.GetValue() != labels[i] {
					continue next
				}
			}
			if h := m.GetHistogram(); h != nil {
				return float64(h.GetSampleCount())
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

type mismatch struct{ s string }

func (m *mismatch) Error() string { return "got " + m.s }

// TestStoreSkillResourceBase: over MCP, the skill tool's result for a
// store skill names the skill:// directory its files are served under
// (where its relative paths resolve), instead of the provider; a folder
// skill keeps its folder. The session's skill tool, run over the same
// registry as the processor runs it, still names the provider.
func TestStoreSkillResourceBase(t *testing.T) {
	f := newFixture(t, fixtureOpts{store: true})
	writeSkill(t, f.root, "alpha", map[string]string{"SKILL.md": skillMD("alpha", "Alpha.", "Alpha body.")})
	f.push(t, writeSkill(t, t.TempDir(), "gamma", map[string]string{
		"SKILL.md": skillMD("gamma", "Gamma from the store.", "Read data/table.csv."), "data/table.csv": "a,b\n"}))
	f.waitFor(t, "alpha", "gamma")
	cs, _, _ := f.connect(t, "2025-11-25")
	call := func(name string) string {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &sdk.CallToolParams{Name: "skill", Arguments: map[string]any{"name": name}})
		if err != nil || res.IsError {
			t.Fatalf("call %s: %+v %v", name, res, err)
		}
		return res.Content[0].(*sdk.TextContent).Text
	}
	const resolve = "Resolve relative paths mentioned by this skill against the base directory before using them. Load referenced resources only as needed."
	if got, want := call("gamma"), "<skill_content name=\"gamma\">\n<skill_resources>\nBase directory for this skill: skill://gamma\n"+resolve+
		"\n</skill_resources>\n\n<skill_instructions>\nRead data/table.csv.\n</skill_instructions>\n</skill_content>"; got != want {
		t.Errorf("store skill over MCP:\n got %q\nwant %q", got, want)
	}
	if got := call("alpha"); !strings.Contains(got, "\nBase directory for this skill: "+filepath.Join(f.root, "alpha")+"\n"+resolve+"\n") {
		t.Errorf("folder skill over MCP:\n%s", got)
	}
	// The base resolves: the skill's directory and the file it names.
	if _, rerr := f.rpc(t, "resources/directory/read", map[string]any{"uri": "skill://gamma"}); rerr != nil {
		t.Errorf("directory read of the base: %+v", rerr)
	}
	if got, _ := f.read(t, "skill://gamma/data/table.csv"); string(got) != "a,b\n" {
		t.Errorf("read of a path resolved against the base: %q", got)
	}
	session := catalog.Execute(context.Background(), f.reg.Lookup(catalog.Query{}), "gamma", catalog.DefaultOptions()).Text()
	if !strings.Contains(session, "\nResources for this skill are managed by provider \"store\".\n") {
		t.Errorf("the session's skill tool changed:\n%s", session)
	}
}
