// Package providertest is the contract every skill provider must pass. A
// provider package calls Run from its tests with a Factory that builds the
// provider offering a given set of skills:
//
//	func TestConformance(t *testing.T) {
//		providertest.Run(t, func(t *testing.T, seeds []providertest.Seed) providertest.Harness {
//			... build a provider offering seeds ...
//			return providertest.Harness{Provider: p, Cwd: dir, Add: add, Remove: remove}
//		})
//	}
//
// The contract: List offers exactly the seeded skills with valid names,
// non-empty descriptions, the provider's name and a source, in a stable
// order; Load returns what List summarised plus the body; unknown or
// hostile names are catalog.ErrNotFound; a cancelled context is honoured;
// concurrent use is safe; and, for providers that can change (Add/Remove
// given), changes reach List, Load and — for a providers.Notifier — the
// change channel. Finally the provider works inside a providers.Registry.
//
// Releases is a provider of releases for the tests of what serves them
// (the processor, the MCP front door, replay, usage): each skill's stable
// revision and candidate, answered per Query.Canary with Summary.Origin
// set, and its releases in progress (providers.Releaser), in memory.
package providertest
