package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/skillstream/skillstream/events/skillstore"
	"github.com/skillstream/skillstream/providers"
	"github.com/skillstream/skillstream/providers/agentskills"
	"github.com/skillstream/skillstream/providers/bundled"
	"github.com/skillstream/skillstream/providers/store"
)

// registry composes the skill providers the configuration asks for: the
// Agent Skills folders (project, custom, user), then the bundled starter
// skills. watch turns on file watching, for long-running commands; one-shot
// commands validate by stat instead. log may be nil; with it, every
// dropped skill file is logged as a warning, once per version of the file.
func (c *Config) registry(log *slog.Logger, watch bool) (*providers.Registry, error) {
	return c.registryWith(context.Background(), log, watch, nil)
}

// storeOpenTimeout bounds how long opening the skill store may take.
const storeOpenTimeout = 30 * time.Second

// registryWith is registry with the skill store read through js (none
// when js is nil or the store is turned off).
func (c *Config) registryWith(ctx context.Context, log *slog.Logger, watch bool, js jetstream.JetStream) (*providers.Registry, error) {
	reg, _, err := c.skillSources(ctx, log, watch, js)
	return reg, err
}

// skillSources is registryWith that also returns the filesystem provider
// it composed (owned by the registry), for the operator's reports.
func (c *Config) skillSources(ctx context.Context, log *slog.Logger, watch bool, js jetstream.JetStream) (*providers.Registry, *agentskills.Provider, error) {
	var fsLog *slog.Logger
	if log != nil {
		fsLog = log.With("component", "skills")
	}
	fs, err := agentskills.New(agentskills.Config{
		ProjectDirs:         append(agentskills.DefaultProjectDirs(), c.ProjectSkillsSubdirs...),
		CustomDirs:          c.SkillsDirs,
		UserDir:             c.UserSkillsDir,
		NoUserDir:           c.UserSkillsDir == "",
		NoFollowSymlinks:    c.NoFollowSymlinks,
		ConfineProjects:     c.CwdRoots,
		NoWatch:             !watch,
		MaxWatchesPerFolder: c.MaxWatchesPerDir,
		MaxProjects:         c.WatchedProjects,
		Logger:              fsLog,
	})
	if err != nil {
		return nil, nil, usageError{msg: err.Error()}
	}
	if log != nil {
		if werr := fs.WatchError(); werr != nil {
			log.Warn("skill folders are not watched; changes are found by stat on every snapshot", "err", werr)
		}
	}
	ps := []providers.Provider{fs}
	var tenantStore *store.Provider // its trust policy decides the library's
	if js != nil && !c.NoSkillStore {
		cfg := c.storeConfig()
		cfg.Pins = c.pins
		// A process that follows the store (serve, mcp) lists its records
		// at once and checks their objects in the background: it starts
		// answering in the time the index takes to read, whatever the
		// number of skills. A one-shot preview checks them first.
		cfg.LazyVerify = watch
		if log != nil {
			cfg.Logger = log.With("component", "skill-store")
		}
		octx, cancel := context.WithTimeout(ctx, storeOpenTimeout)
		st, err := store.Open(octx, js, cfg)
		cancel()
		if err != nil {
			fs.Close()
			return nil, nil, fmt.Errorf("skill store: %w", err)
		}
		ps = append(ps, st)
		tenantStore = st
	}
	if c.library != nil {
		lcfg := store.Config{Library: true, Bucket: c.library.bucket, Objects: c.library.objects, Replicas: c.Replicas,
			History: c.SkillStoreHistory, OnWarning: c.storeWarned, Tenant: tenantStore}
		if log != nil {
			lcfg.Logger = log.With("component", "library")
		}
		octx, cancel := context.WithTimeout(ctx, storeOpenTimeout)
		if js != nil && !c.NoSkillStore {
			// The tenant's pins of library skills are kept in the
			// tenant's own index; the library provider follows them.
			bucket := c.storeConfig().Bucket
			if bucket == "" {
				bucket = skillstore.DefaultBucket
			}
			if kv, err := js.KeyValue(octx, bucket); err == nil {
				lcfg.TenantPins = kv
			} else if log != nil {
				log.Warn("the tenant's pins of library skills cannot be read: library skills are served unpinned", "err", err)
			}
		}
		lib, err := store.Open(octx, c.library.js, lcfg)
		cancel()
		if err != nil {
			for _, p := range ps {
				if c, ok := p.(interface{ Close() error }); ok {
					c.Close()
				}
			}
			return nil, nil, fmt.Errorf("skill library: %w", err)
		}
		// Its revisions are not the tenant store's: a worker's store
		// token names the tenant's.
		ps = append(ps, providers.Secondary(lib))
	}
	if !c.NoBundled {
		b, err := bundled.New()
		if err != nil {
			for _, p := range ps {
				if c, ok := p.(interface{ Close() error }); ok {
					c.Close()
				}
			}
			return nil, nil, fmt.Errorf("bundled skills: %w", err)
		}
		ps = append(ps, b)
	}
	// A view per watched project at least: the registry keeps views only
	// while their projects are watched.
	opts := []providers.RegistryOption{providers.WithCacheSize(max(providers.DefaultCacheSize, c.WatchedProjects))}
	if log != nil {
		opts = append(opts, providers.WithLogger(log.With("component", "skills")))
	}
	return providers.NewRegistry(ps, opts...), fs, nil
}

// describeSources describes in one phrase where the configuration takes
// skills from, for messages.
func (c *Config) describeSources() string {
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
