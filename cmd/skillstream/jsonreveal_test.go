package main

import (
	"bufio"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
	"github.com/skillstream/skillstream/processor/replay"
)

// TestJSONShowsQueryControls: a search query holding a next-line control
// (U+0085), a right-to-left override (U+202E) and a line separator
// (U+2028), echoed by history --json, replay-free usage --json and the
// text outputs, reaches the terminal escaped: the JSON holds \u0085,
// \u202e and \u2028 (decoding to the exact query), never the characters
// themselves. Before, --json wrote them as they are, and a terminal or a
// log viewer acted on them (a line break, text shown reversed).
func TestJSONShowsQueryControls(t *testing.T) {
	const query = "zzq\u0085\u202ekcatta\u2028qzz"
	s := startServe(t, t.TempDir(), searchRoot(t), "--skill-search")
	c, err := client.New(s.connect(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cwd := t.TempDir()
	tools := []events.Tool{client.SkillTool("skillstream"), client.SkillSearchTool("skillstream")}
	if _, err := c.PreStep(ctx, events.PreStep{Session: "ctl", Step: "1", Cwd: cwd, Tools: tools}); err != nil {
		t.Fatal(err)
	}
	res, err := c.SearchSkills(ctx, events.SkillSearch{Session: "ctl", Call: "s1", Cwd: cwd, Args: events.SearchArgs{Query: query}})
	if err != nil || res.IsError {
		t.Fatalf("search: %+v %v", res, err)
	}
	// The model's text is the search tool's as ever: the query as sent.
	if !strings.Contains(res.Text, query) {
		t.Errorf("the model's search result does not quote the query as sent:\n%q", res.Text)
	}
	raw := []string{"\u0085", "\u202e", "\u2028"}
	escaped := []string{`\u0085`, `\u202e`, `\u2028`}
	shows := func(what, out string, esc []string) {
		t.Helper()
		for i, r := range raw {
			if strings.Contains(out, r) {
				t.Errorf("%s writes %U as it is:\n%q", what, []rune(r)[0], out)
			}
			if !strings.Contains(out, esc[i]) {
				t.Errorf("%s does not show %U as %s:\n%s", what, []rune(r)[0], esc[i], out)
			}
		}
	}

	code, out, stderr := runMain(t, "history", "--session", "ctl", "--nats-url", s.url, "--json")
	if code != exitOK {
		t.Fatalf("history --json: exit %d\n%s", code, stderr)
	}
	shows("history --json", out, escaped)
	found := false
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var step replay.Delta
		if err := json.Unmarshal(sc.Bytes(), &step); err != nil {
			t.Fatalf("history --json line: %v\n%s", err, sc.Text())
		}
		for _, s := range step.Searches {
			found = found || s.Query == query
		}
	}
	if !found {
		t.Errorf("no history --json line decodes to the exact query:\n%s", out)
	}

	rep, _ := usageJSON(t, "--nats-url", s.url, "--scan")
	if len(rep.Searches.NoMatchQueries) != 1 || rep.Searches.NoMatchQueries[0].Query != query {
		t.Errorf("usage --json: queries %+v, want the exact query", rep.Searches.NoMatchQueries)
	}
	_, out, _ = runMain(t, "usage", "--nats-url", s.url, "--scan", "--json")
	shows("usage --json", out, escaped)

	// The text outputs already showed them escaped; they still do.
	_, out, _ = runMain(t, "history", "--session", "ctl", "--nats-url", s.url)
	shows("history", out, escaped)
	_, out, _ = runMain(t, "usage", "--nats-url", s.url, "--scan")
	shows("usage", out, escaped)
}
