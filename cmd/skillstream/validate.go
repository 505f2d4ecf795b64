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
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/providers/agentskills"
)

func (a *app) validateCommand() (*command, runFunc) {
	var c Config
	cmd := newCommand("validate", "skillstream validate PATH...", `
Lint skills. Each PATH is a skills root (a folder of skill folders and flat
.md skills, like .agents/skills), a single skill folder (holding SKILL.md), or
a single skill file. Files are read exactly as serve reads them, with the
same limits (regular files only, at most 8 MiB, never blocking on a device
or FIFO) and the same reasons. Every finding is printed as
"<file>: <level>: <reason>":

  error    serve would drop the file: missing or malformed frontmatter,
           invalid YAML (with the line of the file), name outside the
           grammar (lowercase letters, digits, single hyphens, 1 to 64
           characters), missing or empty description, unsupported
           invocation values or legacy keys, file too large, not a regular
           file, dangling link, unreadable; or the Agent Skills spec
           refuses the skill, though serve serves it: a name that differs
           from its folder (or flat file) name, a description longer than
           1024 characters, a compatibility longer than 500, a skill file
           named other than exactly SKILL.md (Skill.md, skill.md), a
           folder holding neither SKILL.md nor any skill (skills push
           refuses all of these, with the same reasons);
  warning  the skill works but is probably not what was meant: two skills
           of one name in a root, a folder of a root without SKILL.md, a
           description the catalog would cut (longer than
           --catalog-description-max-length once white space is collapsed),
           instructions the skill tool would cut (longer than
           --max-skill-bytes), a control character (ESC, BEL, other C0
           but tab, line feed and, in the body, carriage return; DEL; C1)
           or a bidirectional-text control (U+061C, U+200E, U+200F,
           U+202A-U+202E, U+2066-U+2069) in the name, description,
           whenToUse or body, named as U+XXXX with its line (skills push
           prints these too); in a skill folder, a version control
           folder (.git, .hg, .svn: skills push never publishes them),
           another hidden file (left out unless push --include-hidden),
           a file whose name looks like a secret (.env, *.pem, *.key,
           id_rsa, credentials...);
  ignored  a flat .md file without frontmatter (a README.md beside the
           skills): not a skill, and not an error.

A summary line follows. Exit status 1 when there is any error, 2 when a PATH
does not exist, 0 otherwise, so it fits a skill repository's CI.`[1:], `
  skillstream validate .agents/skills
  skillstream validate ~/.agents/skills/commit-message
  skillstream validate docs/skills/release-notes.md skills/`[1:])
	cmd.pick(c.skillFlags, "no-follow-symlinks", "catalog-description-max-length", "max-skill-bytes")
	return cmd, func(ctx context.Context, args []string) error {
		if len(args) == 0 {
			return usagef("validate needs at least one skills root, skill folder or skill file")
		}
		if err := c.validateSkills(); err != nil {
			return err
		}
		for _, p := range args {
			if _, err := os.Lstat(p); errors.Is(err, fs.ErrNotExist) {
				return usagef("validate %s: no such file or directory", p)
			}
		}
		l := linter{ctx: ctx, follow: !c.NoFollowSymlinks, descMax: c.DescriptionMaxLength, bodyMax: c.MaxSkillBytes}
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

// Levels of a finding.
const (
	levelError   = "error"
	levelWarning = "warning"
	levelIgnored = "ignored"
)

// finding is one diagnostic of validate.
type finding struct {
	path   string
	level  string
	reason string
	text   bool // a character in the skill's text (push prints these too)
}

// linter collects findings over the paths it is given. It reads through
// the filesystem provider's own scanning code.
type linter struct {
	ctx                       context.Context
	follow                    bool
	descMax, bodyMax          int // the catalog's description cap, the instruction size limit (0: none)
	findings                  []finding
	skills, files             int
	errors, warnings, ignored int
}

func (l *linter) add(path, level, format string, args ...any) {
	l.findings = append(l.findings, finding{path: path, level: level, reason: fmt.Sprintf(format, args...)})
	switch level {
	case levelError:
		l.errors++
	case levelWarning:
		l.warnings++
	case levelIgnored:
		l.ignored++
	}
}

// path lints one argument: a file, a skill folder or a root. It returns
// the valid skills found, each as a skill folder or a flat file (what
// skills push reads).
func (l *linter) path(p string) []string {
	fi, err := os.Stat(p) // never blocks, not even on a FIFO
	if err == nil && fi.IsDir() {
		if sfi, err := os.Stat(filepath.Join(p, agentskills.SkillFile)); err == nil && !sfi.IsDir() || agentskills.Misnamed(p) != "" {
			return l.skillArg(p) // a skill folder, its skill file perhaps misnamed
		}
		return l.root(p)
	}
	return l.skillArg(p)
}

// skillArg lints one skill folder or file, as the provider reads it
// inside a skills folder.
func (l *linter) skillArg(p string) []string {
	ls := agentskills.ScanSkill(l.ctx, p, l.follow)
	l.listing(p, ls, nil)
	for _, d := range ls.NoSkillFile {
		l.add(d, levelError, "folder has no SKILL.md; it is not a skill")
	}
	if len(ls.Skills) == 0 || len(ls.Skills[0].Problems) > 0 {
		return nil
	}
	return []string{p}
}

// root lints a skills root: one level deep, as the provider reads it.
func (l *linter) root(root string) []string {
	ls := agentskills.ScanFolder(l.ctx, root, l.follow)
	seen := map[string]string{} // skill name -> first file defining it
	start := len(l.findings)
	l.listing(root, ls, seen)
	for _, d := range ls.NoSkillFile {
		l.add(d, levelWarning, "folder has no SKILL.md; it is not a skill")
	}
	own := l.findings[start:]
	sort.SliceStable(own, func(i, j int) bool { return own[i].path < own[j].path })
	if len(ls.Skills) == 0 && len(ls.Diagnostics) == 0 && ls.Err == nil {
		l.add(root, levelError, "no SKILL.md and no skills: a skill folder holds a file named exactly SKILL.md, a skills root <name>/SKILL.md folders or <name>.md files")
	}
	var skills []string
	for _, f := range ls.Skills {
		if len(f.Problems) > 0 {
			continue
		}
		if filepath.Base(f.Path) == agentskills.SkillFile {
			skills = append(skills, filepath.Dir(f.Path)) // a skill folder
		} else {
			skills = append(skills, f.Path)
		}
	}
	return skills
}

// listing reports what a scan of arg found; seen, when not nil, tracks
// names within one root.
func (l *linter) listing(arg string, ls agentskills.Listing, seen map[string]string) {
	for _, d := range ls.Diagnostics {
		l.files++
		l.add(d.Path, levelError, "%s", d.Reason)
	}
	for _, p := range ls.Ignored {
		l.files++
		l.add(p, levelIgnored, "no frontmatter: not a skill")
	}
	for _, f := range ls.Skills {
		l.files++
		if len(f.Problems) == 0 {
			l.skills++
		}
		l.skill(f)
		if seen == nil {
			continue
		}
		if first, dup := seen[f.Summary.Name]; dup {
			l.add(f.Path, levelWarning, "skill %q is also defined by %s, which wins; this one is shadowed", f.Summary.Name, first)
			continue
		}
		seen[f.Summary.Name] = f.Path
	}
	if ls.Err != nil {
		where := errPath(ls.Err)
		if where == "" {
			where = arg
		}
		l.add(where, levelError, "%v", pathErr(ls.Err))
	}
}

// skill reports what the Agent Skills spec refuses in a skill serve
// accepts (errors), and what is probably not what its author meant.
func (l *linter) skill(f agentskills.Found) {
	for _, p := range f.Problems {
		l.add(f.Path, levelError, "%s", p)
	}
	desc := f.Summary.Description
	if n := utf8.RuneCountInString(catalog.Normalize(desc, len(desc)+catalog.MinDescriptionMaxLength)); l.descMax > 0 && n > l.descMax {
		l.add(f.Path, levelWarning, "description is %d characters once white space is collapsed; the catalog shows the first %d and \"...\" (--catalog-description-max-length %d)",
			n, l.descMax-catalog.MinDescriptionMaxLength, l.descMax)
	}
	if n := f.BodyBytes; l.bodyMax > 0 && n > l.bodyMax {
		l.add(f.Path, levelWarning, "instructions are %d bytes; the skill tool shows about the first %d and a truncation notice (--max-skill-bytes %d)", n, l.bodyMax, l.bodyMax)
	}
	for _, w := range f.Text {
		l.add(f.Path, levelWarning, "%s", w)
		l.findings[len(l.findings)-1].text = true
	}
	if filepath.Base(f.Path) == agentskills.SkillFile {
		l.folderFiles(filepath.Dir(f.Path))
	}
}

// maxHygieneEntries bounds the entries folderFiles looks at in one skill
// folder.
const maxHygieneEntries = 10000

// folderFiles warns about what a skill folder holds besides the skill:
// version control folders (never published), other hidden files (left
// out by skills push unless --include-hidden) and files whose names look
// like secrets (keys, credentials, .env files), published or not.
func (l *linter) folderFiles(dir string) {
	n := 0
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return nil
		}
		if n++; n > maxHygieneEntries {
			return filepath.SkipAll
		}
		name := d.Name()
		secret := secretLike(name)
		switch {
		case skillstore.VCS(name):
			l.add(p, levelWarning, "version control folder: skills push never publishes it")
		case strings.HasPrefix(name, ".") && secret:
			l.add(p, levelWarning, "hidden, and looks like a secret: skills push leaves it out, but --include-hidden would publish it")
		case strings.HasPrefix(name, "."):
			l.add(p, levelWarning, "hidden: skills push leaves it out (--include-hidden publishes it)")
		case secret:
			l.add(p, levelWarning, "looks like a secret (a key, credentials): skills push would publish it to every member and worker; remove it from the skill")
		}
		if d.IsDir() && strings.HasPrefix(name, ".") {
			return filepath.SkipDir
		}
		return nil
	})
}

// secretLike reports whether a file name looks like a secret's: private
// keys, certificates' keys, key stores, credential and environment files.
func secretLike(name string) bool {
	n := strings.ToLower(name)
	switch n {
	case ".env", ".envrc", ".netrc", ".npmrc", ".pypirc", ".git-credentials", ".htpasswd", ".pgpass",
		"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "credentials", "credentials.json", "secrets.json", "secrets.yaml", "secrets.yml":
		return true
	}
	if strings.HasPrefix(n, ".env.") || strings.HasPrefix(n, "id_rsa") || strings.HasPrefix(n, "id_ed25519") {
		return true
	}
	for _, ext := range []string{".pem", ".key", ".p12", ".pfx", ".jks", ".keystore", ".kdbx", ".ppk"} {
		if strings.HasSuffix(n, ext) {
			return true
		}
	}
	return false
}

// report prints every finding, then the summary line.
func (l *linter) report(w io.Writer) {
	for _, f := range l.findings {
		f.print(w)
	}
	fmt.Fprintf(w, "%d %s checked, %d valid %s: %d %s, %d %s",
		l.files, plural(l.files, "file", "files"), l.skills, plural(l.skills, "skill", "skills"),
		l.errors, plural(l.errors, "error", "errors"), l.warnings, plural(l.warnings, "warning", "warnings"))
	if l.ignored > 0 {
		fmt.Fprintf(w, ", %d ignored", l.ignored)
	}
	fmt.Fprintln(w)
}

// print writes the finding on one line, with what a terminal would act
// on in its file name or reason shown escaped.
func (f finding) print(w io.Writer) {
	fmt.Fprintln(w, catalog.RevealLine(f.path+": "+f.level+": "+f.reason))
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

// errPath is the path an I/O error names, "" when none.
func errPath(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Path
	}
	return ""
}
