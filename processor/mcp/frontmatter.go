package mcp

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// errFrontmatter reports a frontmatter that cannot be rendered as a JSON
// object.
var errFrontmatter = errors.New("frontmatter cannot be rendered as JSON")

// maxAliasExpansion bounds the nodes an alias may expand into, so a
// "billion laughs" frontmatter cannot blow up.
const maxAliasExpansion = 10000

// frontmatterJSON renders a SKILL.md's YAML frontmatter as a JSON object,
// verbatim: every key the author wrote, in the author's order, nothing
// added or renamed. Scalars keep their YAML 1.2 meaning (strings,
// integers, floats, booleans, null); timestamps and other tagged scalars
// stay the strings the author wrote, as a YAML 1.2 reader sees them.
func frontmatterJSON(front []byte) (json.RawMessage, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(front, &doc); err != nil {
		return nil, fmt.Errorf("%w: %v", errFrontmatter, err)
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%w: not a mapping", errFrontmatter)
	}
	var b bytes.Buffer
	budget := maxAliasExpansion
	if err := writeNode(&b, doc.Content[0], &budget, 0); err != nil {
		return nil, err
	}
	return json.RawMessage(b.Bytes()), nil
}

func writeNode(b *bytes.Buffer, n *yaml.Node, budget *int, depth int) error {
	if depth > 64 {
		return fmt.Errorf("%w: nested deeper than 64 levels", errFrontmatter)
	}
	if *budget--; *budget < 0 {
		return fmt.Errorf("%w: aliases expand to too many values", errFrontmatter)
	}
	switch n.Kind {
	case yaml.AliasNode:
		return writeNode(b, n.Alias, budget, depth+1)
	case yaml.MappingNode:
		b.WriteByte('{')
		seen := make(map[string]bool, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			for k.Kind == yaml.AliasNode {
				k = k.Alias
			}
			if k.Kind != yaml.ScalarNode {
				return fmt.Errorf("%w: a key that is not a scalar", errFrontmatter)
			}
			if k.Tag == "!!merge" {
				return fmt.Errorf("%w: merge keys (<<) are not supported", errFrontmatter)
			}
			if seen[k.Value] {
				return fmt.Errorf("%w: key %q appears twice", errFrontmatter, k.Value)
			}
			seen[k.Value] = true
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, k.Value)
			b.WriteByte(':')
			if err := writeNode(b, v, budget, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := writeNode(b, c, budget, depth+1); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case yaml.ScalarNode:
		writeScalar(b, n)
	default:
		return fmt.Errorf("%w: unexpected YAML node", errFrontmatter)
	}
	return nil
}

// writeScalar writes a scalar as JSON. Integers and floats that JSON
// cannot carry exactly (beyond ±2^53, infinities, NaN) stay strings.
func writeScalar(b *bytes.Buffer, n *yaml.Node) {
	switch n.ShortTag() {
	case "!!null":
		b.WriteString("null")
		return
	case "!!bool":
		var v bool
		if n.Decode(&v) == nil {
			b.WriteString(strconv.FormatBool(v))
			return
		}
	case "!!int":
		var v int64
		if n.Decode(&v) == nil && v >= -(1<<53) && v <= 1<<53 {
			b.WriteString(strconv.FormatInt(v, 10))
			return
		}
	case "!!float":
		var v float64
		if n.Decode(&v) == nil && !math.IsInf(v, 0) && !math.IsNaN(v) {
			if out, err := json.Marshal(v); err == nil {
				b.Write(out)
				return
			}
		}
	}
	writeString(b, n.Value)
}

func writeString(b *bytes.Buffer, s string) {
	var sb strings.Builder
	enc := json.NewEncoder(&sb)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	b.WriteString(strings.TrimSuffix(sb.String(), "\n"))
}
