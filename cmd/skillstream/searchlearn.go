package main

import (
	"context"
	"sync"
	"time"

	"github.com/skillstream/skillstream/processor/usage"
	"github.com/skillstream/skillstream/providers/search"
)

// defaultSearchLearnWindow is how far back --search-learn reads the log
// at start: four half-lives of the learned terms, past which a pair
// counts a sixteenth.
const defaultSearchLearnWindow = 120 * 24 * time.Hour

// searchLearnFlags registers serve's flags of learned search terms.
func (c *Config) searchLearnFlags(cmd *command) {
	cmd.group("Search learning")
	cmd.cfgBool(&c.SearchLearn, "search-learn", false,
		"with --skill-search, the index learns from the log: the words of a search followed by a load of a skill in the same session match that skill (at a low weight, halved every 30 days); changes rankings, so off by default")
	cmd.cfgDuration(&c.SearchLearnWindow, "search-learn-window", defaultSearchLearnWindow,
		"with --search-learn, how far back the log is read at start")
	cmd.cfgString(&c.SearchLearnSince, "search-learn-since", "",
		"with --search-learn, ignore what the log holds before this RFC 3339 `time` (an operator's reset of what the index learned)")
}

// validateSearchLearn checks the flags of learned search terms and
// returns the instant reading starts from (zero without --search-learn).
func (c *Config) validateSearchLearn(now time.Time) (time.Time, error) {
	var since time.Time
	if c.SearchLearnSince != "" {
		t, err := time.Parse(time.RFC3339, c.SearchLearnSince)
		if err != nil {
			return time.Time{}, usagef("--search-learn-since %q: want an RFC 3339 time such as 2026-12-01T00:00:00Z", c.SearchLearnSince)
		}
		since = t
	}
	if c.SearchLearnWindow <= 0 {
		return time.Time{}, usagef("--search-learn-window %v: must be positive", c.SearchLearnWindow)
	}
	if !c.SearchLearn {
		return time.Time{}, nil
	}
	if !c.SkillSearch {
		return time.Time{}, usagef("--search-learn teaches the skill search index: it needs --skill-search")
	}
	if w := now.Add(-c.SearchLearnWindow); w.After(since) {
		since = w
	}
	return since, nil
}

// validateSearchBodies checks --search-bodies: it shapes the skill
// search index, so it needs --skill-search.
func (c *Config) validateSearchBodies() error {
	if c.SearchBodies && !c.SkillSearch {
		return usagef("--search-bodies indexes the skills' bodies for skill search: it needs --skill-search")
	}
	return nil
}

// searchOptions is the search index's share of the configuration.
func (c *Config) searchOptions() search.Options {
	return search.Options{Bodies: c.SearchBodies}
}

// learnSearches feeds the unit's search index the searches followed by
// loads of its stream, from since and then as they are written, until
// ctx ends. The index forgets what it learned before, so that a restart
// learns the same pairs once.
func (r *unitRun) learnSearches(ctx context.Context, since time.Time) {
	ix := r.u.index
	ix.ForgetLearned()
	var wg sync.WaitGroup
	for _, part := range r.parts { // every partition's stream, with --partitions
		wg.Go(func() {
			opts := usage.FollowOptions{Stream: part.pcfg.Stream, Prefix: part.pcfg.Prefix, Layout: part.pcfg.Layout, Since: since}
			err := usage.FollowSearchLoads(ctx, r.u.js, opts, func(p usage.SearchLoad) {
				if err := ix.Learn(p.Skill, p.Query, p.At); err != nil {
					r.log.Debug("search learning: pair left out", "session", p.Session, "err", err)
				}
			})
			if err != nil {
				r.log.Warn("search learning stopped: the index keeps what it learned", "stream", part.pcfg.Stream, "err", err)
			}
		})
	}
	wg.Wait()
}
