package catalog

import (
	"errors"
	"fmt"
)

// DefaultDescriptionMaxLength is the description cap used when the operator
// configures none.
const DefaultDescriptionMaxLength = 500

// MinDescriptionMaxLength is the smallest admissible description cap: a
// truncated description keeps max-3 code points and appends "...", so a cap
// below three would leave no room for the ellipsis.
const MinDescriptionMaxLength = 3

// DefaultMaxLength is the catalog size limit used when the operator
// configures none: the text between the <available_skills> tags holds at
// most this many code points (about 6,000 tokens).
const DefaultMaxLength = 24000

// MinMaxLength is the smallest catalog size limit other than 0 (no limit):
// room for the shortening notice and a few names.
const MinMaxLength = 200

// DefaultMaxSkillBytes is the instruction size limit used when the operator
// configures none: a skill tool result shows at most this many bytes of a
// skill's instructions (256 KiB).
const DefaultMaxSkillBytes = 256 << 10

// MinMaxSkillBytes is the smallest instruction size limit other than 0 (no
// limit).
const MinMaxSkillBytes = 1024

// ErrInvalidOptions reports a catalog configuration that cannot be used.
var ErrInvalidOptions = errors.New("invalid catalog options")

// Options configure the model text: how the catalog is rendered and how
// much of a skill's instructions the skill tool shows. The zero value is
// invalid; start from DefaultOptions. Options are comparable, so a caller
// may key prepared views by them.
type Options struct {
	// DescriptionMaxLength caps every catalog description, in Unicode code
	// points, after whitespace is collapsed (flag
	// --catalog-description-max-length). It must be at least 3.
	DescriptionMaxLength int
	// MaxLength bounds the text between the <available_skills> tags, in
	// code points (flag --catalog-max-length): a longer list is shortened
	// (see Shorten). 0 means no limit; otherwise it must be at least 200.
	MaxLength int
	// MaxSkillBytes bounds the instructions a skill tool result shows, in
	// bytes (flag --max-skill-bytes): a longer body is cut (see Truncate).
	// 0 means no limit; otherwise it must be at least 1024.
	MaxSkillBytes int
	// UserInvocation lets a user invoke a skill by writing /<name> in a
	// message (flag --user-invocation; see Gestures and Invoke). With it,
	// every catalog message ends with one more line telling the model so
	// (see RenderWith); without it, the catalog texts are as they were.
	UserInvocation bool
	// SkillSearch serves the skill_search tool beside the skill tool (flag
	// --skill-search; see Search). It changes a catalog only where search
	// is offered to the session (SearchOffered); without it every text is
	// as it was.
	SkillSearch bool
	// SearchBodies says that the search index also holds the skills'
	// bodies (flag --search-bodies): it shapes which skills a search
	// finds, not any catalog text. It is here so that a session's
	// recording says it with the other options.
	SearchBodies bool
	// ListedMax caps the number of entries a catalog lists where search is
	// offered (flag --catalog-listed-max; see ShortenForSearch). 0 means no
	// count limit; it must not be negative.
	ListedMax int
	// SearchOffered says that search is offered to the session whose
	// catalog is prepared: the option is on and its tool view holds our
	// skill_search tool beside our skill tool. It is no setting but a
	// choice made per pre-step (Offer sets it); it counts only with
	// SkillSearch.
	SearchOffered bool
	// Updates says how a session's catalog changes reach the model (flag
	// --catalog-updates): "" or UpdatesFull, a replacement for every
	// change; UpdatesChanges, a change list where the change is small
	// (see DecideView). Initial catalogs and tombstones are the same
	// either way.
	Updates Updates
	// Rank says which skills a shortened catalog keeps (flag
	// --catalog-rank): "" or RankName, by name as always; RankUse, the
	// most used (see PrepareRanked and ShortenForSearchRanked), given a
	// Ranking. Without a Ranking that counts some use, RankUse ranks by
	// name.
	Rank Rank
}

// DefaultOptions returns the options used when nothing is configured.
func DefaultOptions() Options {
	return Options{
		DescriptionMaxLength: DefaultDescriptionMaxLength,
		MaxLength:            DefaultMaxLength,
		MaxSkillBytes:        DefaultMaxSkillBytes,
	}
}

// Validate reports an error wrapping ErrInvalidOptions when the options
// cannot be used. It is meant to run once, at startup.
func (o Options) Validate() error {
	if o.DescriptionMaxLength < MinDescriptionMaxLength {
		return fmt.Errorf("%w: catalog description max length is %d, it must be an integer greater than or equal to %d",
			ErrInvalidOptions, o.DescriptionMaxLength, MinDescriptionMaxLength)
	}
	if err := CheckMaxLength(o.MaxLength); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	if err := CheckMaxSkillBytes(o.MaxSkillBytes); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	if err := CheckListedMax(o.ListedMax); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	if err := CheckUpdates(o.Updates); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	if err := CheckRank(o.Rank); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidOptions, err)
	}
	return nil
}

// CheckListedMax reports whether n is a usable cap on listed entries: 0
// (none) or more.
func CheckListedMax(n int) error {
	if n < 0 {
		return fmt.Errorf("catalog listed max is %d, it must be 0 (no limit) or more", n)
	}
	return nil
}

// Offer returns o with SearchOffered set for a session whose tool view is
// tools: true when o.SkillSearch is on and the view holds owner's skill
// tool and owner's skill_search tool (SearchVisible).
func (o Options) Offer(tools []Tool, owner string) Options {
	o.SearchOffered = o.SkillSearch && SearchVisible(tools, owner)
	return o
}

// searchShortening reports whether a catalog prepared under o is shortened
// for search (ShortenForSearch) rather than by the size limit's rules.
func (o Options) searchShortening() bool { return o.SkillSearch && o.SearchOffered }

// CheckMaxLength reports whether n is a usable catalog size limit: 0 or at
// least MinMaxLength.
func CheckMaxLength(n int) error {
	if n != 0 && n < MinMaxLength {
		return fmt.Errorf("catalog max length is %d, it must be 0 or at least %d", n, MinMaxLength)
	}
	return nil
}

// CheckMaxSkillBytes reports whether n is a usable instruction size limit:
// 0 or at least MinMaxSkillBytes.
func CheckMaxSkillBytes(n int) error {
	if n != 0 && n < MinMaxSkillBytes {
		return fmt.Errorf("max skill bytes is %d, it must be 0 or at least %d", n, MinMaxSkillBytes)
	}
	return nil
}
