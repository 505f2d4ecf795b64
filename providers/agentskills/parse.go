package agentskills

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/skillstream/skillstream/catalog"
)

// MaxFileSize is the largest skill file read, in bytes (8 MiB). A larger
// file is dropped with a diagnostic. It is a ceiling on the memory one read
// of a skill file takes, not the bound on what the model gets: that is the
// instruction size limit applied when the skill is loaded (--max-skill-bytes,
// 256 KiB by default), which cuts a long body with a notice the model reads.
const MaxFileSize = 8 << 20

// ErrInvalidSkill is wrapped by every *ParseError.
var ErrInvalidSkill = errors.New("invalid skill file")

// ParseError tells why a file is not a valid skill. Path is empty when the
// data was parsed without a file name.
type ParseError struct {
	Path   string
	Reason string
}

func (e *ParseError) Error() string {
	if e.Path == "" {
		return e.Reason
	}
	return e.Path + ": " + e.Reason
}

// Unwrap returns ErrInvalidSkill.
func (e *ParseError) Unwrap() error { return ErrInvalidSkill }

// Document is a parsed SKILL.md: the frontmatter fields skillstream knows
// and the trimmed body.
type Document struct {
	Name          string
	Description   string
	WhenToUse     string
	Invocation    catalog.Invocation
	License       string
	Compatibility string
	AllowedTools  []string
	Metadata      map[string]any
	Body          string
}

// legacyKeys are spellings of the invocation flags from older formats. They
// are refused rather than guessed at.
var legacyKeys = map[string]string{
	"disableModelInvocation": "disable-model-invocation",
	"modelInvocable":         "disable-model-invocation",
	"userInvocable":          "user-invocable",
}

// Parse parses a skill file: YAML frontmatter between a first line `---`
// and the next line that is exactly `---`, then the body. Errors are
// *ParseError values listing every problem found.
func Parse(data []byte) (Document, error) {
	front, body, err := split(data)
	if err != nil {
		return Document{}, err
	}
	if !utf8.Valid(body) {
		return Document{}, &ParseError{Reason: "body is not valid UTF-8"}
	}
	d, err := parseFront(front)
	if err != nil {
		return Document{}, err
	}
	d.Body = strings.TrimSpace(string(body))
	return d, nil
}

// ParseFile parses a skill file read from path and returns the skill it
// defines: name, description, whenToUse, invocation and content. Source,
// Provider and ResourceBase are left for the caller, who knows where the
// file came from. Errors are *ParseError values naming path.
func ParseFile(path string, data []byte) (catalog.Skill, error) {
	d, err := Parse(data)
	if err != nil {
		var pe *ParseError
		if errors.As(err, &pe) {
			return catalog.Skill{}, &ParseError{Path: path, Reason: pe.Reason}
		}
		return catalog.Skill{}, &ParseError{Path: path, Reason: err.Error()}
	}
	return d.skill(), nil
}

func (d Document) skill() catalog.Skill {
	return catalog.Skill{
		Summary: catalog.Summary{
			Name:        d.Name,
			Description: d.Description,
			WhenToUse:   d.WhenToUse,
			Invocation:  d.Invocation,
		},
		Content: d.Body,
	}
}

// split separates the frontmatter from the body. A UTF-8 byte order mark
// before the first line is tolerated, as is CRLF.
func split(data []byte) (front, body []byte, err error) {
	data = bytes.TrimPrefix(data, []byte("\ufeff"))
	line, rest, _ := cutLine(data)
	if string(line) != "---" {
		if len(bytes.TrimSpace(data)) == 0 {
			return nil, nil, &ParseError{Reason: "file is empty; it must start with a `---` frontmatter line"}
		}
		return nil, nil, &ParseError{Reason: "no frontmatter: the first line must be `---`"}
	}
	start := len(data) - len(rest)
	pos := start
	for len(rest) > 0 {
		var next []byte
		var nl bool
		line, next, nl = cutLine(rest)
		if string(line) == "---" {
			return data[start:pos], next, nil
		}
		consumed := len(line)
		if nl {
			consumed = len(rest) - len(next)
		}
		pos += consumed
		rest = next
	}
	return nil, nil, &ParseError{Reason: "unclosed frontmatter: no line `---` ends it"}
}

// hasFrontmatter reports whether data starts with a `---` line (after an
// optional byte order mark): whether it is meant as a skill file at all.
func hasFrontmatter(data []byte) bool {
	line, _, _ := cutLine(bytes.TrimPrefix(data, []byte("\ufeff")))
	return string(line) == "---"
}

// cutLine returns the first line of b without its line ending (LF or CRLF),
// the rest after the ending, and whether there was an ending.
func cutLine(b []byte) (line, rest []byte, nl bool) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		return bytes.TrimSuffix(b, []byte("\r")), nil, false
	}
	return bytes.TrimSuffix(b[:i], []byte("\r")), b[i+1:], true
}

// frontLine is what turns a line of the frontmatter into a line of the
// file: the frontmatter starts on the file's second line, after `---`.
const frontLine = 1

// yamlLine matches the line numbers YAML's messages give ("line 3: ...",
// "... already defined at line 2").
var yamlLine = regexp.MustCompile(`(^|\s)line (\d+)`)

// parserProblems are the problems YAML's parser (not its scanner) reports.
// Their line numbers count from 0 (the line where the construct being
// parsed starts, or else the offending token's), where every other line
// number YAML gives counts from 1.
var parserProblems = []string{
	"did not find expected <stream-start>", "did not find expected <document start>", "found undefined tag handle",
	"did not find expected node content", "did not find expected '-' indicator", "did not find expected key",
	"did not find expected ',' or ']'", "did not find expected ',' or '}'", "found duplicate %YAML directive",
	"found incompatible YAML document", "found duplicate %TAG directive",
}

// fileLines turns the frontmatter's line numbers in a YAML message into
// the file's, so that a message names the line an editor shows.
func fileLines(msg string) string {
	shift := frontLine
	for _, p := range parserProblems {
		if strings.HasSuffix(msg, ": "+p) {
			shift++
			break
		}
	}
	return yamlLine.ReplaceAllStringFunc(msg, func(m string) string {
		sub := yamlLine.FindStringSubmatch(m)
		n, err := strconv.Atoi(sub[2])
		if err != nil {
			return m
		}
		return sub[1] + "line " + strconv.Itoa(n+shift)
	})
}

// problems collects the reasons a frontmatter is refused.
type problems []string

func (p *problems) add(format string, args ...any) { *p = append(*p, fmt.Sprintf(format, args...)) }

func parseFront(front []byte) (Document, error) {
	front = bytes.ReplaceAll(front, []byte("\r\n"), []byte("\n"))
	var root yaml.Node
	if err := yaml.Unmarshal(front, &root); err != nil {
		return Document{}, &ParseError{Reason: "frontmatter is not valid YAML: " + fileLines(strings.TrimPrefix(err.Error(), "yaml: "))}
	}
	if root.Kind == 0 {
		return Document{}, &ParseError{Reason: "frontmatter is empty; name and description are required"}
	}
	m := deref(&root)
	if m.Kind == yaml.DocumentNode && len(m.Content) > 0 {
		m = deref(m.Content[0])
	}
	if m.Kind != yaml.MappingNode {
		return Document{}, &ParseError{Reason: "frontmatter is not a mapping of keys to values"}
	}

	d := Document{Invocation: catalog.Invocation{ModelInvocable: true, UserInvocable: true}}
	var bad problems
	seen := make(map[string]bool)
	var haveName, haveDesc, haveWhen bool
	for i := 0; i+1 < len(m.Content); i += 2 {
		kn, vn := deref(m.Content[i]), deref(m.Content[i+1])
		if kn.Kind != yaml.ScalarNode {
			bad.add("frontmatter key on line %d is not a plain string", kn.Line+frontLine)
			continue
		}
		key := kn.Value
		if seen[key] {
			bad.add("key %q appears more than once", key)
			continue
		}
		seen[key] = true
		if use, ok := legacyKeys[key]; ok {
			bad.add("legacy key %q is not supported; use %q", key, use)
			continue
		}
		switch key {
		case "name":
			haveName = true
			s, ok := scalar(vn, "!!str", "!!int")
			switch {
			case !ok:
				bad.add("name must be a string")
			case !catalog.ValidName(s):
				bad.add("name %q is invalid: use 1 to %d lowercase letters, digits and single hyphens (not at either end)", clip(s), catalog.MaxNameLength)
			default:
				d.Name = s
			}
		case "description":
			haveDesc = true
			s, ok := scalar(vn, "!!str")
			switch {
			case !ok:
				bad.add("description must be a string")
			case strings.TrimSpace(s) == "":
				bad.add("description is empty")
			default:
				d.Description = strings.TrimSpace(s)
			}
		case "whenToUse", "when_to_use":
			if haveWhen {
				bad.add("whenToUse and when_to_use are both set; keep one")
				continue
			}
			haveWhen = true
			s, ok := scalar(vn, "!!str")
			if !ok {
				bad.add("%s must be a string", key)
				continue
			}
			d.WhenToUse = strings.TrimSpace(s)
		case "disable-model-invocation":
			b, ok := flag(vn)
			if !ok {
				bad.add("disable-model-invocation must be true or false (also yes/no, on/off, 1/0), not %s", show(vn))
				continue
			}
			d.Invocation.ModelInvocable = !b
		case "user-invocable":
			b, ok := flag(vn)
			if !ok {
				bad.add("user-invocable must be true or false (also yes/no, on/off, 1/0), not %s", show(vn))
				continue
			}
			d.Invocation.UserInvocable = b
		case "license", "compatibility":
			s, ok := scalar(vn, "!!str", "!!int", "!!float", "!!bool")
			if !ok {
				bad.add("%s must be a string", key)
				continue
			}
			if key == "license" {
				d.License = s
			} else {
				d.Compatibility = s
			}
		case "allowed-tools":
			tools, ok := toolList(vn)
			if !ok {
				bad.add("allowed-tools must be a string or a list of strings")
				continue
			}
			d.AllowedTools = tools
		case "metadata":
			if vn.Kind != yaml.MappingNode {
				bad.add("metadata must be a mapping")
				continue
			}
			var md map[string]any
			if err := vn.Decode(&md); err != nil {
				bad.add("metadata: %s", fileLines(strings.TrimPrefix(err.Error(), "yaml: ")))
				continue
			}
			d.Metadata = md
		}
	}
	if !haveName {
		bad.add("name is missing")
	}
	if !haveDesc {
		bad.add("description is missing")
	}
	if len(bad) > 0 {
		return Document{}, &ParseError{Reason: strings.Join(bad, "; ")}
	}
	return d, nil
}

// deref follows aliases (bounded, so a cycle cannot loop forever).
func deref(n *yaml.Node) *yaml.Node {
	for i := 0; i < 16 && n != nil && n.Kind == yaml.AliasNode && n.Alias != nil; i++ {
		n = n.Alias
	}
	return n
}

// scalar returns n's text when n is a scalar with one of the given tags.
func scalar(n *yaml.Node, tags ...string) (string, bool) {
	if n == nil || n.Kind != yaml.ScalarNode {
		return "", false
	}
	tag := n.ShortTag()
	for _, t := range tags {
		if tag == t {
			return n.Value, true
		}
	}
	return "", false
}

// flag reads an invocation flag: YAML booleans, 1/0 and case-insensitive
// true|yes|on / false|no|off, quoted or not.
func flag(n *yaml.Node) (value, ok bool) {
	if n == nil || n.Kind != yaml.ScalarNode {
		return false, false
	}
	switch strings.ToLower(n.Value) {
	case "true", "yes", "on", "1":
		return true, true
	case "false", "no", "off", "0":
		return false, true
	}
	return false, false
}

func toolList(n *yaml.Node) ([]string, bool) {
	if s, ok := scalar(n, "!!str"); ok {
		return strings.Fields(s), true
	}
	if n == nil || n.Kind != yaml.SequenceNode {
		return nil, false
	}
	tools := make([]string, 0, len(n.Content))
	for _, c := range n.Content {
		s, ok := scalar(deref(c), "!!str")
		if !ok {
			return nil, false
		}
		tools = append(tools, s)
	}
	return tools, true
}

// show describes a value for a diagnostic.
func show(n *yaml.Node) string {
	switch {
	case n == nil:
		return "nothing"
	case n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null":
		return "an empty value"
	case n.Kind == yaml.ScalarNode:
		return fmt.Sprintf("%q", clip(n.Value))
	case n.Kind == yaml.SequenceNode:
		return "a list"
	case n.Kind == yaml.MappingNode:
		return "a mapping"
	}
	return "that value"
}

// clip shortens text quoted in diagnostics.
func clip(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
