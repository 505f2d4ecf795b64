package events

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// skillParameters is the skill tool's parameter schema, byte for byte.
const skillParameters = `{"type":"object","properties":{"name":{"type":"string","description":"The exact skill name from the available skills list."}},"required":["name"]}`

// samples returns one fully populated value of every payload type, keyed by
// a short name used for fixture files.
func samples() map[string]any {
	return map[string]any{
		"prestep": PreStep{V: 1, Session: "sess-1", Step: "step-7", Cwd: "/work/project",
			Tools:      []Tool{{Name: "skill", Owner: "skillstream"}, {Name: "bash", Owner: "agent"}},
			DeadlineMs: 1767225600000},
		"skillcall": SkillCall{V: 1, Session: "sess-1", Call: "call_01", Cwd: "/work/project",
			Args: SkillArgs{Name: "pdf-tools"}, DeadlineMs: 1767225600000},
		"compaction": Compaction{V: 1, Session: "sess-1", RetainFrom: 42, Keep: []uint64{3, 17}},
		"catalog": Catalog{V: 1, Session: "sess-1", Step: "step-7", ID: "cat-1", Role: "user",
			Text: "<available_skills>\n- `pdf-tools`: Work with PDF files &amp; forms\n</available_skills>",
			Source: CatalogSource{Kind: SourceKindCatalog, Producer: "skillstream", Update: "initial",
				Entries: []Entry{{Name: "pdf-tools", Description: "Work with PDF files & forms"}},
				Digest:  "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}},
		"toolresult": ToolResult{V: 1, Session: "sess-1", Call: "call_01", TriggerSeq: 99, Text: "<skill_content name=\"pdf-tools\">...",
			Value: &SkillValue{Name: "pdf-tools", Provider: "agentskills",
				ResourceBase: &ResourceBase{Kind: "directory", Path: "/work/project/.agents/skills/pdf-tools"},
				Content:      "# PDF tools\n\nUse pdftotext."}},
		"toolresult-error": ToolResult{V: 1, Session: "sess-1", Call: "call_02", TriggerSeq: 100, IsError: true,
			Text: `Error: invalid skill name "Bad_Name"`, Error: &ErrorInfo{Code: CodeInvalidName, Message: `invalid skill name "Bad_Name"`}},
		"decision": Decision{V: 1, Session: "sess-1", Step: "step-7", TriggerSeq: 98, Outcome: OutcomeAppended,
			Catalog: &Catalog{V: 1, Session: "sess-1", Step: "step-7", ID: "cat-1", Role: "user", Text: "<available_skills>\n</available_skills>",
				Source: CatalogSource{Kind: SourceKindCatalog, Producer: "skillstream", Update: "replacement", Entries: []Entry{}, Digest: "e3b0"}},
			CatalogSeq: 99},
		"decision-rejected": Decision{V: 1, Session: "sess-1", TriggerSeq: 5, Outcome: OutcomeRejected,
			Error: &ErrorInfo{Code: CodeBadRequest, Message: `bad payload: field "step": missing`}},
		"prestep-usertext": PreStep{V: 1, Session: "sess-1", Step: "step-8", Cwd: "/work/project",
			Tools:    []Tool{{Name: "skill", Owner: "skillstream"}},
			UserText: []string{"/pdf-tools fill in the form", "then check it"}},
		"skillinvocation":           invocationRecord,
		"skillinvocation-twocopies": invocationTwoCopies,
		"prestep-store": PreStep{V: 1, Session: "sess-1", Step: "step-9", Cwd: "/work/project",
			Tools:            []Tool{{Name: "skill", Owner: "skillstream"}},
			MinStoreRevision: 42, MinStoreEpoch: "5d41402abc4b2a76"},
		"skillcall-store": SkillCall{V: 1, Session: "sess-1", Call: "call_03", Args: SkillArgs{Name: "pdf-tools"},
			MinStoreRevision: 42, MinStoreEpoch: "5d41402abc4b2a76"},
		"decision-invocations": Decision{V: 1, Session: "sess-1", Step: "step-8", TriggerSeq: 101, Outcome: OutcomeUnchanged,
			Invocations: []SkillInvocation{invocationSample},
			Ignored:     []Ignored{{Name: "nope", Reason: IgnoredUnknown}, {Name: "model-only", Reason: IgnoredNotUserInvocable}}},
		"decision-disabled": Decision{V: 1, Session: "sess-1", Step: "step-8", TriggerSeq: 101, Outcome: OutcomeUnchanged,
			Ignored: []Ignored{{Reason: IgnoredDisabled}}},
		"cataloghead": CatalogHead{V: 1, Session: "sess-1", Step: "step-7",
			Digest: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08", View: View{Revision: 12, Instance: "host-a-1f2e3d4c", Epoch: "5d41402abc4b2a76"}},
		"tooldefinition": ToolDefinition{Name: "skill",
			Description: "Load the full instructions for an available skill. Call this with the exact skill name from the session skill catalog before acting on a task that names or clearly matches that skill.",
			Parameters:  RawJSON(skillParameters)},
		"skillsearch": SkillSearch{V: 1, Session: "sess-1", Call: "call_04", Cwd: "/work/project", Project: "web",
			Args: SearchArgs{Query: "fill PDF forms", Limit: int64(5)}, DeadlineMs: 1767225600000},
		"toolresult-search": ToolResult{V: 1, Session: "sess-1", Call: "call_04", TriggerSeq: 102,
			Text:   "<skill_search_results query=\"fill PDF forms\" shown=\"1\" total=\"1\">\n- `pdf-tools`: Work with PDF files &amp; forms\n</skill_search_results>\n\nLoad a skill with the `skill` tool by its exact name before following it.",
			Search: &SearchValue{Query: "fill PDF forms", Total: 1, Results: []Entry{{Name: "pdf-tools", Description: "Work with PDF files & forms"}}}},
		"catalog-changes": changesSample,
		"decision-changes": Decision{V: 1, Session: "sess-1", Step: "step-9", TriggerSeq: 103, Outcome: OutcomeAppended,
			Catalog: &changesSample, CatalogSeq: 104, CatalogSeqs: []uint64{12, 60, 104},
			CurrentList: &CurrentList{Entries: []Entry{{Name: "pdf-tools", Description: "Work with PDF files & forms, faster"}, {Name: "xlsx"}},
				Digest: "5d41402abc4b2a76b9719d911017c592ae4b4cbc0e52a7c4e3e4e8f4b2a1c0d9"}},
		"tooldefinitions": []ToolDefinition{
			{Name: "skill",
				Description: "Load the full instructions for an available skill. Call this with the exact skill name from the session skill catalog before acting on a task that names or clearly matches that skill.",
				Parameters:  RawJSON(skillParameters)},
			{Name: "skill_search",
				Description: "Search the skills available in this session by what they do. Use it when the task may benefit from a skill that the session skill catalog does not list, then load a skill it finds with the `skill` tool by its exact name.",
				Parameters:  RawJSON(searchParameters)},
		},
	}
}

// searchParameters is the skill_search tool's parameter schema, byte for
// byte.
const searchParameters = `{"type":"object","properties":{"query":{"type":"string","description":"A few words describing the task or the kind of skill needed."},"limit":{"type":"integer","minimum":1,"maximum":16,"description":"Most skills to return (default 8)."},"offset":{"type":"integer","minimum":0,"description":"Skip this many matches, to see more of them."}},"required":["query"]}`

// changesSample is a change list: one description edited, one skill
// added without a description (the size limit took it), one removed.
var changesSample = Catalog{V: 1, Session: "sess-1", Step: "step-9", ID: "sess-1:step-9:catalog.append", Role: "user",
	Text: "<system-reminder>\nThe available skill catalog changed. These changes update the latest available-skills list in this session; skills not named here are unchanged:\n\n<skill_catalog_changes>\n- removed `docx`\n- changed `pdf-tools`: Work with PDF files &amp; forms, faster\n- added `xlsx`\n(Shortened to fit the catalog size limit: 1 skills listed without a description, 0 skills not listed. Any available skill can still be loaded with the skill tool by its exact name.)\n</skill_catalog_changes>\n\nUse only names in the updated list. If the user names a listed skill, or the task clearly matches its description, call the `skill` tool with the exact name before acting.\n</system-reminder>",
	Source: CatalogSource{Kind: SourceKindCatalog, Producer: "skillstream", Update: UpdateChanges, Base: 60,
		Changes: []Change{{Name: "docx", Change: ChangeRemoved}, {Name: "pdf-tools", Change: ChangeChanged, Description: "Work with PDF files & forms, faster"}, {Name: "xlsx", Change: ChangeAdded}},
		Count:   2, Digest: "5d41402abc4b2a76b9719d911017c592ae4b4cbc0e52a7c4e3e4e8f4b2a1c0d9",
		View:    &View{Revision: 12, Instance: "host-a-1f2e3d4c"},
		Options: &CatalogOptions{DescriptionMax: 500, MaxLength: 24000, MaxSkillBytes: 262144, Updates: "changes", UserInvocation: true}}}

// invocationText is the text of invocationRecord: the skill tool's
// success text for pdf-tools.
const invocationText = "<skill_content name=\"pdf-tools\">\n<skill_resources>\nBase directory for this skill: /work/project/.agents/skills/pdf-tools\n" +
	"Resolve relative paths mentioned by this skill against the base directory before using them. Load referenced resources only as needed.\n" +
	"</skill_resources>\n\n<skill_instructions>\n# PDF tools\n\nUse pdftotext.\n</skill_instructions>\n</skill_content>"

// invocationRecord is a skill.invocation as processors append it: the
// instructions once, in the text.
var invocationRecord = SkillInvocation{V: 1, Session: "sess-1", Step: "step-8", ID: "sess-1:step-8:skill.invocation:pdf-tools", Role: "user",
	Name: "pdf-tools", Text: invocationText,
	Source: InvocationSource{Kind: SourceKindInvocation, Name: "pdf-tools", Form: InvocationFormInstructions},
	Value: SkillValue{Name: "pdf-tools", Provider: "agentskills",
		ResourceBase: &ResourceBase{Kind: "directory", Path: "/work/project/.agents/skills/pdf-tools"},
		Digest:       "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}}

// invocationTwoCopies is the same invocation as records were written
// before: the instructions in the value's content too.
var invocationTwoCopies = func() SkillInvocation {
	inv := invocationRecord
	inv.Value.Content = "# PDF tools\n\nUse pdftotext."
	return inv
}()

// invocationSample is a skill the user invoked with /pdf-tools, as a
// Decision carries it.
var invocationSample = SkillInvocation{V: 1, Session: "sess-1", Step: "step-8", ID: "sess-1:step-8:skill.invocation:pdf-tools", Role: "user",
	Name: "pdf-tools", Text: "<skill_content name=\"pdf-tools\">...",
	Source: InvocationSource{Kind: SourceKindInvocation, Name: "pdf-tools", Form: InvocationFormInstructions},
	Value: SkillValue{Name: "pdf-tools", Provider: "agentskills",
		ResourceBase: &ResourceBase{Kind: "directory", Path: "/work/project/.agents/skills/pdf-tools"},
		Content:      "# PDF tools\n\nUse pdftotext.", Digest: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"}}

// decodeAny decodes b into a value of the same type as like.
func decodeAny(enc Encoding, like any, b []byte) (any, error) {
	switch like.(type) {
	case PreStep:
		return DecodePreStep(enc, b)
	case SkillCall:
		return DecodeSkillCall(enc, b)
	case Compaction:
		return DecodeCompaction(enc, b)
	case Catalog:
		return DecodeCatalog(enc, b)
	case ToolResult:
		return DecodeToolResult(enc, b)
	case Decision:
		return DecodeDecision(enc, b)
	case ToolDefinition:
		return DecodeToolDefinition(enc, b)
	case CatalogHead:
		return DecodeCatalogHead(enc, b)
	case SkillInvocation:
		return DecodeSkillInvocation(enc, b)
	case SkillSearch:
		return DecodeSkillSearch(enc, b)
	case []ToolDefinition:
		return DecodeToolDefinitions(enc, b)
	}
	panic("unknown payload type")
}

func TestRoundTrip(t *testing.T) {
	for name, v := range samples() {
		for _, enc := range []Encoding{Msgpack, JSON} {
			t.Run(name+"/"+enc.String(), func(t *testing.T) {
				b, err := Encode(enc, v)
				if err != nil {
					t.Fatal(err)
				}
				got, err := decodeAny(enc, v, b)
				if err != nil {
					t.Fatalf("decode %q: %v", b, err)
				}
				if !reflect.DeepEqual(got, v) {
					t.Errorf("round trip changed the value\n got %#v\nwant %#v", got, v)
				}
			})
		}
	}
}

func TestToolDefinitionParametersByteIdentical(t *testing.T) {
	def := samples()["tooldefinition"].(ToolDefinition)
	for _, enc := range []Encoding{Msgpack, JSON} {
		b, err := Encode(enc, def)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeToolDefinition(enc, b)
		if err != nil {
			t.Fatal(err)
		}
		if string(got.Parameters) != skillParameters {
			t.Errorf("%v: parameters = %s, want %s", enc, got.Parameters, skillParameters)
		}
		if enc == JSON && !bytes.Contains(b, []byte(`"parameters":`+skillParameters)) {
			t.Errorf("JSON encoding does not carry the parameters verbatim: %s", b)
		}
	}
}

func TestEncodingOf(t *testing.T) {
	for _, tc := range []struct {
		ct   string
		want Encoding
		ok   bool
	}{
		{"", Msgpack, true},
		{"application/msgpack", Msgpack, true},
		{"Application/MsgPack", Msgpack, true},
		{"application/json", JSON, true},
		{"application/json; charset=utf-8", JSON, true},
		{" application/json ;charset=UTF-8", JSON, true},
		{"text/plain", Msgpack, false},
		{"application/xml", Msgpack, false},
		{"json", Msgpack, false},
	} {
		got, err := EncodingOf(tc.ct)
		if tc.ok != (err == nil) || (tc.ok && got != tc.want) {
			t.Errorf("EncodingOf(%q) = %v, %v; want %v ok=%v", tc.ct, got, err, tc.want, tc.ok)
		}
		if !tc.ok && (!errors.Is(err, ErrUnsupportedContentType) || !errors.Is(err, ErrBadPayload) || !strings.Contains(err.Error(), tc.ct)) {
			t.Errorf("EncodingOf(%q) error %v: want ErrUnsupportedContentType naming the type", tc.ct, err)
		}
	}
	if Msgpack.ContentType() != ContentTypeMsgpack || JSON.ContentType() != ContentTypeJSON {
		t.Error("ContentType mismatch")
	}
}
