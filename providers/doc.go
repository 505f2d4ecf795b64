// Package providers composes skill providers into one registry that answers,
// for a working directory, which skills exist and what they say.
//
// # Providers
//
// A Provider lists candidates for a working directory and loads the body of
// one of them by name. Sub-packages implement the standard sources:
// agentskills (Agent Skills folders on disk, with hot refresh) and bundled
// (skills compiled into the binary). providertest holds the contract every
// provider must pass.
//
// # Ranking
//
// The Registry asks every provider, in the order it was given them, and
// orders all candidates by Rank (lower wins; see RankProject, RankCustom,
// RankUser, RankBundled), then by provider order, then by the provider's own
// order. The first candidate of each name wins; every other one is recorded
// as shadowed, with the candidate that shadows it — both carry Provider,
// Source and ResourceBase, which say where they come from. A candidate whose
// name is outside the grammar or whose description is empty is rejected
// with an error naming its provider. Inspect returns all of this, with the
// providers' diagnostics, for operators; WithLogger logs each distinct
// shadowing, rejection and provider error once, and warns once of each
// winner whose description holds control or bidirectional-text
// characters (catalog.FindControl): the catalog carries them as they are.
//
// # Snapshots
//
// Snapshot returns the winners sorted by name in byte order and whether the
// answer is complete. It is incomplete when a provider returned an error,
// panicked, did not answer before ctx's deadline (or the provider timeout,
// WithProviderTimeout), or when the skill set changed twice while the
// snapshot was collected (one change is absorbed by collecting again). An
// incomplete snapshot still holds every skill the other providers listed,
// and Resolve and Load still resolve from it. A cancelled ctx makes
// Snapshot return ctx's error at once, even if a provider hangs.
//
// # Caching
//
// A complete snapshot is cached per working directory (an LRU bounded by
// WithCacheSize) when every provider implements Notifier. Before each
// collection the registry takes every provider's change channel for that
// directory; a cached snapshot is served only while all those channels are
// still open and still the ones the providers hand out. Incomplete
// snapshots are never cached. A channel closed while a snapshot is being
// collected is a change (collect again; a second one makes it
// incomplete); a channel replaced but left open is not: the provider
// stopped watching that directory (it bounds what it watches), so the
// snapshot is complete but not cached. Providers that do not implement Notifier, or
// that hand out closed channels ("cannot tell"), are asked every time.
//
// Concurrent misses for one directory share one collection, as long as no
// provider announced a change since it began; a caller whose shared
// collection came back incomplete collects for itself.
//
// Prepared(ctx, cwd, opts) gives the snapshot prepared for deciding
// (catalog.Prepare: entries and digest). The prepared view lives with the
// cached snapshot, so it is built once per snapshot and options and is
// replaced exactly when the snapshot is. Derive(ctx, q, key, build) keeps
// any other value made of the snapshot the same way (the search index's
// candidates, say): built once per snapshot and key, however many callers
// ask at once, and dropped with the snapshot.
//
// # Provider calls and their goroutines
//
// Every provider call runs in a goroutine owned by the registry. Its
// context is cancelled when the caller's ctx is done, after the provider
// timeout, or at Close, so a provider that honours its context ends at once.
// A provider that ignores its context keeps its goroutine until it returns;
// such abandoned calls are counted, and once a provider has WithMaxStuck of
// them the registry stops calling it (answers are incomplete) until one
// returns. Close cancels all calls, waits for them (at most WithCloseTimeout)
// and closes the providers that implement io.Closer.
//
// # Loading
//
// Load re-resolves the winner for the name in that working directory and
// asks its provider for the current body; nothing is cached. When that
// provider says the skill is gone although the (cached) view still listed
// it — a change whose notification has not arrived yet — Load resolves
// once more from a fresh view, so a shadowed candidate takes over at once.
// It returns an
// error wrapping catalog.ErrNotFound when no provider offers the name any
// more, and otherwise the provider's failure as `read skill "<name>":
// <cause>`, which the skill tool shows as `Error: <message>`.
//
// # Where the code lives
//
// The registry is one type in files along its seams: registry.go holds the
// public API (options, Snapshot, Prepared, Resolve, Load, Close, the
// revision calls); merge.go the ranking and merging of the providers'
// answers; cache.go the cached views, their change channels and the shared
// collections; calls.go the supervised provider calls (timeouts, stuck
// providers); report.go Inspect, Report and the log. The snapshot cache is
// an LRU from github.com/hashicorp/golang-lru/v2 (simplelru: the
// registry's mutex guards it with the rest of its state). provider.go
// declares what a provider implements, and Closed reads a change channel.
package providers
