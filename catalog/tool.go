package catalog

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
)

// ToolName is the name of the model-facing skill tool, and the name Visible
// looks for in a tool view.
const ToolName = "skill"

// ToolDescription is the skill tool's description as registered with the
// model.
const ToolDescription = "Load the full instructions for an available skill. Call this with the exact skill name from the session skill catalog before acting on a task that names or clearly matches that skill."

// ToolParameters is the skill tool's parameter schema, as exact JSON text
// (the tool takes one required string, the skill name).
const ToolParameters = `{"type":"object","properties":{"name":{"type":"string","description":"The exact skill name from the available skills list."}},"required":["name"]}`

// Definition is what a worker registers with the model for a tool.
// Parameters is JSON text.
type Definition struct {
	Name        string
	Description string
	Parameters  string
}

// ToolDefinition returns the definition of the skill tool.
func ToolDefinition() Definition {
	return Definition{Name: ToolName, Description: ToolDescription, Parameters: ToolParameters}
}

// Lookup is what Execute needs from the skill registry, already bound to the
// calling session's working directory.
type Lookup interface {
	// Resolve returns the summary of the skill that wins name, from a
	// possibly incomplete snapshot. The error wraps ErrNotFound when no
	// provider offers name.
	Resolve(ctx context.Context, name string) (Summary, error)
	// Load asks the winner's provider for the current skill. The error wraps
	// ErrNotFound when the skill has gone since it was resolved.
	Load(ctx context.Context, name string) (Skill, error)
}

// ErrorCode classifies a failed tool call.
type ErrorCode string

// The error codes of Execute.
const (
	CodeInvalidName       ErrorCode = "invalid_name"
	CodeUnknown           ErrorCode = "unknown"
	CodeNotModelInvocable ErrorCode = "not_model_invocable"
	CodeProvider          ErrorCode = "provider"
)

// ToolError is a failed tool call as the model is told about it. Message
// has no "Error: " prefix; Result.Text adds it.
type ToolError struct {
	Code    ErrorCode
	Message string
}

// Error returns the message.
func (e *ToolError) Error() string { return e.Message }

// Value is the success value of the skill tool: nothing but the name, the
// provider, where resources resolve, and the instructions. Content is the
// instructions as shown to the model: when the instruction size limit cut
// them, the kept prefix followed by the truncation notice, and Truncated
// says how much was kept.
type Value struct {
	Name         string
	Provider     string
	ResourceBase *ResourceBase
	Content      string
	Truncated    *Truncation
	// Digest and Revision identify the loaded version (see Skill); they
	// travel in the structured value only, never in the text.
	Digest   string
	Revision uint64
	// Origin is the loaded revision's evidence (see Summary): structured
	// value only, never in the text.
	Origin Origin
	// Signature is the loaded revision's signature (see Skill): structured
	// value only, never in the text.
	Signature *Signature
}

// Truncation tells how much of a skill's instructions a result shows, in
// bytes: the first Kept of Total.
type Truncation struct {
	Kept  int
	Total int
}

// Truncate applies the instruction size limit: content of at most maxBytes
// bytes (or any content when maxBytes is 0) is returned as it is, with a
// nil Truncation. Longer content keeps its longest prefix of at most
// maxBytes bytes that ends on a code point boundary (never splitting a
// UTF-8 sequence; a byte that is not valid UTF-8 counts as one code point),
// followed by a blank line and the notice
//
//	[Skill instructions truncated: the first <kept> of <total> bytes are shown.]
//
// Work and memory are bounded by maxBytes, not by the length of content.
func Truncate(content string, maxBytes int) (string, *Truncation) {
	if maxBytes <= 0 || len(content) <= maxBytes {
		return content, nil
	}
	cut := maxBytes
	for s := cut - 1; s >= 0 && s > cut-utf8.UTFMax; s-- {
		if !utf8.RuneStart(content[s]) {
			continue
		}
		if r, size := utf8.DecodeRuneInString(content[s:]); s+size > cut && (r != utf8.RuneError || size > 1) {
			cut = s // a valid sequence straddles the limit
		}
		break
	}
	notice := "\n\n[Skill instructions truncated: the first " + strconv.Itoa(cut) + " of " + strconv.Itoa(len(content)) + " bytes are shown.]"
	return content[:cut] + notice, &Truncation{Kept: cut, Total: len(content)}
}

// Result is the outcome of one tool call: exactly one of Value and Err is
// set.
type Result struct {
	Value *Value
	Err   *ToolError
}

// providerFailed is the message of a provider error that has none.
const providerFailed = "skill provider failed"

// Execute runs the skill tool for the raw name argument:
//
//  1. a name outside the grammar → CodeInvalidName, and l is not consulted;
//  2. no skill of that name → CodeUnknown;
//  3. a skill the model may not invoke → CodeNotModelInvocable, decided on
//     the summary, so its body is never loaded;
//  4. the skill is loaded; if it has gone meanwhile → CodeUnknown, and if
//     its loaded definition forbids model invocation → CodeNotModelInvocable
//     (the body is discarded, never disclosed);
//  5. otherwise the Value, its content cut to opts.MaxSkillBytes (see
//     Truncate).
//
// Any other error of l is a CodeProvider error whose message is the
// provider's error text. Whether a skill is user-invocable plays no part.
// Error messages quote the raw argument as given, between double quotes.
func Execute(ctx context.Context, l Lookup, name string, opts Options) Result {
	return run(ctx, l, name, opts, func(i Invocation) bool { return i.ModelInvocable }, notInvocable)
}

// run is Execute with the rule of who may invoke given: may says whether
// a skill's Invocation lets the caller invoke it, refused is the failure
// when it does not. The skill tool and a user's invocation (Invoke) share
// every other step, so they always find the same winner.
func run(ctx context.Context, l Lookup, name string, opts Options, may func(Invocation) bool, refused func(string) Result) Result {
	if !ValidName(name) {
		return fail(CodeInvalidName, invalidName(name))
	}
	sum, err := l.Resolve(ctx, name)
	if err != nil {
		return lookupFailed(name, err)
	}
	if !may(sum.Invocation) {
		return refused(name)
	}
	sk, err := l.Load(ctx, name)
	if err != nil {
		return lookupFailed(name, err)
	}
	if !may(sk.Invocation) {
		return refused(name)
	}
	provider := sk.Provider
	if provider == "" {
		provider = sum.Provider
	}
	content, cut := Truncate(sk.Content, opts.MaxSkillBytes)
	return Result{Value: &Value{
		Name:         name,
		Provider:     provider,
		ResourceBase: sk.ResourceBase,
		Content:      content,
		Truncated:    cut,
		Digest:       sk.Digest,
		Revision:     sk.Revision,
		Origin:       sk.Origin,
		Signature:    sk.Signature,
	}}
}

// maxQuotedName is the longest invalid name an error quotes whole.
const maxQuotedName = 256

// invalidName is the message of a name outside the grammar. A name of
// more than maxQuotedName bytes is quoted up to MaxNameLength bytes, with
// its length: a call may name a megabyte, and its result must not carry it
// back.
func invalidName(name string) string {
	if len(name) <= maxQuotedName {
		return `invalid skill name "` + name + `"`
	}
	cut := MaxNameLength
	for cut > 0 && !utf8.RuneStart(name[cut]) {
		cut--
	}
	return `invalid skill name "` + name[:cut] + `…" (` + strconv.Itoa(len(name)) + ` bytes; a skill name has at most ` +
		strconv.Itoa(MaxNameLength) + `)`
}

func fail(code ErrorCode, msg string) Result {
	return Result{Err: &ToolError{Code: code, Message: msg}}
}

func notInvocable(name string) Result {
	return fail(CodeNotModelInvocable, `skill "`+name+`" is not available for model invocation`)
}

func lookupFailed(name string, err error) Result {
	if errors.Is(err, ErrNotFound) {
		return fail(CodeUnknown, `skill "`+name+`" is unknown or no longer available`)
	}
	msg := err.Error()
	if msg == "" {
		msg = providerFailed
	}
	return fail(CodeProvider, msg)
}

// attrEscaper escapes the name attribute of <skill_content>.
var attrEscaper = strings.NewReplacer("&", "&amp;", `"`, "&quot;", "<", "&lt;")

// Text returns exactly what the model reads for this result: "Error: " and
// the message for a failure, or the skill_content document for a success.
// A zero Result (neither set) reads as an error.
func (r Result) Text() string {
	if r.Err != nil {
		return "Error: " + r.Err.Message
	}
	if r.Value == nil {
		return "Error: " + providerFailed
	}
	v := r.Value
	g1, g2 := guidance(v)
	var b strings.Builder
	b.Grow(len(v.Content) + len(v.Name) + len(g1) + len(g2) + 160)
	b.WriteString(`<skill_content name="`)
	b.WriteString(attrEscaper.Replace(v.Name))
	b.WriteString("\">\n<skill_resources>\n")
	b.WriteString(g1)
	b.WriteByte('\n')
	b.WriteString(g2)
	b.WriteString("\n</skill_resources>\n\n<skill_instructions>\n")
	b.WriteString(v.Content)
	b.WriteString("\n</skill_instructions>\n</skill_content>")
	return b.String()
}

const loadAsNeeded = "Load referenced resources only as needed."

// guidance returns the two resource guidance lines for v. A resource base of
// an unknown kind is treated as none.
func guidance(v *Value) (string, string) {
	rb := v.ResourceBase
	if rb != nil {
		switch rb.Kind {
		case ResourceDirectory:
			return "Base directory for this skill: " + Escape(rb.Path),
				"Resolve relative paths mentioned by this skill against the base directory before using them. " + loadAsNeeded
		case ResourceURL:
			return "Base URL for this skill: " + Escape(rb.URL),
				"Resolve relative URLs mentioned by this skill against the base URL before using them. " + loadAsNeeded
		case ResourceOpaque:
			return "Resources for this skill: " + Escape(rb.Description), loadAsNeeded
		}
	}
	return `Resources for this skill are managed by provider "` + Escape(v.Provider) + `".`, loadAsNeeded
}
