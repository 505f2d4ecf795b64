package agentskills

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"
)

// The Agent Skills specification's limits on a skill's fields, in
// characters.
const (
	MaxDescriptionLength   = 1024
	MaxCompatibilityLength = 500
)

// Where the Agent Skills specification is stricter than what serve reads,
// serve stays lenient: a skill whose name differs from its folder's, or
// whose description or compatibility is too long, is served (the catalog
// caps descriptions), and a folder whose skill file is Skill.md is no
// skill to it. What publishes or checks skills (validate, skills push)
// follows the specification instead, with the reasons below: Check for
// what a parsed skill file says, CheckFileName and Misnamed for the file's
// name.

// Check lists what the Agent Skills specification refuses in d, parsed
// from the skill file at path (a folder's SKILL.md, or a flat <x>.md
// file), though Parse accepts it: a name other than the folder's (for a
// flat file, the file's name without .md), a description over
// MaxDescriptionLength characters, a compatibility over
// MaxCompatibilityLength. It reads nothing from disk.
func (d Document) Check(path string) []string {
	var out []string
	want, kind := strings.TrimSuffix(filepath.Base(path), ".md"), "file"
	if filepath.Base(path) == SkillFile {
		want, kind = filepath.Base(filepath.Dir(absOr(path))), "folder"
	}
	if d.Name != want {
		out = append(out, fmt.Sprintf("name %q differs from its %s name %q; the Agent Skills spec requires them to be equal", d.Name, kind, want))
	}
	if n := utf8.RuneCountInString(d.Description); n > MaxDescriptionLength {
		out = append(out, fmt.Sprintf("description is %d characters; the Agent Skills spec allows at most %d", n, MaxDescriptionLength))
	}
	if n := utf8.RuneCountInString(strings.TrimSpace(d.Compatibility)); n > MaxCompatibilityLength {
		out = append(out, fmt.Sprintf("compatibility is %d characters; the Agent Skills spec allows at most %d", n, MaxCompatibilityLength))
	}
	return out
}

// CheckFileName refuses, with a *ParseError naming path, a skill file
// named SKILL.md in another case (Skill.md, skill.md): the Agent Skills
// specification wants a file named exactly SKILL.md, and serve does not
// read another on a case-sensitive file system. Other names pass.
func CheckFileName(path string) error {
	if base := filepath.Base(path); base != SkillFile && strings.EqualFold(base, SkillFile) {
		return &ParseError{Path: path, Reason: fmt.Sprintf("file is named %s: a skill's file must be named exactly %s", base, SkillFile)}
	}
	return nil
}

// Misnamed returns the path of the file of the folder dir named SKILL.md
// in another case (see CheckFileName) when dir holds no file named exactly
// SKILL.md; "" otherwise, and when dir cannot be read.
func Misnamed(dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	found := ""
	for _, e := range entries {
		switch name := e.Name(); {
		case name == SkillFile:
			return ""
		case found == "" && strings.EqualFold(name, SkillFile):
			found = filepath.Join(dir, name)
		}
	}
	return found
}

func absOr(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
