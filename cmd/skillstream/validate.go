package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers/agentskills"
)

// maxDescriptionLength is the Agent Skills spec's limit on a description.
const maxDescriptionLength = 1024

func (a *app) validateCommand() (*command, runFunc) {
	var c Config
	cmd := newCommand("validate", "skillstream validate PATH...", `
Lint skills. Each PATH is a skills root (a folder of skill folders and flat
.md skills, like .agents/skills), a single skill folder (holding SKILL.md), or
a single skill file. Every problem is printed as "<file>: <level>: <reason>":

  error    the file is not a valid skill and serve would drop it: missing or
           malformed frontmatter, invalid YAML, name outside the grammar
           (lowercase letters, digits, single hyphens, 1 to 64 characters),
           missing or empty description, description longer than 1024
           characters, unsupported invocation values or legacy keys, file
           too large or unreadable;
  warning  the skill works but is probably not what was meant: name differs
           from its folder (or file) name, two skills of one name in a root,
           a folder without SKILL.md, a description the catalog would cut
           (longer than --catalog-description-max-length once white space
           is collapsed), instructions the skill tool would cut (longer
           than --max-skill-bytes).

A summary line follows. Exit status 1 when there is any error, 0 otherwise,
so it fits a skill repository's CI.`[1:], `
  skillstream validate .agents/skills
  skillstream validate ~/.agents/skills/commit-message
  skillstream validate docs/skills/release-notes.md skills/`[1:])
	cmd.pick(c.skillFlags, "catalog-description-max-length", "max-skill-bytes")
	return cmd, func(ctx context.Context, args []string) error {
		if len(args) == 0 {
			return usagef("validate needs at least one skills root, skill folder or skill file")
		}
		if err := c.validateSkills(); err != nil {
			return err
		}
		l := linter{descMax: c.DescriptionMaxLength, bodyMax: c.MaxSkillBytes}
		for _, p := range args {
			l.path(p)
		}
		l.report(a.stdout)
		if l.errors > 0 {
			return errReported
		}
		return nil
	}
}

// finding is one diagnostic of validate.
type finding struct {
	path    string
	warning bool
	reason  string
}

// linter collects findings over the paths it is given.
type linter struct {
	descMax, bodyMax int // the catalog's description cap, the instruction size limit (0: none)
	findings         []finding
	skills, files    int
	errors, warnings int
}

func (l *linter) errorf(path, format string, args ...any) {
	l.findings = append(l.findings, finding{path: path, reason: fmt.Sprintf(format, args...)})
	l.errors++
}

func (l *linter) warnf(path, format string, args ...any) {
	l.findings = append(l.findings, finding{path: path, warning: true, reason: fmt.Sprintf(format, args...)})
	l.warnings++
}

// path lints one argument: a file, a skill folder or a root.
func (l *linter) path(p string) {
	fi, err := os.Stat(p)
	if err != nil {
		l.errorf(p, "%v", pathErr(err))
		return
	}
	if !fi.IsDir() {
		name := filepath.Base(p)
		if name == "SKILL.md" {
			l.file(p, filepath.Base(filepath.Dir(absOr(p))), "folder")
		} else {
			l.file(p, strings.TrimSuffix(name, filepath.Ext(name)), "file")
		}
		return
	}
	skillFile := filepath.Join(p, "SKILL.md")
	if sfi, err := os.Stat(skillFile); err == nil && !sfi.IsDir() {
		l.file(skillFile, filepath.Base(absOr(p)), "folder")
		return
	}
	l.root(p)
}

// root lints a skills root: one level deep, like the filesystem provider.
func (l *linter) root(root string) {
	entries, err := os.ReadDir(root)
	if err != nil {
		l.errorf(root, "%v", pathErr(err))
		return
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	seen := map[string]string{} // skill name -> first file defining it
	found := 0
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue // hidden entries are not skills, as in the provider
		}
		p := filepath.Join(root, e.Name())
		fi, err := os.Stat(p) // follows symlinks, as the provider does
		if err != nil {
			if e.Type()&fs.ModeSymlink != 0 {
				l.warnf(p, "dangling symbolic link; skipped")
			}
			continue
		}
		var name string
		switch {
		case fi.IsDir():
			skillFile := filepath.Join(p, "SKILL.md")
			sfi, err := os.Stat(skillFile)
			if err != nil || sfi.IsDir() {
				l.warnf(p, "folder has no SKILL.md; it is not a skill")
				continue
			}
			found++
			name = l.file(skillFile, e.Name(), "folder")
			p = skillFile
		case fi.Mode().IsRegular() && strings.HasSuffix(e.Name(), ".md"):
			found++
			name = l.file(p, strings.TrimSuffix(e.Name(), filepath.Ext(e.Name())), "file")
		default:
			continue
		}
		if name == "" {
			continue
		}
		if first, dup := seen[name]; dup {
			l.warnf(p, "skill %q is also defined by %s, which wins; this one is shadowed", name, first)
			continue
		}
		seen[name] = p
	}
	if found == 0 {
		l.warnf(root, "no skills found: expected <name>/SKILL.md folders or <name>.md files")
	}
}

// file lints one skill file; want is the folder or file name its skill
// name should match. It returns the skill name when the file is valid.
func (l *linter) file(p, want, wantKind string) string {
	l.files++
	fi, err := os.Stat(p)
	if err != nil {
		l.errorf(p, "%v", pathErr(err))
		return ""
	}
	if fi.Size() > agentskills.MaxFileSize {
		l.errorf(p, "file is %d bytes; skill files are read up to %d bytes", fi.Size(), agentskills.MaxFileSize)
		return ""
	}
	data, err := os.ReadFile(p)
	if err != nil {
		l.errorf(p, "%v", pathErr(err))
		return ""
	}
	doc, err := agentskills.Parse(data)
	if err != nil {
		var pe *agentskills.ParseError
		if errors.As(err, &pe) {
			l.errorf(p, "%s", pe.Reason)
		} else {
			l.errorf(p, "%v", err)
		}
		return ""
	}
	if n := utf8.RuneCountInString(doc.Description); n > maxDescriptionLength {
		l.errorf(p, "description is %d characters; the Agent Skills spec allows at most %d", n, maxDescriptionLength)
		return ""
	}
	if n := utf8.RuneCountInString(catalog.Normalize(doc.Description, len(doc.Description)+catalog.MinDescriptionMaxLength)); n > l.descMax {
		l.warnf(p, "description is %d characters once white space is collapsed; the catalog shows the first %d and \"...\" (--catalog-description-max-length %d)",
			n, l.descMax-catalog.MinDescriptionMaxLength, l.descMax)
	}
	if n := len(strings.TrimSpace(doc.Body)); l.bodyMax > 0 && n > l.bodyMax {
		l.warnf(p, "instructions are %d bytes; the skill tool shows about the first %d and a truncation notice (--max-skill-bytes %d)", n, l.bodyMax, l.bodyMax)
	}
	if want != doc.Name {
		l.warnf(p, "name %q differs from its %s name %q; the Agent Skills spec wants them equal", doc.Name, wantKind, want)
	}
	l.skills++
	return doc.Name
}

// report prints every finding, then the summary line.
func (l *linter) report(w io.Writer) {
	for _, f := range l.findings {
		level := "error"
		if f.warning {
			level = "warning"
		}
		fmt.Fprintf(w, "%s: %s: %s\n", f.path, level, f.reason)
	}
	fmt.Fprintf(w, "%d %s checked, %d valid %s: %d %s, %d %s\n",
		l.files, plural(l.files, "file", "files"), l.skills, plural(l.skills, "skill", "skills"),
		l.errors, plural(l.errors, "error", "errors"), l.warnings, plural(l.warnings, "warning", "warnings"))
}

// pathErr strips the path from a *PathError, which the finding already
// names.
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func absOr(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		return abs
	}
	return p
}
