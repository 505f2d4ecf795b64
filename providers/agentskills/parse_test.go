package agentskills_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers/agentskills"
)

func TestParseValid(t *testing.T) {
	both := catalog.Invocation{ModelInvocable: true, UserInvocable: true}
	tests := []struct {
		name string
		in   string
		want agentskills.Document
	}{
		{
			name: "minimal",
			in:   "---\nname: a\ndescription: Does a.\n---\n\n  Body line.\n\n",
			want: agentskills.Document{Name: "a", Description: "Does a.", Invocation: both, Body: "Body line."},
		},
		{
			name: "CRLF everywhere",
			in:   "---\r\nname: crlf\r\ndescription: Windows.\r\n---\r\nLine 1\r\nLine 2\r\n",
			want: agentskills.Document{Name: "crlf", Description: "Windows.", Invocation: both, Body: "Line 1\r\nLine 2"},
		},
		{
			name: "four dashes inside a value are not a delimiter",
			in:   "---\nname: dashes\ndescription: |\n  before\n  ----\n  after\nwhenToUse: x\n---\nbody\n",
			want: agentskills.Document{Name: "dashes", Description: "before\n----\nafter", WhenToUse: "x", Invocation: both, Body: "body"},
		},
		{
			name: "block scalars and when_to_use",
			in:   "---\nname: block\ndescription: >-\n  Folded\n  text ---- here\nwhen_to_use: |\n  When\n  needed\n---\n# Title\n",
			want: agentskills.Document{Name: "block", Description: "Folded text ---- here", WhenToUse: "When\nneeded",
				Invocation: both, Body: "# Title"},
		},
		{
			name: "no body, delimiter at end of file",
			in:   "---\nname: nobody\ndescription: d\n---",
			want: agentskills.Document{Name: "nobody", Description: "d", Invocation: both},
		},
		{
			name: "optional fields",
			in: "---\nname: full\ndescription: d\nwhenToUse: w\nlicense: MIT\ncompatibility: any\n" +
				"allowed-tools: Bash Read\nmetadata:\n  owner: team\n  tags: [a, b]\nunknown-key: ignored\n---\nb",
			want: agentskills.Document{Name: "full", Description: "d", WhenToUse: "w", License: "MIT", Compatibility: "any",
				AllowedTools: []string{"Bash", "Read"}, Invocation: both, Body: "b",
				Metadata: map[string]any{"owner": "team", "tags": []any{"a", "b"}}},
		},
		{
			name: "byte order mark",
			in:   "\ufeff---\nname: bom\ndescription: d\n---\n",
			want: agentskills.Document{Name: "bom", Description: "d", Invocation: both},
		},
		{
			name: "digits-only name",
			in:   "---\nname: 123\ndescription: d\n---\n",
			want: agentskills.Document{Name: "123", Description: "d", Invocation: both},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := agentskills.Parse([]byte(tt.in))
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if got.Name != tt.want.Name || got.Description != tt.want.Description || got.WhenToUse != tt.want.WhenToUse ||
				got.Invocation != tt.want.Invocation || got.Body != tt.want.Body || got.License != tt.want.License ||
				got.Compatibility != tt.want.Compatibility || strings.Join(got.AllowedTools, ",") != strings.Join(tt.want.AllowedTools, ",") {
				t.Fatalf("got  %#v\nwant %#v", got, tt.want)
			}
			if tt.want.Metadata != nil && (got.Metadata["owner"] != "team" || len(got.Metadata) != 2) {
				t.Fatalf("metadata = %#v", got.Metadata)
			}
		})
	}
}

func TestParseInvocationSpellings(t *testing.T) {
	for _, v := range []string{"true", "True", "TRUE", "yes", "Yes", "on", "ON", "1", `"true"`, `'yes'`, `"1"`} {
		d, err := agentskills.Parse([]byte("---\nname: a\ndescription: d\ndisable-model-invocation: " + v + "\nuser-invocable: " + v + "\n---\n"))
		if err != nil {
			t.Errorf("%s: %v", v, err)
			continue
		}
		if d.Invocation.ModelInvocable || !d.Invocation.UserInvocable {
			t.Errorf("%s: invocation = %+v, want model false, user true", v, d.Invocation)
		}
	}
	for _, v := range []string{"false", "False", "no", "NO", "off", "Off", "0", `"false"`, `'off'`, `"0"`} {
		d, err := agentskills.Parse([]byte("---\nname: a\ndescription: d\ndisable-model-invocation: " + v + "\nuser-invocable: " + v + "\n---\n"))
		if err != nil {
			t.Errorf("%s: %v", v, err)
			continue
		}
		if !d.Invocation.ModelInvocable || d.Invocation.UserInvocable {
			t.Errorf("%s: invocation = %+v, want model true, user false", v, d.Invocation)
		}
	}
}

func TestParseInvalid(t *testing.T) {
	tests := []struct {
		name, in, reason string
	}{
		{"empty file", "", "file is empty"},
		{"no frontmatter", "# Just markdown\n", "no frontmatter"},
		{"delimiter with trailing text", "--- \nname: a\ndescription: d\n---\n", "no frontmatter"},
		{"unclosed", "---\nname: a\ndescription: d\n", "unclosed frontmatter"},
		{"only four dashes close", "---\nname: a\ndescription: d\n----\n", "unclosed frontmatter"},
		{"empty frontmatter", "---\n---\nbody", "frontmatter is empty"},
		{"non-mapping list", "---\n- a\n- b\n---\n", "not a mapping"},
		{"non-mapping scalar", "---\njust text\n---\n", "not a mapping"},
		{"invalid YAML", "---\nname: [a\ndescription: d\n---\n", "not valid YAML"},
		{"tab indentation", "---\nname: a\n\tdescription: d\n---\n", "not valid YAML"},
		{"missing name", "---\ndescription: d\n---\n", "name is missing"},
		{"missing description", "---\nname: a\n---\n", "description is missing"},
		{"empty description", "---\nname: a\ndescription: \"  \"\n---\n", "description is empty"},
		{"null description", "---\nname: a\ndescription:\n---\n", "description must be a string"},
		{"numeric description", "---\nname: a\ndescription: 42\n---\n", "description must be a string"},
		{"list description", "---\nname: a\ndescription: [x]\n---\n", "description must be a string"},
		{"uppercase name", "---\nname: Bad\ndescription: d\n---\n", `name "Bad" is invalid`},
		{"double hyphen", "---\nname: a--b\ndescription: d\n---\n", `name "a--b" is invalid`},
		{"leading hyphen", "---\nname: -a\ndescription: d\n---\n", "is invalid"},
		{"path name", "---\nname: ../etc\ndescription: d\n---\n", "is invalid"},
		{"too long", "---\nname: " + strings.Repeat("a", 65) + "\ndescription: d\n---\n", "is invalid"},
		{"null name", "---\nname: null\ndescription: d\n---\n", "name must be a string"},
		{"bool name", "---\nname: true\ndescription: d\n---\n", "name must be a string"},
		{"maybe", "---\nname: a\ndescription: d\ndisable-model-invocation: maybe\n---\n", `disable-model-invocation must be true or false (also yes/no, on/off, 1/0), not "maybe"`},
		{"user-invocable 2", "---\nname: a\ndescription: d\nuser-invocable: 2\n---\n", `user-invocable must be true or false`},
		{"flag empty", "---\nname: a\ndescription: d\nuser-invocable:\n---\n", "not an empty value"},
		{"flag list", "---\nname: a\ndescription: d\nuser-invocable: [true]\n---\n", "not a list"},
		{"legacy disableModelInvocation", "---\nname: a\ndescription: d\ndisableModelInvocation: true\n---\n", `legacy key "disableModelInvocation"`},
		{"legacy modelInvocable", "---\nname: a\ndescription: d\nmodelInvocable: false\n---\n", `legacy key "modelInvocable"`},
		{"legacy userInvocable", "---\nname: a\ndescription: d\nuserInvocable: false\n---\n", `legacy key "userInvocable"`},
		{"duplicate key", "---\nname: a\nname: b\ndescription: d\n---\n", `key "name" appears more than once`},
		{"both when spellings", "---\nname: a\ndescription: d\nwhenToUse: x\nwhen_to_use: y\n---\n", "both set"},
		{"metadata not a map", "---\nname: a\ndescription: d\nmetadata: [1]\n---\n", "metadata must be a mapping"},
		{"allowed-tools map", "---\nname: a\ndescription: d\nallowed-tools: {a: b}\n---\n", "allowed-tools must be"},
		{"body not UTF-8", "---\nname: a\ndescription: d\n---\n\xff\xfe", "not valid UTF-8"},
		{"several problems", "---\nname: A\n---\n", `name "A" is invalid`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := agentskills.ParseFile("/skills/x/SKILL.md", []byte(tt.in))
			if err == nil {
				t.Fatal("accepted")
			}
			if !errors.Is(err, agentskills.ErrInvalidSkill) {
				t.Errorf("error %v does not wrap ErrInvalidSkill", err)
			}
			var pe *agentskills.ParseError
			if !errors.As(err, &pe) || pe.Path != "/skills/x/SKILL.md" {
				t.Fatalf("error %#v is not a ParseError naming the path", err)
			}
			if !strings.Contains(pe.Reason, tt.reason) {
				t.Errorf("reason %q does not contain %q", pe.Reason, tt.reason)
			}
			if !strings.HasPrefix(err.Error(), "/skills/x/SKILL.md: ") {
				t.Errorf("error text %q does not start with the path", err)
			}
		})
	}
}

func TestParseReportsEveryProblem(t *testing.T) {
	_, err := agentskills.Parse([]byte("---\nname: A\nuserInvocable: no\n---\n"))
	if err == nil {
		t.Fatal("accepted")
	}
	for _, want := range []string{`name "A" is invalid`, `legacy key "userInvocable"`, "description is missing"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}

// YAML errors name the line of the file, the opening `---` being line 1,
// whether YAML's scanner or its parser found them (the parser counts its
// lines from 0).
func TestParseYAMLErrorsNameTheFileLine(t *testing.T) {
	for _, tt := range []struct{ in, reason string }{
		{"---\nname: a\ndescription: [unbalanced\n---\n", "frontmatter is not valid YAML: line 3: did not find expected ',' or ']'"},
		{"---\nname: a\ndescription: d\n@x: 1\n---\n", "frontmatter is not valid YAML: line 4: found character that cannot start any token"},
		{"---\nname: a\ndescription: d\n- x\n---\n", "frontmatter is not valid YAML: line 4: did not find expected key"},
		{"---\nname: a\ndescription: d\nfoo: bar: baz\n---\n", "frontmatter is not valid YAML: line 4: mapping values are not allowed in this context"},
		{"---\r\nname: a\r\ndescription: 'open\r\n---\r\n", "frontmatter is not valid YAML: line 3: found unexpected end of stream"},
		{"\ufeff---\nname: a\ndescription: d\n\n{x: y}: z\n---\n", "frontmatter key on line 5 is not a plain string"},
		{"---\nname: a\ndescription: d\nmetadata:\n  k: 1\n  k: 2\n---\n", `line 6: mapping key "k" already defined at line 5`},
	} {
		_, err := agentskills.Parse([]byte(tt.in))
		var pe *agentskills.ParseError
		if !errors.As(err, &pe) || !strings.Contains(pe.Reason, tt.reason) {
			t.Errorf("Parse(%q) = %v, want %q", tt.in, err, tt.reason)
		}
	}
}

// Check is what the Agent Skills spec refuses though Parse accepts it.
func TestCheckFollowsTheAgentSkillsSpec(t *testing.T) {
	d := func(front string) agentskills.Document {
		t.Helper()
		doc, err := agentskills.Parse([]byte("---\n" + front + "\n---\nbody\n"))
		if err != nil {
			t.Fatal(err)
		}
		return doc
	}
	for _, tt := range []struct {
		name, path, front string
		want              []string
	}{
		{"conforming", "/s/pdf/SKILL.md", "name: pdf\ndescription: d", nil},
		{"at the limits", "/s/pdf/SKILL.md", "name: pdf\ndescription: " + strings.Repeat("é", 1024) + "\ncompatibility: " + strings.Repeat("c", 500), nil},
		{"flat file", "/s/pdf.md", "name: pdf\ndescription: d", nil},
		{"folder name", "/s/other/SKILL.md", "name: pdf\ndescription: d",
			[]string{`name "pdf" differs from its folder name "other"; the Agent Skills spec requires them to be equal`}},
		{"file name", "/s/other.md", "name: pdf\ndescription: d",
			[]string{`name "pdf" differs from its file name "other"; the Agent Skills spec requires them to be equal`}},
		{"long fields", "/s/pdf/SKILL.md", "name: pdf\ndescription: " + strings.Repeat("é", 1025) + "\ncompatibility: " + strings.Repeat("c", 501), []string{
			"description is 1025 characters; the Agent Skills spec allows at most 1024",
			"compatibility is 501 characters; the Agent Skills spec allows at most 500"}},
	} {
		if got := d(tt.front).Check(tt.path); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
			t.Errorf("%s: Check = %q, want %q", tt.name, got, tt.want)
		}
	}
	for name, bad := range map[string]bool{"SKILL.md": false, "Skill.md": true, "skill.md": true, "SKILL.MD": true, "skill.txt": false, "pdf.md": false} {
		err := agentskills.CheckFileName("/s/x/" + name)
		if (err != nil) != bad || bad && (!errors.Is(err, agentskills.ErrInvalidSkill) || !strings.Contains(err.Error(), "must be named exactly SKILL.md")) {
			t.Errorf("CheckFileName(%s) = %v", name, err)
		}
	}
}

// The provider serves what only the Agent Skills spec refuses (a name
// other than the folder's, a long description) and skips a folder whose
// skill file is Skill.md without a word; ScanFolder, for validate, reports
// them: Found.Problems and a diagnostic naming the misnamed file.
func TestServeLenientScanStrict(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, "folder", "SKILL.md"), skillText("other", "d", "b"))
	write(t, filepath.Join(root, "long", "SKILL.md"), skillText("long", strings.Repeat("d", 1025), "b"))
	write(t, filepath.Join(root, "upper", "Skill.md"), skillText("upper", "d", "b"))
	p := newProvider(t, agentskills.Config{CustomDirs: []string{root}, NoUserDir: true})
	if got := describe(list(t, p, "")); len(got) != 2 || got[0] != "other=d@custom" {
		t.Errorf("served %d skills (%.40q), want other and long", len(got), got)
	}
	if ds := diagnostics(t, p, ""); len(ds) != 0 {
		t.Errorf("serve reports %v", ds)
	}

	ls := agentskills.ScanFolder(context.Background(), root, true)
	var problems []string
	for _, f := range ls.Skills {
		problems = append(problems, f.Problems...)
	}
	if len(ls.Skills) != 2 || len(problems) != 2 || !strings.HasPrefix(problems[0], `name "other" differs from its folder name "folder"`) ||
		!strings.HasPrefix(problems[1], "description is 1025 characters") {
		t.Errorf("ScanFolder found %d skills with problems %q", len(ls.Skills), problems)
	}
	upper := filepath.Join(root, "upper", "Skill.md")
	if len(ls.Diagnostics) != 1 || ls.Diagnostics[0].Path != upper || !strings.Contains(ls.Diagnostics[0].Reason, "must be named exactly SKILL.md") {
		t.Errorf("ScanFolder diagnostics %v, want one naming %s", ls.Diagnostics, upper)
	}
	if m := agentskills.Misnamed(filepath.Join(root, "upper")); m != upper {
		t.Errorf("Misnamed = %q", m)
	}
	if m := agentskills.Misnamed(filepath.Join(root, "folder")); m != "" {
		t.Errorf("Misnamed of a folder with SKILL.md = %q", m)
	}
}
