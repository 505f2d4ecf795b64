// Package bundled is a provider of skills compiled into the binary with
// embed, so that a fresh install has a useful catalog: writing-skills
// (how to write a SKILL.md) and reviewing-skills (how to review one).
//
// The files under skills/ use the Agent Skills layout and are parsed with
// agentskills.ParseFile when New runs. Candidates have source "bundled",
// rank providers.RankBundled (after the user folder) and an opaque resource
// base. The set never changes: Changes returns a nil channel.
package bundled
