package mcp

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzFrontmatterJSON: any frontmatter either renders as a JSON object
// or is refused with an error; nothing panics or stalls.
func FuzzFrontmatterJSON(f *testing.F) {
	for _, s := range []string{
		"name: a\ndescription: b", "a: &x [1, *x]", "a: {b: [1, 2.5, true, null, 2024-01-01]}",
		"? [a]\n: b", "<<: {a: 1}", "a: 99999999999999999999", "a: .inf", "- 1", "", "a: !!binary aGk=",
		"a: &a [*a, *a, *a]", "x: \"\\u0000\"", "a: 0x1F\nb: 0o17\nc: 1e3",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, front string) {
		out, err := frontmatterJSON([]byte(front))
		if err != nil {
			return
		}
		var m map[string]any
		if err := json.Unmarshal(out, &m); err != nil {
			t.Fatalf("frontmatter %q rendered as invalid JSON object %s: %v", front, out, err)
		}
	})
}

// FuzzURI: splitURI never panics, and what it accepts is a skill name and
// a path that start the URI as written.
func FuzzURI(f *testing.F) {
	for _, s := range []string{"skill://a/SKILL.md", "skill://a", "skill://../x", "skill://a/b\x00", "x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, uri string) {
		name, rest, ok := splitURI(uri)
		if !ok {
			return
		}
		want := Scheme + name
		if rest != "" || strings.HasSuffix(uri, "/") {
			want += "/" + rest
		}
		if uri != want {
			t.Fatalf("splitURI(%q) = %q, %q", uri, name, rest)
		}
	})
}

// FuzzCursor: only issued cursors are accepted, and they give back the
// name they were issued for.
func FuzzCursor(f *testing.F) {
	c := cursors{key: []byte("0123456789abcdef0123456789abcdef")}
	f.Add("skill-1", "x")
	f.Add("", ".")
	f.Fuzz(func(t *testing.T, name, forged string) {
		if len(name) > 64 {
			name = name[:64] // cursors name skills, whose names are short
		}
		got, ok := c.check(c.issue(name))
		if !ok || got != name {
			t.Fatalf("issued cursor for %q not accepted: %q %v", name, got, ok)
		}
		if forged != c.issue(name) {
			if after, ok := c.check(forged); ok && c.issue(after) != forged {
				t.Fatalf("forged cursor %q accepted as %q", forged, after)
			}
		}
	})
}
