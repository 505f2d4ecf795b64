package main

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
	"github.com/skillstream/skillstream/providers/bundled"
)

// registry composes the skill providers the configuration asks for: the
// Agent Skills folders (project, custom, user), then the bundled starter
// skills. watch turns on file watching, for long-running commands; one-shot
// commands validate by stat instead. log may be nil.
func (c *Config) registry(log *slog.Logger, watch bool) (*providers.Registry, error) {
	fs, err := agentskills.New(agentskills.Config{
		ProjectDirs:      append(agentskills.DefaultProjectDirs(), c.ProjectSkillsSubdirs...),
		CustomDirs:       c.SkillsDirs,
		UserDir:          c.UserSkillsDir,
		NoUserDir:        c.UserSkillsDir == "",
		NoFollowSymlinks: c.NoFollowSymlinks,
		NoWatch:          !watch,
	})
	if err != nil {
		return nil, usageError{msg: err.Error()}
	}
	if log != nil {
		if werr := fs.WatchError(); werr != nil {
			log.Warn("skill folders are not watched; changes are found by stat on every snapshot", "err", werr)
		}
	}
	ps := []providers.Provider{fs}
	if !c.NoBundled {
		b, err := bundled.New()
		if err != nil {
			fs.Close()
			return nil, fmt.Errorf("bundled skills: %w", err)
		}
		ps = append(ps, b)
	}
	var opts []providers.RegistryOption
	if log != nil {
		opts = append(opts, providers.WithLogger(log.With("component", "skills")))
	}
	return providers.NewRegistry(ps, opts...), nil
}

// skillSources describes in one phrase where the configuration takes
// skills from, for messages.
func (c *Config) skillSources() string {
	parts := []string{"project folders " + strings.Join(append([]string{".agents/skills"}, c.ProjectSkillsSubdirs...), ", ")}
	for _, d := range c.SkillsDirs {
		parts = append(parts, "--skills-dir "+d)
	}
	if c.UserSkillsDir != "" {
		parts = append(parts, "user folder "+c.UserSkillsDir)
	}
	if !c.NoBundled {
		parts = append(parts, "bundled skills")
	}
	return strings.Join(parts, "; ")
}
