package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/skillstream/skillstream/catalog"
	"github.com/skillstream/skillstream/providers"
)

func (a *app) loadCommand() (*command, runFunc) {
	var (
		c      Config
		cwd    string
		asJSON bool
	)
	cmd := newCommand("load", "skillstream load NAME [--cwd DIR] [--json] [flags]", `
Print exactly the text the skill tool returns to the model when it calls
skill(name=NAME) in a session whose working directory is DIR (the current
directory by default), followed by a newline. Exit status 0 on success, 1 when
the tool answers with an error (the "Error: ..." text is printed on stdout,
as the model would see it).

It takes the same skills flags and SKILLSTREAM_* variables as serve.`[1:], `
  skillstream load commit-message
  skillstream load release-notes --cwd ~/src/app --skills-dir /srv/team-skills
  skillstream load commit-message --json | jq .value.resourceBase`[1:])
	cmd.group("Flags")
	cmd.localString(&cwd, "cwd", "", "session working `dir` whose project skills apply (default: the current directory)")
	cmd.localBool(&asJSON, "json", false, "print the structured result (isError, text, value, error) as JSON")
	c.skillFlags(cmd)
	return cmd, func(ctx context.Context, args []string) error {
		if len(args) != 1 {
			return usagef("load needs a skill name, exactly one (got %d arguments)", len(args))
		}
		if err := c.validateSkills(); err != nil {
			return err
		}
		dir, err := resolveCwd(cwd)
		if err != nil {
			return err
		}
		reg, err := c.registry(nil, false)
		if err != nil {
			return err
		}
		defer reg.Close()
		res := catalog.Execute(ctx, boundLookup{reg: reg, cwd: dir}, args[0])
		if asJSON {
			out := loadJSON{IsError: res.Err != nil, Text: res.Text()}
			if v := res.Value; v != nil {
				out.Value = &valueJSON{Name: v.Name, Provider: v.Provider, ResourceBase: v.ResourceBase, Content: v.Content}
			}
			if e := res.Err; e != nil {
				out.Error = &toolErrorJSON{Code: string(e.Code), Message: e.Message}
			}
			enc := json.NewEncoder(a.stdout)
			enc.SetIndent("", "  ")
			if err := enc.Encode(out); err != nil {
				return err
			}
		} else {
			fmt.Fprintln(a.stdout, res.Text())
		}
		if res.Err != nil {
			return errReported
		}
		return nil
	}
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
}

type toolErrorJSON struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// boundLookup binds the registry to one working directory for the skill
// tool.
type boundLookup struct {
	reg *providers.Registry
	cwd string
}

func (b boundLookup) Resolve(ctx context.Context, name string) (catalog.Summary, error) {
	return b.reg.Resolve(ctx, name, b.cwd)
}

func (b boundLookup) Load(ctx context.Context, name string) (catalog.Skill, error) {
	return b.reg.Load(ctx, name, b.cwd)
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
