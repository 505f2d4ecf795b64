package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/processor/history"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
)

func (a *app) loadCommand() (*command, runFunc) {
	var p preview
	var user bool
	cmd := newCommand("load", "skillstream load NAME [--cwd DIR] [--user] [--json] [flags]", `
Print exactly the text the skill tool returns to the model when it calls
skill(name=NAME) in a session whose working directory is DIR (the current
directory by default), followed by a newline. Exit status 0 on success, 1 when
the tool answers with an error (the "Error: ..." text is printed on stdout,
as the model would see it). When NAME is unknown because a skill file for it
was dropped, stderr says which file and why (as catalog does). As in
catalog, characters a terminal would act on are printed escaped (\x1b,
\u202e); --json gives the text as it is.

With --user, print instead what a user's /NAME appends to the session (with
--user-invocation on serve): the same text, for a skill the user may invoke
(user-invocable, whether or not the model may); a name that invokes nothing
prints the reason on stderr (unknown, not_user_invocable, load_failed) and
exits 1.

It takes the same skills flags and SKILLSTREAM_* variables as serve.`[1:], `
  skillstream load commit-message
  skillstream load release-notes --cwd ~/src/app --skills-dir /srv/team-skills
  skillstream load commit-message --json | jq .value.resourceBase
  skillstream load deploy --user`[1:])
	p.flags(cmd, "print the structured result (isError, text, value, error) as JSON")
	cmd.localBool(&user, "user", false, "preview a user's /NAME invocation rather than the model's tool call")
	return cmd, func(ctx context.Context, args []string) error {
		if len(args) != 1 {
			return usagef("load needs a skill name, exactly one (got %d arguments)", len(args))
		}
		reg, dir, err := p.open(ctx, a, cmd.name)
		if err != nil {
			return err
		}
		defer reg.Close()
		lookup := history.Lookup(reg, p.query(dir))
		var res catalog.Result
		if !user {
			res = catalog.Execute(ctx, lookup, args[0], p.c.catalogOptions())
		} else {
			g := catalog.Invoke(ctx, lookup, args[0], p.c.catalogOptions())
			if !g.Invoked() {
				msg := "/" + args[0] + " invokes nothing: " + string(g.Reason)
				if g.Result.Err != nil {
					msg += " (" + g.Result.Err.Message + ")"
				}
				fmt.Fprintln(a.stderr, catalog.Reveal(msg))
				if g.Reason == catalog.IgnoredUnknown {
					for _, d := range droppedFor(reg.Inspect(ctx, p.query(dir)).Diagnostics, args[0]) {
						fmt.Fprintln(a.stderr, catalog.RevealLine("dropped: "+d.String()))
					}
				}
				return errReported
			}
			res = g.Result
		}
		if p.asJSON {
			out := loadJSON{IsError: res.Err != nil, Text: res.Text()}
			if v := res.Value; v != nil {
				out.Value = &valueJSON{Name: v.Name, Provider: v.Provider, ResourceBase: v.ResourceBase, Content: v.Content,
					Digest: v.Digest, Revision: v.Revision}
				if tr := v.Truncated; tr != nil {
					out.Value.Truncated = &truncatedJSON{Kept: tr.Kept, Total: tr.Total}
				}
			}
			if e := res.Err; e != nil {
				out.Error = &toolErrorJSON{Code: string(e.Code), Message: e.Message}
			}
			if err := printJSON(a.stdout, out); err != nil {
				return err
			}
		} else {
			fmt.Fprintln(a.stdout, catalog.Reveal(res.Text())) // the skill's text, for a person
		}
		if v := res.Value; v != nil && v.Truncated != nil {
			fmt.Fprintf(a.stderr, "instructions truncated by --max-skill-bytes %d: the first %d of %d bytes are shown\n",
				p.c.MaxSkillBytes, v.Truncated.Kept, v.Truncated.Total)
		}
		if res.Err != nil {
			if res.Err.Code == catalog.CodeUnknown {
				for _, d := range droppedFor(reg.Inspect(ctx, p.query(dir)).Diagnostics, args[0]) {
					fmt.Fprintln(a.stderr, catalog.RevealLine("dropped: "+d.String()))
				}
			}
			return errReported
		}
		return nil
	}
}

// droppedFor returns the diagnostics of files that were meant as skill
// name: a <name>/SKILL.md or a <name>.md, or a file whose diagnostic
// quotes the name.
func droppedFor(diags []providers.Diagnostic, name string) []providers.Diagnostic {
	var out []providers.Diagnostic
	for _, d := range diags {
		base := filepath.Base(d.Path)
		switch {
		case base == agentskills.SkillFile && filepath.Base(filepath.Dir(d.Path)) == name,
			base == name+".md",
			base == name, // a link or folder named after the skill
			strings.Contains(d.Reason, strconv.Quote(name)):
			out = append(out, d)
		}
	}
	return out
}

// loadJSON is the output of `load --json`, shaped like the wire ToolResult.
type loadJSON struct {
	IsError bool           `json:"isError"`
	Text    string         `json:"text"`
	Value   *valueJSON     `json:"value,omitempty"`
	Error   *toolErrorJSON `json:"error,omitempty"`
}

type valueJSON struct {
	Name         string                `json:"name"`
	Provider     string                `json:"provider"`
	ResourceBase *catalog.ResourceBase `json:"resourceBase,omitempty"`
	Content      string                `json:"content"`
	Truncated    *truncatedJSON        `json:"truncated,omitempty"`
	Digest       string                `json:"digest,omitempty"`
	Revision     uint64                `json:"revision,omitempty"`
}

type truncatedJSON struct {
	Kept  int `json:"kept"`
	Total int `json:"total"`
}

type toolErrorJSON struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// preview is what catalog and load share: the skills configuration,
// --cwd and --json, and a registry built as serve builds it.
type preview struct {
	c           Config
	cwd         string
	project     string
	resourceDir string
	asJSON      bool
	watch       bool                  // follow changes to the skill folders
	fs          *agentskills.Provider // set by open; owned by the registry
}

// query is the Query the preview asks about.
func (p *preview) query(cwd string) catalog.Query {
	return catalog.Query{Cwd: cwd, Project: p.project, ResourceDir: p.resourceDir}
}

// flags registers --cwd, --json (described by jsonUsage; none when it is
// empty) and the skills flags.
func (p *preview) flags(cmd *command, jsonUsage string) {
	cmd.group("Flags")
	cmd.localString(&p.cwd, "cwd", "", "session working `dir` whose project skills apply (default: the current directory)")
	cmd.localString(&p.project, "project", "", "skill store project `id` of the session (its project/<id> scope applies)")
	cmd.localString(&p.resourceDir, "resource-dir", "", "worker's `dir` for store skills' files, as a trigger's resourceDir")
	if jsonUsage != "" {
		cmd.localBool(&p.asJSON, "json", false, jsonUsage)
	}
	p.c.skillFlags(cmd)
	p.c.storeFlags(cmd)
	p.c.storeNATSFlags(cmd)
}

// open validates the configuration and returns the registry, which the
// caller closes (closing it also closes the connection to the skill
// store), and the absolute working directory.
func (p *preview) open(ctx context.Context, a *app, name string) (*previewRegistry, string, error) {
	if err := p.c.validateSkills(); err != nil {
		return nil, "", err
	}
	if err := p.c.validateStore(); err != nil {
		return nil, "", err
	}
	if !p.c.NoSkillStore {
		if err := p.c.validateNATS(); err != nil {
			return nil, "", err
		}
	}
	dir, err := resolveCwd(p.cwd)
	if err != nil {
		return nil, "", err
	}
	if p.project != "" {
		if _, err := skillstore.Project(p.project); err != nil {
			return nil, "", usagef("--project: %v", err)
		}
	}
	if p.resourceDir != "" && (!filepath.IsAbs(p.resourceDir) || filepath.Clean(p.resourceDir) != p.resourceDir) {
		return nil, "", usagef("--resource-dir %q: must be an absolute, clean path", p.resourceDir)
	}
	js, closeNC, err := a.dialStore(&p.c, name, false)
	if err != nil {
		return nil, "", err
	}
	if js != nil {
		// Acting for a tenant: its sessions also see the shared library.
		closeLib, err := p.c.dialLibrary(a.stderr)
		if err != nil {
			closeNC()
			return nil, "", err
		}
		closeStore := closeNC
		closeNC = func() { closeLib(); closeStore() }
	}
	reg, fs, err := p.c.skillSources(ctx, nil, p.watch, js)
	if err != nil {
		closeNC()
		return nil, "", err
	}
	p.fs = fs
	return &previewRegistry{Registry: reg, closeNC: closeNC}, dir, nil
}

// previewRegistry is a registry and the connection its skill store reads
// through.
type previewRegistry struct {
	*providers.Registry
	closeNC func()
}

func (r *previewRegistry) Close() error {
	err := r.Registry.Close()
	r.closeNC()
	return err
}

// printJSON writes v as indented JSON (newJSONEncoder).
func printJSON(w io.Writer, v any) error {
	enc := newJSONEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// newJSONEncoder is the encoder of every --json output: <, > and & as
// they are (model text is full of them; \u003c would only hide them from
// people), and what a terminal would act on instead of showing (C1 and
// bidirectional-text controls, line separators, invisible characters)
// written as \u escapes (catalog.RevealJSON): the same JSON value, whose
// bytes show those characters.
func newJSONEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(revealedJSON{w})
	enc.SetEscapeHTML(false)
	return enc
}

// revealedJSON passes what a json.Encoder writes through
// catalog.RevealJSON: the encoder writes each value whole, in one Write.
type revealedJSON struct{ w io.Writer }

func (r revealedJSON) Write(p []byte) (int, error) {
	if _, err := r.w.Write(catalog.RevealJSON(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// resolveCwd returns --cwd as an absolute path, the current directory when
// it is empty.
func resolveCwd(cwd string) (string, error) {
	if cwd == "" {
		wd, err := os.Getwd()
		if err != nil {
			return "", fmt.Errorf("current directory: %w", err)
		}
		return wd, nil
	}
	abs, err := filepath.Abs(cwd)
	if err != nil {
		return "", usagef("--cwd %s: %v", cwd, err)
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", usagef("--cwd %s: no such directory", cwd)
	}
	if !fi.IsDir() {
		return "", usagef("--cwd %s: not a directory", cwd)
	}
	return abs, nil
}
