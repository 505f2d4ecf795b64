package agentskills

import (
	"bytes"
	"fmt"

	"go.yaml.in/yaml/v3"

	"github.com/skillstream/skillstream/catalog"
)

// TextWarning is a character in a skill file's name, description,
// whenToUse or body that its author probably did not mean: a control
// character (a terminal acts on it instead of showing it) or a
// bidirectional-text control (text around it reads otherwise than it is),
// as catalog.FindControl tells. Tabs, line feeds and, in the body,
// carriage returns (CRLF files) are not warned about. The skill is served
// all the same; the warning is for the operator who publishes it.
type TextWarning struct {
	Field string // name, description, whenToUse or body
	Line  int    // line of the file: the field's key, or the body's line holding Char
	Char  rune   // the first such character in the field
	Count int    // how many the field holds
}

func (w TextWarning) String() string {
	more := ""
	if w.Count > 1 {
		more = fmt.Sprintf(" (and %d more)", w.Count-1)
	}
	return fmt.Sprintf("%s on line %d holds %U, %s%s: a terminal showing it, or a model reading it, may not show what it says",
		w.Field, w.Line, w.Char, catalog.ControlKind(w.Char), more)
}

// CheckText lists the TextWarnings of a valid skill file's data, in file
// order; one per field at most. It reports nothing for data that Parse
// refuses.
func CheckText(data []byte) []TextWarning {
	front, body, err := split(data)
	if err != nil {
		return nil
	}
	var out []TextWarning
	// The frontmatter starts on the file's second line.
	var root yaml.Node
	if yaml.Unmarshal(bytes.ReplaceAll(front, []byte("\r\n"), []byte("\n")), &root) == nil {
		m := deref(&root)
		if m.Kind == yaml.DocumentNode && len(m.Content) > 0 {
			m = deref(m.Content[0])
		}
		for i := 0; m.Kind == yaml.MappingNode && i+1 < len(m.Content); i += 2 {
			kn, vn := deref(m.Content[i]), deref(m.Content[i+1])
			field := kn.Value
			switch field {
			case "name", "description", "whenToUse", "when_to_use":
			default:
				continue
			}
			if vn == nil || vn.Kind != yaml.ScalarNode {
				continue
			}
			if _, r, n := catalog.FindControl(vn.Value, true); n > 0 {
				out = append(out, TextWarning{Field: field, Line: kn.Line + frontLine, Char: r, Count: n})
			}
		}
	}
	if i, r, n := catalog.FindControl(string(body), false); n > 0 {
		at := len(data) - len(body) + i // the body is the end of data
		out = append(out, TextWarning{Field: "body", Line: 1 + bytes.Count(data[:at], []byte("\n")), Char: r, Count: n})
	}
	return out
}
