package catalog_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/catalog"
)

// fakeLookup is an in-memory registry that counts how often it is asked.
// resolve answers Resolve and load answers Load, so a test can make a skill
// change between the two.
type fakeLookup struct {
	resolve map[string]catalog.Summary
	load    map[string]catalog.Skill
	err     error // returned by both methods when set

	resolves, loads int
}

func (f *fakeLookup) Resolve(_ context.Context, name string) (catalog.Summary, error) {
	f.resolves++
	if f.err != nil {
		return catalog.Summary{}, f.err
	}
	s, ok := f.resolve[name]
	if !ok {
		return catalog.Summary{}, fmt.Errorf("resolve %q: %w", name, catalog.ErrNotFound)
	}
	return s, nil
}

func (f *fakeLookup) Load(_ context.Context, name string) (catalog.Skill, error) {
	f.loads++
	if f.err != nil {
		return catalog.Skill{}, f.err
	}
	s, ok := f.load[name]
	if !ok {
		return catalog.Skill{}, fmt.Errorf("load %q: %w", name, catalog.ErrNotFound)
	}
	return s, nil
}

// lookupOf serves the same skills from Resolve and Load.
func lookupOf(skills ...catalog.Skill) *fakeLookup {
	f := &fakeLookup{resolve: map[string]catalog.Summary{}, load: map[string]catalog.Skill{}}
	for _, s := range skills {
		f.resolve[s.Name] = s.Summary
		f.load[s.Name] = s
	}
	return f
}

func skill(name string, rb *catalog.ResourceBase, content string) catalog.Skill {
	return catalog.Skill{
		Summary: catalog.Summary{
			Name: name, Description: "Does " + name + ".", WhenToUse: "secret when",
			Invocation: catalog.Invocation{ModelInvocable: true, UserInvocable: true},
			Source:     catalog.SourceProject, Provider: "agentskills", ResourceBase: rb,
		},
		Content: content,
	}
}

const body = "# Steps\n\n1. Read <input> & check.\n2. Done."

func TestToolDefinition(t *testing.T) {
	d := catalog.ToolDefinition()
	if d.Name != "skill" {
		t.Errorf("name = %q", d.Name)
	}
	if d.Description != "Load the full instructions for an available skill. Call this with the exact skill name from the session skill catalog before acting on a task that names or clearly matches that skill." {
		t.Errorf("description = %q", d.Description)
	}
	if d.Parameters != `{"type":"object","properties":{"name":{"type":"string","description":"The exact skill name from the available skills list."}},"required":["name"]}` {
		t.Errorf("parameters = %s", d.Parameters)
	}
	var schema struct {
		Type       string
		Properties map[string]struct{ Type, Description string }
		Required   []string
	}
	if err := json.Unmarshal([]byte(d.Parameters), &schema); err != nil {
		t.Fatalf("parameters are not JSON: %v", err)
	}
	if schema.Type != "object" || schema.Properties["name"].Type != "string" || len(schema.Required) != 1 || schema.Required[0] != "name" {
		t.Errorf("parameter schema = %+v", schema)
	}
}

func TestExecuteSuccessGuidance(t *testing.T) {
	for _, tc := range []struct {
		golden string
		rb     *catalog.ResourceBase
		line   string
	}{
		{"result-none", nil, `Resources for this skill are managed by provider "agentskills".`},
		{"result-directory", &catalog.ResourceBase{Kind: catalog.ResourceDirectory, Path: "/repo/.agents/skills/a&b <dir>"},
			"Base directory for this skill: /repo/.agents/skills/a&amp;b &lt;dir&gt;"},
		{"result-url", &catalog.ResourceBase{Kind: catalog.ResourceURL, URL: "https://skills.example/a?x=1&y=<2>"},
			"Base URL for this skill: https://skills.example/a?x=1&amp;y=&lt;2&gt;"},
		{"result-opaque", &catalog.ResourceBase{Kind: catalog.ResourceOpaque, Description: `embedded in the "binary" & <served>`},
			`Resources for this skill: embedded in the "binary" &amp; &lt;served&gt;`},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			l := lookupOf(skill("a-skill", tc.rb, body))
			r := catalog.Execute(context.Background(), l, "a-skill", catalog.DefaultOptions())
			if r.Err != nil || r.Value == nil {
				t.Fatalf("Execute = %+v, want success", r)
			}
			want := catalog.Value{Name: "a-skill", Provider: "agentskills", ResourceBase: tc.rb, Content: body}
			if *r.Value != want {
				t.Errorf("value = %+v, want %+v", *r.Value, want)
			}
			text := r.Text()
			golden(t, tc.golden, text)
			if !strings.Contains(text, "\n"+tc.line+"\n") {
				t.Errorf("text lacks guidance line %q", tc.line)
			}
			if !strings.Contains(text, "<skill_instructions>\n"+body+"\n</skill_instructions>") {
				t.Errorf("body is not verbatim in\n%s", text)
			}
			if strings.Contains(text, "secret when") || strings.Contains(text, catalog.SourceProject) {
				t.Errorf("text discloses whenToUse or source:\n%s", text)
			}
			if l.resolves != 1 || l.loads != 1 {
				t.Errorf("resolves %d, loads %d; want 1 each", l.resolves, l.loads)
			}
		})
	}
}

func TestResultTextAttributeEscaping(t *testing.T) {
	r := catalog.Result{Value: &catalog.Value{Name: `x"&<y`, Provider: `p"&<>`, Content: "Body."}}
	text := r.Text()
	golden(t, "result-attr-escaping", text)
	if !strings.HasPrefix(text, `<skill_content name="x&quot;&amp;&lt;y">`+"\n") {
		t.Errorf("name attribute not escaped: %q", text)
	}
	if !strings.Contains(text, `managed by provider "p"&amp;&lt;&gt;".`) {
		t.Errorf("provider guidance not escaped with & < >: %q", text)
	}
}

func TestExecuteErrors(t *testing.T) {
	hidden := skill("hidden-skill", nil, "SECRET BODY")
	hidden.Invocation = catalog.Invocation{ModelInvocable: false, UserInvocable: true}
	for _, tc := range []struct {
		golden  string
		lookup  *fakeLookup
		arg     string
		code    catalog.ErrorCode
		text    string
		resolve int
		load    int
	}{
		{"error-invalid-name", lookupOf(skill("a-skill", nil, body)), "Bad_Name", catalog.CodeInvalidName,
			`Error: invalid skill name "Bad_Name"`, 0, 0},
		{"error-unknown", lookupOf(skill("a-skill", nil, body)), "missing-skill", catalog.CodeUnknown,
			`Error: skill "missing-skill" is unknown or no longer available`, 1, 0},
		{"error-not-model-invocable", lookupOf(hidden), "hidden-skill", catalog.CodeNotModelInvocable,
			`Error: skill "hidden-skill" is not available for model invocation`, 1, 0},
		{"error-provider", &fakeLookup{err: errors.New(`read /skills/a/SKILL.md: permission denied`)}, "a-skill", catalog.CodeProvider,
			`Error: read /skills/a/SKILL.md: permission denied`, 1, 0},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			r := catalog.Execute(context.Background(), tc.lookup, tc.arg, catalog.DefaultOptions())
			if r.Value != nil || r.Err == nil {
				t.Fatalf("Execute = %+v, want an error", r)
			}
			if r.Err.Code != tc.code {
				t.Errorf("code = %s, want %s", r.Err.Code, tc.code)
			}
			if r.Text() != tc.text || "Error: "+r.Err.Message != tc.text || r.Err.Error() != r.Err.Message {
				t.Errorf("text = %q, message %q; want %q", r.Text(), r.Err.Message, tc.text)
			}
			golden(t, tc.golden, r.Text())
			if tc.lookup.resolves != tc.resolve || tc.lookup.loads != tc.load {
				t.Errorf("resolves %d, loads %d; want %d, %d", tc.lookup.resolves, tc.lookup.loads, tc.resolve, tc.load)
			}
		})
	}
}

// TestExecuteLongNameQuotedInPart: a name of a megabyte is refused without
// the lookup, and its error quotes the first 64 bytes of it (cut on a code
// point boundary) and its length, not the megabyte.
func TestExecuteLongNameQuotedInPart(t *testing.T) {
	for _, tc := range []struct{ name, quoted string }{
		{strings.Repeat("a", 1<<20), strings.Repeat("a", 64)},
		{strings.Repeat("a", 63) + strings.Repeat("é", 200), strings.Repeat("a", 63)},
	} {
		l := lookupOf(skill("a-skill", nil, body))
		r := catalog.Execute(context.Background(), l, tc.name, catalog.DefaultOptions())
		want := `Error: invalid skill name "` + tc.quoted + `…" (` + strconv.Itoa(len(tc.name)) + ` bytes; a skill name has at most 64)`
		if r.Err == nil || r.Err.Code != catalog.CodeInvalidName || r.Text() != want {
			t.Errorf("Execute(%d bytes) = %.300q, want %q", len(tc.name), r.Text(), want)
		}
		if l.resolves+l.loads != 0 {
			t.Errorf("Execute(%d bytes) consulted the lookup", len(tc.name))
		}
	}
}

func TestExecuteInvalidNames(t *testing.T) {
	for _, name := range []string{"", "Bad_Name", "a--b", "-a", "a-", "a b", "a\nb", `a"b`, strings.Repeat("a", 65), "é"} {
		l := lookupOf(skill("a-skill", nil, body))
		r := catalog.Execute(context.Background(), l, name, catalog.DefaultOptions())
		if r.Err == nil || r.Err.Code != catalog.CodeInvalidName || r.Text() != `Error: invalid skill name "`+name+`"` {
			t.Errorf("Execute(%q) = %+v, want the raw-name invalid error", name, r.Err)
		}
		if l.resolves+l.loads != 0 {
			t.Errorf("Execute(%q) consulted the lookup", name)
		}
	}
}

func TestExecutePolicyRecheckedAfterLoad(t *testing.T) {
	l := lookupOf(skill("a-skill", nil, body))
	changed := l.load["a-skill"]
	changed.Invocation.ModelInvocable = false
	changed.Content = "SECRET BODY"
	l.load["a-skill"] = changed
	r := catalog.Execute(context.Background(), l, "a-skill", catalog.DefaultOptions())
	if r.Err == nil || r.Err.Code != catalog.CodeNotModelInvocable {
		t.Fatalf("Execute = %+v, want not_model_invocable", r)
	}
	if text := r.Text(); text != `Error: skill "a-skill" is not available for model invocation` || strings.Contains(text, "SECRET") {
		t.Errorf("text = %q", text)
	}
	if l.loads != 1 {
		t.Errorf("loads = %d, want 1", l.loads)
	}
}

func TestExecuteVanishedBetweenResolveAndLoad(t *testing.T) {
	l := lookupOf(skill("a-skill", nil, body))
	delete(l.load, "a-skill")
	r := catalog.Execute(context.Background(), l, "a-skill", catalog.DefaultOptions())
	if r.Err == nil || r.Err.Code != catalog.CodeUnknown || r.Text() != `Error: skill "a-skill" is unknown or no longer available` {
		t.Fatalf("Execute = %+v, want unknown", r.Err)
	}
	if l.resolves != 1 || l.loads != 1 {
		t.Errorf("resolves %d, loads %d; want 1, 1", l.resolves, l.loads)
	}
}

// loadFails fails only in Load, with a wrapped provider error.
type loadFails struct{ *fakeLookup }

func (l loadFails) Load(context.Context, string) (catalog.Skill, error) {
	return catalog.Skill{}, fmt.Errorf("provider remote: %w", errors.New("upstream returned 503"))
}

func TestExecuteProviderErrorOnLoad(t *testing.T) {
	r := catalog.Execute(context.Background(), loadFails{lookupOf(skill("a-skill", nil, body))}, "a-skill", catalog.DefaultOptions())
	if r.Err == nil || r.Err.Code != catalog.CodeProvider || r.Text() != "Error: provider remote: upstream returned 503" {
		t.Fatalf("Execute = %+v, want the provider error", r.Err)
	}
}

func TestExecuteEmptyProviderMessage(t *testing.T) {
	r := catalog.Execute(context.Background(), &fakeLookup{err: errors.New("")}, "a-skill", catalog.DefaultOptions())
	if r.Err == nil || r.Err.Code != catalog.CodeProvider || r.Text() == "Error: " {
		t.Fatalf("Execute = %+v, want a provider error with a message", r.Err)
	}
}

func TestExecuteUserInvocableIrrelevant(t *testing.T) {
	s := skill("model-only-skill", nil, body)
	s.Invocation.UserInvocable = false
	r := catalog.Execute(context.Background(), lookupOf(s), "model-only-skill", catalog.DefaultOptions())
	if r.Err != nil || r.Value == nil || r.Value.Content != body {
		t.Fatalf("Execute = %+v, want success", r)
	}
}

func TestResultTextZero(t *testing.T) {
	if got := (catalog.Result{}).Text(); !strings.HasPrefix(got, "Error: ") {
		t.Errorf("zero Result text = %q, want an error", got)
	}
}

func TestTruncate(t *testing.T) {
	notice := func(kept, total int) string {
		return fmt.Sprintf("\n\n[Skill instructions truncated: the first %d of %d bytes are shown.]", kept, total)
	}
	for _, tc := range []struct {
		name     string
		content  string
		max      int
		wantKept int // -1: unchanged
	}{
		{"no limit", strings.Repeat("a", 5000), 0, -1},
		{"within", strings.Repeat("a", 1024), 1024, -1},
		{"ascii", strings.Repeat("a", 1025), 1024, 1024},
		{"two-byte straddles", strings.Repeat("a", 1023) + "é", 1024, 1023},
		{"two-byte ends at limit", strings.Repeat("a", 1022) + "éz", 1024, 1024},
		{"four-byte straddles", strings.Repeat("a", 1021) + "🙂", 1024, 1021},
		{"four-byte ends at limit", strings.Repeat("a", 1020) + "🙂z", 1024, 1024},
		{"invalid bytes are code points", strings.Repeat("a", 1022) + "\xff\xfe\xfd", 1024, 1024},
		{"truncated sequence", strings.Repeat("a", 1023) + "\xe2\x82z", 1024, 1024},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, cut := catalog.Truncate(tc.content, tc.max)
			if tc.wantKept < 0 {
				if got != tc.content || cut != nil {
					t.Fatalf("content changed (cut %+v)", cut)
				}
				return
			}
			want := tc.content[:tc.wantKept] + notice(tc.wantKept, len(tc.content))
			if got != want || cut == nil || cut.Kept != tc.wantKept || cut.Total != len(tc.content) {
				t.Fatalf("Truncate = %q…, %+v; want kept %d of %d", got[max(0, len(got)-90):], cut, tc.wantKept, len(tc.content))
			}
		})
	}
}

// TestExecuteTruncates: a 2 MiB body under the default limit gives the
// first 262,144 bytes, the notice, and the truncation in the value.
func TestExecuteTruncates(t *testing.T) {
	body := strings.Repeat("Step by step. ", 2<<20/14+1)[:2<<20]
	r := catalog.Execute(context.Background(), lookupOf(skill("a-skill", nil, body)), "a-skill", catalog.DefaultOptions())
	if r.Value == nil {
		t.Fatalf("error %v", r.Err)
	}
	want := body[:262144] + "\n\n[Skill instructions truncated: the first 262144 of 2097152 bytes are shown.]"
	if r.Value.Content != want {
		t.Errorf("content ends %q", r.Value.Content[len(r.Value.Content)-100:])
	}
	if tr := r.Value.Truncated; tr == nil || tr.Kept != 262144 || tr.Total != 2<<20 {
		t.Errorf("Truncated = %+v", tr)
	}
	if !strings.HasSuffix(r.Text(), want+"\n</skill_instructions>\n</skill_content>") {
		t.Error("text does not show the truncated content")
	}
	small := catalog.DefaultOptions()
	small.MaxSkillBytes = catalog.MinMaxSkillBytes
	r = catalog.Execute(context.Background(), lookupOf(skill("a-skill", nil, "Use é carefully. "+strings.Repeat("More words. ", 100))), "a-skill", small)
	golden(t, "result-truncated", r.Text())
	r = catalog.Execute(context.Background(), lookupOf(skill("a-skill", nil, body)), "a-skill", catalog.Options{DescriptionMaxLength: 500})
	if r.Value == nil || r.Value.Content != body || r.Value.Truncated != nil {
		t.Error("no limit (0) cut the content")
	}
}
