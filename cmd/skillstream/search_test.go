package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events"
	"github.com/skillstream/skillstream/events/client"
)

// searchNotice is the notice of an offered catalog that left n out.
func searchNotice(n string) string {
	return "(" + n + " more skills are available but not listed here. Call the `skill_search` tool to find them by what they do.)"
}

// TestSkillSearchEverySurface: --skill-search and --catalog-listed-max
// (and their variables) are taken by every command that computes model
// text; a negative maximum is a usage error.
func TestSkillSearchEverySurface(t *testing.T) {
	for _, name := range []string{"serve", "catalog", "load", "replay", "bench", "mcp", "demo"} {
		_, stdout, _ := runMain(t, name, "--help")
		for _, want := range []string{"--skill-search", "SKILLSTREAM_SKILL_SEARCH", "--catalog-listed-max", "SKILLSTREAM_CATALOG_LISTED_MAX"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("%s --help lacks %s", name, want)
			}
		}
	}
	for _, args := range [][]string{{"catalog", "--catalog-listed-max", "-1"}, {"serve", "--catalog-listed-max=-3"}, {"demo", "--catalog-listed-max", "-1"}} {
		code, _, stderr := runMain(t, args...)
		if code != exitUsage || !strings.Contains(stderr, "must be 0 (no limit) or more") {
			t.Errorf("%q: exit %d, stderr %q", args, code, stderr)
		}
	}
}

// TestCatalogPreviewsOfferedCatalog: with --skill-search, catalog prints
// the catalog of a session offered search; without, the catalog as before.
func TestCatalogPreviewsOfferedCatalog(t *testing.T) {
	root := manyRoot(t, 12)
	_, plain, _ := runMain(t, append([]string{"catalog"}, skillsArgs(t, root)...)...)
	// The maximum alone changes nothing: it is for sessions offered search.
	if _, same, _ := runMain(t, append([]string{"catalog", "--catalog-listed-max", "5"}, skillsArgs(t, root)...)...); same != plain {
		t.Errorf("--catalog-listed-max without --skill-search changed the catalog:\n%s", same)
	}
	code, stdout, stderr := runMain(t, append([]string{"catalog", "--skill-search", "--catalog-listed-max", "5"}, skillsArgs(t, root)...)...)
	if code != exitOK {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	if n := strings.Count(stdout, "\n- `skill-"); n != 5 || !strings.Contains(stdout, "\n"+searchNotice("7")+"\n</available_skills>") ||
		strings.Contains(stdout, "Shortened to fit") {
		t.Errorf("%d entries listed:\n%s", n, stdout)
	}
	for _, want := range []string{"shortened for skill search (--catalog-listed-max 5, --catalog-max-length 24000)",
		"not listed (skill_search finds them; still loadable by name): skill-005, skill-006, skill-007, skill-008, skill-009, skill-010, skill-011"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	// From the environment, and in JSON.
	t.Setenv("SKILLSTREAM_SKILL_SEARCH", "true")
	t.Setenv("SKILLSTREAM_CATALOG_LISTED_MAX", "5")
	code, stdout, stderr = runMain(t, append([]string{"catalog", "--json"}, skillsArgs(t, root)...)...)
	if code != exitOK {
		t.Fatalf("exit %d:\n%s", code, stderr)
	}
	var v catalogView
	if err := json.Unmarshal([]byte(stdout), &v); err != nil {
		t.Fatal(err)
	}
	if sh := v.Shortened; sh == nil || !sh.Search || sh.ListedMax != 5 || len(sh.Omitted) != 7 || len(v.Entries) != 5 ||
		!strings.Contains(v.Text, searchNotice("7")) {
		t.Errorf("shortened %+v, %d entries", v.Shortened, len(v.Entries))
	}
	if d, ok := catalog.Recognize(v.Text); !ok || d != v.Digest {
		t.Errorf("digest %q, text's %q (%v)", v.Digest, d, ok)
	}
}

// TestServeSkillSearch: serve --skill-search lists both tools, answers a
// search through the real program, and gives a session offered search
// the catalog `catalog --skill-search` previews; without the flag it
// lists the skill tool alone and says that search is off.
func TestServeSkillSearch(t *testing.T) {
	root := manyRoot(t, 6)
	writeFile(t, root, "pdf-forms/SKILL.md", skillMD("Fill them.", "name: pdf-forms", "description: Fill PDF forms from JSON data."))
	cwd := t.TempDir()
	flags := append([]string{"--skill-search", "--catalog-listed-max", "3"}, "--no-bundled", "--user-skills-dir=", "--skills-dir", root)
	s := startServe(t, t.TempDir(), root, "--skill-search", "--catalog-listed-max", "3")
	if first := strings.SplitN(s.stderr.String(), "\n", 2)[0]; !strings.Contains(first, `"skill_search":"on"`) || !strings.Contains(first, `"catalog_listed_max":3`) {
		t.Errorf("the serving line does not say that search is on:\n%s", first)
	}
	nc := s.connect(t)
	defs := definitions(t, nc)
	if len(defs) != 2 || defs[0].Name != catalog.ToolName || defs[1].Name != catalog.SearchToolName ||
		defs[1].Description != catalog.SearchToolDescription || string(defs[1].Parameters) != catalog.SearchToolParameters {
		t.Fatalf("definitions %+v", defs)
	}
	c, err := client.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	_, preview, _ := runMain(t, append([]string{"catalog", "--cwd", cwd}, flags...)...)
	d, err := c.PreStep(ctx, events.PreStep{Session: "served", Step: "1", Cwd: cwd,
		Tools: []events.Tool{client.SkillTool("skillstream"), client.SkillSearchTool("skillstream")}})
	if err != nil {
		t.Fatal(err)
	}
	if d.Catalog == nil || d.Catalog.Text+"\n" != preview || d.Catalog.Source.Omitted != 4 || !strings.Contains(preview, searchNotice("4")) {
		t.Fatalf("served catalog differs from the preview:\n%+v\n---\n%s", d.Catalog, preview)
	}
	r, err := c.SearchSkills(ctx, events.SkillSearch{Session: "served", Call: "s1", Cwd: cwd, Args: events.SearchArgs{Query: "fill a PDF form"}})
	if err != nil {
		t.Fatal(err)
	}
	if r.IsError || r.Search == nil || len(r.Search.Results) == 0 || r.Search.Results[0].Name != "pdf-forms" ||
		!strings.HasPrefix(r.Text, `<skill_search_results query="fill a PDF form" shown="`) {
		t.Fatalf("search %+v", r)
	}
	r, err = c.SearchSkills(ctx, events.SkillSearch{Session: "served", Call: "s2", Cwd: cwd, Args: events.SearchArgs{Query: "x", Limit: 17}})
	if err != nil || r.Text != "Error: invalid search arguments: limit must be an integer from 1 to 16, not 17" {
		t.Fatalf("limit 17: %+v, %v", r, err)
	}
	if code := s.stop(); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, s.stderr)
	}

	off := startServe(t, t.TempDir(), root)
	nc = off.connect(t)
	if defs := definitions(t, nc); len(defs) != 1 || defs[0].Name != catalog.ToolName {
		t.Fatalf("definitions without search %+v", defs)
	}
	c2, err := client.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	r, err = c2.SearchSkills(ctx, events.SkillSearch{Session: "off", Call: "s1", Cwd: cwd, Args: events.SearchArgs{Query: "pdf"}})
	if err == nil || r.Text != "Error: skill search is off: this processor does not serve the skill_search tool" {
		t.Fatalf("search without --skill-search: %+v, %v", r, err)
	}
}

// definitions asks skillstream.tool.definitions.
func definitions(t testing.TB, nc *nats.Conn) []events.ToolDefinition {
	t.Helper()
	m, err := nc.Request(events.ToolDefinitionsSubject, nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defs, err := events.DecodeToolDefinitions(events.JSON, m.Data)
	if err != nil {
		t.Fatal(err)
	}
	return defs
}
